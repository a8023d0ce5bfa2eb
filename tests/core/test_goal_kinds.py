"""The pose, region, together and balance goals: zero at the goal, the Jacobian against finite
differences, the one-sided ones idle inside and holding outside, every solver meeting each on
small chains and trees from random starts, and the support polygon's hull."""

from __future__ import annotations

import numpy as np
import pytest
from chains import (
    assert_ccd_sweeps_never_raise_error,
    chain,
    random_frame,
    residual_jacobian,
    rotation,
    rotation_of,
    translation,
)

from welman_ik.core import (
    SOLVERS,
    BalanceGoal,
    FloorGoal,
    PoseGoal,
    PositionGoal,
    Problem,
    RegionGoal,
    Skeleton,
    TogetherGoal,
)
from welman_ik.core.goals.balance import convex_hull_2d, nearest_in_polygon, shrink
from welman_ik.core.problem import goal_errors

MIXED_AXES = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1]]
TIP = np.array([0.4, 0.0, 0.0])
SLOW = {"CCD", "JACOBIAN_TRANSPOSE"}  # linearly converging: fewer, easier cases


def iterations(name: str) -> int:
    return 3000 if name in SLOW else 300


def hinge_tree(parent, axes, offsets, rotations=None) -> Skeleton:
    n = len(parent)
    rest = np.stack([translation(o) for o in offsets])
    for i, r in (rotations or {}).items():
        rest[i, :3, :3] = r
    return Skeleton(parent=np.asarray(parent), prismatic=np.zeros(n, dtype=bool), axis=np.asarray(axes, dtype=float),
                    rest=rest, lower=np.full(n, -np.inf), upper=np.full(n, np.inf), mobility=np.ones(n))


def two_arms() -> Skeleton:
    """A hinge at the root and two 3-hinge arms from it, one along +x, one along -x."""
    return hinge_tree([-1, 0, 1, 2, 0, 4, 5], [[0, 0, 1], [0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0],
                                               [1, 0, 0]],
                      [[0, 0, 0], [0.3, 0, 0], [0.4, 0, 0], [0.4, 0, 0], [-0.3, 0, 0], [0.4, 0, 0], [0.4, 0, 0]],
                      {4: np.diag([-1.0, -1.0, 1.0])})


def random_rotation_matrix(rng) -> np.ndarray:
    return rotation(rng.normal(size=3), float(rng.uniform(0.3, 2.5)))


# ---------------------------------------------------------------------------------------------
# Residuals and Jacobians

@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("axes", [(True, True, True), (False, True, False), (True, False, True)])
def test_pose_is_zero_at_the_goal_and_its_jacobian_matches(seed, axes):
    sk, q, joint = random_frame(seed)
    rng = np.random.default_rng(seed)
    kin = sk.forward(q)
    local = rng.uniform(-0.5, 0.5, 3)
    point = kin.points(np.array([joint]), local[None])[0]
    goal = PoseGoal(joint, local, point, rotation_of(kin, joint), axes, length=0.3)
    assert goal.rows == 3 + 3 * sum(axes) and goal.residual(kin).shape == (goal.rows,)
    assert np.abs(goal.residual(kin)).max() < 1e-12
    off = PoseGoal(joint, local, point + rng.normal(size=3), rotation_of(kin, joint) @ random_rotation_matrix(rng),
                   axes, length=0.3)
    assert off.error(kin) > 1e-3
    np.testing.assert_allclose(off.jacobian(kin), residual_jacobian(off, sk, q), atol=1e-7)
    assert len(off.point_pairs(kin)[0]) == 1 and len(off.direction_pairs(kin)[0]) == sum(axes)


@pytest.mark.parametrize("seed", range(6))
def test_region_is_idle_inside_and_holds_outside(seed):
    sk, q, joint = random_frame(seed)
    rng = np.random.default_rng(seed)
    kin = sk.forward(q)
    local = rng.uniform(-0.5, 0.5, 3)
    point = kin.points(np.array([joint]), local[None])[0]
    way = rng.normal(size=3)
    way /= np.linalg.norm(way)
    inside = RegionGoal(joint, local, point + 0.3 * way, 0.5)
    assert not np.any(inside.residual(kin)) and not np.any(inside.jacobian(kin)) and not inside.active(kin)
    _, points, targets = inside.point_pairs(kin)
    np.testing.assert_array_equal(points, targets)
    outside = RegionGoal(joint, local, point + 0.8 * way, 0.5)
    np.testing.assert_allclose(outside.residual(kin), 0.3 * way, atol=1e-12)  # to the sphere's nearest point
    np.testing.assert_allclose(outside.point_pairs(kin)[2][0], point + 0.3 * way, atol=1e-12)
    np.testing.assert_allclose(outside.jacobian(kin), residual_jacobian(outside, sk, q), atol=1e-7)
    # Batched evaluation gives each goal's rows.
    e, j = RegionGoal.stack([inside, outside], kin)
    np.testing.assert_allclose(e, np.concatenate([inside.residual(kin), outside.residual(kin)]))
    np.testing.assert_allclose(j, np.vstack([inside.jacobian(kin), outside.jacobian(kin)]))
    np.testing.assert_allclose(RegionGoal.errors([inside, outside], kin), [0.0, 0.3])


@pytest.mark.parametrize("seed", range(6))
def test_floor_is_idle_above_and_holds_below(seed):
    sk, q, joint = random_frame(seed)
    rng = np.random.default_rng(seed)
    kin = sk.forward(q)
    local = rng.uniform(-0.5, 0.5, 3)
    point = kin.points(np.array([joint]), local[None])[0]
    normal = rng.normal(size=3)
    normal /= np.linalg.norm(normal)
    above = FloorGoal(joint, local, point - 0.3 * normal, 2.0 * normal)  # (any length of normal)
    assert not np.any(above.residual(kin)) and not np.any(above.jacobian(kin)) and not above.active(kin)
    _, points, targets = above.point_pairs(kin)
    np.testing.assert_array_equal(points, targets)
    below = FloorGoal(joint, local, point + 0.2 * normal + 0.5 * np.cross(normal, [1.0, 0.0, 0.0]), normal)
    np.testing.assert_allclose(below.residual(kin), [0.2], atol=1e-12)  # its depth below the plane
    np.testing.assert_allclose(below.point_pairs(kin)[2][0], point + 0.2 * normal, atol=1e-12)
    np.testing.assert_allclose(below.jacobian(kin), residual_jacobian(below, sk, q), atol=1e-7)
    assert below.active(kin)
    e, j = FloorGoal.stack([above, below], kin)
    np.testing.assert_allclose(e, np.concatenate([above.residual(kin), below.residual(kin)]))
    np.testing.assert_allclose(j, np.vstack([above.jacobian(kin), below.jacobian(kin)]))
    np.testing.assert_allclose(FloorGoal.errors([above, below], kin), [0.0, 0.2])
    # The same errors from the points themselves, many frames' at once (a bake's measure).
    both = np.stack([points[0], points[0]])
    np.testing.assert_allclose(FloorGoal.point_errors([above, below], both), [0.0, 0.2], atol=1e-12)
    frames = both[None] + np.array([0.0, 0.1, 0.3])[:, None, None] * normal  # raised along the normal
    np.testing.assert_allclose(FloorGoal.point_errors([above, below], frames), [[0.0, 0.2], [0.0, 0.1], [0.0, 0.0]],
                               atol=1e-12)
    for bad in ((0, 0, 0), (np.nan, 0, 1)):
        with pytest.raises(ValueError):
            FloorGoal(joint, local, point, bad)
    with pytest.raises(ValueError):
        FloorGoal(joint, local, (0, np.inf, 0))


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("seed", range(3))
def test_every_solver_lifts_a_point_onto_a_floor_and_leaves_it_alone_above(name, seed):
    """A 6-hinge chain's tip below a tilted plane is brought onto it, and a position goal
    pulling it further below is met only as far as the floor lets it (the floor first); from a
    pose with the tip above the plane nothing moves."""
    rng = np.random.default_rng(seed)
    sk = chain([0.4] * 5, MIXED_AXES[:6])
    start = rng.uniform(-1.0, 1.0, 6)
    tip = sk.forward(start).points(np.array([5]), TIP[None])[0]
    normal = np.array([0.2, -0.1, 1.0]) / np.linalg.norm([0.2, -0.1, 1.0])
    floor = FloorGoal(5, TIP, tip + 0.15 * normal, normal)
    assert floor.error(sk.forward(start)) > 0.1
    result = SOLVERS[name](Problem(sk, [floor], tolerance=1e-5, max_iterations=iterations(name)), start.copy())
    assert floor.error(sk.forward(result.q)) <= 1e-5, name
    deeper = PositionGoal(5, TIP, tip - 0.1 * normal, priority=1)
    result = SOLVERS[name](Problem(sk, [floor, deeper], tolerance=1e-5, max_iterations=iterations(name)),
                           start.copy())
    assert floor.error(sk.forward(result.q)) <= 1e-4, name
    clear = FloorGoal(5, TIP, tip - 0.05 * normal, normal)
    again = SOLVERS[name](Problem(sk, [clear], tolerance=1e-5, max_iterations=iterations(name)), start.copy())
    np.testing.assert_array_equal(again.q, start)  # met as it is: nothing moves


@pytest.mark.parametrize("seed", range(6))
def test_together_is_zero_when_the_points_meet_and_its_jacobian_matches(seed):
    sk, q, joint = random_frame(seed)
    rng = np.random.default_rng(seed)
    kin = sk.forward(q)
    other = int(rng.integers(0, sk.size))
    local = rng.uniform(-0.5, 0.5, 3)
    point = kin.points(np.array([joint]), local[None])[0]
    frame = kin.frames[other]
    met = TogetherGoal(joint, local, other, np.linalg.solve(frame[:3, :3], point - frame[:3, 3]))
    assert np.abs(met.residual(kin)).max() < 1e-10
    goal = TogetherGoal(joint, local, other, rng.uniform(-0.5, 0.5, 3))
    a, b = goal.points(kin)
    np.testing.assert_allclose(goal.residual(kin), b - a)  # where it should be (b) minus where it is (a)
    np.testing.assert_allclose(goal.jacobian(kin), residual_jacobian(goal, sk, q), atol=1e-7)
    _, j = TogetherGoal.stack([met, goal], kin)
    np.testing.assert_allclose(j[3:], goal.jacobian(kin))
    np.testing.assert_allclose(TogetherGoal.errors([met, goal], kin), [0.0, np.linalg.norm(b - a)], atol=1e-10)
    _, points, targets = goal.point_pairs(kin)  # both toward the midpoint: their cost is the goal's
    assert np.sum((targets - points) ** 2) == pytest.approx(np.sum((b - a) ** 2))


def _balance(sk, rng, **kw) -> BalanceGoal:
    m = sk.size
    return BalanceGoal(np.arange(m), rng.uniform(-0.5, 0.5, (m, 3)), rng.uniform(0.2, 2.0, m), **kw)


@pytest.mark.parametrize("seed", range(6))
def test_balance_over_a_point_ignores_the_height_and_its_jacobian_matches(seed):
    sk, q, _ = random_frame(seed)
    rng = np.random.default_rng(seed)
    kin = sk.forward(q)
    direction = rng.normal(size=3)
    probe = _balance(sk, rng, target=np.zeros(3), direction=direction)
    c = probe.centre_of_mass(kin)
    points = kin.points(probe.joints, probe.locals)
    np.testing.assert_allclose(c, probe.masses @ points / probe.masses.sum())
    over = BalanceGoal(probe.joints, probe.locals, probe.masses, c + 3.0 * direction, direction)
    assert np.abs(over.residual(kin)).max() < 1e-12  # straight above or below: met
    off = BalanceGoal(probe.joints, probe.locals, probe.masses, rng.normal(size=3), direction)
    assert abs(off.residual(kin) @ direction) < 1e-12 and off.error(kin) > 1e-3
    np.testing.assert_allclose(off.jacobian(kin), residual_jacobian(off, sk, q), atol=1e-7)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("where", ["INSIDE", "EDGE", "CORNER"])
def test_balance_over_a_support_is_idle_inside_and_holds_outside(seed, where):
    sk, q, _ = random_frame(seed)
    rng = np.random.default_rng(seed)
    kin = sk.forward(q)
    probe = _balance(sk, rng, target=np.zeros(3), direction=rng.normal(size=3))
    c = probe.centre_of_mass(kin)
    b1, b2 = probe.basis.T
    centre = c + {"INSIDE": 0.1 * b1, "EDGE": 2.0 * b1, "CORNER": 2.0 * (b1 + b2)}[where] - 0.9 * probe.direction
    corners = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1], [0, 0], [1, 0]]) * 0.5  # with a point inside, one on an edge
    support = centre + corners @ np.stack([b1, b2])
    goal = BalanceGoal(probe.joints, probe.locals, probe.masses, None, probe.direction, support=support, margin=0.1)
    assert len(goal.support_polygon()) == 4 and len(goal.support_polygon(shrunk=True)) == 4
    if where == "INSIDE":
        assert not goal.active(kin) and not np.any(goal.residual(kin)) and not np.any(goal.jacobian(kin))
        # Idle, every segment's pair is there, aimed where it is (a CCD sweep that gathers the
        # pairs again mid-sweep finds as many, whether the goal asks something or not).
        joints, points, targets = goal.point_pairs(kin)
        assert len(joints) == int(np.count_nonzero(goal.masses)) and np.array_equal(points, targets)
        return
    expected = {"EDGE": 1.6, "CORNER": 1.6 * np.sqrt(2.0)}[where]  # 2 - 0.5 - 0.1 (the margin) on each axis
    assert goal.error(kin) == pytest.approx(expected)
    assert abs(goal.residual(kin) @ goal.direction) < 1e-12
    np.testing.assert_allclose(goal.jacobian(kin), residual_jacobian(goal, sk, q), atol=1e-7)
    _, points, targets = goal.point_pairs(kin)  # each segment by mu_i / s e: their centre of mass by e
    np.testing.assert_allclose(goal.shares @ (targets - points), goal.residual(kin), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# The support polygon

def test_hull_of_degenerate_supports():
    assert list(convex_hull_2d(np.zeros((0, 2)))) == []
    assert list(convex_hull_2d([[1.0, 2.0]])) == [0]
    assert list(convex_hull_2d([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])) == [0]  # one point, repeated
    line = np.array([[0.0, 0.0], [2.0, 1.0], [1.0, 0.5], [-1.0, -0.5], [0.5, 0.25]])
    assert sorted(convex_hull_2d(line)) == [1, 3]  # collinear: the two outermost
    assert sorted(convex_hull_2d([[0.0, 0.0], [1.0, 0.0]])) == [0, 1]


def test_hull_of_a_square_with_points_inside_and_on_its_edges_is_counter_clockwise():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    extra = np.array([[0.5, 0.5], [0.5, 0.0], [1.0, 0.5], [0.2, 0.7], [0.0, 0.0]])
    rng = np.random.default_rng(0)
    points = np.vstack([square, extra])[rng.permutation(9)]
    hull = points[convex_hull_2d(points)]
    assert len(hull) == 4 and {tuple(p) for p in hull} == {tuple(p) for p in square}
    x, y = hull[:, 0], hull[:, 1]
    assert 0.5 * (x @ np.roll(y, -1) - y @ np.roll(x, -1)) == pytest.approx(1.0)  # positive area: CCW


def test_shrinking_and_the_nearest_point():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    small = shrink(square, 0.1)
    assert len(small) == 4 and np.allclose(np.sort(small[:, 0]), [0.1, 0.1, 0.9, 0.9])
    np.testing.assert_allclose(shrink(square, 0.7), [[0.5, 0.5]])  # shrunk away: the centroid
    np.testing.assert_allclose(shrink(square[:2], 0.1), [[0.1, 0.0], [0.9, 0.0]])  # a segment shortens
    np.testing.assert_allclose(shrink(square[:2], 0.6), [[0.5, 0.0]])
    np.testing.assert_allclose(shrink(square[:1], 0.6), square[:1])
    inside, normal = nearest_in_polygon(square, np.array([0.3, 0.4]))
    np.testing.assert_allclose(inside, [0.3, 0.4])
    assert normal is None
    edge, normal = nearest_in_polygon(square, np.array([1.5, 0.4]))
    np.testing.assert_allclose(edge, [1.0, 0.4])
    np.testing.assert_allclose(normal, [1.0, 0.0])
    corner, normal = nearest_in_polygon(square, np.array([1.5, 1.4]))
    np.testing.assert_allclose(corner, [1.0, 1.0])
    assert normal is None
    on_segment, _ = nearest_in_polygon(square[:2], np.array([0.3, 0.4]))
    np.testing.assert_allclose(on_segment, [0.3, 0.0])


def test_a_one_or_two_point_support_is_a_point_or_a_segment():
    sk = chain([0.4] * 3, MIXED_AXES[:3])
    kin = sk.forward(np.zeros(3))
    joints, local, masses = np.arange(3), np.tile([0.2, 0.0, 0.0], (3, 1)), np.ones(3)
    point = BalanceGoal(joints, local, masses, direction=(0, 0, 1), support=[[0.1, 0.3, -1.0]])
    np.testing.assert_allclose(point.residual(kin), [0.1 - 0.6, 0.3, 0.0], atol=1e-12)  # c is at (0.6, 0, 0)
    segment = BalanceGoal(joints, local, masses, direction=(0, 0, 1), support=[[0.0, 0.3, 0.0], [2.0, 0.3, 0.0]],
                          margin=0.05)
    np.testing.assert_allclose(segment.residual(kin), [0.0, 0.3, 0.0], atol=1e-12)
    np.testing.assert_allclose(segment.support_polygon(shrunk=True)[:, 0], [0.05, 1.95])


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        RegionGoal(0, TIP, [0, 0, 0], -0.1)
    with pytest.raises(ValueError):
        RegionGoal(0, TIP, [0, 0, 0], np.inf)
    with pytest.raises(ValueError):
        TogetherGoal(0, [np.nan, 0, 0], 1, TIP)
    with pytest.raises(ValueError):
        PoseGoal(0, TIP, [0, 0, 0], np.eye(3), axes=(False, False, False))
    with pytest.raises(ValueError):
        BalanceGoal([0, 1], np.zeros((2, 3)), [0.0, 0.0], [0, 0, 0])
    with pytest.raises(ValueError):
        BalanceGoal([0], np.zeros((1, 3)), [1.0], None)  # neither a target nor a support
    with pytest.raises(ValueError):
        BalanceGoal([0], np.zeros((1, 3)), [1.0], [0, 0, 0], direction=(0, 0, 0))
    with pytest.raises(ValueError):
        BalanceGoal([0], np.zeros((1, 3)), [1.0], support=[[0, 0, 0]], margin=-1.0)
    for kind in (PoseGoal, RegionGoal, TogetherGoal, BalanceGoal, FloorGoal):
        assert kind.refused_by == {}


# ---------------------------------------------------------------------------------------------
# Every solver

@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("seed", range(2))
def test_every_solver_reaches_a_pose(name, seed):
    """A 7-hinge chain's last frame sent to the pose (point and frame) of a known configuration;
    CCD and the transpose hold its Y axis only (the whole frame takes them 500-1000 steps)."""
    rng = np.random.default_rng(seed)
    sk = chain([0.4] * 6, MIXED_AXES)
    kin = sk.forward(rng.uniform(-0.8, 0.8, 7))
    tip = np.array([0.2, 0.0, 0.0])
    axes = (False, True, False) if name in SLOW else (True, True, True)
    goal = PoseGoal(6, tip, kin.points(np.array([6]), tip[None])[0], rotation_of(kin, 6), axes, length=0.2)
    result = SOLVERS[name](Problem(sk, [goal], tolerance=1e-4, max_iterations=iterations(name)), np.zeros(7))
    assert goal.error(sk.forward(result.q)) <= 1e-4, name


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("seed", range(3))
def test_every_solver_brings_a_point_into_a_region_and_leaves_it_alone_inside(name, seed):
    """A 6-hinge chain's tip brought from outside into a ball of radius 0.2 m about the tip
    of a random configuration. From that configuration (the tip at the centre) and from one
    up to 0.01 rad off it in each hinge (the tip within 6 x 0.01 x 2.4 m = 0.144 m of the
    centre, certainly inside), the solve leaves every joint exactly as it was."""
    rng = np.random.default_rng(seed)
    sk = chain([0.4] * 5, MIXED_AXES[:6])
    at_centre = rng.uniform(-1.0, 1.0, 6)
    centre = sk.forward(at_centre).points(np.array([5]), TIP[None])[0]
    goal = RegionGoal(5, TIP, centre, 0.2)
    assert goal.error(sk.forward(np.zeros(6))) > 0.1  # the start is outside
    result = SOLVERS[name](Problem(sk, [goal], tolerance=1e-5, max_iterations=iterations(name)), np.zeros(6))
    assert goal.error(sk.forward(result.q)) <= 1e-5, name
    assert np.linalg.norm(sk.forward(result.q).points(np.array([5]), TIP[None])[0] - centre) <= 0.2 + 1e-5
    for inside in (at_centre, at_centre + rng.uniform(-0.01, 0.01, 6)):
        assert goal.error(sk.forward(inside)) == 0.0
        again = SOLVERS[name](Problem(sk, [goal], tolerance=1e-5, max_iterations=iterations(name)), inside.copy())
        np.testing.assert_array_equal(again.q, inside)  # met as it is: nothing moves


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("seed", [0, 2, 4])  # (seed 1 starts by a singular pose: CCD takes 700 sweeps)
def test_every_solver_brings_two_hands_together(name, seed):
    """Two arms from one root: their tips meet, both moving."""
    rng = np.random.default_rng(seed)
    sk = two_arms()
    goal = TogetherGoal(3, TIP, 6, TIP)
    result = SOLVERS[name](Problem(sk, [goal], tolerance=1e-5, max_iterations=iterations(name)),
                           rng.uniform(-2.0, 2.0, 7))
    assert goal.error(sk.forward(result.q)) <= 1e-5, name


@pytest.mark.parametrize("name", ["SR_INVERSE", "QUASI_NEWTON", "JACOBIAN_TRANSPOSE"])
def test_together_with_an_offset_holds_one_tip_that_far_from_the_other(name):
    """A hand held where it is from its shoulder (the retarget): tip a at offset d from tip b,
    its residual and Jacobian checked, and solved for."""
    sk = two_arms()
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.0, 1.0, 7)
    kin = sk.forward(q)
    d = np.array([0.3, -0.2, 0.1])
    goal = TogetherGoal(3, TIP, 6, TIP, offset=d)
    a, b = goal.points(kin)
    np.testing.assert_allclose(goal.residual(kin), b - a + d)
    np.testing.assert_allclose(goal.jacobian(kin), residual_jacobian(goal, sk, q), atol=1e-7)
    np.testing.assert_allclose(TogetherGoal.stack([goal], kin)[0], b - a + d)
    result = SOLVERS[name](Problem(sk, [goal], tolerance=1e-5, max_iterations=iterations(name)), q)
    a, b = goal.points(sk.forward(result.q))
    assert np.linalg.norm(a - b - d) <= 1e-5, name


def _standing_chain():
    """A 6-hinge chain standing on its base (its links along +x, which is up here), a unit
    mass at the middle of each link, heavier low down."""
    sk = chain([0.4] * 5, MIXED_AXES[:6])
    return sk, np.arange(6), np.tile([0.2, 0.0, 0.0], (6, 1)), np.array([3.0, 3.0, 2.0, 2.0, 1.0, 1.0])


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("seed", range(3))
def test_every_solver_puts_the_centre_of_mass_over_a_point(name, seed):
    rng = np.random.default_rng(seed)
    sk, joints, local, masses = _standing_chain()
    up = np.array([1.0, 0.0, 0.0])
    target = np.array([5.0, *rng.uniform(-0.15, 0.15, 2)])  # any height: only across the vertical counts
    goal = BalanceGoal(joints, local, masses, target, direction=up)
    tolerance = 1e-4 if name in SLOW else 1e-6
    result = SOLVERS[name](Problem(sk, [goal], tolerance=tolerance, max_iterations=iterations(name)),
                           rng.uniform(-0.8, 0.8, 6))
    c = goal.centre_of_mass(sk.forward(result.q))
    assert np.linalg.norm(c[1:] - target[1:]) <= tolerance, name


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("seed", range(3))
def test_every_solver_puts_the_centre_of_mass_over_the_support(name, seed):
    rng = np.random.default_rng(seed)
    sk, joints, local, masses = _standing_chain()
    foot = np.array([[0.0, 0.1, 0.1], [0.0, -0.1, 0.1], [0.0, -0.1, -0.05], [0.0, 0.1, -0.05], [0.0, 0.0, 0.0]])
    goal = BalanceGoal(joints, local, masses, direction=(1, 0, 0), support=foot, margin=0.02)
    start = np.array([0.0, 0.9, 0.0, 0.0, 0.5, 0.0]) + rng.uniform(-0.2, 0.2, 6)  # leaning over
    assert goal.active(sk.forward(start))
    result = SOLVERS[name](Problem(sk, [goal], tolerance=1e-5, max_iterations=iterations(name)), start)
    c = goal.centre_of_mass(sk.forward(result.q))
    assert -0.08 - 1e-5 <= c[1] <= 0.08 + 1e-5 and -0.03 - 1e-5 <= c[2] <= 0.08 + 1e-5, (name, c)


def _figure():
    """A small standing figure, up = +z: a free root (three sliders, two hinges) at the pelvis
    1 m up, two 3-hinge legs down to the ankles, a 2-hinge trunk and two 2-hinge arms.
    Returns the tree, the ankles (joint, local), and the segments (joints, locals, masses)."""
    parent = [-1, 0, 1, 2, 3, 4, 5, 6, 4, 8, 9, 4, 11, 12, 13, 12, 15]
    axes = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0],  # root: sliders x, y, z; hinges x, y
            [1, 0, 0], [0, 1, 0], [1, 0, 0],  # left hip x, y; knee x
            [1, 0, 0], [0, 1, 0], [1, 0, 0],  # right leg
            [1, 0, 0], [0, 1, 0],  # spine x, y
            [1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0]]  # shoulders x, y
    offsets = [[0, 0, 1.0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0],
               [0.1, 0, 0], [0, 0, 0], [0, 0, -0.5], [-0.1, 0, 0], [0, 0, 0], [0, 0, -0.5],
               [0, 0, 0.1], [0, 0, 0], [0.2, 0, 0.45], [0, 0, 0], [-0.2, 0, 0.45], [0, 0, 0]]
    n = len(parent)
    rest = np.stack([translation(o) for o in offsets])
    prismatic = np.zeros(n, dtype=bool)
    prismatic[:3] = True
    sk = Skeleton(parent=np.array(parent), prismatic=prismatic, axis=np.array(axes, dtype=float), rest=rest,
                  lower=np.full(n, -np.inf), upper=np.full(n, np.inf), mobility=np.ones(n))
    ankles = [(7, np.array([0.0, 0.0, -0.5])), (10, np.array([0.0, 0.0, -0.5]))]
    segments = (np.array([4, 6, 7, 9, 10, 12, 14, 16]),
                np.array([[0, 0, 0.05], [0, 0, -0.2], [0, 0, -0.25], [0, 0, -0.2], [0, 0, -0.25], [0, 0, 0.3],
                          [0, 0, -0.3], [0, 0, -0.3]], dtype=float),
                np.array([0.11, 0.14, 0.06, 0.14, 0.06, 0.39, 0.05, 0.05]))
    return sk, ankles, segments


@pytest.mark.parametrize("name", list(SOLVERS))
def test_every_solver_balances_a_figure_on_its_pinned_feet(name):
    """Feet pinned where they stand (first priority), the centre of mass over the feet's
    support polygon (second), from a start with the hips pushed forward and the trunk leaning."""
    sk, ankles, (joints, local, masses) = _figure()
    rest = sk.forward(np.zeros(sk.size))
    pins = [PositionGoal(j, p, rest.points(np.array([j]), p[None])[0]) for j, p in ankles]
    feet = np.array([[x, y, 0.0] for x in (-0.15, 0.15) for y in (-0.05, 0.15)])  # heels and toes
    balance = BalanceGoal(joints, local, masses, support=feet, margin=0.02, priority=1)
    start = np.zeros(sk.size)
    start[1], start[11] = 0.25, -1.0  # the root 25 cm forward (+y), the trunk leaning forward
    assert balance.active(sk.forward(start))
    goals = [*pins, balance]
    problem = Problem(sk, goals, tolerance=1e-4, max_iterations=iterations(name))
    result = SOLVERS[name](problem, start)
    kin = sk.forward(result.q)
    assert goal_errors(goals, kin).max() <= 1e-4, (name, goal_errors(goals, kin))
    c = balance.centre_of_mass(kin)
    assert -0.13 - 1e-4 <= c[0] <= 0.13 + 1e-4 and -0.03 - 1e-4 <= c[1] <= 0.13 + 1e-4, (name, c)


@pytest.mark.parametrize("seed", range(3))
def test_no_ccd_sweep_raises_the_error_of_the_new_kinds(seed):
    """Their point pairs bound each goal's own error from above (majorisation), so CCD's
    sweeps never raise it, balance and together goals among pins included."""
    rng = np.random.default_rng(seed)
    sk, ankles, (joints, local, masses) = _figure()
    rest = sk.forward(np.zeros(sk.size))
    pins = [PositionGoal(j, p, rest.points(np.array([j]), p[None])[0]) for j, p in ankles]
    feet = np.array([[x, y, 0.0] for x in (-0.15, 0.15) for y in (-0.05, 0.15)])
    goals = [*pins, BalanceGoal(joints, local, masses, support=feet, margin=0.02),
             BalanceGoal(joints, local, masses, [0.05, 0.1, 0.0], weight=0.5),
             TogetherGoal(14, [0, 0, -0.6], 16, [0, 0, -0.6], weight=0.3),
             RegionGoal(12, [0, 0, 0.7], [0.0, 0.3, 1.6], 0.1, weight=0.2)]
    q = rng.uniform(-0.6, 0.6, sk.size)
    assert_ccd_sweeps_never_raise_error(Problem(sk, goals, max_iterations=1), q, 8)
