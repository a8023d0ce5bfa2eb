"""Line and plane goals: zero on the line or plane and free along it, the Jacobian against
finite differences, and every solver bringing a chain's tip onto a line or a plane."""

from __future__ import annotations

import numpy as np
import pytest
from chains import chain, random_frame, residual_jacobian

from welman_ik.core import SOLVERS, LineGoal, PlaneGoal, Problem
from welman_ik.core.problem import goal_errors

MIXED_AXES = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]]
TIP = np.array([0.3, 0.0, 0.0])


def make(kind: str, joint: int, local, origin, direction):
    return (LineGoal if kind == "LINE" else PlaneGoal)(joint, local, origin, direction)


@pytest.mark.parametrize("kind", ["LINE", "PLANE"])
@pytest.mark.parametrize("seed", range(6))
def test_zero_on_it_free_along_it_and_the_jacobian_matches_finite_differences(kind, seed):
    sk, q, joint = random_frame(seed)
    rng = np.random.default_rng(seed)
    local = rng.uniform(-0.5, 0.5, 3)
    kin = sk.forward(q)
    point = kin.points(np.array([joint]), local[None])[0]
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    free = np.cross(direction, rng.normal(size=3)) if kind == "PLANE" else direction  # a way along it
    goal = make(kind, joint, local, point + 0.7 * free, direction)
    assert np.abs(goal.residual(kin)).max() < 1e-12
    assert goal.residual(kin).shape == (goal.rows,)
    off = make(kind, joint, local, point + 0.2 * (direction if kind == "PLANE" else np.cross(direction, free + 1)),
               direction)
    assert off.error(kin) > 1e-3
    np.testing.assert_allclose(off.jacobian(kin), residual_jacobian(off, sk, q), atol=1e-7)


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("kind", ["LINE", "PLANE"])
@pytest.mark.parametrize("seed", range(3))
def test_every_solver_brings_the_tip_onto_it(name, kind, seed):
    """A 6-hinge chain's tip onto a random line or plane through a reachable point."""
    rng = np.random.default_rng(seed)
    sk = chain([0.4] * 5, MIXED_AXES)
    through = sk.forward(rng.uniform(-0.8, 0.8, 6)).points(np.array([5]), TIP[None])[0]
    goal = make(kind, 5, TIP, through, rng.normal(size=3))
    problem = Problem(sk, [goal], tolerance=1e-5, max_iterations=500)
    result = SOLVERS[name](problem, np.zeros(6))
    assert goal_errors([goal], sk.forward(result.q))[0] <= 1e-5, name


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        LineGoal(0, TIP, [0, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError):
        PlaneGoal(0, TIP, [np.nan, 0, 0], [0, 0, 1])
