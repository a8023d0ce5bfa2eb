"""The shortcuts CCD and the Jacobian transpose take for position goals give what the general
forms give.

Both solvers gather the position goals' points once per solve (``ccd.Pairs``); CCD's
sweep works on Python floats from a plan of which points each joint moves, kept with the
skeleton across solves; the transpose takes J^T W e and J dq of position goals from the
joints' screws instead of the Jacobian; the preferred pose's pull tries its smallest step
first. A ``PositionGoal`` subclass is the same goal to every formula but not to these
shortcuts (the solvers then ask it for its pairs and Jacobian rows, as for any other kind),
so solving a problem both ways compares the shortcuts with the general forms.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from chains import planar_chain, random_rotation, random_tree, tip_local, translation

from welman_ik.core import SOLVERS, OrientationGoal, PositionGoal, Problem, Skeleton
from welman_ik.core.solvers.ccd import Pairs
from welman_ik.core.solvers.preference import ReferencePull
from welman_ik.core.solvers.sr_inverse import REFERENCE_DRIFT

SHORTCUT_SOLVERS = ["CCD", "JACOBIAN_TRANSPOSE"]


class GenericPosition(PositionGoal):
    """A position goal the solvers treat as a kind of its own."""


def generic(goals) -> list:
    return [GenericPosition(int(g.joint[0]), g.local[0], g.target, weight=g.weight, priority=g.priority)
            if type(g) is PositionGoal else g for g in goals]


def random_problem(seed: int, variant: str) -> tuple[Problem, np.ndarray]:
    """A random tree (hinges and sliders, rotated rest frames, a rotated and uniformly
    scaled base, mirrored for ``mirrored``), 1-4 position goals at points it can reach, on
    two priority levels, and a start near them; ``limits``: finite limits around the
    start, ``detached``: some joints that do not inherit their parent's rotation,
    ``oriented``: an orientation goal as well, ``reference``: the start as preferred pose."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    base = np.eye(4)
    base[:3, :3] = random_rotation(rng) * rng.uniform(0.5, 2.0)
    if variant == "mirrored":
        base[:3, :3] = base[:3, :3] @ np.diag([-1.0, 1.0, 1.0])
    base[:3, 3] = rng.uniform(-2.0, 2.0, 3)
    sk = random_tree(rng, n, p_prismatic=0.2, base=base)
    if variant == "detached":
        sk = replace(sk, inherits=rng.random(n) > 0.4)
    pose = rng.uniform(-1.0, 1.0, n)
    if variant == "limits":
        sk = replace(sk, lower=pose - rng.uniform(0.2, 1.5, n), upper=pose + rng.uniform(0.2, 1.5, n))
    kin = sk.forward(pose)
    goals = []
    for _ in range(int(rng.integers(1, 5))):
        joint, local = int(rng.integers(0, n)), rng.uniform(-0.5, 0.5, 3)
        goals.append(PositionGoal(joint, local, kin.points(np.array([joint]), local[None])[0],
                                  weight=rng.uniform(0.5, 2.0), priority=int(rng.integers(0, 2))))
    if variant == "oriented":
        joint = int(rng.integers(0, n))
        linear = kin.frames[joint, :3, :3]
        goals.append(OrientationGoal(joint, linear / np.linalg.norm(linear, axis=0), length=0.3))
    q0 = np.clip(pose + rng.normal(0.0, 0.3, n), sk.lower, sk.upper)
    reference = q0 if variant == "reference" else None
    return Problem(sk, goals, max_iterations=40, reference=reference), q0


VARIANTS = ["plain", "mirrored", "limits", "detached", "oriented", "reference"]


@pytest.mark.parametrize("name", SHORTCUT_SOLVERS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", range(6))
def test_position_shortcuts_solve_as_the_general_forms(name: str, variant: str, seed: int) -> None:
    """The same problem with its position goals taken by the shortcuts and by the general
    forms: the same iterations, convergence and pose (to round-off)."""
    problem, q0 = random_problem(seed, variant)
    fast = SOLVERS[name](problem, q0.copy())
    slow = SOLVERS[name](replace(problem, goals=generic(problem.goals)), q0.copy())
    assert fast.iterations == slow.iterations
    assert fast.converged == slow.converged
    np.testing.assert_allclose(fast.q, slow.q, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(fast.errors, slow.errors, rtol=0.0, atol=1e-9)


def test_pairs_are_the_goals_own_in_their_order() -> None:
    """Position goals' pairs first (in goal order), then the other goals' own point pairs;
    directions are the goals' own, weighted by weight times length squared; the errors
    are the goals' (GoalBatch's) whether or not every goal is a position goal."""
    problem, q = random_problem(3, "oriented")
    goals = list(problem.goals)
    kin = problem.skeleton.forward(q)
    weights = np.arange(1.0, len(goals) + 1.0)
    joints, points, targets, w = Pairs(goals).points(kin, weights)
    order = [i for i, g in enumerate(goals) if type(g) is PositionGoal]
    order += [i for i, g in enumerate(goals) if type(g) is not PositionGoal]
    own = [goals[i].point_pairs(kin) for i in order]
    np.testing.assert_array_equal(joints, np.concatenate([j for j, _, _ in own]))
    np.testing.assert_allclose(points, np.vstack([p for _, p, _ in own]), rtol=0.0, atol=1e-15)
    np.testing.assert_array_equal(targets, np.vstack([t for _, _, t in own]))
    np.testing.assert_array_equal(w, np.concatenate([np.full(len(j), weights[i]) for i, (j, _, _) in zip(order, own)]))
    d_joints, units, d_targets, d_w = Pairs(goals).directions(kin, weights)
    j, u, t, length = goals[-1].direction_pairs(kin)
    np.testing.assert_array_equal(d_joints, j)
    np.testing.assert_allclose(units, u, rtol=0.0, atol=1e-15)
    np.testing.assert_array_equal(d_targets, t)
    np.testing.assert_allclose(d_w, weights[-1] * np.asarray(length) ** 2)
    for some in (goals, [g for g in goals if type(g) is PositionGoal]):
        np.testing.assert_allclose(Pairs(some).errors(kin), [g.error(kin) for g in some], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", SHORTCUT_SOLVERS)
def test_kept_plans_follow_the_goals_and_the_active_joints(name: str) -> None:
    """Solves of other goals, weights and active joints on the same skeleton in between
    leave a solve's result exactly what it was the first time."""
    problem, q0 = random_problem(5, "plain")
    n = problem.skeleton.size
    first = SOLVERS[name](problem, q0.copy())
    goal = problem.goals[0]
    others = [
        replace(problem, goals=[PositionGoal(int(goal.joint[0]), goal.local[0], goal.target + 0.1, weight=3.0)]),
        replace(problem, active=np.arange(n) % 2 == 0),
        replace(problem, goals=list(problem.goals)[::-1]),
    ]
    for other in others:
        SOLVERS[name](other, q0.copy())
    again = SOLVERS[name](problem, q0.copy())
    np.testing.assert_array_equal(again.q, first.q)
    assert again.iterations == first.iterations


def swing_cost(sk: Skeleton, goals, q: np.ndarray, joint: int, angle: float) -> float:
    trial = q.copy()
    trial[joint] = angle
    kin = sk.forward(trial)
    return sum(g.weight * g.error(kin) ** 2 for g in goals)


@pytest.mark.parametrize("inherits", [True, False])
@pytest.mark.parametrize("mirrored", [False, True])
def test_a_ccd_visit_turns_its_hinge_to_the_best_angle(inherits: bool, mirrored: bool) -> None:
    """One hinge free (the root), three weighted goal points on a joint below it that does
    or does not inherit its rotation, under a base that may be mirrored: one sweep puts
    the hinge at the angle of least weighted squared error (a scan of the circle finds
    none better)."""
    rest = np.stack([np.eye(4), translation([1.0, 0.2, 0.0])])
    rest[1, :3, :3] = random_rotation(np.random.default_rng(2))
    base = np.diag([-1.0, 1.0, 1.0, 1.0]) if mirrored else np.eye(4)
    sk = Skeleton(parent=[-1, 0], prismatic=[False, False], axis=[[0.2, 0.1, 1.0], [1.0, 0.0, 0.0]], rest=rest,
                  lower=np.full(2, -np.inf), upper=np.full(2, np.inf), mobility=np.ones(2), base=base,
                  inherits=[True, inherits])
    rng = np.random.default_rng(4)
    goals = [PositionGoal(1, rng.uniform(-0.5, 0.5, 3), rng.uniform(-1.5, 1.5, 3), weight=w) for w in (0.5, 1.0, 2.0)]
    q0 = np.array([0.3, 0.4])
    problem = Problem(sk, goals, active=np.array([True, False]), max_iterations=1)
    q = SOLVERS["CCD"](problem, q0).q
    best = min(swing_cost(sk, goals, q0, 0, a) for a in np.linspace(-np.pi, np.pi, 20001))
    assert swing_cost(sk, goals, q0, 0, q[0]) <= best + 1e-9
    assert q[1] == q0[1]


def pull_problem(reference: np.ndarray) -> tuple[Problem, np.ndarray]:
    """A three-link arm with its tip pinned where it is, preferring ``reference``."""
    sk = planar_chain(3)
    q = np.array([0.4, 0.5, 0.6])
    tip = sk.forward(q).points(np.array([2]), tip_local()[None])[0]
    return Problem(sk, [PositionGoal(2, tip_local(), tip)], reference=reference), q


@pytest.mark.parametrize(("offset", "expected"), [(1e-3, 0), (4e-3, 2), (0.05, 5), (1.0, None)])
def test_a_pull_is_the_largest_halving_that_keeps_the_goals(offset: float, expected: int | None) -> None:
    """From a pose that meets its goal: a reference so near that the whole pull keeps the
    goal takes all of it; one farther takes the largest halving that does; one so far
    that even the smallest halving drifts takes none."""
    problem, q = pull_problem(np.array([0.4, 0.5, 0.6]) + offset * np.array([1.0, -1.0, 1.0]))
    sk = problem.skeleton
    kin = sk.forward(q)
    pull = ReferencePull(problem, kin)
    errors = np.array([g.error(kin) for g in problem.goals])
    allowed = np.maximum(errors, problem.tolerance) + REFERENCE_DRIFT * pull.size
    steps = [q + 0.5**h * pull.rate * (problem.reference - q) for h in range(6)]
    keeps = [all(g.error(sk.forward(step)) <= a for g, a in zip(problem.goals, allowed)) for step in steps]
    assert (keeps.index(True) if any(keeps) else None) == expected  # the case this offset makes
    pulled = pull.step(q, kin, errors)
    if expected is None:
        assert pulled is None
    else:
        np.testing.assert_allclose(pulled[0], steps[expected], rtol=0.0, atol=1e-15)
