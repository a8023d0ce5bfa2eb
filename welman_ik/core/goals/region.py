"""Region goal: a point on a bone should stay within a ball (a hand kept within reach of a
prop, a foot kept near its mark): one-sided, free inside, held only once it leaves.

With p the point, g = c - p from it to the centre c, d = |g|, u = g / d and r the radius:

    inside (d <= r):  e = 0,  J = 0                               (3 rows, all zero)
    outside:          e = g (1 - r/d)    (from p to the nearest point of the sphere)
                      J = -de/dq = ((1 - r/d) I + (r/d) u u^T) dp/dq

J is the exact derivative of e: radially (along u) the gap closes one for one, sideways
(across u) moving p moves the sphere's nearest point with it, so only the share 1 - r/d of
a sideways move counts. (The projection u u^T dp/dq alone would be exact only on the
sphere.) With r = 0 it is a position goal at c. CCD aims the point at its nearest point of
the sphere when outside, and at itself when inside (no pull).
"""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal


class RegionGoal(Goal):
    """Point ``local`` [m] in the frame of ``joint`` should stay within ``radius`` [m] of world
    ``centre`` [m]."""

    refused_by: dict[str, str] = {}

    def __init__(self, joint: int, local, centre, radius: float, weight: float = 1.0, priority: int = 0):
        super().__init__(weight, priority)
        self.joint = np.array([int(joint)])
        self.local = np.asarray(local, dtype=float).reshape(1, 3)
        self.centre = np.asarray(centre, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.centre)) or not np.all(np.isfinite(self.local)):
            raise ValueError("region goal needs a finite centre and point")
        if not (np.isfinite(radius) and radius >= 0.0):
            raise ValueError(f"region goal needs a finite radius >= 0, got {radius}")
        self.radius = float(radius)

    def point(self, kin: Kinematics) -> np.ndarray:
        return kin.points(self.joint, self.local)[0]

    @staticmethod
    def _geometry(goals: list[RegionGoal], kin: Kinematics):
        """Joints (k,), points (k, 3), residuals (k, 3), and the share s = 1 - r/d (k,) and
        unit u (k, 3) of each goal (s = 0 inside)."""
        joints = np.concatenate([g.joint for g in goals])
        points = kin.points(joints, np.vstack([g.local for g in goals]))
        gaps = np.vstack([g.centre for g in goals]) - points
        radius = np.array([g.radius for g in goals])
        distance = np.linalg.norm(gaps, axis=1)
        outside = distance > radius
        safe = np.where(outside, distance, 1.0)
        share = np.where(outside, 1.0 - radius / safe, 0.0)
        units = gaps / safe[:, None]
        return joints, points, gaps * share[:, None], share, units, outside

    @classmethod
    def stack(cls, goals: list[RegionGoal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """All residuals and Jacobians in one batch: (3k,) and (3k, n)."""
        joints, points, residuals, share, units, outside = cls._geometry(goals, kin)
        n = kin.skeleton.size
        jac = np.zeros((len(goals), 3, n))
        if outside.any():
            columns = kin.point_jacobian(joints[outside], points[outside])
            u = units[outside]
            s = share[outside]
            factor = s[:, None, None] * np.eye(3) + (1.0 - s)[:, None, None] * u[:, :, None] * u[:, None, :]
            jac[outside] = factor @ columns
        return residuals.reshape(-1), jac.reshape(3 * len(goals), n)

    @classmethod
    def errors(cls, goals: list[RegionGoal], kin: Kinematics) -> np.ndarray:
        """All distances outside the balls in one batch: (k,)."""
        return np.linalg.norm(cls._geometry(goals, kin)[2], axis=1)

    def residual(self, kin: Kinematics) -> np.ndarray:
        return self._geometry([self], kin)[2][0]

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        return self.stack([self], kin)[1]

    one_sided = True

    def boundary(self, kin: Kinematics, after: Kinematics):
        now, later = self.point(kin), self.point(after)
        if np.linalg.norm(now - self.centre) > self.radius:
            return None  # outside now: the goal's own rows hold it
        out = later - self.centre
        distance = float(np.linalg.norm(out))
        if distance <= self.radius:
            return None
        n = out / distance
        row = n @ kin.point_jacobian(self.joint, now[None])[0]
        return row, float(self.radius - n @ (now - self.centre))

    def active(self, kin: Kinematics) -> bool:
        """True when the point is outside the ball (the goal holds it)."""
        return bool(self._geometry([self], kin)[5][0])

    def point_pairs(self, kin: Kinematics):
        _, points, residuals, *_ = self._geometry([self], kin)
        return self.joint, points, points + residuals
