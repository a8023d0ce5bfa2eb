"""Goal kinds: each gives residual rows and Jacobian rows through :class:`Goal`."""

from .aim import AimGoal
from .balance import BalanceGoal
from .base import Goal
from .floor import FloorGoal
from .line import LineGoal, PlaneGoal
from .orientation import OrientationGoal
from .pose import PoseGoal
from .position import PositionGoal
from .region import RegionGoal
from .together import TogetherGoal

__all__ = ["AimGoal", "BalanceGoal", "FloorGoal", "Goal", "LineGoal", "OrientationGoal", "PlaneGoal", "PoseGoal", "PositionGoal",
           "RegionGoal", "TogetherGoal"]
