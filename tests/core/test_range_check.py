"""The quick inside test of one ball joint's range (``range_check.InsideTest``, what the CCD
sweep and ``Problem.constrain`` ask before projecting) never says inside where
``SphericalRanges.project`` would move the joint, and says inside for every joint clearly
inside and nearly every one the projection left on its boundary, whatever the hinges' order,
the range frame's roll and a wall (a zero bound)."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
from chains import translation

from welman_ik.core import Skeleton
from welman_ik.core.range_check import InsideTest, all_inside
from welman_ik.core.ranges import SphericalRanges, swing_twist


def ball(order) -> Skeleton:
    """A frozen link, then a ball joint of three hinges about its frame's axes in ``order``
    (as the rig's model makes them)."""
    n = 5
    rest = np.stack([np.eye(4)] * n)
    rest[1] = translation([0.0, 1.0, 0.0])
    rest[4] = translation([0.0, 1.0, 0.0])
    axes = np.eye(3)[list(order)]
    return Skeleton(parent=np.arange(n) - 1, prismatic=np.zeros(n, bool),
                    axis=np.vstack([[0, 0, 1], axes, [1, 0, 0]]), rest=rest,
                    lower=np.full(n, -np.inf), upper=np.full(n, np.inf), mobility=np.array([0.0, 1, 1, 1, 1]))


RANGES = {
    "cone": ((-0.3, 0.6), (-0.2, 0.4), (-0.1, 0.2)),
    "wide": ((-1.4, 1.2), (-0.9, 1.5), (-1.0, 0.8)),
    "wall": ((0.0, 0.9), (-0.5, 0.5), (-0.3, 0.3)),  # no swing one way about X
}


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("roll", [0.0, 0.7, -2.0])
@pytest.mark.parametrize("shape", list(RANGES))
def test_inside_only_where_the_projection_keeps_the_joint(order, roll, shape):
    rng = np.random.default_rng(zlib.crc32(repr((order, roll, shape)).encode()))
    sk = ball(order)
    swing_x, swing_z, twist = RANGES[shape]
    ranges = SphericalRanges(joints=[[1, 2, 3]], swing_x=[swing_x], swing_z=[swing_z], twist=[twist], roll=[roll])
    test = InsideTest(ranges, sk)
    q = np.zeros((240, sk.size))
    q[:, 1:4] = rng.uniform(-1.6, 1.6, size=(240, 3)) * rng.choice([0.15, 0.5, 1.0], size=(240, 1))
    said = np.array([test.inside(row.tolist()) for row in q])
    kept = np.array([ranges.project(sk, row) is row or np.array_equal(ranges.project(sk, row), row) for row in q])
    assert not np.any(said & ~kept)  # never inside where the projection moves the joint
    # Clearly inside (by ten times the margin, on the range's own split): said so.
    sx, sz, tw = _split(ranges, sk, q)
    ax = np.where(sx >= 0, max(swing_x[1], 1e-9), max(-swing_x[0], 1e-9))
    az = np.where(sz >= 0, max(swing_z[1], 1e-9), max(-swing_z[0], 1e-9))
    clearly = (((sx / ax) ** 2 + (sz / az) ** 2) <= 1.0 - 1e-7) & (tw >= twist[0] + 1e-7) & (
        tw <= twist[1] - 1e-7)
    assert clearly.sum() > 10  # (the sample has joints well inside)
    np.testing.assert_array_equal(said[clearly], True)
    # A joint the projection put on the boundary is answered inside (the solvers leave joints there).
    moved = q[~kept][:40]
    onto = [ranges.project(sk, row) for row in moved]
    on_boundary = [test.inside(row.tolist()) for row in onto]
    assert all(np.array_equal(ranges.project(sk, row), row) for row, yes in zip(onto, on_boundary) if yes)
    assert np.mean(on_boundary) > 0.9 if len(onto) else True
    np.testing.assert_array_equal([all_inside(ranges, sk, row) for row in q], said)


def _split(ranges: SphericalRanges, sk: Skeleton, q: np.ndarray):
    """The range's own swing-twist split of each configuration's ball joint."""
    out = np.array([np.array(swing_twist(ranges.rotations(sk, row))).reshape(3) for row in q])
    return out[:, 0], out[:, 1], out[:, 2]


def test_a_half_turn_swing_is_left_to_the_projection():
    sk = ball((0, 1, 2))
    ranges = SphericalRanges(joints=[[1, 2, 3]], swing_x=[(-3.2, 3.2)], swing_z=[(-3.2, 3.2)], twist=[(-3.2, 3.2)],
                             roll=[0.0])
    q = np.zeros(sk.size)
    q[1] = np.pi  # about X by half a turn: Y upside down, the twist undefined
    assert not InsideTest(ranges, sk).inside(q.tolist())


def test_the_stages_skeletons_share_their_tests_and_other_axes_get_their_own():
    """A solve's stages ask on the same tree with other mobilities (stiff wrists): the tests,
    which read only the ranged joints' axes, are made once for them; a tree whose hinges turn
    about other axes gets its own, and answers by them."""
    from dataclasses import replace

    from welman_ik.core import range_check

    sk = ball((0, 1, 2))
    ranges = SphericalRanges(joints=[[1, 2, 3]], swing_x=[(-0.3, 0.6)], swing_z=[(-0.2, 0.4)], twist=[(-0.1, 0.2)],
                             roll=[0.0])
    q = np.zeros(sk.size)
    q[1] = 0.5  # about X: inside (up to 0.6)
    stiff = replace(sk, mobility=np.array([0.0, 1.0, 0.1, 1.0, 1.0]))
    assert all_inside(ranges, sk, q) and all_inside(ranges, stiff, q)
    assert len(range_check._TESTS[ranges]) == 1  # one set of tests for both
    other = ball((2, 1, 0))  # the first hinge now turns about Z: 0.5 is past swing Z's 0.4
    assert not all_inside(ranges, other, q)
    assert len(range_check._TESTS[ranges]) == 2
    assert all_inside(ranges, sk, q)


def test_a_range_checked_once_per_joints_still_refuses_another_skeleton():
    """Every solve's problem checks its ranges against its skeleton; a skeleton with the same
    ranged joints is checked once, and one whose ranged hinges slide or share an axis is
    still refused."""
    from dataclasses import replace

    sk = ball((0, 1, 2))
    ranges = SphericalRanges(joints=[[1, 2, 3]], swing_x=[(-0.3, 0.6)], swing_z=[(-0.2, 0.4)], twist=[(-0.1, 0.2)],
                             roll=[0.0])
    ranges.check(sk)
    ranges.check(replace(sk, mobility=np.zeros(sk.size)))  # (the same joints: known good)
    sliding = replace(sk, prismatic=np.array([False, False, True, False, False]))
    with pytest.raises(ValueError, match="sliding"):
        ranges.check(sliding)
    with pytest.raises(ValueError, match="three different axes"):
        ranges.check(ball((0, 0, 2)))
    with pytest.raises(ValueError, match="does not have"):
        ranges.check(replace(sk, parent=sk.parent[:3], prismatic=sk.prismatic[:3], axis=sk.axis[:3], rest=sk.rest[:3],
                             lower=sk.lower[:3], upper=sk.upper[:3], mobility=sk.mobility[:3], inherits=None))
