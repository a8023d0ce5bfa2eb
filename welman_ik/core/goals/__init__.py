"""Goal kinds: each gives residual rows and Jacobian rows through :class:`Goal`."""

from .aim import AimGoal
from .base import Goal
from .line import LineGoal, PlaneGoal
from .orientation import OrientationGoal
from .position import PositionGoal

__all__ = ["AimGoal", "Goal", "LineGoal", "OrientationGoal", "PlaneGoal", "PositionGoal"]
