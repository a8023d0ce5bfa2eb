"""Goal kinds: each gives residual rows and Jacobian rows through :class:`Goal`."""

from .base import Goal
from .position import PositionGoal

__all__ = ["Goal", "PositionGoal"]
