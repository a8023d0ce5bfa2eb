"""Together goal: two points, each on its own bone, should meet, wherever that is (two hands
clasped, a hand on the other knee, a foot on a moving prop of the rig): both move.

With p_a, p_b the two points (``Kinematics.points``):

    e = p_b - p_a,   J = d(p_a - p_b)/dq = dp_a/dq - dp_b/dq    (3 rows)

so that a step with J dq = e changes the gap p_b - p_a by -J dq = -e: it closes to first
order. A joint above both points moves them alike and drops out of J (its columns cancel).
CCD aims both points at their midpoint (recomputed each sweep): a joint above both then
has nothing to gain from turning, while a target at the other point would have it swing the
pair round for nothing. Each pair is given twice, so that the pairs' weighted squared
distance, 2 (|m - p_a|^2 + |m - p_b|^2) = |p_b - p_a|^2, is the goal's own; it bounds the
next sweep's from above (m stays put during a sweep), so no sweep raises it.
"""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal


class TogetherGoal(Goal):
    """Point ``local_a`` [m] in the frame of ``joint_a`` and point ``local_b`` [m] in the frame of
    ``joint_b`` should coincide; with ``offset`` [m], a should be that far from b in the world
    (p_a - p_b = offset: a hand held where it is from its shoulder, say): the residual is
    p_b - p_a + offset."""

    refused_by: dict[str, str] = {}

    def __init__(self, joint_a: int, local_a, joint_b: int, local_b, weight: float = 1.0, priority: int = 0,
                 offset=(0.0, 0.0, 0.0)):
        super().__init__(weight, priority)
        self.offset = np.asarray(offset, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.offset)):
            raise ValueError("together goal needs a finite offset")
        self.joints = np.array([int(joint_a), int(joint_b)])
        self.local = np.vstack([np.asarray(local_a, dtype=float).reshape(1, 3),
                                np.asarray(local_b, dtype=float).reshape(1, 3)])
        if not np.all(np.isfinite(self.local)):
            raise ValueError("together goal needs finite points")

    def points(self, kin: Kinematics) -> np.ndarray:
        """The two world points (2, 3): a, then b."""
        return kin.points(self.joints, self.local)

    @staticmethod
    def _gaps(goals: list[TogetherGoal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Joints (2k,), world points (2k, 3: a, b of each goal) and gaps p_b - p_a + offset (k, 3)."""
        joints = np.concatenate([g.joints for g in goals])
        points = kin.points(joints, np.vstack([g.local for g in goals]))
        return joints, points, points[1::2] - points[0::2] + np.vstack([g.offset for g in goals])

    def residual(self, kin: Kinematics) -> np.ndarray:
        a, b = self.points(kin)
        return b - a + self.offset

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        columns = kin.point_jacobian(self.joints, self.points(kin))  # (2, 3, n)
        return columns[0] - columns[1]

    @classmethod
    def stack(cls, goals: list[TogetherGoal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """All gaps and Jacobians in one batch: (3k,) and (3k, n)."""
        joints, points, gaps = cls._gaps(goals, kin)
        columns = kin.point_jacobian(joints, points)
        return gaps.reshape(-1), (columns[0::2] - columns[1::2]).reshape(3 * len(goals), -1)

    @classmethod
    def errors(cls, goals: list[TogetherGoal], kin: Kinematics) -> np.ndarray:
        return np.linalg.norm(cls._gaps(goals, kin)[2], axis=1)

    def point_pairs(self, kin: Kinematics):
        """Both points toward their midpoint, each pair twice (see the module docstring)."""
        points = self.points(kin)
        middle = points.mean(axis=0)
        targets = np.vstack([middle + self.offset / 2, middle - self.offset / 2])
        return np.tile(self.joints, 2), np.vstack([points, points]), np.vstack([targets, targets])
