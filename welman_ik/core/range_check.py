"""Whether one ball joint lies well inside its spherical range, in plain floats.

The CCD sweep asks after every ranged ball joint it passes, and most of the time the joint is
inside, where ``SphericalRanges.project`` changes nothing; its numpy calls on one joint's
small arrays cost about a tenth of a millisecond, the floats here a few microseconds. The
rotation is taken as a quaternion (the joint's three hinges about its frame's coordinate
axes, then the range frame's roll) and split into swing and twist about Y as
``ranges.swing_twist`` splits its matrix: with q = s t, t about Y, the twist is that of
(w, y) and the swing s = q t*. The projection leaves a joint alone within ``INSIDE_SLACK`` of
its range; this test answers "inside" only within a quarter of that: the twist past a bound
by at most that much, and the swing inside its ellipse or within that much of the ellipse's
point with the same z (or x) coordinate, which is no nearer than the closest. A joint on a
range's boundary (where a projection left it, a thin ellipse of a wall's included) is
answered too; farther out, or where the twist is not defined, the projection decides.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from .ranges import INSIDE_SLACK, TINY_BOUND, SphericalRanges
from .skeleton import Skeleton

SLACK = 0.25 * INSIDE_SLACK  # [rad] how far outside a joint may be and still be answered "inside"


class InsideTest:
    """The range of one ball joint (``ranges`` of size 1) of ``skeleton``, tested in floats."""

    def __init__(self, ranges: SphericalRanges, skeleton: Skeleton):
        joints = ranges.joints[0]
        axes = skeleton.axis[joints]
        slots = np.abs(axes).argmax(axis=1)
        self.joints = joints.tolist()
        self.axes = [(int(i), float(np.sign(a[i]))) for i, a in zip(slots, axes)]
        half = 0.5 * float(ranges.roll[0])
        self.roll = (math.cos(half), math.sin(half))
        self.semi_x = tuple(max(float(v), TINY_BOUND) for v in ranges._semi_x[0])  # (positive side, negative side)
        self.semi_z = tuple(max(float(v), TINY_BOUND) for v in ranges._semi_z[0])
        self.twist = (float(ranges.twist[0, 0]) - SLACK, float(ranges.twist[0, 1]) + SLACK)

    def inside(self, q: list) -> bool:
        """True when the joint at joint values ``q`` (a list) is inside its range, or outside by
        at most ``SLACK`` (``project`` leaves it as it is); False otherwise, or where the
        twist is not defined."""
        w, x, y, z = 1.0, 0.0, 0.0, 0.0
        for joint, (slot, sign) in zip(self.joints, self.axes):  # q = q_a q_b q_c
            half = 0.5 * sign * q[joint]
            c, s = math.cos(half), math.sin(half)
            bw, bx, by, bz = c, s if slot == 0 else 0.0, s if slot == 1 else 0.0, s if slot == 2 else 0.0
            w, x, y, z = (w * bw - x * bx - y * by - z * bz, w * bx + x * bw + y * bz - z * by,
                          w * by - x * bz + y * bw + z * bx, w * bz + x * by - y * bx + z * bw)
        c, s = self.roll  # q' = b* q b, b the roll about Y
        w, x, y, z = c * w + s * y, c * x - s * z, c * y - s * w, c * z + s * x  # b* q
        w, x, y, z = w * c - y * s, x * c - z * s, w * s + y * c, z * c + x * s  # (b* q) b
        if w < 0.0:
            w, x, y, z = -w, -x, -y, -z
        norm = math.hypot(w, y)
        if norm < 1e-9:
            return False  # a half-turn swing: the twist is not defined there
        ct, st = w / norm, y / norm
        twist = 2.0 * math.atan2(st, ct)
        if not self.twist[0] <= twist <= self.twist[1]:
            return False
        sw, sx, sz = w * ct + y * st, x * ct + z * st, z * ct - x * st  # s = q' t*
        across = math.hypot(sx, sz)
        if across < 1e-300:
            return True
        angle = 2.0 * math.atan2(across, sw) / across
        vx, vz = angle * sx, angle * sz
        ax = self.semi_x[0] if vx >= 0.0 else self.semi_x[1]
        az = self.semi_z[0] if vz >= 0.0 else self.semi_z[1]
        x, z = abs(vx) / ax, abs(vz) / az
        if x * x + z * z <= 1.0:
            return True
        # Just outside: within SLACK of the ellipse's point with the same z (or x) coordinate.
        if z <= 1.0 and abs(vx) - ax * math.sqrt(1.0 - z * z) <= SLACK:
            return True
        return x <= 1.0 and abs(vz) - az * math.sqrt(1.0 - x * x) <= SLACK


# ranges -> {the ranged joints' axes: each ball's test}: a test reads nothing else of the skeleton,
# so the skeletons of one solve's stages (the same tree with other mobilities) share theirs
_TESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
KEPT_AXES = 4  # the skeletons' axes kept per ranges


def all_inside(ranges: SphericalRanges, skeleton: Skeleton, q) -> bool:
    """Whether every ball joint of ``ranges`` is inside its range at joint values ``q`` as
    ``InsideTest`` answers it (``project`` would leave ``q`` as it is)."""
    kept = _TESTS.get(ranges)
    if kept is None:
        kept = _TESTS[ranges] = {}
    axes = skeleton.axis[ranges.joints].tobytes()
    tests = kept.get(axes)
    if tests is None:
        if len(kept) >= KEPT_AXES:
            kept.clear()
        tests = kept[axes] = [InsideTest(one_ball(ranges, b), skeleton) for b in range(ranges.size)]
    values = q.tolist() if isinstance(q, np.ndarray) else q
    return all(test.inside(values) for test in tests)


def one_ball(ranges: SphericalRanges, b: int) -> SphericalRanges:
    """The range of ball joint ``b`` of ``ranges`` alone."""
    return SphericalRanges(ranges.joints[b:b + 1], ranges.swing_x[b:b + 1], ranges.swing_z[b:b + 1],
                           ranges.twist[b:b + 1], ranges.roll[b:b + 1])
