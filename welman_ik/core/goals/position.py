"""Position goal: a point fixed on a bone should be at a world point."""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal, KindBatch


class PositionGoal(Goal):
    """Point ``local`` [m] in the frame of ``joint`` should reach world ``target`` [m].

    e = target - p(q),  J = dp/dq  (3 rows).
    """

    def __init__(self, joint: int, local, target, weight: float = 1.0, priority: int = 0):
        super().__init__(weight, priority)
        self.joint = np.array([int(joint)])
        self.local = np.asarray(local, dtype=float).reshape(1, 3)
        self.target = np.asarray(target, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.target)) or not np.all(np.isfinite(self.local)):
            raise ValueError("position goal needs a finite target and point")

    def point(self, kin: Kinematics) -> np.ndarray:
        frame = kin.frames[self.joint[0]]
        return frame[:3, :3] @ self.local[0] + frame[:3, 3]

    def residual(self, kin: Kinematics) -> np.ndarray:
        return self.target - self.point(kin)

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        return kin.point_jacobian(self.joint, self.point(kin)[None])[0]

    @staticmethod
    def _points(goals: list[PositionGoal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Joints (k,), world points (k, 3) and residuals (k, 3) of several goals at once."""
        joints = np.concatenate([g.joint for g in goals])
        points = kin.points(joints, np.vstack([g.local for g in goals]))
        return joints, points, np.vstack([g.target for g in goals]) - points

    @classmethod
    def stack(cls, goals: list[PositionGoal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """All points and Jacobians in one batch: (3k,) and (3k, n)."""
        joints, points, residuals = cls._points(goals, kin)
        return residuals.reshape(-1), kin.point_jacobian(joints, points).reshape(3 * len(goals), -1)

    @classmethod
    def errors(cls, goals: list[PositionGoal], kin: Kinematics) -> np.ndarray:
        """All distances in one batch: (k,)."""
        return np.linalg.norm(cls._points(goals, kin)[2], axis=1)

    @classmethod
    def batch(cls, goals: list[PositionGoal]) -> PositionBatch:
        return PositionBatch(cls, goals)

    def point_pairs(self, kin: Kinematics):
        return self.joint, kin.points(self.joint, self.local), self.target[None, :]


class PositionBatch(KindBatch):
    """Position goals with their joints, points and targets gathered into arrays once."""

    def __init__(self, kind, goals: list[PositionGoal]):
        super().__init__(kind, goals)
        self.joints = np.concatenate([g.joint for g in goals])
        self.local = np.vstack([g.local for g in goals])
        self.targets = np.vstack([g.target for g in goals])

    def errors(self, kin: Kinematics) -> np.ndarray:
        d = self.targets - kin.points(self.joints, self.local)
        return np.sqrt(np.einsum("ij,ij->i", d, d))

    def residuals(self, kin: Kinematics) -> np.ndarray:
        return (self.targets - kin.points(self.joints, self.local)).reshape(-1)

    def stack(self, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        points = kin.points(self.joints, self.local)
        return (self.targets - points).reshape(-1), kin.point_jacobian(self.joints, points).reshape(-1, kin.skeleton.size)
