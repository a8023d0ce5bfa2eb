"""Goal kinds: each gives residual rows and Jacobian rows through :class:`Goal`."""

from .base import Goal
from .orientation import OrientationGoal
from .position import PositionGoal

__all__ = ["Goal", "OrientationGoal", "PositionGoal"]
