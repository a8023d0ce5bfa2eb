"""The numeric core: pure numpy, never imports bpy.

skeleton: the hinge tree and its kinematics; goals: tasks with residual and Jacobian
rows; limits: joint bounds; solvers: CCD, Jacobian transpose, SR inverse with task
priority, all ``solve(problem, q0) -> SolveResult``.
"""

from .goals import AimGoal, Goal, LineGoal, OrientationGoal, PlaneGoal, PositionGoal
from .problem import Problem, SolveResult
from .skeleton import Kinematics, Skeleton
from .solvers import SOLVERS

__all__ = ["SOLVERS", "AimGoal", "Goal", "Kinematics", "LineGoal", "OrientationGoal", "PlaneGoal", "PositionGoal", "Problem",
           "Skeleton", "SolveResult"]
