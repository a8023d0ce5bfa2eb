"""Floor goal: a point on a bone should stay on or above a plane (a foot on the floor, a hand
on a table top): one-sided, free above it, held only once it would go below.

With p the point, c a point of the plane and m its unit normal (pointing to the free side),
the point's depth below the plane is b = m . (c - p):

    above (b <= 0):  e = 0,  J = 0                       (one row, zero)
    below:           e = b,  J = -de/dq = m^T dp/dq

which is the plane goal (``PlaneGoal``) where the point is below the plane and nothing above
it. CCD aims the point at its projection onto the plane when below, and at itself above.
"""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal
from .line import _unit


class FloorGoal(Goal):
    """Point ``local`` [m] in the frame of ``joint`` should stay on or above the plane through
    world ``origin`` [m] whose normal ``normal`` points to the side it may be on."""

    rows = 1
    one_sided = True
    refused_by: dict[str, str] = {}

    def __init__(self, joint: int, local, origin, normal=(0.0, 0.0, 1.0), weight: float = 1.0, priority: int = 0):
        super().__init__(weight, priority)
        self.joint = np.array([int(joint)])
        self.local = np.asarray(local, dtype=float).reshape(1, 3)
        self.origin = np.asarray(origin, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.origin)) or not np.all(np.isfinite(self.local)):
            raise ValueError("a floor goal needs a finite point and plane")
        self.normal = _unit(normal, "a floor goal")

    def point(self, kin: Kinematics) -> np.ndarray:
        return kin.points(self.joint, self.local)[0]

    @staticmethod
    def _geometry(goals: list[FloorGoal], kin: Kinematics):
        """Joints (k,), points (k, 3), normals (k, 3) and each point's depth below its plane
        (k,), negative above it."""
        joints = np.concatenate([g.joint for g in goals])
        points = kin.points(joints, np.vstack([g.local for g in goals]))
        normals = np.vstack([g.normal for g in goals])
        depth = np.einsum("ki,ki->k", normals, np.vstack([g.origin for g in goals]) - points)
        return joints, points, normals, depth

    @classmethod
    def stack(cls, goals: list[FloorGoal], kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
        """All residuals and Jacobians in one batch: (k,) and (k, n)."""
        joints, points, normals, depth = cls._geometry(goals, kin)
        below = depth > 0.0
        jac = np.zeros((len(goals), kin.skeleton.size))
        if below.any():
            jac[below] = np.einsum("ki,kin->kn", normals[below], kin.point_jacobian(joints[below], points[below]))
        return np.maximum(depth, 0.0), jac

    @classmethod
    def errors(cls, goals: list[FloorGoal], kin: Kinematics) -> np.ndarray:
        """How far each point is below its plane (0 on or above it): (k,)."""
        return np.maximum(cls._geometry(goals, kin)[3], 0.0)

    @staticmethod
    def point_errors(goals: list[FloorGoal], points: np.ndarray) -> np.ndarray:
        """``errors`` of the goals' points wherever they are: ``points`` (..., k, 3), each goal's
        point (many frames' at once) -> (..., k)."""
        normals = np.vstack([g.normal for g in goals])
        depth = np.einsum("ki,...ki->...k", normals, np.vstack([g.origin for g in goals]) - points)
        return np.maximum(depth, 0.0)

    def residual(self, kin: Kinematics) -> np.ndarray:
        return self.stack([self], kin)[0]

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        return self.stack([self], kin)[1]

    def boundary(self, kin: Kinematics, after: Kinematics):
        now, later = self.point(kin), self.point(after)
        height = float(self.normal @ (now - self.origin))
        if height < 0.0 or self.normal @ (later - self.origin) >= 0.0:
            return None  # below now (its own row holds it), or the step keeps it above
        row = -self.normal @ kin.point_jacobian(self.joint, now[None])[0]
        return row, height

    def active(self, kin: Kinematics) -> bool:
        """True when the point is below the plane (the goal holds it)."""
        return bool(self._geometry([self], kin)[3][0] > 0.0)

    def point_pairs(self, kin: Kinematics):
        _, points, normals, depth = self._geometry([self], kin)
        return self.joint, points, points + normals * np.maximum(depth, 0.0)[:, None]
