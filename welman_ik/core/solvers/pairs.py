"""The point and direction pairs of a solve's goals, as the solvers without a null space (CCD,
the Jacobian transpose) weigh them: a goal point p and its target d (``Goal.point_pairs``),
a held axis's unit direction u and its target (``Goal.direction_pairs``, weighted as a
point at the goal's length would be), and what they cost, sum w |d - p|^2.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..goals import Goal, PositionGoal
from ..problem import GoalBatch, Problem

_NO_PAIRS = (np.zeros(0, dtype=np.intp), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
for _empty in _NO_PAIRS:
    _empty.flags.writeable = False


class Pairs:
    """The point pairs (``Goal.point_pairs``) and direction pairs (``Goal.direction_pairs``)
    of one solve's goals, each set in one array. Position goals' joints, local points and
    targets are gathered once (their targets are fixed during a solve), so their points
    are one product for all; goals of other kinds are asked each time (their targets may
    follow the pose). Point pairs come grouped: the position goals', then the others'."""

    def __init__(self, goals: Sequence[Goal]):
        self.goals = list(goals)
        fixed = [i for i, g in enumerate(self.goals) if type(g) is PositionGoal]
        self.fixed = np.array(fixed, dtype=np.intp)
        self.others = [i for i, g in enumerate(self.goals) if type(g) is not PositionGoal]
        self.joints = np.array([self.goals[i].joint[0] for i in fixed], dtype=np.intp)
        self.local = np.array([self.goals[i].local[0] for i in fixed], dtype=float).reshape(-1, 3)
        self.targets = np.array([self.goals[i].target for i in fixed], dtype=float).reshape(-1, 3)
        self.directed = [i for i, g in enumerate(self.goals) if type(g).direction_pairs is not Goal.direction_pairs]
        self._kin, self._fixed_points = None, np.zeros((0, 3))
        self._batch: GoalBatch | None = None

    def fixed_points(self, kin) -> np.ndarray:
        """The position goals' world points (m, 3), in the order of ``fixed``; kept for the
        last kinematics asked (not to be modified)."""
        if kin is not self._kin and len(self.joints):
            self._kin, self._fixed_points = kin, kin.points(self.joints, self.local)
        return self._fixed_points

    def errors(self, kin) -> np.ndarray:
        """Each goal's distance from being met (``GoalBatch.errors``); when every goal is a
        position goal, from the points kept for ``kin``."""
        if self.others or not len(self.joints):
            if self._batch is None:
                self._batch = GoalBatch(self.goals, np.ones(len(self.goals)))
            return self._batch.errors(kin)
        gaps = self.targets - self.fixed_points(kin)
        return np.sqrt(np.einsum("ij,ij->i", gaps, gaps))

    def points(self, kin, weights: np.ndarray):
        """Joints (k,), world points (k, 3), targets (k, 3) and weights (k,) of every point pair;
        ``point_goals`` keeps the goal of each (k,)."""
        weights = np.asarray(weights, dtype=float)
        points = self.fixed_points(kin)
        if not self.others:
            self.point_goals = self.fixed
            return self.joints, points, self.targets, weights[self.fixed]
        joints, world, targets, goals = [self.joints], [points], [self.targets], [self.fixed]
        for i in self.others:
            j, p, t = self.goals[i].point_pairs(kin)
            joints.append(j)
            world.append(p)
            targets.append(t)
            goals.append(np.full(len(j), i, dtype=np.intp))
        self.point_goals = np.concatenate(goals)
        return np.concatenate(joints), np.vstack(world), np.vstack(targets), weights[self.point_goals]

    def directions(self, kin, weights: np.ndarray):
        """Direction pairs of the goals that hold a frame's axes: joints (k,), unit
        directions now (k, 3), target directions (k, 3), and weights (k,) times each pair's
        length squared, so that they weigh as points at that length would."""
        weights = np.asarray(weights, dtype=float)
        joints, units, targets, goals, scale = [], [], [], [], []
        for i in self.directed:
            j, u, t, length = self.goals[i].direction_pairs(kin)
            if len(j):
                joints.append(j)
                units.append(u)
                targets.append(t)
                goals.append(np.full(len(j), i, dtype=np.intp))
                scale.append(np.asarray(length, dtype=float) ** 2 * np.ones(len(j)))
        if not joints:
            self.direction_goals, self.direction_scale = _NO_PAIRS[0], _NO_PAIRS[3]
            return _NO_PAIRS
        self.direction_goals, self.direction_scale = np.concatenate(goals), np.concatenate(scale)
        return (np.concatenate(joints), np.vstack(units), np.vstack(targets),
                weights[self.direction_goals] * self.direction_scale)

    def cost(self, kin, weights: np.ndarray) -> float:
        """What a sweep minimises: the weighted squared distances of the point pairs and of
        the direction pairs (at their lengths)."""
        _, points, targets, w = self.points(kin, weights)
        _, units, d_targets, d_w = self.directions(kin, weights)
        return weighted_cost(points, targets, w) + weighted_cost(units, d_targets, d_w)


def weighted_cost(points: np.ndarray, targets: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * np.sum((targets - points) ** 2, axis=1)))


def goal_cost(problem: Problem, kin, weights: np.ndarray) -> float:
    """What a sweep minimises (``Pairs.cost``) for ``problem``'s goals."""
    return Pairs(problem.goals).cost(kin, weights)
