"""Aim goal: one of a bone's own axes should point at a world point (a head looking at
something; Zhao & Badler 1989's aiming goal), wherever the bone goes.

With o the frame's origin, v = p(length a) - o its axis (a the local unit axis), u = v/|v|,
and t = (target - o)/|target - o| the way to the target:

    e = length (t - u),
    J = length ((I - u u^T) (dp(length a) - do) / |v| + (I - t t^T) do / |target - o|)

Both directions move with the frame: the axis turns, and the way to the target turns as
the origin moves. The rows are in metres (the angle off the target times ``length``). CCD
takes it as a direction pair, toward where the target lies from the origin at each sweep.
"""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal

AXES = {"X": (0, 1.0), "Y": (1, 1.0), "Z": (2, 1.0), "-X": (0, -1.0), "-Y": (1, -1.0), "-Z": (2, -1.0)}


class AimGoal(Goal):
    """The frame of ``joint``'s axis ``aim_axis`` ('X', 'Y', 'Z', '-X', '-Y', '-Z') should
    point at world ``target`` [m]; ``length`` [m] scales the rows (a bone's length)."""

    def __init__(self, joint: int, target, aim_axis: str = "Y", length: float = 1.0,
                 weight: float = 1.0, priority: int = 0):
        super().__init__(weight, priority)
        if aim_axis not in AXES:
            raise ValueError(f"aim axis must be one of {', '.join(AXES)}, got {aim_axis!r}")
        if not (np.isfinite(length) and length > 0.0):
            raise ValueError(f"aim goal needs a length > 0, got {length}")
        self.target = np.asarray(target, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.target)):
            raise ValueError("aim goal needs a finite target")
        index, sign = AXES[aim_axis]
        self.joint = np.array([int(joint)])
        self.length = float(length)
        self.local = np.zeros((2, 3))
        self.local[1, index] = sign * self.length  # the origin, then the aimed axis's point

    def _geometry(self, kin: Kinematics):
        points = kin.points(np.repeat(self.joint, 2), self.local)
        axis = points[1] - points[0]
        to_target = self.target - points[0]
        return points, axis, float(np.linalg.norm(axis)), to_target, float(np.linalg.norm(to_target))

    def residual(self, kin: Kinematics) -> np.ndarray:
        _, axis, size, to_target, distance = self._geometry(kin)
        if distance < 1e-12:
            return np.zeros(3)  # at the target: every way points at it
        return self.length * (to_target / distance - axis / size)

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        points, axis, size, to_target, distance = self._geometry(kin)
        if distance < 1e-12:
            return np.zeros((3, kin.skeleton.size))
        columns = kin.point_jacobian(np.repeat(self.joint, 2), points)  # (2, 3, n)
        u, t = axis / size, to_target / distance
        turn = (np.eye(3) - np.outer(u, u)) @ (columns[1] - columns[0]) / size
        follow = (np.eye(3) - np.outer(t, t)) @ columns[0] / distance
        return self.length * (turn + follow)

    def point_pairs(self, kin: Kinematics):
        """The frame's origin, where it is (the aim pulls no point; see ``direction_pairs``)."""
        origin = kin.points(self.joint, np.zeros((1, 3)))
        return self.joint, origin, origin.copy()

    def direction_pairs(self, kin: Kinematics):
        _, axis, size, to_target, distance = self._geometry(kin)
        if distance < 1e-12:
            return np.zeros(0, dtype=np.intp), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0)
        return self.joint, (axis / size)[None], (to_target / distance)[None], np.array([self.length])
