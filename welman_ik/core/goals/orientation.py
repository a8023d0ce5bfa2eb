"""Orientation goal: some or all of a bone's own axes should point along world directions.

Welman (1993, section 5.4) and Zhao & Badler (1989) hold an orientation through points
that ride on the frame: a point at ``length`` along each held axis. Here each held axis k
gives three rows, its world direction against the target's, scaled to that length:

    v_k = p(length a_k) - p(0),  u_k = v_k / |v_k|,
    e_k = length (t_k - u_k),    J_k = length (I - u_k u_k^T) (dp(length a_k) - dp(0)) / |v_k|

where p(x) is the frame's point at local x (``Kinematics.points``), a_k the local unit axis
and t_k the target's unit direction. The rows are in metres (the angle between the axes
times ``length``, for small angles), so orientation and position goals weigh against each
other in one unit, and the Jacobian is that of two points: joints that do not pass their
rotation on, sheared or scaled frames, all as for a position goal. Holding one axis
(``axes`` = Y only: a bone's direction) leaves the twist about it free; two or three hold
the whole orientation.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..skeleton import Kinematics
from .base import Goal, KindBatch

AXES = np.eye(3)


@functools.lru_cache(maxsize=64)
def _held_points(axes: tuple, length: float) -> tuple[np.ndarray, np.ndarray]:
    """(the held axes' indices, the frame's origin and a point ``length`` along each held axis),
    read only: made once for goals alike (a bake makes one per frame)."""
    held = np.flatnonzero(np.array(axes, dtype=bool))
    local = np.vstack([np.zeros((1, 3)), length * AXES[held]])
    held.flags.writeable = local.flags.writeable = False
    return held, local


class OrientationGoal(Goal):
    """The frame of ``joint`` should have the world rotation ``target`` (3x3, columns the
    target's X, Y, Z directions) along its axes where ``axes`` (3 bools) is True.
    ``length`` [m]: how far out the held axes are measured (a bone's length is natural)."""

    def __init__(self, joint: int, target, axes=(True, True, True), length: float = 1.0,
                 weight: float = 1.0, priority: int = 0):
        super().__init__(weight, priority)
        target = np.asarray(target, dtype=float).reshape(3, 3)
        if not (math.isfinite(length) and length > 0.0):
            raise ValueError(f"orientation goal needs a length > 0, got {length}")
        held, local = _held_points(tuple(bool(a) for a in axes), float(length))
        if not np.isfinite(target).all() or not held.size:
            raise ValueError("orientation goal needs a finite target and at least one held axis")
        directions = target[:, held].T  # (k, 3)
        norms = np.sqrt(np.einsum("ki,ki->k", directions, directions))
        if (norms < 1e-9).any():
            raise ValueError("orientation goal's target has a zero axis")
        self.joint = np.array([int(joint)])
        self.held = held
        self.length = float(length)
        self.target = directions / norms[:, None]  # (k, 3) unit directions
        self.local = local  # the origin, then each axis's point (shared: read only)
        self.rows = 3 * len(held)

    def _axes(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World points (k + 1, 3): the frame's origin, then each held axis's point; the axes'
        world vectors v (k, 3) and their lengths (k,)."""
        points = kin.points(np.repeat(self.joint, len(self.local)), self.local)
        vectors = points[1:] - points[0]
        return points, vectors, np.linalg.norm(vectors, axis=1)

    def residual(self, kin: Kinematics) -> np.ndarray:
        _, vectors, lengths = self._axes(kin)
        return (self.length * (self.target - vectors / lengths[:, None])).reshape(-1)

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        points, vectors, lengths = self._axes(kin)
        columns = kin.point_jacobian(np.repeat(self.joint, len(points)), points)  # (k + 1, 3, n)
        units = vectors / lengths[:, None]
        project = np.eye(3)[None] - units[:, :, None] * units[:, None, :]  # (k, 3, 3)
        moved = columns[1:] - columns[0][None]
        return (self.length * np.einsum("kij,kjn->kin", project, moved) / lengths[:, None, None]).reshape(self.rows, -1)

    @classmethod
    def stack(cls, goals: list[OrientationGoal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        return OrientationBatch(cls, goals).stack(kin)

    @classmethod
    def errors(cls, goals: list[OrientationGoal], kin: Kinematics) -> np.ndarray:
        return OrientationBatch(cls, goals).errors(kin)

    @classmethod
    def batch(cls, goals: list[OrientationGoal]) -> OrientationBatch:
        return OrientationBatch(cls, goals)

    def point_pairs(self, kin: Kinematics):
        """The frame's origin, where it is: no pull on it (CCD holds the axes through
        ``direction_pairs``), but a point for the solvers' sense of the goal's place."""
        origin = kin.points(self.joint, np.zeros((1, 3)))
        return self.joint, origin, origin.copy()

    def direction_pairs(self, kin: Kinematics):
        _, vectors, lengths = self._axes(kin)
        return (np.repeat(self.joint, len(self.held)), vectors / lengths[:, None], self.target,
                np.full(len(self.held), self.length))


class OrientationBatch(KindBatch):
    """Orientation goals evaluated together: every frame's origin and held axes' points read in
    one call, their rows in the goals' order (each goal's held axes in turn)."""

    def __init__(self, kind, goals: list[OrientationGoal]):
        super().__init__(kind, goals)
        counts = np.array([len(g.held) for g in goals], dtype=np.intp)
        self.size = len(goals)
        origins = np.concatenate([g.joint for g in goals])
        self.owner = np.repeat(np.arange(len(goals)), counts)  # each held axis's goal
        self.joints = np.concatenate([origins, origins[self.owner]])
        self.local = np.vstack([np.zeros((len(goals), 3))] + [g.local[1:] for g in goals])
        self.lengths = np.array([g.length for g in goals])[self.owner]
        self.targets = np.vstack([g.target for g in goals])
        self.starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)

    def _axes(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        points = kin.points(self.joints, self.local)
        vectors = points[self.size:] - points[:self.size][self.owner]
        return points, vectors, np.linalg.norm(vectors, axis=1)

    def _rows(self, vectors: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        return self.lengths[:, None] * (self.targets - vectors / lengths[:, None])

    def residuals(self, kin: Kinematics) -> np.ndarray:
        _, vectors, lengths = self._axes(kin)
        return self._rows(vectors, lengths).reshape(-1)

    def errors(self, kin: Kinematics) -> np.ndarray:
        _, vectors, lengths = self._axes(kin)
        rows = self._rows(vectors, lengths)
        return np.sqrt(np.add.reduceat(np.einsum("ij,ij->i", rows, rows), self.starts))

    def stack(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        points, vectors, lengths = self._axes(kin)
        columns = kin.point_jacobian(self.joints, points)  # (goals + axes, 3, n)
        units = vectors / lengths[:, None]
        project = np.eye(3)[None] - units[:, :, None] * units[:, None, :]
        moved = columns[self.size:] - columns[:self.size][self.owner]
        jacobian = self.lengths[:, None, None] * np.einsum("kij,kjn->kin", project, moved) / lengths[:, None, None]
        return self._rows(vectors, lengths).reshape(-1), jacobian.reshape(-1, kin.skeleton.size)
