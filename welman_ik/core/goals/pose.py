"""Pose goal: a point on a bone should be at a world point AND the bone's frame should have a
world orientation (an effector placed like a hand on a prop: where and which way round).

It is a position goal and an orientation goal on the same frame, their rows one after the
other (Welman 1993, section 5.4, holds both through points riding on the frame):

    e = [target - p(q);  e_orientation],   J = [dp/dq;  J_orientation]

with p the frame's point ``local`` and (e_orientation, J_orientation) those of
:class:`~.orientation.OrientationGoal` (3 rows per held axis, in metres: the angle off
times ``length``), so 3 + 3 * (held axes) rows in all. CCD takes the position's point pair
and the orientation's direction pairs.
"""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal
from .orientation import OrientationGoal
from .position import PositionGoal


class PoseGoal(Goal):
    """Point ``local`` [m] in the frame of ``joint`` should reach world ``target_point`` [m],
    and the frame should have the world rotation ``target_rotation`` (3x3, columns the
    target's X, Y, Z directions) along its axes where ``axes`` (3 bools) is True;
    ``length`` [m]: how far out the held axes are measured (a bone's length is natural)."""

    refused_by: dict[str, str] = {}

    def __init__(self, joint: int, local, target_point, target_rotation, axes=(True, True, True),
                 length: float = 1.0, weight: float = 1.0, priority: int = 0):
        super().__init__(weight, priority)
        self.position = PositionGoal(joint, local, target_point, weight, priority)
        self.orientation = OrientationGoal(joint, target_rotation, axes, length, weight, priority)
        self.joint = self.position.joint
        self.rows = 3 + self.orientation.rows

    @property
    def target(self) -> np.ndarray:
        """The world point the bone's point should reach [m]."""
        return self.position.target

    def residual(self, kin: Kinematics) -> np.ndarray:
        return np.concatenate([self.position.residual(kin), self.orientation.residual(kin)])

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        return np.vstack([self.position.jacobian(kin), self.orientation.jacobian(kin)])

    def point_pairs(self, kin: Kinematics):
        return self.position.point_pairs(kin)

    def direction_pairs(self, kin: Kinematics):
        return self.orientation.direction_pairs(kin)
