"""The orientation goal: zero at its goal, its Jacobian against finite differences (rigid
and affine frames, joints that slide), and every solver bringing a chain's last frame to a
random reachable orientation, with and without a position goal on the same frame."""

from __future__ import annotations

import numpy as np
import pytest
from chains import (
    chain,
    random_frame,
    random_tree,
    residual_jacobian,
    rotation_of,
    tip_problem,
    weighted_error,
)

from welman_ik.core import SOLVERS, OrientationGoal, PositionGoal, Problem
from welman_ik.core.problem import goal_errors

ALL_AXES = [(True, True, True), (False, True, False), (True, False, True), (False, False, True)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("axes", ALL_AXES)
def test_residual_is_zero_at_the_goal_and_the_jacobian_matches_finite_differences(seed, axes):
    sk, q, joint = random_frame(seed)
    kin = sk.forward(q)
    goal = OrientationGoal(joint, rotation_of(kin, joint), axes=axes, length=0.3)
    assert np.abs(goal.residual(kin)).max() < 1e-12
    assert goal.residual(kin).shape == (goal.rows,) and goal.rows == 3 * sum(axes)
    np.testing.assert_allclose(goal.jacobian(kin), residual_jacobian(goal, sk, q), atol=1e-7)


def test_a_held_direction_leaves_the_twist_about_it_free():
    """Holding only Y, a turn about the frame's own Y changes nothing; about X it does."""
    sk = chain([1.0, 1.0], [[0, 1, 0], [1, 0, 0]])
    kin = sk.forward(np.zeros(2))
    goal = OrientationGoal(1, np.eye(3), axes=(False, True, False))
    twisted = sk.forward(np.array([0.7, 0.0]))  # joint 0 turns about Y: the child's Y stays
    assert goal.error(twisted) < 1e-12
    assert goal.error(sk.forward(np.array([0.0, 0.3]))) > 0.1
    assert goal.error(kin) == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_the_sr_inverse_reaches_a_reachable_orientation_and_position(seed):
    sk, goals, target = tip_problem(seed)
    result = SOLVERS["SR_INVERSE"](Problem(sk, goals, tolerance=1e-5, max_iterations=300), np.zeros(7))
    assert goal_errors(goals, sk.forward(result.q)).max() <= 1e-5
    turned = rotation_of(sk.forward(result.q), 6).T @ target
    assert np.degrees(np.arccos(np.clip((np.trace(turned) - 1) / 2, -1, 1))) < 0.01


@pytest.mark.parametrize("name", ["CCD", "JACOBIAN_TRANSPOSE"])
def test_ccd_and_the_transpose_reach_it_too(name):
    """CCD (Welman's direction terms in its sums) and the transpose (the weighted error)
    get there as well, in linearly converging iterations (the SR inverse takes about 10)."""
    sk, goals, target = tip_problem(0)
    result = SOLVERS[name](Problem(sk, goals, tolerance=1e-5, max_iterations=2500), np.zeros(7))
    assert result.converged, goal_errors(goals, sk.forward(result.q))
    turned = rotation_of(sk.forward(result.q), 6).T @ target
    assert np.degrees(np.arccos(np.clip((np.trace(turned) - 1) / 2, -1, 1))) < 0.01


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        OrientationGoal(0, np.full((3, 3), np.nan))
    with pytest.raises(ValueError):
        OrientationGoal(0, np.eye(3), axes=(False, False, False))
    with pytest.raises(ValueError):
        OrientationGoal(0, np.eye(3), length=0.0)


@pytest.mark.parametrize("seed", range(5))
def test_a_ccd_solve_never_raises_the_weighted_error(seed):
    """Each hinge takes its exact optimum over the points and the held axes together, so
    no solve ends worse than it started (random trees, sliders, orientation and position)."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(4, 8))
    sk = random_tree(rng, n, p_prismatic=0.25)
    target_kin = sk.forward(rng.uniform(-1, 1, n))
    joint = n - 1
    goals = [OrientationGoal(joint, rotation_of(target_kin, joint), axes=ALL_AXES[seed % 4], length=0.5),
             PositionGoal(joint, [0.1, 0.0, 0.0], target_kin.points(np.array([joint]), np.array([[0.1, 0.0, 0.0]]))[0])]
    problem = Problem(sk, goals, max_iterations=1)
    q = np.zeros(n)
    cost = weighted_error(problem, q)
    for _ in range(10):
        q = SOLVERS["CCD"](problem, q).q
        now = weighted_error(problem, q)
        assert now <= cost + 1e-10 * max(cost, 1.0)
        cost = now


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_of_orientation_goals_is_each_goal_evaluated_alone(seed):
    """Several goals with different held axes, lengths and joints (the retarget holds a
    dozen at once): the batch's residuals, Jacobian and errors are the goals' own, in order."""
    rng = np.random.default_rng(seed)
    sk, q, _ = random_frame(seed)
    kin = sk.forward(q)
    goals = []
    for k, axes in enumerate(ALL_AXES * 2):
        joint = int(rng.integers(0, sk.size))
        target = rotation_of(kin, joint) @ rotation_of(sk.forward(rng.normal(size=sk.size)), joint).T
        goals.append(OrientationGoal(joint, target, axes=axes, length=0.1 + 0.2 * k))
    residual, jacobian = OrientationGoal.stack(goals, kin)
    np.testing.assert_allclose(residual, np.concatenate([g.residual(kin) for g in goals]), atol=1e-12)
    np.testing.assert_allclose(jacobian, np.vstack([g.jacobian(kin) for g in goals]), atol=1e-12)
    np.testing.assert_allclose(OrientationGoal.errors(goals, kin), [g.error(kin) for g in goals], atol=1e-12)
    np.testing.assert_allclose(OrientationGoal.batch(goals).residuals(kin), residual, atol=1e-12)
