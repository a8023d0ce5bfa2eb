"""Skeleton and kinematics: forward kinematics, point Jacobians, tree bookkeeping.

Every solver stands on these: a wrong frame or Jacobian column makes all of them
converge to the wrong place (or not at all), so they are checked against hand
computation and finite differences.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from chains import (
    affine_base,
    chain,
    finite_difference_jacobian,
    planar_chain,
    random_tree,
    rotation,
    tip_local,
    tip_position,
    translation,
    with_base,
)

from welman_ik.core import Skeleton


def test_planar_forward_kinematics_matches_hand_computation() -> None:
    """Links 1, 0.5, 0.25 along x, hinges about z at q = (90, -90, 45) degrees:
    joint origins at (0,0), (0,1), (0.5,1); the tip at (0.5 + s, 1 + s) with s = 0.25/sqrt 2."""
    sk = chain([1.0, 0.5, 0.25], [[0, 0, 1]] * 3)
    q = np.array([np.pi / 2, -np.pi / 2, np.pi / 4])
    kin = sk.forward(q)
    expected = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 1.0, 0.0]])
    np.testing.assert_allclose(kin.origins, expected, atol=1e-12)
    s = 0.25 / np.sqrt(2.0)
    tip = kin.points(np.array([2]), tip_local(0.25)[None])[0]
    np.testing.assert_allclose(tip, [0.5 + s, 1.0 + s, 0.0], atol=1e-12)
    # Each frame's rotation is the accumulated angle about z.
    for i, angle in enumerate(np.cumsum(q)):
        np.testing.assert_allclose(kin.frames[i, :3, :3], rotation([0, 0, 1], angle), atol=1e-12)


def test_forward_kinematics_with_prismatic_and_base() -> None:
    """A slider along local x (q = 0.7 m) then a hinge about z (q = 90 deg), under a base that
    translates by (1, 2, 3) and scales uniformly by 2: the hinge sits at base + 2*(0.7+0.5, 0, 0)
    and a point (1, 0, 0) on it at 2*(0, 1, 0) further."""
    sk = Skeleton(
        parent=[-1, 0],
        prismatic=[True, False],
        axis=[[2.0, 0.0, 0.0], [0.0, 0.0, 1.0]],  # not unit: the constructor normalises
        rest=np.stack([np.eye(4), translation([0.5, 0.0, 0.0])]),
        lower=[-np.inf] * 2,
        upper=[np.inf] * 2,
        mobility=[1.0, 1.0],
        base=translation([1.0, 2.0, 3.0]) @ np.diag([2.0, 2.0, 2.0, 1.0]),
    )
    q = np.array([0.7, np.pi / 2])
    kin = sk.forward(q)
    np.testing.assert_allclose(kin.origins[0], [1.0 + 1.4, 2.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(kin.origins[1], [1.0 + 2.4, 2.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(tip_position(sk, q, 1, [1, 0, 0]), [3.4, 4.0, 3.0], atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("affine", [False, True], ids=["identity-base", "affine-base"])
def test_point_jacobian_matches_finite_differences(seed: int, affine: bool) -> None:
    """Columns of point_jacobian equal d(point)/dq by central differences (error O(h^2) ~ 1e-11)
    on random trees with sliders, rotated rest frames and (optionally) a sheared, non-uniformly
    scaled base, where the naive (A a) x (p - o) formula would be wrong. Columns of joints that
    are not ancestors of the point's joint must be exactly zero."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    base = affine_base(rng) if affine else np.eye(4)
    sk = random_tree(rng, n, p_prismatic=0.35, base=base)
    if not sk.prismatic.any():  # make sure both kinds appear
        sk = replace(sk, prismatic=np.arange(n) == n - 1)
    q = rng.uniform(-np.pi, np.pi, n)
    joints = rng.integers(0, n, 6)
    local = rng.uniform(-1.0, 1.0, (6, 3))
    kin = sk.forward(q)
    points = kin.points(joints, local)
    jac = kin.point_jacobian(joints, points)
    assert jac.shape == (6, 3, n)
    fd = finite_difference_jacobian(sk, q, joints, local)
    np.testing.assert_allclose(jac, fd, atol=1e-7 * max(1.0, np.abs(fd).max()))
    not_ancestor = ~sk.ancestors[joints]  # (k, n)
    assert np.all(jac.transpose(0, 2, 1)[not_ancestor] == 0.0)


def test_point_jacobian_affine_base_differs_from_rigid_formula() -> None:
    """Guard for the previous test: under a non-uniformly scaled base the rigid-body column
    (A a) x (p - o) is measurably wrong, so agreement with finite differences means the
    affine formula A (a x A^-1 (p - o)) is really in use."""
    sk = with_base(planar_chain(2), np.diag([1.0, 3.0, 1.0, 1.0]))
    q = np.array([0.3, 0.4])
    kin = sk.forward(q)
    p = kin.points(np.array([1]), tip_local()[None])
    jac = kin.point_jacobian(np.array([1]), p)[0]
    rigid = np.cross(kin.world_axes[0], p[0] - kin.origins[0])
    assert np.linalg.norm(rigid - jac[:, 0]) > 0.1
    fd = finite_difference_jacobian(sk, q, np.array([1]), tip_local()[None])[0]
    np.testing.assert_allclose(jac, fd, atol=1e-7)


def test_ancestors_and_levels() -> None:
    """Two roots and a branching tree: ancestors[i, j] is True exactly when j is i or lies on
    the path from i to the base; levels group joints by depth, parents before children."""
    parent = [-1, 0, 0, 1, -1, 4, 3]
    n = len(parent)
    sk = Skeleton(
        parent=parent,
        prismatic=[False] * n,
        axis=[[0, 0, 1]] * n,
        rest=np.stack([np.eye(4)] * n),
        lower=[-np.inf] * n,
        upper=[np.inf] * n,
        mobility=[1.0] * n,
    )
    paths = {0: {0}, 1: {0, 1}, 2: {0, 2}, 3: {0, 1, 3}, 4: {4}, 5: {4, 5}, 6: {0, 1, 3, 6}}
    expected = np.zeros((n, n), dtype=bool)
    for i, path in paths.items():
        expected[i, sorted(path)] = True
    np.testing.assert_array_equal(sk.ancestors, expected)
    assert [lv.tolist() for lv in sk.levels] == [[0, 4], [1, 2, 5], [3], [6]]
    assert sk.size == n


def _skeleton_kwargs(parent, axis) -> dict:
    n = len(parent)
    return {
        "parent": parent,
        "prismatic": [False] * n,
        "axis": axis,
        "rest": np.stack([np.eye(4)] * n),
        "lower": [-np.inf] * n,
        "upper": [np.inf] * n,
        "mobility": [1.0] * n,
    }


@pytest.mark.parametrize("parent", [[0], [-1, 1], [-1, 2, 0], [-1, 0, -2]], ids=["self-root", "self", "forward", "below-minus-one"])
def test_constructor_rejects_bad_parent_order(parent: list[int]) -> None:
    """parent[i] must satisfy -1 <= parent[i] < i (parents first); the per-level frame
    product relies on it."""
    with pytest.raises(ValueError):
        Skeleton(**_skeleton_kwargs(parent, [[0, 0, 1]] * len(parent)))


def test_constructor_rejects_zero_axis_and_normalises() -> None:
    """A zero axis has no direction to rotate about; non-unit axes are normalised."""
    with pytest.raises(ValueError):
        Skeleton(**_skeleton_kwargs([-1, 0], [[0, 0, 1], [0, 0, 0]]))
    sk = Skeleton(**_skeleton_kwargs([-1, 0], [[0, 0, 3], [1, 1, 0]]))
    np.testing.assert_allclose(np.linalg.norm(sk.axis, axis=1), 1.0)
    np.testing.assert_allclose(sk.axis[1], [2**-0.5, 2**-0.5, 0.0])


def test_kept_forward_results_are_the_fresh_ones_and_cannot_be_changed() -> None:
    """A solve evaluates the same joint values several times; the skeleton keeps its last
    results. A kept result is bit-identical to a fresh evaluation, follows the values and not
    the caller's array (changed in place after the call), and is read-only, so that no
    caller can change what another one is given."""
    rng = np.random.default_rng(3)
    sk = random_tree(rng, 12, p_prismatic=0.2)
    fresh = random_tree(np.random.default_rng(3), 12, p_prismatic=0.2)  # the same tree, nothing kept
    configurations = [rng.uniform(-np.pi, np.pi, sk.size) for _ in range(20)]
    for i, q in enumerate(configurations):
        first = sk.forward(q)
        again = sk.forward(q.copy())
        assert again is first  # kept
        np.testing.assert_array_equal(first.frames, fresh.forward(q).frames)
        if i > 0:  # the one before is still kept, and still right
            earlier = configurations[i - 1]
            np.testing.assert_array_equal(sk.forward(earlier).frames, fresh.forward(earlier).frames)
    q = configurations[0].copy()
    kin = sk.forward(q)
    q += 0.5  # the caller's array changes; the result stays the one of the values it was given
    np.testing.assert_array_equal(kin.q, configurations[0])
    np.testing.assert_array_equal(sk.forward(q).frames, fresh.forward(q).frames)
    with pytest.raises(ValueError):
        kin.frames[0, 0, 3] = 1.0
    with pytest.raises(ValueError):
        kin.q[0] = 1.0
