"""The aim goal: zero when the axis points at the target, the Jacobian against finite
differences (the axis turns and the way to the target moves with the origin), and every
solver turning a chain's last bone to look at a point while its base is free to move."""

from __future__ import annotations

import numpy as np
import pytest
from chains import chain, random_frame, residual_jacobian

from welman_ik.core import SOLVERS, AimGoal, PositionGoal, Problem
from welman_ik.core.goals.aim import AXES
from welman_ik.core.problem import goal_errors

MIXED_AXES = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]]


@pytest.mark.parametrize("axis", list(AXES))
@pytest.mark.parametrize("seed", range(4))
def test_zero_when_aimed_and_the_jacobian_matches_finite_differences(axis, seed):
    sk, q, joint = random_frame(seed)
    rng = np.random.default_rng(seed)
    kin = sk.forward(q)
    index, sign = AXES[axis]
    local = np.zeros(3)
    local[index] = sign
    origin, tip = kin.points(np.array([joint, joint]), np.vstack([np.zeros(3), local]))
    aimed = AimGoal(joint, origin + 2.5 * (tip - origin), axis, length=0.4)
    assert np.abs(aimed.residual(kin)).max() < 1e-12
    goal = AimGoal(joint, origin + rng.normal(size=3), axis, length=0.4)
    assert goal.error(kin) > 1e-3
    np.testing.assert_allclose(goal.jacobian(kin), residual_jacobian(goal, sk, q), atol=1e-6)


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("seed", range(3))
def test_every_solver_aims_while_a_point_is_held(name, seed):
    """A 6-hinge chain: its middle held at a reachable point, its last bone's X axis aimed
    at a point 2 m away; each solver meets both."""
    rng = np.random.default_rng(seed)
    sk = chain([0.4] * 5, MIXED_AXES)
    kin = sk.forward(rng.uniform(-0.6, 0.6, 6))
    middle = kin.points(np.array([2]), np.array([[0.4, 0.0, 0.0]]))[0]
    goals = [PositionGoal(2, [0.4, 0.0, 0.0], middle), AimGoal(5, rng.normal(size=3) * 2.0, "X", length=0.4)]
    problem = Problem(sk, goals, tolerance=1e-5, max_iterations=2000 if name != "SR_INVERSE" else 200)
    result = SOLVERS[name](problem, np.zeros(6))
    assert goal_errors(goals, sk.forward(result.q)).max() <= 1e-5, (name, goal_errors(goals, sk.forward(result.q)))


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        AimGoal(0, [0, 0, 1], aim_axis="W")
    with pytest.raises(ValueError):
        AimGoal(0, [np.inf, 0, 0])
    with pytest.raises(ValueError):
        AimGoal(0, [0, 0, 1], length=-1.0)
