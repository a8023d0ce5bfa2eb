"""The quasi-Newton solver (Zhao & Badler 1994): BFGS on the goals' potential, joint limits
as an active set, priorities by escalating weights, the reference pose in the goals' null
space. Compared with the SR inverse on the problems where the SR inverse is the reference
(the solver-parametrised tests in test_solvers.py, test_ranges.py and the goal kinds' tests
run it too)."""

from __future__ import annotations

import numpy as np
import pytest
from chains import MIXED_AXES, chain, planar_chain, random_tree, tip_local, tip_position, tip_problem

from welman_ik.core import SOLVERS, AimGoal, LineGoal, PlaneGoal, PositionGoal, Problem, Skeleton
from welman_ik.core.problem import goal_errors
from welman_ik.core.solvers.quasi_newton import _bfgs

BOTH = ["SR_INVERSE", "QUASI_NEWTON"]
X, Y, Z = [1, 0, 0], [0, 1, 0], [0, 0, 1]


def figure() -> tuple[Skeleton, dict[str, tuple[int, list[float]]]]:
    """A small human-like tree: the root slides (3), a pelvis, two legs (ball hip, knee,
    ball ankle), a spine of two balls, two arms (ball shoulder, elbow, ball wrist); every
    hinge limited (knees and elbows bend one way only). Returns it and the feet's and
    hands' points (joint, local point)."""
    parent, prismatic, axis, offsets, lower, upper = [], [], [], [], [], []

    def add(p, slides, ax, offset, lo=-np.inf, hi=np.inf) -> int:
        parent.append(p)
        prismatic.append(slides)
        axis.append(ax)
        offsets.append(offset)
        lower.append(lo)
        upper.append(hi)
        return len(parent) - 1

    def ball(p, offset, limit) -> int:
        a = add(p, False, X, offset, -limit, limit)
        b = add(a, False, Y, [0, 0, 0], -limit, limit)
        return add(b, False, Z, [0, 0, 0], -limit, limit)

    root = add(add(add(-1, True, X, [0, 0, 1.0]), True, Y, [0, 0, 0]), True, Z, [0, 0, 0])
    pelvis = ball(root, [0, 0, 0], 1.0)
    points = {}
    for side in (-1, 1):
        knee = add(ball(pelvis, [0.1 * side, 0, 0], 1.5), False, X, [0, 0, -0.45], 0.0, 2.5)
        points[f"foot{side}"] = (ball(knee, [0, 0, -0.45], 0.6), [0, -0.15, -0.05])
    chest = ball(ball(pelvis, [0, 0, 0.3], 0.5), [0, 0, 0.3], 0.5)
    for side in (-1, 1):
        elbow = add(ball(chest, [0.2 * side, 0, 0.1], 2.0), False, X, [0, 0, -0.3], 0.0, 2.6)
        points[f"hand{side}"] = (ball(elbow, [0, 0, -0.25], 1.0), [0, 0, -0.08])
    n = len(parent)
    rest = np.stack([np.eye(4)] * n)
    rest[:, :3, 3] = offsets
    sk = Skeleton(parent=parent, prismatic=prismatic, axis=axis, rest=rest, lower=lower, upper=upper,
                  mobility=np.ones(n))
    return sk, points


def point(sk: Skeleton, q: np.ndarray, where: tuple[int, list[float]]) -> np.ndarray:
    return sk.forward(q).points(np.array([where[0]]), np.array([where[1]], dtype=float))[0]


def pinned_drag(sk, points, q0, target, reference=None) -> Problem:
    goals = [PositionGoal(*points[f], point(sk, q0, points[f]), priority=0) for f in ("foot-1", "foot1")]
    goals.append(PositionGoal(*points["hand1"], target, priority=1))
    return Problem(sk, goals, tolerance=1e-5, max_iterations=300, reference=reference)


# -- priorities -----------------------------------------------------------------------


def _conflicting_goals(separation: float, first: int, second: int) -> tuple[PositionGoal, PositionGoal]:
    """As in test_solvers.py: the end of link 2 at (1.2, 0.8), the tip ``separation`` metres
    from it; more than 1 m apart they conflict."""
    a_target = np.array([1.2, 0.8, 0.0])
    a = PositionGoal(1, tip_local(), a_target, priority=first)
    b = PositionGoal(2, tip_local(), a_target + separation * np.array([-1.0, 0.0, 0.0]), priority=second)
    return a, b


@pytest.mark.parametrize("name", BOTH)
@pytest.mark.parametrize(("separation", "best"), [(1.5, 0.5), (2.2, 1.2)])
@pytest.mark.parametrize("a_first", [True, False], ids=["A-first", "B-first"])
def test_task_priority_holds_and_swaps(name: str, separation: float, best: float, a_first: bool) -> None:
    """Two conflicting goals on a three-link arm: the priority-0 goal holds to 1e-5 m and the
    other gets as close as the first allows (the separation minus the 1 m link); swapping the
    priorities swaps which goal holds."""
    a, b = _conflicting_goals(separation, 0, 1) if a_first else _conflicting_goals(separation, 1, 0)
    result = SOLVERS[name](Problem(planar_chain(3), [a, b], max_iterations=200), [0.3, 0.3, 0.3])
    held, other = (0, 1) if a_first else (1, 0)
    assert result.errors[held] <= 1e-5
    assert result.errors[other] == pytest.approx(best, abs=1e-4)
    assert not result.converged


def test_compatible_priorities_both_met() -> None:
    sk = planar_chain(3)
    q_known = np.array([0.4, 0.9, -1.1])
    a = PositionGoal(1, tip_local(), tip_position(sk, q_known, 1, tip_local()), priority=0)
    b = PositionGoal(2, tip_local(), tip_position(sk, q_known, 2, tip_local()), priority=1)
    result = SOLVERS["QUASI_NEWTON"](Problem(sk, [a, b], max_iterations=200), [0.0, 0.2, 0.0])
    assert result.converged
    assert result.max_error <= 1e-5


def test_pins_hold_under_a_drag_out_of_reach() -> None:
    """Both feet pinned (priority 0), a hand dragged 1.5-4 m away (priority 1; three of
    the four targets out of reach): the feet stay within 1e-4 m, and the hand gets as near as they let it: its
    distance falls to at most 35% of the start's (28%, 1.6e-6, 24% and 22% measured)."""
    sk, points = figure()
    q0 = np.zeros(sk.size)
    rng = np.random.default_rng(3)
    for _ in range(4):
        direction = rng.normal(size=3)
        target = point(sk, q0, points["hand1"]) + rng.uniform(1.5, 4.0) * direction / np.linalg.norm(direction)
        problem = pinned_drag(sk, points, q0, target)
        result = SOLVERS["QUASI_NEWTON"](problem, q0)
        errors = goal_errors(problem.goals, sk.forward(result.q))
        assert errors[:2].max() <= 1e-4, errors
        start = goal_errors(problem.goals, sk.forward(q0))[2]
        assert errors[2] <= 0.35 * start, (errors[2], start)
        assert np.all(result.q >= sk.lower) and np.all(result.q <= sk.upper)


def test_pins_hold_while_a_reachable_drag_is_met() -> None:
    """Feet pinned, the hand dragged 5 cm: everything met, in a few iterations like the SR."""
    sk, points = figure()
    q0 = np.zeros(sk.size)
    rng = np.random.default_rng(4)
    for _ in range(3):
        target = point(sk, q0, points["hand1"]) + 0.05 * rng.normal(size=3)
        problem = pinned_drag(sk, points, q0, target)
        result = SOLVERS["QUASI_NEWTON"](problem, q0)
        assert result.converged, result.errors
        assert result.iterations <= 20


# -- limits ---------------------------------------------------------------------------


def test_limits_are_never_exceeded_over_many_targets_out_of_reach() -> None:
    """Random trees with finite limits around a random start, three goals each far out of
    reach: every returned joint lies within [lower, upper] exactly (no slack), and some sit
    exactly on a bound."""
    rng = np.random.default_rng(11)
    on_bound = 0
    for case in range(25):
        tree = random_tree(rng, int(rng.integers(4, 12)), p_prismatic=0.2)
        n = tree.size
        q0 = rng.uniform(-1.0, 1.0, n)
        lower, upper = q0 - rng.uniform(0.0, 1.0, n), q0 + rng.uniform(0.0, 1.0, n)
        sk = Skeleton(parent=tree.parent, prismatic=tree.prismatic, axis=tree.axis, rest=tree.rest, lower=lower,
                      upper=upper, mobility=tree.mobility)
        goals = [PositionGoal(int(j), rng.uniform(-0.5, 0.5, 3), rng.normal(size=3) * 20.0, priority=case % 2 * int(k))
                 for k, j in enumerate(rng.integers(0, n, 3))]
        result = SOLVERS["QUASI_NEWTON"](Problem(sk, goals, max_iterations=60), q0)
        assert np.all(result.q >= lower) and np.all(result.q <= upper)
        assert np.all(np.isfinite(result.q))
        on_bound += int(np.sum((result.q == lower) | (result.q == upper)))
    assert on_bound > 10


@pytest.mark.parametrize("name", BOTH)
def test_figure_with_limits_reaches_within_them(name: str) -> None:
    """Feet pinned, a hand to a reachable point of a known limited pose: met, within limits."""
    sk, points = figure()
    rng = np.random.default_rng(5)
    q0 = np.zeros(sk.size)
    known = np.clip(rng.uniform(-0.5, 0.5, sk.size), sk.lower, sk.upper)
    known[:3] = 0.0
    known[:6] = 0.0  # root and pelvis as at the start, so the feet's pins hold there
    problem = pinned_drag(sk, points, known, point(sk, known, points["hand1"]))
    result = SOLVERS[name](problem, q0)
    assert result.converged, result.errors
    assert np.all(result.q >= sk.lower) and np.all(result.q <= sk.upper)


# -- goal kinds -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_random_targets_on_random_trees_as_the_sr(seed: int) -> None:
    """Three position goals on a random 15-joint tree, at the points of a random pose: both
    solvers meet them (tolerance 1e-5 m)."""
    rng = np.random.default_rng(seed)
    sk = random_tree(rng, 15, p_prismatic=0.1)
    kin = sk.forward(rng.uniform(-1.0, 1.0, 15))
    local = np.array([[0.1, 0.0, 0.0]])
    goals = [PositionGoal(j, local[0], kin.points(np.array([j]), local)[0]) for j in (5, 10, 14)]
    for name in BOTH:
        result = SOLVERS[name](Problem(sk, goals, max_iterations=300), np.zeros(15))
        assert result.converged, (name, result.errors)


@pytest.mark.parametrize("seed", range(3))
def test_orientation_and_position_of_a_tip(seed: int) -> None:
    sk, goals, _ = tip_problem(seed)
    result = SOLVERS["QUASI_NEWTON"](Problem(sk, goals, tolerance=1e-5, max_iterations=300), np.zeros(7))
    assert goal_errors(goals, sk.forward(result.q)).max() <= 1e-5
    assert result.iterations <= 30


@pytest.mark.parametrize("seed", range(2))
def test_line_plane_and_aim_together(seed: int) -> None:
    """A 7-hinge chain: joint 3's end on a line, the tip in a plane, the tip frame's X aimed
    at a point, all through points of one random pose."""
    rng = np.random.default_rng(seed)
    sk = chain([0.4] * 6, MIXED_AXES)
    kin = sk.forward(rng.uniform(-0.7, 0.7, 7))
    end = np.array([0.4, 0.0, 0.0])
    middle, tip = kin.points(np.array([3, 6]), np.vstack([end, end]))
    origin = kin.points(np.array([6]), np.zeros((1, 3)))[0]
    goals = [LineGoal(3, end, middle, rng.normal(size=3)), PlaneGoal(6, end, tip, rng.normal(size=3)),
             AimGoal(6, origin + 2.0 * (tip - origin), "X", length=0.4)]
    result = SOLVERS["QUASI_NEWTON"](Problem(sk, goals, tolerance=1e-5, max_iterations=300), np.zeros(7))
    assert goal_errors(goals, sk.forward(result.q)).max() <= 1e-5


# -- reference pose -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_reference_pose_spends_the_freedom_the_goals_leave(seed: int) -> None:
    """Feet pinned and a hand dragged 30 cm, the start the preferred pose: the goals are met
    to tolerance, and the result is nearer the reference than the solve without one,
    measured in the world: the root-sum-square displacement of every joint's origin from
    where the reference puts it (a ball joint's three hinges share an origin: it counts
    three times; a joint that turns only its own bone's tip, as a wrist, counts little).
    At most 0.97 of the free solve's (0.82, 0.64, 0.945 measured), and at most 1.15 of
    the SR inverse's with the same reference (1.09, 1.01, 1.01)."""
    sk, points = figure()
    q0 = np.zeros(sk.size)
    rng = np.random.default_rng(seed)
    target = point(sk, q0, points["hand1"]) + 0.3 * rng.normal(size=3) / np.sqrt(3.0)
    free = SOLVERS["QUASI_NEWTON"](pinned_drag(sk, points, q0, target), q0)
    problem = pinned_drag(sk, points, q0, target, reference=q0.copy())
    preferred = SOLVERS["QUASI_NEWTON"](problem, q0)
    assert free.converged and preferred.converged, preferred.errors
    assert np.all(preferred.q >= sk.lower) and np.all(preferred.q <= sk.upper)
    every = np.arange(sk.size)

    def displacement(q: np.ndarray) -> float:
        moved = sk.forward(q).points(every, np.zeros((sk.size, 3))) - sk.forward(q0).points(every, np.zeros((sk.size, 3)))
        return float(np.sqrt(np.sum(moved**2)))

    kept, spent = displacement(preferred.q), displacement(free.q)
    assert kept <= 0.97 * spent, (kept, spent)
    by_sr = SOLVERS["SR_INVERSE"](problem, q0)
    assert by_sr.converged
    assert kept <= 1.15 * displacement(by_sr.q), (kept, displacement(by_sr.q))


def test_a_pose_met_at_its_reference_is_left_without_trials() -> None:
    """The goals met and the pose at its preferred pose (a scripted drag whose limbs the
    posture placed there): nothing is left to gain, and the solve ends at once, without
    trying a step toward the reference and halving it over and over (each trial two forward
    passes and a Jacobian: 3.6 ms of a 7.9 ms scripted call on the human)."""
    sk, points = figure()
    q0 = np.zeros(sk.size)
    near = point(sk, q0, points["hand1"]) + np.array([1e-7, -2e-7, 1e-7])  # met, to a fraction of the tolerance
    problem = pinned_drag(sk, points, q0, near, reference=q0.copy())
    passes = []
    forward = sk._forward

    def counted(q):
        passes.append(1)
        return forward(q)

    object.__setattr__(sk, "_forward", counted)
    try:
        result = SOLVERS["QUASI_NEWTON"](problem, q0)
    finally:
        object.__delattr__(sk, "_forward")
    assert result.converged and np.array_equal(result.q, q0)
    assert len(passes) <= 2, len(passes)


def test_the_sr_inverse_met_at_its_reference_works_out_no_step(monkeypatch) -> None:
    """The same for the SR inverse: with every goal met and the pose at its reference there is
    nothing to gain, and it ends before working out a prioritised step it would not take."""
    from welman_ik.core.solvers import sr_inverse

    sk, points = figure()
    q0 = np.zeros(sk.size)
    near = point(sk, q0, points["hand1"]) + np.array([1e-7, -2e-7, 1e-7])
    steps = []
    step = sr_inverse.prioritized_step

    def counted(*args, **kwargs):
        steps.append(1)
        return step(*args, **kwargs)

    monkeypatch.setattr(sr_inverse, "prioritized_step", counted)
    result = SOLVERS["SR_INVERSE"](pinned_drag(sk, points, q0, near, reference=q0.copy()), q0)
    assert result.converged and np.array_equal(result.q, q0)
    assert steps == []


# -- the update -----------------------------------------------------------------------


def test_bfgs_update_meets_the_secant_and_stays_positive_definite() -> None:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(6, 6))
    b = m @ m.T + np.eye(6)
    s = rng.normal(size=6)
    y = b @ s + 0.1 * rng.normal(size=6)
    assert s @ y > 0
    updated = _bfgs(b, s, y, float(s @ y))
    np.testing.assert_allclose(updated @ s, y, atol=1e-10)
    np.testing.assert_allclose(updated, updated.T, atol=1e-12)
    assert np.linalg.eigvalsh(updated).min() > 0
