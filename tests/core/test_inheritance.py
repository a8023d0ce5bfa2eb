"""Joints that do not inherit their parent's rotation (Blender's ``use_inherit_rotation`` off).

For ``inherits[i]`` False the frame is F_i = [[B R_i, F_parent(i) @ [t_i; 1]], [0, 1]] @ M_i(q_i)
(B: the base's linear part; R_i, t_i: rest_i's linear part and offset): the head rides on the
parent, the orientation does not. Checked here against a plain per-joint implementation, the
Jacobian against finite differences, and every solver on chains with such a joint.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from chains import (
    affine_base,
    assert_ccd_sweeps_never_raise_error,
    chain,
    finite_difference_jacobian,
    planar_chain,
    random_rotation,
    random_tree,
    tip_local,
    tip_position,
    translation,
    with_base,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from welman_ik.core import SOLVERS, PositionGoal, Problem, Skeleton
from welman_ik.core.problem import goal_errors

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MIXED_AXES = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1]]
LENGTHS = [0.5, 0.4, 0.45, 0.3, 0.35, 0.25, 0.2]


# -- a plain reference ------------------------------------------------------------------


def _motion(prismatic: bool, axis: np.ndarray, q: float) -> np.ndarray:
    """M(q): rotation by q about unit ``axis`` (Rodrigues, written out) or slide by q along it."""
    m = np.eye(4)
    a = axis / np.linalg.norm(axis)
    if prismatic:
        m[:3, 3] = q * a
    else:
        k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
        m[:3, :3] = np.cos(q) * np.eye(3) + np.sin(q) * k + (1.0 - np.cos(q)) * np.outer(a, a)
    return m


def reference_frames(sk: Skeleton, q: np.ndarray) -> np.ndarray:
    """World frames one joint at a time, straight from the definition."""
    frames = np.empty((sk.size, 4, 4))
    for i in range(sk.size):
        p = sk.parent[i]
        up = sk.base if p < 0 else frames[p]
        if sk.inherits[i] or p < 0:
            local = up @ sk.rest[i]
        else:
            local = np.eye(4)
            local[:3, :3] = sk.base[:3, :3] @ sk.rest[i, :3, :3]
            local[:3, 3] = (up @ np.append(sk.rest[i, :3, 3], 1.0))[:3]
        frames[i] = local @ _motion(sk.prismatic[i], sk.axis[i], q[i])
    return frames


def with_inherits(sk: Skeleton, inherits) -> Skeleton:
    return replace(sk, inherits=np.asarray(inherits, dtype=bool))


# -- forward kinematics -----------------------------------------------------------------

coordinate = st.floats(-1.0, 1.0, allow_nan=False)
vector = st.tuples(coordinate, coordinate, coordinate).map(np.array)


@st.composite
def rotations(draw) -> np.ndarray:
    """A rotation from a drawn axis and angle (Rodrigues, as above)."""
    axis = draw(vector)
    if np.linalg.norm(axis) < 0.1:
        axis = np.array([0.0, 0.0, 1.0])
    return _motion(False, axis, draw(st.floats(-np.pi, np.pi)))[:3, :3]


@st.composite
def trees(draw) -> tuple[Skeleton, np.ndarray]:
    """A random tree with random ``inherits`` flags under a base with non-uniform scale
    (sometimes mirrored), rest frames that may be scaled or mirrored too, and a configuration."""
    n = draw(st.integers(1, 8))
    parent = [draw(st.integers(-1, i - 1)) for i in range(n)]
    rest = np.stack([np.eye(4)] * n)
    for i in range(n):
        scale = draw(st.sampled_from([1.0, 1.0, 0.7, -1.0]))  # -1: a mirrored rest frame
        rest[i, :3, :3] = draw(rotations()) * scale
        rest[i, :3, 3] = draw(vector)
    base = np.eye(4)
    scales = np.array([draw(st.floats(0.3, 3.0)) for _ in range(3)])
    if draw(st.booleans()):
        scales[0] = -scales[0]  # a mirrored armature
    base[:3, :3] = draw(rotations()) @ np.diag(scales)
    base[:3, 3] = draw(vector)
    sk = Skeleton(
        parent=parent,
        prismatic=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        axis=np.stack([draw(vector) + np.array([0.0, 0.0, 1.5]) for _ in range(n)]),  # never zero
        rest=rest,
        lower=np.full(n, -np.inf),
        upper=np.full(n, np.inf),
        mobility=np.ones(n),
        base=base,
        inherits=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
    )
    q = np.array(draw(st.lists(st.floats(-np.pi, np.pi), min_size=n, max_size=n)))
    return sk, q


@SETTINGS
@given(case=trees())
def test_forward_matches_per_joint_reference(case) -> None:
    """Frames of random trees with random inherits flags (non-uniformly scaled and possibly
    mirrored base, scaled or mirrored rest frames) equal the per-joint definition to 1e-12
    relative; so do the heads F_parent(i) @ [t_i; 1]."""
    sk, q = case
    kin = sk.forward(q)
    expected = reference_frames(sk, q)
    size = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(kin.frames, expected, rtol=0.0, atol=1e-12 * size)
    ups = np.stack([sk.base if p < 0 else expected[p] for p in sk.parent])
    heads = np.einsum("nij,nj->ni", ups[:, :3, :3], sk.rest[:, :3, 3]) + ups[:, :3, 3]
    np.testing.assert_allclose(kin.heads, heads, rtol=0.0, atol=1e-12 * size)


def test_hand_computed_planar_chain() -> None:
    """Three unit links along x with hinges about z; joint 1 does not inherit. At q = (90, 0, 45)
    degrees joint 1's head rides on joint 0 to (0, 1), but its frame keeps the rest
    orientation: joint 2 sits at (1, 1) (not (0, 2)), and the tip 45 degrees up from there."""
    sk = with_inherits(planar_chain(3), [True, False, True])
    q = np.array([np.pi / 2, 0.0, np.pi / 4])
    kin = sk.forward(q)
    np.testing.assert_allclose(kin.origins, [[0, 0, 0], [0, 1, 0], [1, 1, 0]], atol=1e-12)
    s = np.sqrt(0.5)
    np.testing.assert_allclose(tip_position(sk, q, 2, tip_local()), [1 + s, 1 + s, 0], atol=1e-12)
    # Under a base turned 30 degrees about z and scaled by 2, joint 1 turns with the base only.
    base = translation([1.0, 2.0, 0.0])
    base[:3, :3] = 2.0 * _motion(False, np.array([0, 0, 1.0]), np.pi / 6)[:3, :3]
    kin = with_base(sk, base).forward(q)
    np.testing.assert_allclose(kin.frames[1, :3, :3], base[:3, :3], atol=1e-12)
    np.testing.assert_allclose(kin.origins[1], base[:3, :3] @ [0, 1, 0] + [1, 2, 0], atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_all_true_inherits_is_bit_identical_to_omitting_it(seed: int) -> None:
    """inherits all True, or False only on roots (whose parent frame is the base anyway),
    gives exactly the frames and Jacobians of a skeleton built from the same arrays without
    it. (Each is built by replace from one tree: building re-normalises the axes, which may
    move them by an ulp, so both must start from the same arrays.)"""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    tree = random_tree(rng, n, base=affine_base(rng) if seed % 2 else np.eye(4))
    sk = replace(tree, inherits=None)
    q = rng.uniform(-np.pi, np.pi, n)
    roots_only = np.where(sk.parent < 0, rng.random(n) < 0.5, True)
    joints = rng.integers(0, n, 5)
    kin = sk.forward(q)
    points = kin.points(joints, rng.normal(size=(5, 3)))
    for inherits in (np.ones(n, dtype=bool), roots_only):
        other = with_inherits(tree, inherits)
        assert other.detached.size == 0
        other_kin = other.forward(q)
        assert np.array_equal(other_kin.frames, kin.frames)
        assert np.array_equal(other_kin.point_jacobian(joints, points), kin.point_jacobian(joints, points))
    assert np.array_equal(sk.inherits, np.ones(n, dtype=bool))


def test_lever_table_and_replace() -> None:
    """lever[k, j]: the first non-inheriting joint strictly below j on the way to k (-1: none).
    Chain 0-1-2-3-4 with 2 and 4 not inheriting, a branch 5 off 1. dataclasses.replace (as
    blender/rig/model.py uses it) keeps the flags and rebuilds the derived tables."""
    parent = [-1, 0, 1, 2, 3, 1]
    n = len(parent)
    sk = Skeleton(parent=parent, prismatic=[False] * n, axis=[[0, 0, 1]] * n, rest=np.stack([np.eye(4)] * n),
                  lower=[-np.inf] * n, upper=[np.inf] * n, mobility=[1.0] * n,
                  inherits=[True, True, False, True, False, True])
    np.testing.assert_array_equal(sk.detached, [2, 4])
    expected = np.full((n, n), -1)
    expected[2, [0, 1]] = 2
    expected[3, [0, 1]] = 2
    expected[4, [0, 1]] = 2
    expected[4, [2, 3]] = 4
    np.testing.assert_array_equal(sk.lever, expected)
    limited = replace(sk, lower=np.full(n, -1.0))
    np.testing.assert_array_equal(limited.inherits, sk.inherits)
    np.testing.assert_array_equal(limited.lever, expected)
    assert replace(sk, inherits=None).detached.size == 0


# -- Jacobian ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("base_kind", ["identity", "similarity-mirrored", "affine"])
def test_point_jacobian_matches_finite_differences(seed: int, base_kind: str) -> None:
    """point_jacobian equals central differences of forward kinematics on random trees with
    random inherits flags and sliders, under an identity base, a rotated, uniformly scaled and
    mirrored one (the conformal path), and a sheared, non-uniformly scaled one (the general
    path). Columns of joints that are not ancestors of the point's joint are exactly zero."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(4, 12))
    if base_kind == "identity":
        base = np.eye(4)
    elif base_kind == "affine":
        base = affine_base(rng)
    else:
        base = translation(rng.uniform(-1, 1, 3))
        base[:3, :3] = 1.7 * random_rotation(rng) @ np.diag([-1.0, 1.0, 1.0])
    sk = random_tree(rng, n, p_prismatic=0.3, base=base)
    # a chain through the first joints makes nested non-inheriting joints likely
    parent = np.array([i - 1 if i < n // 2 else rng.integers(-1, i) for i in range(n)])
    sk = replace(sk, parent=parent, inherits=rng.random(n) < 0.6)
    if sk.detached.size == 0:
        sk = replace(sk, inherits=np.arange(n) != n // 2 - 1)
    assert sk.detached.size > 0
    assert sk.conformal == (base_kind != "affine")
    q = rng.uniform(-np.pi, np.pi, n)
    joints = np.concatenate([sk.detached, rng.integers(0, n, 6)])
    local = rng.uniform(-1.0, 1.0, (len(joints), 3))
    kin = sk.forward(q)
    jac = kin.point_jacobian(joints, kin.points(joints, local))
    fd = finite_difference_jacobian(sk, q, joints, local)
    np.testing.assert_allclose(jac, fd, rtol=0.0, atol=1e-7 * max(1.0, np.abs(fd).max()))
    assert np.all(jac.transpose(0, 2, 1)[~sk.ancestors[joints]] == 0.0)


def test_rotation_above_a_non_inheriting_joint_only_translates_below_it() -> None:
    """Guard for the previous test: in the hand-computed chain, turning joint 0 moves the tip
    as it moves joint 1's head, (0, 1) x z-axis = (-1, 0), not as a rigid rotation of the tip."""
    sk = with_inherits(planar_chain(3), [True, False, True])
    q = np.array([np.pi / 2, 0.0, np.pi / 4])
    kin = sk.forward(q)
    tip = kin.points(np.array([2]), tip_local()[None])
    column = kin.point_jacobian(np.array([2]), tip)[0][:, 0]
    np.testing.assert_allclose(column, [-1.0, 0.0, 0.0], atol=1e-12)
    rigid = np.cross([0, 0, 1.0], tip[0])
    assert np.linalg.norm(rigid - column) > 0.5


# -- solvers ----------------------------------------------------------------------------


def _similarity(mirror: bool) -> np.ndarray:
    m = translation([0.3, -1.0, 2.0])
    m[:3, :3] = 2.5 * random_rotation(np.random.default_rng(7))
    if mirror:
        m[:3, :3] = m[:3, :3] @ np.diag([-1.0, 1.0, 1.0])
    return m


@pytest.mark.parametrize("base", ["identity", "scaled", "mirrored"])
@pytest.mark.parametrize("name", list(SOLVERS))
def test_solvers_reach_goal_through_non_inheriting_joint(name: str, base: str) -> None:
    """A seven-joint chain (hinges about z, y, x) whose joint 3 does not inherit its parent's
    rotation, optionally under a rotated, scaled (x2.5) and mirrored base. The target is the
    tip of a known pose (reachable); every solver reaches it to 1e-6 m, from a start where
    the tip is far away, within 100 iterations (CCD takes about 45 sweeps; one that turned the
    tip rigidly about the hinges above joint 3 still gets there, but in about 150)."""
    sk = with_inherits(chain(LENGTHS, MIXED_AXES), [True, True, True, False, True, True, True])
    if base != "identity":
        sk = with_base(sk, _similarity(base == "mirrored"))
    local = tip_local(LENGTHS[-1])
    target = tip_position(sk, np.array([0.5, -0.7, 0.9, 0.8, -0.4, 0.6, 0.7]), 6, local)
    problem = Problem(sk, [PositionGoal(6, local, target)], tolerance=1e-7, max_iterations=3000)
    q0 = np.full(7, 0.1)
    assert goal_errors(problem.goals, sk.forward(q0))[0] > 0.1
    result = SOLVERS[name](problem, q0)
    assert np.linalg.norm(tip_position(sk, result.q, 6, local) - target) <= 1e-6
    assert result.max_error <= 1e-6
    assert result.iterations <= 100


@pytest.mark.parametrize("name", list(SOLVERS))
def test_solvers_meet_goals_above_and_below_a_non_inheriting_joint(name: str) -> None:
    """Two goals on a branching tree: one at the end of a chain through two nested
    non-inheriting joints (3 and 5), one on a branch that leaves the chain above them (at
    joint 2), so joints 0-2 serve both. Both targets come from a known pose, and every
    solver meets both to 1e-5 m."""
    parent = [-1, 0, 1, 2, 3, 4, 5, 2, 7]
    n = len(parent)
    axes = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    rng = np.random.default_rng(3)
    rest = np.stack([translation([0.0 if p < 0 else 0.4, 0.0, 0.0]) for p in parent])
    for i in range(n):
        rest[i, :3, :3] = random_rotation(rng)
    sk = Skeleton(parent=parent, prismatic=[False] * n, axis=axes, rest=rest, lower=[-np.inf] * n,
                  upper=[np.inf] * n, mobility=[1.0] * n,
                  inherits=[True, True, True, False, True, False, True, True, True])
    local = np.array([0.3, 0.0, 0.0])
    known = rng.uniform(-1.0, 1.0, n)
    goals = [PositionGoal(6, local, tip_position(sk, known, 6, local)),
             PositionGoal(8, local, tip_position(sk, known, 8, local))]
    problem = Problem(sk, goals, tolerance=1e-6, max_iterations=3000)
    result = SOLVERS[name](problem, np.zeros(n))
    assert result.max_error <= 1e-5


@st.composite
def problems(draw) -> tuple[Problem, np.ndarray]:
    """A random tree with random inherits flags under a rotated, uniformly scaled base
    (CCD's steps are exact only for conformal frames), and 1-3 goals of one level."""
    n = draw(st.integers(2, 7))
    parent = [draw(st.integers(-1, i - 1)) for i in range(n)]
    rest = np.stack([np.eye(4)] * n)
    for i in range(n):
        rest[i, :3, :3] = draw(rotations())
        rest[i, :3, 3] = draw(vector)
    base = np.eye(4)
    base[:3, :3] = draw(rotations()) * draw(st.floats(0.5, 2.0))
    sk = Skeleton(
        parent=parent,
        prismatic=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        axis=np.stack([draw(vector) + np.array([0.0, 1.5, 0.0]) for _ in range(n)]),
        rest=rest,
        lower=np.full(n, -np.inf),
        upper=np.full(n, np.inf),
        mobility=draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)),
        base=base,
        inherits=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
    )
    goals = [PositionGoal(draw(st.integers(0, n - 1)), draw(vector), 3.0 * draw(vector),
                          weight=draw(st.floats(0.1, 2.0)))
             for _ in range(draw(st.integers(1, 3)))]
    q0 = np.array(draw(st.lists(st.floats(-1.5, 1.5), min_size=n, max_size=n)))
    return Problem(sk, goals, max_iterations=1), q0


@SETTINGS
@given(case=problems())
def test_ccd_sweeps_never_raise_weighted_error(case) -> None:
    """With non-inheriting joints each CCD step is still the exact optimum for its joint
    (points below such a joint move with its head), so no sweep raises the weighted error."""
    problem, q = case
    assert_ccd_sweeps_never_raise_error(problem, q, 10)
