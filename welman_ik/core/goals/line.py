"""Line and plane goals: a point on a bone should stay on a world line or in a world plane
(Zhao & Badler 1989; Welman 1993, section 5.4: the plane constraint), free along it.

Both are a position goal seen through a projection P onto the directions the goal holds:

    e = P (c - p(q)),  J = P dp/dq

with c a point of the line or plane; for a line along unit d, P = I - d d^T (two free
directions held, three rows); for a plane with unit normal m, P = m m^T, which is one row,
m . (c - p). CCD aims the point at its projection onto the line or plane (Welman's way: the
nearest point that meets it, recomputed each sweep).
"""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal


def _unit(vector, what: str) -> np.ndarray:
    vector = np.asarray(vector, dtype=float).reshape(3)
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm < 1e-12:
        raise ValueError(f"{what} needs a finite, non-zero direction")
    return vector / norm


class _ProjectedPoint(Goal):
    """A point ``local`` [m] in the frame of ``joint`` held by the projection ``self.project``
    onto the held directions, relative to the world point ``origin`` [m]."""

    def __init__(self, joint: int, local, origin, weight: float, priority: int):
        super().__init__(weight, priority)
        self.joint = np.array([int(joint)])
        self.local = np.asarray(local, dtype=float).reshape(1, 3)
        self.origin = np.asarray(origin, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.origin)) or not np.all(np.isfinite(self.local)):
            raise ValueError(f"{type(self).__name__} needs a finite point")

    project: np.ndarray  # (rows, 3)

    def point(self, kin: Kinematics) -> np.ndarray:
        return kin.points(self.joint, self.local)[0]

    def residual(self, kin: Kinematics) -> np.ndarray:
        return self.project @ (self.origin - self.point(kin))

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        return self.project @ kin.point_jacobian(self.joint, self.point(kin)[None])[0]

    def point_pairs(self, kin: Kinematics):
        point = self.point(kin)
        gap = self.origin - point
        return self.joint, point[None], (point + self.project.T @ (self.project @ gap))[None]


class LineGoal(_ProjectedPoint):
    """The point stays on the line through ``origin`` along ``direction``."""

    def __init__(self, joint: int, local, origin, direction, weight: float = 1.0, priority: int = 0):
        super().__init__(joint, local, origin, weight, priority)
        self.direction = _unit(direction, "a line goal")
        self.project = np.eye(3) - np.outer(self.direction, self.direction)


class PlaneGoal(_ProjectedPoint):
    """The point stays in the plane through ``origin`` with the normal ``normal``."""

    rows = 1

    def __init__(self, joint: int, local, origin, normal, weight: float = 1.0, priority: int = 0):
        super().__init__(joint, local, origin, weight, priority)
        self.normal = _unit(normal, "a plane goal")
        self.project = self.normal[None, :]
