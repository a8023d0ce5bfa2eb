"""The numeric core: pure numpy, never imports bpy.

skeleton: the hinge tree and its kinematics; goals: tasks with residual and Jacobian
rows; masses: the segment mass model of the balance goal; limits: joint bounds; solvers:
CCD, Jacobian transpose, SR inverse with task priority, quasi-Newton (BFGS with the limits
as linear constraints), all ``solve(problem, q0) -> SolveResult``.
"""

from .goals import (
    AimGoal,
    BalanceGoal,
    FloorGoal,
    Goal,
    LineGoal,
    OrientationGoal,
    PlaneGoal,
    PoseGoal,
    PositionGoal,
    RegionGoal,
    TogetherGoal,
)
from .masses import segment_masses
from .problem import Problem, SolveResult
from .skeleton import Kinematics, Skeleton
from .solvers import SOLVERS

__all__ = ["SOLVERS", "AimGoal", "BalanceGoal", "FloorGoal", "Goal", "Kinematics", "LineGoal", "OrientationGoal", "PlaneGoal", "PoseGoal",
           "PositionGoal", "Problem", "RegionGoal", "Skeleton", "SolveResult", "TogetherGoal", "segment_masses"]
