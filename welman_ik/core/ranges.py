"""Spherical joint ranges: a swing cone and a twist range on a ball joint (Yamane &
Nakamura 2003, section 4; the swing-twist limits of Final IK and PhysX).

A ball joint is three hinges at one point whose axes are the coordinate axes of its own
frame, in some order: its rotation relative to rest is R = R_a(q_a) R_b(q_b) R_c(q_c)
for its hinges a, b, c in chain order. The range is measured in a frame turned by
``roll`` about Y (B = R_y(roll)), R' = B^T R B, split into swing and twist:

    R' = S T,   T = R_y(twist),   S = rotation about an axis in the XZ plane that
                                      carries Y onto R' Y,

with the swing vector s = angle * axis = (s_x, 0, s_z). The joint is within its range
when twist_min <= twist <= twist_max and (s_x / a_x)^2 + (s_z / a_z)^2 <= 1, where a_x
is swing_x_max for s_x >= 0 and -swing_x_min otherwise (a_z likewise): an elliptic cone,
one quarter-ellipse per quadrant, so a hinge that must not bend one way has that bound 0.

Enforcement is clamping on the swing-twist decomposition, not per-Euler-axis: a rotation
outside is replaced by the closest allowed one (the closest point of the ellipse in the
swing plane, the twist clipped), and its hinge values by the Euler angles of that
rotation nearest to the ones they had.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .skeleton import Skeleton, axis_angle_matrices

TINY_BOUND = 1e-9  # [rad] a semi-axis below this is a wall: no swing that way
ELLIPSE_NEWTON = 40
INSIDE_SLACK = 1e-9  # [rad] a rotation this close to the boundary counts as inside
WALL = 1e-2  # [rad] the semi-axis a wall (a zero bound) counts as in the linearised constraint
GRADIENT_STEP = 1e-6  # [rad] central differences of the constraints


def rotation_y(angle: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    m = np.zeros(np.shape(angle) + (3, 3))
    m[..., 0, 0], m[..., 0, 2], m[..., 1, 1], m[..., 2, 0], m[..., 2, 2] = c, s, 1.0, -s, c
    return m


def swing_twist(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(s_x, s_z, twist) [rad] of rotations ``r`` (m, 3, 3): R = S(s) R_y(twist)."""
    r = np.asarray(r, dtype=float)
    y = r[:, :, 1]  # R Y
    angle = np.arccos(np.clip(y[:, 1], -1.0, 1.0))
    sine = np.hypot(y[:, 0], y[:, 2])
    factor = np.where(sine > 1e-12, angle / np.where(sine > 1e-12, sine, 1.0), 1.0)
    sx, sz = y[:, 2] * factor, -y[:, 0] * factor  # angle * unit(Y x RY)
    swing = axis_angle_matrices(*_axis_angle(sx, sz))
    t = np.swapaxes(swing, 1, 2) @ r
    return sx, sz, np.arctan2(t[:, 0, 2], t[:, 0, 0])


def _axis_angle(sx: np.ndarray, sz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    angle = np.hypot(sx, sz)
    small = angle <= 1e-150
    safe = np.where(small, 1.0, angle)
    axis = np.stack([sx / safe, np.zeros_like(sx), sz / safe], axis=-1)
    axis[small] = (1.0, 0.0, 0.0)
    return axis, angle


def compose(sx: np.ndarray, sz: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """The rotations (m, 3, 3) S(s) R_y(twist)."""
    return axis_angle_matrices(*_axis_angle(np.asarray(sx, float), np.asarray(sz, float))) @ rotation_y(twist)


def closest_on_ellipse(x: np.ndarray, y: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of the ellipses (X/a)^2 + (Y/b)^2 = 1 closest to (x, y), for points
    outside, with a and b > 0 and x, y >= 0 (the quadrant's own quarter). Newton on the
    Lagrange multiplier t >= 0: F(t) = (a x / (t + a^2))^2 + (b y / (t + b^2))^2 - 1 is
    convex and decreasing, so from t = 0 (F > 0 outside) the iterates rise monotonically
    to the root (from the larger of a x - a^2 and b y - b^2, where one term alone is 1)."""
    a2, b2 = a * a, b * b
    # Where one term alone is 1, F >= 0: a start left of the root, far closer than 0.
    t = np.maximum(0.0, np.maximum(a * x - a2, b * y - b2))
    for _ in range(ELLIPSE_NEWTON):
        u, v = a * x / (t + a2), b * y / (t + b2)
        f = u * u + v * v - 1.0
        df = -2.0 * (u * u / (t + a2) + v * v / (t + b2))
        step = -f / np.minimum(df, -1e-300)
        t = t + step
        if np.all(np.abs(step) <= 1e-12 * (t + np.minimum(a2, b2))):  # t's own scale
            break
    return a2 * x / (t + a2), b2 * y / (t + b2)


def euler_angles(r: np.ndarray, order: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Angles (m, 3) with R = R_i(a) R_j(b) R_k(c) for coordinate axes (i, j, k) =
    ``order`` (m, 3), the ones nearest ``near`` (m, 3) of the two solutions and their
    2 pi turns."""
    m = len(r)
    rows = np.arange(m)
    i, j, k = order[:, 0], order[:, 1], order[:, 2]
    even = np.where(((j - i) % 3) == 1, 1.0, -1.0)  # (x, y, z) cyclic: +1
    b = np.arcsin(np.clip(even * r[rows, i, k], -1.0, 1.0))
    a = np.arctan2(-even * r[rows, j, k], r[rows, k, k])
    c = np.arctan2(-even * r[rows, i, j], r[rows, i, i])
    first = np.stack([a, b, c], axis=1)
    second = np.stack([a + np.pi, np.pi - b, c + np.pi], axis=1)
    out = []
    for candidate in (first, second):
        candidate = candidate + 2.0 * np.pi * np.round((near - candidate) / (2.0 * np.pi))
        out.append(candidate)
    pick = np.abs(out[1] - near).sum(axis=1) < np.abs(out[0] - near).sum(axis=1)
    return np.where(pick[:, None], out[1], out[0])


@dataclass(frozen=True, eq=False)
class SphericalRanges:
    """The ranges of m ball joints.

    joints:  (m, 3) int, each ball joint's three hinges in chain order; their axes must
             be the coordinate axes of the joint's frame, in any order.
    swing_x, swing_z, twist: (m, 2) [min, max] radians (min <= 0 <= max for the swings).
    roll:    (m,) radians, the range frame's turn about Y.
    """

    joints: np.ndarray
    swing_x: np.ndarray
    swing_z: np.ndarray
    twist: np.ndarray
    roll: np.ndarray

    def __post_init__(self) -> None:
        joints = np.asarray(self.joints, dtype=np.intp).reshape(-1, 3)
        m = len(joints)
        object.__setattr__(self, "joints", joints)
        for name in ("swing_x", "swing_z", "twist"):
            bounds = np.asarray(getattr(self, name), dtype=float).reshape(m, 2)
            if not np.all(np.isfinite(bounds)) or np.any(bounds[:, 0] > bounds[:, 1]):
                raise ValueError(f"joint range {name}: bounds must be finite with min <= max")
            object.__setattr__(self, name, bounds)
        object.__setattr__(self, "roll", np.asarray(self.roll, dtype=float).reshape(m))
        # A swing bound on the wrong side of zero counts as zero (the rest is inside).
        object.__setattr__(self, "_semi_x", np.stack([np.maximum(self.swing_x[:, 1], 0.0),
                                                      np.maximum(-self.swing_x[:, 0], 0.0)], axis=1))
        object.__setattr__(self, "_semi_z", np.stack([np.maximum(self.swing_z[:, 1], 0.0),
                                                      np.maximum(-self.swing_z[:, 0], 0.0)], axis=1))

    @property
    def size(self) -> int:
        return len(self.joints)

    def check(self, skeleton: Skeleton) -> None:
        """ValueError unless every ball joint's hinges are revolute about distinct coordinate
        axes (``check_hinges``)."""
        check_hinges(self, skeleton)

    def order(self, skeleton: Skeleton) -> np.ndarray:
        return np.abs(skeleton.axis[self.joints]).argmax(axis=2)

    def rotations(self, skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
        """Each ball joint's rotation relative to rest (m, 3, 3), in its range frame."""
        return self._rotations(skeleton, np.arange(self.size), np.asarray(q, float)[self.joints])

    def _rotations(self, skeleton: Skeleton, balls: np.ndarray, angles: np.ndarray) -> np.ndarray:
        """The rotations (k, 3, 3) in their range frames of ball joints ``balls`` (k,) at hinge
        values ``angles`` (k, 3)."""
        k = len(balls)
        hinge = axis_angle_matrices(skeleton.axis[self.joints[balls]].reshape(-1, 3), angles.reshape(-1))
        hinge = hinge.reshape(k, 3, 3, 3)
        r = hinge[:, 0] @ hinge[:, 1] @ hinge[:, 2]
        turn = rotation_y(self.roll[balls])
        return np.swapaxes(turn, 1, 2) @ r @ turn

    def _semi_axes(self, sx: np.ndarray, sz: np.ndarray, balls: np.ndarray | None = None):
        """The semi-axes (a_x, a_z) of the quadrant of swings (sx, sz) of ``balls`` (all: None)."""
        rows = np.arange(self.size) if balls is None else balls
        return self._semi_x[rows, (sx < 0).astype(int)], self._semi_z[rows, (sz < 0).astype(int)]

    def excess(self, skeleton: Skeleton, q: np.ndarray) -> np.ndarray:
        """(m,) [rad]: how far each ball joint is outside its range (0 inside)."""
        if not self.size:
            return np.zeros(0)
        return self._excess(self.rotations(skeleton, np.asarray(q, float)))

    def rotation_excess(self, rotations: np.ndarray) -> np.ndarray:
        """(m,) [rad]: how far each of ``rotations`` (m, 3, 3), relative to rest in the bone's
        own frame (a pose bone's ``matrix_basis``), is outside its range: the larger of the
        twist's excess and the swing's distance from its ellipse."""
        turn = rotation_y(self.roll)
        return self._excess(np.swapaxes(turn, 1, 2) @ np.asarray(rotations, float) @ turn)

    def clamp(self, rotations: np.ndarray) -> np.ndarray:
        """``rotations`` (m, 3, 3), relative to rest in the bone's own frame (as for
        ``rotation_excess``), each moved to the closest rotation inside its range (the swing
        onto its ellipse, the twist into its bounds); those inside unchanged."""
        rotations = np.asarray(rotations, float)
        turn = rotation_y(self.roll)
        sx, sz, twist = swing_twist(np.swapaxes(turn, 1, 2) @ rotations @ turn)
        cx, cz, ct = self._clamped(sx, sz, twist)
        out = np.maximum(np.hypot(sx - cx, sz - cz), np.abs(twist - ct)) > INSIDE_SLACK
        clamped = rotations.copy()
        if out.any():
            clamped[out] = turn[out] @ compose(cx[out], cz[out], ct[out]) @ np.swapaxes(turn[out], 1, 2)
        return clamped

    def _excess(self, r: np.ndarray) -> np.ndarray:
        sx, sz, twist = swing_twist(r)
        cx, cz, ct = self._clamped(sx, sz, twist)
        return np.maximum(np.hypot(sx - cx, sz - cz), np.abs(twist - ct))

    def _clamped(self, sx, sz, twist, balls: np.ndarray | None = None):
        ax, az = self._semi_axes(sx, sz, balls)
        bounds = self.twist if balls is None else self.twist[balls]
        ct = np.clip(twist, bounds[:, 0], bounds[:, 1])
        x, z = np.abs(sx), np.abs(sz)
        ax_safe, az_safe = np.maximum(ax, TINY_BOUND), np.maximum(az, TINY_BOUND)
        outside = (x / ax_safe) ** 2 + (z / az_safe) ** 2 > 1.0
        cx, cz = x.copy(), z.copy()
        if outside.any():
            px, pz = closest_on_ellipse(x[outside], z[outside], ax_safe[outside], az_safe[outside])
            cx[outside], cz[outside] = px, pz
        return np.copysign(cx, sx), np.copysign(cz, sz), ct

    def project(self, skeleton: Skeleton, q: np.ndarray, free: np.ndarray | None = None) -> np.ndarray:
        """``q`` with every ball joint outside its range moved to the closest rotation
        inside. ``free`` (n,) bool: only those hinges change (a locked hinge keeps its
        value, so the result is then only near the range)."""
        return q if not self.size else self.project_many(skeleton, np.asarray(q, dtype=float)[None], free)[0]

    def project_many(self, skeleton: Skeleton, q: np.ndarray, free: np.ndarray | None = None) -> np.ndarray:
        """``project`` of each of the configurations ``q`` (T, n) at once."""
        q = np.asarray(q, dtype=float)
        if not self.size or not len(q):
            return q
        m = self.size
        balls = np.tile(np.arange(m), len(q))
        angles = q[:, self.joints].reshape(-1, 3)
        sx, sz, twist = swing_twist(self._rotations(skeleton, balls, angles))
        cx, cz, ct = self._clamped(sx, sz, twist, balls)
        out = np.flatnonzero(np.maximum(np.hypot(sx - cx, sz - cz), np.abs(twist - ct)) > INSIDE_SLACK)
        if not out.size:
            return q
        turn = rotation_y(self.roll[balls[out]])
        r = turn @ compose(cx[out], cz[out], ct[out]) @ np.swapaxes(turn, 1, 2)
        values = euler_angles(r, self.order(skeleton)[balls[out]], angles[out])
        rows, joints = (out // m)[:, None], self.joints[balls[out]]
        q = q.copy()
        if free is not None:
            values = np.where(np.asarray(free, dtype=bool)[joints], values, q[rows, joints])
        q[rows, joints] = values
        return q

    def containing(self, skeleton: Skeleton, q: np.ndarray) -> SphericalRanges:
        """These ranges, each widened just enough to hold ``q`` (a joint posed past its
        range by hand may move back toward it, it is not snapped back)."""
        if not self.size:
            return self
        sx, sz, twist = swing_twist(self.rotations(skeleton, np.asarray(q, float)))
        ax, az = self._semi_axes(sx, sz)
        ax_safe, az_safe = np.maximum(ax, TINY_BOUND), np.maximum(az, TINY_BOUND)
        reach = np.sqrt((sx / ax_safe) ** 2 + (sz / az_safe) ** 2)
        grow = np.maximum(reach * (1.0 + 1e-9), 1.0)
        if np.all(grow == 1.0) and np.all((twist >= self.twist[:, 0]) & (twist <= self.twist[:, 1])):
            return self
        # Scale the quadrant's ellipse; where a wall (a zero bound) is in the way, open
        # each semi-axis to sqrt(2) times the joint's value on it instead.
        walled = (ax <= TINY_BOUND) | (az <= TINY_BOUND)
        new_x = np.where(walled, np.maximum(ax, np.sqrt(2.0) * np.abs(sx)), ax * grow)
        new_z = np.where(walled, np.maximum(az, np.sqrt(2.0) * np.abs(sz)), az * grow)
        swing_x, swing_z = self.swing_x.copy(), self.swing_z.copy()
        rows = np.flatnonzero(grow > 1.0)
        for s, bounds, semi in ((sx, swing_x, new_x), (sz, swing_z, new_z)):
            negative = s[rows] < 0
            bounds[rows[~negative], 1] = np.maximum(bounds[rows[~negative], 1], semi[rows[~negative]])
            bounds[rows[negative], 0] = np.minimum(bounds[rows[negative], 0], -semi[rows[negative]])
        twist_bounds = np.stack([np.minimum(self.twist[:, 0], twist), np.maximum(self.twist[:, 1], twist)], axis=1)
        return SphericalRanges(self.joints, swing_x, swing_z, twist_bounds, self.roll)

    def _constraints(self, skeleton: Skeleton, balls: np.ndarray, angles: np.ndarray) -> np.ndarray:
        """(k, 3): the constraint values of ball joints ``balls`` at hinge values ``angles``
        (k, 3), <= 0 inside: the swing's elliptic measure less 1 (a wall counts as a
        semi-axis of ``WALL``), and the twist's excess past its maximum and its minimum [rad]."""
        sx, sz, twist = swing_twist(self._rotations(skeleton, balls, angles))
        ax, az = self._semi_axes(sx, sz, balls)
        swing = np.sqrt((sx / np.maximum(ax, WALL)) ** 2 + (sz / np.maximum(az, WALL)) ** 2) - 1.0
        return np.stack([swing, twist - self.twist[balls, 1], self.twist[balls, 0] - twist], axis=1)

    def rows(self, skeleton: Skeleton, q: np.ndarray, q_next: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Linearised constraints of the ball joints that the step from ``q`` to ``q_next``
        carries out of their range (Yamane & Nakamura's limits as constraints on the step):
        rows G (k, n) and bounds b (k,) such that G dq = b keeps each on its boundary; each
        row has unit norm. Gradients by central differences over the joint's three hinges,
        all in one batch."""
        n = skeleton.size
        if not self.size:
            return np.zeros((0, n)), np.zeros(0)
        every = np.arange(self.size)
        after = self._constraints(skeleton, every, np.asarray(q_next, float)[self.joints])
        hit = np.argwhere(after > 0.0)  # (k, 2): ball joint, constraint
        if not hit.size:
            return np.zeros((0, n)), np.zeros(0)
        balls = np.unique(hit[:, 0])
        angles = np.asarray(q, float)[self.joints[balls]]  # (b, 3)
        shifts = np.concatenate([np.zeros((1, 3)), GRADIENT_STEP * np.eye(3), -GRADIENT_STEP * np.eye(3)])  # (7, 3)
        probes = (angles[None] + shifts[:, None]).reshape(-1, 3)
        values = self._constraints(skeleton, np.tile(balls, 7), probes).reshape(7, len(balls), 3)
        now = values[0]
        grads = (values[1:4] - values[4:7]).transpose(1, 2, 0) / (2.0 * GRADIENT_STEP)  # ball, constraint, hinge
        index = np.searchsorted(balls, hit[:, 0])
        g = grads[index, hit[:, 1]]  # (k, 3)
        norm = np.linalg.norm(g, axis=1)
        keep = norm > 1e-12
        k = int(keep.sum())
        rows = np.zeros((k, n))
        rows[np.arange(k)[:, None], self.joints[hit[keep, 0]]] = g[keep] / norm[keep, None]
        bounds = -now[index[keep], hit[keep, 1]] / norm[keep]
        return rows, bounds


def check_hinges(ranges: SphericalRanges, skeleton: Skeleton) -> None:
    """``SphericalRanges.check``: a skeleton with the same ranged joints is checked once (every
    solve's problem asks, its stages' skeletons differing in their mobility alone)."""
    if not ranges.size:
        return
    joints = ranges.joints
    if np.any(joints < 0) or np.any(joints >= skeleton.size):
        raise ValueError("joint range names a joint the skeleton does not have")
    key = (skeleton.prismatic[joints].tobytes(), skeleton.axis[joints].tobytes())
    checked = ranges.__dict__.setdefault("_checked", set())
    if key in checked:
        return
    if np.any(skeleton.prismatic[joints]):
        raise ValueError("a joint range needs three hinges, not sliding joints")
    if np.any(np.abs(np.abs(skeleton.axis[joints]).max(axis=2) - 1.0) > 1e-9):
        raise ValueError("a joint range's hinges must turn about coordinate axes")
    if np.any(np.sort(ranges.order(skeleton), axis=1) != np.arange(3)):
        raise ValueError("a joint range's three hinges must turn about three different axes")
    checked.add(key)
