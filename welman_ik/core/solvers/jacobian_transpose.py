"""Jacobian transpose (Welman 1993, section 4.1).

The step is dq = alpha K J^T W e: the gradient of the weighted squared error, with a
per-joint gain K_i = mobility_i / sum_g w_g r_ig^2, where r_ig is the distance from
joint i to goal g's effector (the link-length scaling of section 4.1.4; for a sliding
joint the lever is 1; past a joint that does not inherit its parent's rotation, r_ig
is the distance to that joint's head, which is what joint i turns; see
``Kinematics.lever_points``). This makes the step independent of units and of how far
a joint is from its effectors.

Each step starts from ``OVERSTEP`` times the alpha that minimises the error's
linearisation along the direction d = K J^T W e, (J^T W e . d) / |J d|_W^2, at most 1
(if J d = 0, the last step's alpha, grown by half after an accepted step), so that a
trial is seldom refused. Safeguard: a step that would increase the weighted error is
halved until it does not (backtracking), so the method never diverges. Joint steps are
clipped to the limits.

For position goals on a conformal tree without non-inheriting joints, J^T W e and J d
come from the joints' screws (``_Descent``) without forming the Jacobian; other goals
give their Jacobian rows (``GoalBatch.stack``). A trial step's error is the residuals
alone, and an accepted trial's kinematics are the next step's.

With several priority levels each iteration takes a step on every goal, then one on the
first level alone, which is therefore what holds when goals conflict.

Like Welman reports, the method crawls near singular configurations: a straight chain
pulled inward along its own axis has J^T e = 0 and does not move.
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import FirstLevelKeeper, GoalBatch, Problem, SolveResult, check_start, level_weights
from .ccd import Pairs, conclude
from .preference import ReferencePull

MAX_STEP = 0.5  # largest revolute step per iteration [rad]
MAX_HALVINGS = 30
MIN_LEVER = 1e-6  # [m] a joint whose effectors are all nearer its axis point than this does not move
OVERSTEP = 1.6  # the first trial's alpha over the linearised error's minimiser along the direction

_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a x b of (k, 3) arrays, in fewer calls than component by component."""
    return a.take(_NEXT, 1) * b.take(_AFTER, 1) - a.take(_AFTER, 1) * b.take(_NEXT, 1)


class _Descent:
    """Backtracking gradient steps on one weighting of the goals."""

    def __init__(self, problem: Problem, weights: np.ndarray, pairs: Pairs, movable: np.ndarray):
        sk = problem.skeleton
        goals = list(problem.goals)
        self.problem = problem
        self.skeleton = sk
        self.weights = weights
        self.pairs = pairs
        # On a conformal tree without non-inheriting joints a position goal's Jacobian
        # column for joint i is the screw (s_i, o_i x s_i) applied to its point p,
        # s_i x p + o_i x s_i (s_i the signed unit axis at o_i; (0, a_i) for a slider), so
        # its share of J^T W e and of J dq is a few products, without the Jacobian. Other
        # goals give their Jacobian rows.
        m = self.direct = len(pairs.fixed) if sk.conformal and not sk.detached.size else 0
        rest = sorted(set(range(len(goals))) - set(pairs.fixed[:m].tolist()))
        self.rest = GoalBatch([goals[i] for i in rest], weights[rest]) if rest else None
        self.direct_weights = weights[pairs.fixed[:m]]
        self.direct_distal = sk.ancestors[pairs.joints[:m]].astype(float)  # (m, n)
        self.mobile = np.where(movable, sk.mobility, 0.0)
        self.revolute = np.flatnonzero(~sk.prismatic)
        self.sliders = np.flatnonzero(sk.prismatic)
        self.turning = np.where(sk.prismatic, 0.0, sk.handedness)
        self.sliding = sk.prismatic.astype(float)[:, None]
        # Without limits or ranges a step needs no clipping.
        ranged = problem.ranges is not None and problem.ranges.size > 0
        self.free = not ranged and not np.any(np.isfinite(sk.lower) | np.isfinite(sk.upper))
        self._levers: dict = {}
        self.alpha = 1.0

    def _distal(self, joints: np.ndarray, w: np.ndarray):
        """(k, n): 1.0 where joint i moves pair k's point, times the pairs' weights; (n,) each
        joint's total weight; (n,) the least weighted squared lever of a joint that moves.
        Kept while the pairs stay the same."""
        key = (joints.tobytes(), w.tobytes())
        found = self._levers.get(key)
        if found is None:
            weighted = w[:, None] * self.skeleton.ancestors[joints]
            reach = weighted.sum(axis=0)
            found = self._levers[key] = (weighted, reach[self.sliders], MIN_LEVER**2 * reach)
        return found

    def _gain(self, kin, axes2: np.ndarray) -> np.ndarray:
        """K (n,): each joint's mobility over its weighted squared levers on the effectors
        (``axes2``: each world axis's length squared)."""
        sk = self.skeleton
        joints, points, _, w = self.pairs.points(kin, self.weights)
        weighted, sliding_reach, least = self._distal(joints, w)
        if sk.detached.size:
            rel = (kin.lever_points(joints, points) - kin.origins[None, :, :]).transpose(0, 2, 1)
        else:
            rel = points[:, :, None] - np.ascontiguousarray(kin.origins.T)  # (k, 3, n)
        denominator = np.einsum("kn,kin,kin->n", weighted, rel, rel)
        if self.sliders.size:  # a slider's lever is its axis
            denominator[self.sliders] = axes2[self.sliders] * sliding_reach
        d_joints, _, _, d_w = self.pairs.directions(kin, self.weights)
        if d_joints.size:  # a held axis turns with a joint at its length: lever^2 = length^2
            denominator += d_w @ (sk.ancestors[d_joints] & (sk.lever[d_joints] < 0))
        # A joint with no lever on its effectors (a bone's head on its own hinges) has a
        # gradient of round-off: it stays (its gain would be that noise over nothing).
        return np.divide(self.mobile, np.maximum(denominator, 1e-300), out=np.zeros(sk.size), where=denominator > least)

    def cost(self, kin, gaps: np.ndarray | None = None) -> float:
        """The weighted squared error at ``kin`` (``gaps``: the position goals' target minus
        point there, if known)."""
        cost = 0.0
        if self.direct:
            if gaps is None:
                gaps = self.pairs.targets - self.pairs.fixed_points(kin)
            cost += float(np.einsum("k,ki,ki->", self.direct_weights, gaps, gaps))
        if self.rest is not None:
            e = self.rest.residuals(kin)
            cost += float(e @ e)
        return cost

    def step(self, q: np.ndarray, kin):
        """One accepted step from q: (new q, its kinematics), or None if none helps."""
        sk = self.skeleton
        axes = kin.world_axes
        axes2 = np.einsum("ij,ij->i", axes, axes)
        gain = self._gain(kin, axes2)
        m = self.direct
        if m:
            p = self.pairs.fixed_points(kin)
            gaps = self.pairs.targets - p
            cost = self.cost(kin, gaps)
            pulls = self.direct_weights[:, None] * gaps
            signed = axes * (self.turning / np.sqrt(axes2))[:, None]
            screws = np.concatenate((signed, _cross(kin.origins, signed) + self.sliding * axes), axis=1)  # (n, 6)
            # J^T W e: sum over the points p below joint i of its screw . (p x w r, w r)
            wrenches = self.direct_distal.T @ np.concatenate((_cross(p, pulls), pulls), axis=1)
            gradient = np.einsum("ni,ni->n", screws, wrenches)
        else:
            cost, gradient = self.cost(kin), np.zeros(sk.size)
        if self.rest is not None:
            e_rest, jac = self.rest.stack(kin)
            gradient += e_rest @ jac
        direction = gain * gradient
        # Start from OVERSTEP times the alpha that minimises the linearised error along the
        # direction, (J^T W e . d) / |J d|_W^2 (at twice it the linearisation gains nothing;
        # a step a little past it zig-zags less than the minimiser), at most 1.
        spread = 0.0
        if m:
            twist = self.direct_distal @ (direction[:, None] * screws)  # (m, 6): the screws moving each point
            moved = _cross(twist[:, :3], p) + twist[:, 3:]  # J dq at the points
            spread += float(np.einsum("k,ki,ki->", self.direct_weights, moved, moved))
        if self.rest is not None:
            moved = jac @ direction
            spread += float(moved @ moved)
        if spread > 0.0:
            self.alpha = min(1.0, OVERSTEP * float(gradient @ direction) / spread)
        biggest = np.abs(direction[self.revolute]).max(initial=0.0)
        for _h in range(MAX_HALVINGS):
            dq = (self.alpha if self.alpha * biggest <= MAX_STEP else MAX_STEP / biggest) * direction
            trial = q + dq if self.free else self.problem.constrain(q + dq)
            if np.abs(trial - q).max(initial=0.0) < 1e-15:
                return None
            trial_kin = sk.forward(trial)
            if self.cost(trial_kin) <= cost:
                self.alpha = min(1.0, self.alpha * 1.5)
                return trial, trial_kin
            self.alpha *= 0.5
        return None


def solve(problem: Problem, q0) -> SolveResult:
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    movable = problem.movable()
    weights, first_level = level_weights(problem)
    pairs = Pairs(problem.goals)
    phases = [_Descent(problem, weights, pairs, movable)]
    if not np.array_equal(weights, first_level):
        phases.append(_Descent(problem, first_level, pairs, movable))
    history: list[float] = []
    iterations = 0
    kin = sk.forward(q)
    pull = ReferencePull(problem, kin, pairs.errors)
    keeper = FirstLevelKeeper(problem)
    for _ in range(problem.max_iterations):
        errors = pairs.errors(kin)
        history.append(float(errors.max(initial=0.0)))
        keeper.see(q, kin, errors)
        if np.all(errors <= problem.tolerance):
            pulled = pull.step(q, kin, errors)
            if pulled is None:
                break
            q, kin = pulled
            continue
        if time.perf_counter() > deadline:
            break
        iterations += 1
        moved = False
        for phase in phases:
            taken = phase.step(q, kin)
            if taken is not None:
                (q, kin), moved = taken, True
        if not moved:
            break
    return conclude(problem, pull, keeper, pairs, q, kin, iterations, history)
