"""Spherical joint ranges: the swing-twist split, the projection, and every solver
keeping ball joints inside their cones while still reaching what the ranges allow."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from chains import random_rotation, rotation, translation

from welman_ik.core import SOLVERS, PositionGoal, Problem, Skeleton
from welman_ik.core.problem import goal_errors
from welman_ik.core.ranges import SphericalRanges, closest_on_ellipse, compose, euler_angles, swing_twist

ALL = list(SOLVERS)
ORDERS = list(itertools.permutations(range(3)))


def test_swing_twist_round_trip() -> None:
    """compose(swing_twist(R)) is R, the swing axis lies in the XZ plane and carries Y
    to R Y, for rotations with swing below 180 degrees."""
    rng = np.random.default_rng(1)
    rs = np.stack([random_rotation(rng) for _ in range(200)])
    rs = rs[rs[:, 1, 1] > -0.99]
    sx, sz, twist = swing_twist(rs)
    np.testing.assert_allclose(compose(sx, sz, twist), rs, atol=1e-9)
    assert np.all(np.abs(twist) <= np.pi)
    swing_only = compose(sx, sz, np.zeros_like(sx))
    np.testing.assert_allclose(swing_only[:, :, 1], rs[:, :, 1], atol=1e-9)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_angles_for_every_order(order) -> None:
    """R_i(a) R_j(b) R_k(c) is rebuilt from the angles found, for all six axis orders,
    and the angles picked are the solution nearest the given ones."""
    rng = np.random.default_rng(2)
    axes = np.eye(3)
    angles = rng.uniform(-1.4, 1.4, size=(50, 3))
    rs = np.stack([rotation(axes[order[0]], a) @ rotation(axes[order[1]], b) @ rotation(axes[order[2]], c)
                   for a, b, c in angles])
    found = euler_angles(rs, np.tile(order, (50, 1)), angles + 0.01 + 2 * np.pi)
    np.testing.assert_allclose(found, angles + 2 * np.pi, atol=1e-9)


def test_closest_point_on_ellipse() -> None:
    """The point found is on the ellipse and no sampled point of it is closer."""
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.05, 2.5, 100), rng.uniform(0.05, 2.5, 100)
    x, y = rng.uniform(0, 4, 100), rng.uniform(0, 4, 100)
    outside = (x / a) ** 2 + (y / b) ** 2 > 1
    x, y, a, b = x[outside], y[outside], a[outside], b[outside]
    px, py = closest_on_ellipse(x, y, a, b)
    np.testing.assert_allclose((px / a) ** 2 + (py / b) ** 2, 1.0, atol=1e-9)
    t = np.linspace(0, np.pi / 2, 20001)
    sampled = np.min(np.hypot(a[:, None] * np.cos(t) - x[:, None], b[:, None] * np.sin(t) - y[:, None]), axis=1)
    assert np.all(np.hypot(px - x, py - y) <= sampled + 1e-9)


def ball(order=(2, 0, 1), length: float = 1.0) -> Skeleton:
    """A fixed upper link (joint 0, frozen) and a ball joint of three hinges at its end
    (axes in ``order``), whose bone points along +Y, then a hinge at the bone's tip."""
    axes = np.eye(3)
    n = 5
    rest = np.stack([np.eye(4)] * n)
    rest[1] = translation([0.0, 1.0, 0.0])
    rest[4] = translation([0.0, length, 0.0])
    return Skeleton(parent=np.arange(n) - 1, prismatic=np.zeros(n, bool),
                    axis=np.vstack([[0, 0, 1], axes[list(order)], [1, 0, 0]]), rest=rest,
                    lower=np.full(n, -np.inf), upper=np.full(n, np.inf), mobility=np.array([0.0, 1, 1, 1, 1]))


def cone(roll: float = 0.0, swing_x=(-0.3, 0.6), swing_z=(-0.2, 0.4), twist=(-0.1, 0.2)) -> SphericalRanges:
    return SphericalRanges(joints=[[1, 2, 3]], swing_x=[swing_x], swing_z=[swing_z], twist=[twist], roll=[roll])


def elliptic_measure(ranges: SphericalRanges, sx: np.ndarray, sz: np.ndarray) -> np.ndarray:
    """(s_x / a_x)^2 + (s_z / a_z)^2 with each quadrant's own semi-axes (1 on the boundary)."""
    ax = np.where(sx >= 0, ranges.swing_x[:, 1], -ranges.swing_x[:, 0])
    az = np.where(sz >= 0, ranges.swing_z[:, 1], -ranges.swing_z[:, 0])
    return (sx / ax) ** 2 + (sz / az) ** 2


def boundary_samples(ranges: SphericalRanges, count: int = 40001) -> tuple[np.ndarray, np.ndarray]:
    """Points (s_x, s_z) sampled densely along the whole boundary of ball joint 0's swing
    range, quadrant by quadrant."""
    t = np.linspace(0.0, np.pi / 2, count // 4)
    (x_lo, x_hi), (z_lo, z_hi) = ranges.swing_x[0], ranges.swing_z[0]
    xs = np.concatenate([x_hi * np.cos(t), x_lo * np.cos(t), x_lo * np.cos(t), x_hi * np.cos(t)])
    zs = np.concatenate([z_hi * np.sin(t), z_hi * np.sin(t), z_lo * np.sin(t), z_lo * np.sin(t)])
    return xs, zs


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("roll", [0.0, 0.7])
def test_projection_lands_inside_and_keeps_inside_alone(order, roll: float) -> None:
    """Random rotations: those inside are not touched. Those outside are moved to the
    closest allowed rotation, judged on the swing-twist split: a swing outside its
    ellipse ends on it (elliptic measure 1 to 1e-9), no farther from where it was than
    the nearest of 40000 points sampled along the boundary; a swing inside is kept; a
    twist outside its range ends on the nearer bound, one inside is kept (1e-9 rad)."""
    sk = ball(order)
    ranges = cone(roll)
    ranges.check(sk)
    bx, bz = boundary_samples(ranges)
    rng = np.random.default_rng(4)
    counts = {"swing": 0, "twist": 0}
    for _ in range(60):
        q = np.zeros(5)
        q[1:4] = rng.uniform(-1.2, 1.2, 3)
        projected = ranges.project(sk, q)
        assert ranges.excess(sk, projected)[0] <= 1e-9
        if ranges.excess(sk, q)[0] == 0.0:
            assert np.array_equal(projected, q)
            continue
        np.testing.assert_array_equal(projected[[0, 4]], q[[0, 4]])
        sx, sz, twist = swing_twist(ranges.rotations(sk, q))
        px, pz, ptwist = swing_twist(ranges.rotations(sk, projected))
        if elliptic_measure(ranges, sx, sz)[0] > 1.0:
            counts["swing"] += 1
            assert abs(elliptic_measure(ranges, px, pz)[0] - 1.0) <= 1e-9
            nearest = np.min(np.hypot(bx - sx[0], bz - sz[0]))
            assert np.hypot(px[0] - sx[0], pz[0] - sz[0]) <= nearest + 1e-9
        else:
            np.testing.assert_allclose([px[0], pz[0]], [sx[0], sz[0]], rtol=0, atol=1e-9)
        lo, hi = ranges.twist[0]
        if not lo <= twist[0] <= hi:
            counts["twist"] += 1
            assert abs(ptwist[0] - (lo if twist[0] < lo else hi)) <= 1e-9
        else:
            assert abs(ptwist[0] - twist[0]) <= 1e-9
    assert counts["swing"] >= 10 and counts["twist"] >= 10, counts


def posed(sk: Skeleton, ranges: SphericalRanges, sx: float, sz: float, twist: float) -> np.ndarray:
    """The hinge values of ``ball``'s joint with swing (sx, sz) and twist in the range frame."""
    r = compose(np.array([sx]), np.array([sz]), np.array([twist]))
    q = np.zeros(5)
    q[1:4] = euler_angles(r, ranges.order(sk), np.zeros((1, 3)))[0]
    np.testing.assert_allclose(np.concatenate(swing_twist(ranges.rotations(sk, q))), [sx, sz, twist], atol=1e-12)
    return q


def test_containing_widens_just_enough() -> None:
    """A pose outside the range: the widened range holds it, and still holds everything
    the old one held, and no more than needed: the pose is on the new boundary (its
    swing 1% longer, or its twist 0.01 rad further, is outside), and bounds the pose
    does not press on are kept. Against a wall (a zero bound) the semi-axis opens to
    sqrt(2) times the pose's swing on it. A pose inside leaves the range as it was."""
    sk = ball()
    ranges = cone()
    sx, sz, twist = 0.5, 0.3, 0.35  # (0.5/0.6)^2 + (0.3/0.4)^2 = 1.257: outside; twist max 0.2
    reach = np.hypot(sx / 0.6, sz / 0.4)
    q = posed(sk, ranges, sx, sz, twist)
    assert ranges.excess(sk, q)[0] > 0.1
    wide = ranges.containing(sk, q)
    assert wide.excess(sk, q)[0] <= 1e-9
    assert abs(elliptic_measure(wide, np.array([sx]), np.array([sz]))[0] - 1.0) <= 1e-8
    assert wide.excess(sk, posed(sk, ranges, 1.01 * sx, 1.01 * sz, twist))[0] > 1e-3
    assert wide.excess(sk, posed(sk, ranges, sx, sz, twist + 0.01))[0] >= 0.01 - 1e-9
    assert wide.swing_x[0, 1] == pytest.approx(0.6 * reach, rel=1e-6)  # the quadrant's ellipse scaled
    assert wide.swing_z[0, 1] == pytest.approx(0.4 * reach, rel=1e-6)
    assert wide.twist[0, 1] == pytest.approx(twist, abs=1e-12)
    np.testing.assert_array_equal([wide.swing_x[0, 0], wide.swing_z[0, 0], wide.twist[0, 0]], [-0.3, -0.2, -0.1])

    ranges = cone(swing_x=(0.0, 0.6))  # a wall: no swing the negative way about X
    q = np.array([0.0, 0.3, -0.5, 0.4, 0.0])
    sx, sz, twist = (v[0] for v in swing_twist(ranges.rotations(sk, q)))
    assert sx < 0 and ranges.excess(sk, q)[0] > 0
    wide = ranges.containing(sk, q)
    assert wide.excess(sk, q)[0] <= 1e-9
    assert np.all(wide.swing_x[:, 0] <= ranges.swing_x[:, 0]) and np.all(wide.swing_x[:, 1] >= ranges.swing_x[:, 1])
    assert wide.swing_x[0, 0] == pytest.approx(-np.sqrt(2.0) * abs(sx), rel=1e-9)
    assert wide.twist[0, 1] == pytest.approx(twist, abs=1e-12)  # twist 0.32 past its max 0.2
    np.testing.assert_array_equal(wide.swing_z, ranges.swing_z)  # 0.4 > sqrt(2) * 0.27: not in the way
    assert wide.excess(sk, posed(sk, ranges, sx, sz, twist + 0.01))[0] >= 0.01 - 1e-9
    assert ranges.containing(sk, np.zeros(5)) is ranges


def test_bad_ranges_refused() -> None:
    with pytest.raises(ValueError, match="min <= max"):
        cone(twist=(0.3, -0.3))
    with pytest.raises(ValueError, match="finite"):
        cone(swing_x=(-np.inf, 0.3))
    sk = ball(order=(0, 0, 1))
    with pytest.raises(ValueError, match="different axes"):
        Problem(sk, [], ranges=cone())


def arm() -> tuple[Skeleton, SphericalRanges]:
    """A shoulder (ball, three hinges) with an upper arm along +Y of length 0.3, an elbow
    hinge about X, a forearm of 0.3; the elbow may bend only one way (0..150 degrees)."""
    n = 4
    rest = np.stack([np.eye(4)] * n)
    rest[3] = translation([0.0, 0.3, 0.0])
    sk = Skeleton(parent=np.arange(n) - 1, prismatic=np.zeros(n, bool),
                  axis=np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 0, 0]], float), rest=rest,
                  lower=np.array([-np.inf] * 3 + [0.0]), upper=np.array([np.inf] * 3 + [np.radians(150)]),
                  mobility=np.ones(n))
    shoulder = SphericalRanges(joints=[[0, 1, 2]], swing_x=[(-0.5, 1.0)], swing_z=[(-0.4, 0.4)],
                               twist=[(-0.3, 0.3)], roll=[0.0])
    return sk, shoulder


def hand(sk: Skeleton, q: np.ndarray) -> np.ndarray:
    return sk.forward(q).points(np.array([3]), np.array([[0.0, 0.3, 0.0]]))[0]


@pytest.mark.parametrize("name", ALL)
def test_solvers_keep_the_cone_and_reach_inside_it(name: str) -> None:
    """A target the hand can reach inside the shoulder's cone is reached (1e-4 m) with the
    shoulder inside its range; one that needs the shoulder outside is refused by the
    range: the shoulder ends on its boundary (swing on its ellipse or twist at a bound,
    1e-6), never past it, and the hand gets as near as the range allows: 0.502-0.512 m
    from the target by the four solvers (0.785 m at the start), so at most 0.52 m."""
    sk, shoulder = arm()
    inside = hand(sk, np.array([0.2, 0.5, 0.1, 0.8]))
    outside = hand(sk, np.array([1.2, -1.0, 0.0, 0.3]))
    for target, reachable in ((inside, True), (outside, False)):
        problem = Problem(sk, [PositionGoal(3, [0.0, 0.3, 0.0], target)], tolerance=1e-5,
                          max_iterations=400, ranges=shoulder)
        result = SOLVERS[name](problem, np.array([0.0, 0.0, 0.0, 0.3]))
        assert shoulder.excess(sk, result.q)[0] <= 1e-9
        assert np.radians(0.0) <= result.q[3] <= np.radians(150)
        error = goal_errors(problem.goals, sk.forward(result.q))[0]
        if reachable:
            assert error <= 1e-4, error
        else:
            assert 1e-3 < error <= 0.52, error  # the range refuses it, the solve reports the miss
            assert not result.converged
            sx, sz, twist = swing_twist(shoulder.rotations(sk, result.q))
            on_ellipse = abs(elliptic_measure(shoulder, sx, sz)[0] - 1.0) <= 1e-6
            at_twist_bound = np.min(np.abs(twist[0] - shoulder.twist[0])) <= 1e-6
            assert on_ellipse or at_twist_bound, (elliptic_measure(shoulder, sx, sz), twist)


@pytest.mark.parametrize("name", ALL)
def test_hinge_without_hyperextension_bends_the_right_way(name: str) -> None:
    """Bring the hand toward the shoulder along a path a backward-bending elbow could also
    take: the elbow bends forward (positive) and the hand gets there."""
    sk, shoulder = arm()
    target = hand(sk, np.array([0.0, -0.3, 0.1, 2.0]))
    problem = Problem(sk, [PositionGoal(3, [0.0, 0.3, 0.0], target)], tolerance=1e-5,
                      max_iterations=500, ranges=shoulder)
    result = SOLVERS[name](problem, np.array([0.0, 0.0, 0.0, 0.05]))
    assert result.q[3] >= 0.0
    assert shoulder.excess(sk, result.q)[0] <= 1e-9
    assert np.linalg.norm(hand(sk, result.q) - target) <= 1e-4


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def metarig_squat() -> tuple[Problem, np.ndarray]:
    """The legs of the Rigify human metarig as the add-on builds them (tests/fixtures/
    metarig_squat.npz, exported from a drag of the root bone): the root's slides (its
    rotation held, as a grabbed bone's is), thighs, shins and feet, each foot pinned at
    the ankle and the toes, the hips dragged 1 cm down, the human joint ranges of
    ``joint_ranges(preset='AUTO')``, the preferred pose the start."""
    d = np.load(FIXTURES / "metarig_squat.npz")
    sk = Skeleton(parent=d["parent"], prismatic=d["prismatic"], axis=d["axis"], rest=d["rest"], lower=d["lower"],
                  upper=d["upper"], mobility=d["mobility"], base=d["base"], inherits=d["inherits"])
    goals = [PositionGoal(j, local, target, priority=int(priority))
             for j, local, target, priority in zip(d["goal_joint"], d["goal_local"], d["goal_target"],
                                                   d["goal_priority"])]
    ranges = SphericalRanges(d["range_joints"], d["swing_x"], d["swing_z"], d["twist"], d["roll"])
    return Problem(sk, goals, tolerance=1e-5, max_iterations=300, reference=d["reference"], ranges=ranges), d["q0"]


def test_squat_from_nearly_straight_legs_with_knee_ranges() -> None:
    """Pins first and the hips dragged down from nearly straight legs: in the pins' null
    space the way down goes through knees bent 10 degrees, a direction the pins' Jacobian
    barely sees (and the sideways fold is outside the knee ranges). The solve gets there,
    with the feet held, the knees flexed forward and inside their ranges."""
    problem, q0 = metarig_squat()
    result = SOLVERS["SR_INVERSE"](problem, q0)
    assert result.converged, result.errors
    assert np.all(goal_errors(problem.goals, problem.skeleton.forward(result.q)) <= 1e-5)
    assert np.all(problem.ranges.excess(problem.skeleton, result.q) <= 1e-9)
    sk = problem.skeleton
    sx, _, _ = swing_twist(problem.ranges.rotations(sk, result.q))
    sx0, _, _ = swing_twist(problem.ranges.rotations(sk, q0))
    knees = slice(2, 4)  # the ranged ball joints: thighs, shins, feet, left and right
    assert np.all(sx[knees] - sx0[knees] > np.radians(5.0))  # positive swing X: flexion


def test_projecting_many_configurations_at_once_is_projecting_each():
    """``project_many`` (the escape nudge's trials, posed at once): each configuration as it
    would be alone, inside its range, a locked hinge kept."""
    rng = np.random.default_rng(11)
    sk, shoulder = arm()
    q = rng.normal(scale=1.2, size=(24, sk.size))
    many = shoulder.project_many(sk, q)
    for row, each in zip(q, many):
        np.testing.assert_allclose(each, shoulder.project_many(sk, row[None])[0], atol=1e-12)
        assert shoulder.excess(sk, each).max() <= 1e-9
    locked = np.array([True, False, True, True])
    kept = shoulder.project_many(sk, q, locked)
    np.testing.assert_array_equal(kept[:, 1], q[:, 1])


def test_a_solve_past_its_time_begins_no_more_range_passes(monkeypatch) -> None:
    """A drag's solve has a time per mouse event: past it, the SR inverse's iteration takes the
    step it has (the line search keeps it within the limits and the ranges) instead of
    refining it with the ranges' boundary rows pass after pass. With a clock on which each
    pass takes 0.6 s of a 1 s budget, no pass begins past the time, and the pose is within
    the shoulder's range and the elbow's limits."""
    from welman_ik.core import problem as problem_module
    from welman_ik.core.solvers import sr_inverse

    clock = {"now": 0.0}

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return clock["now"]

    monkeypatch.setattr(problem_module, "time", Clock)
    monkeypatch.setattr(sr_inverse, "time", Clock)
    begun = []
    rows = SphericalRanges.rows

    def timed_rows(self, *args, **kwargs):
        begun.append(clock["now"])
        clock["now"] += 0.6
        return rows(self, *args, **kwargs)

    monkeypatch.setattr(SphericalRanges, "rows", timed_rows)
    sk, shoulder = arm()
    target = hand(sk, np.array([1.2, -1.0, 0.0, 0.3]))  # outside the cone: the range's rows are asked
    problem = Problem(sk, [PositionGoal(3, [0.0, 0.3, 0.0], target)], tolerance=1e-5, max_iterations=400,
                      ranges=shoulder, time_budget=1.0)
    result = SOLVERS["SR_INVERSE"](problem, np.array([0.0, 0.0, 0.0, 0.3]))
    assert len(begun) >= 2 and max(begun) <= 1.0, begun
    assert shoulder.excess(sk, result.q)[0] <= 1e-9
    assert 0.0 <= result.q[3] <= np.radians(150)
    assert np.all(np.isfinite(result.q))
