"""The joint range of a pose bone as world-space geometry, what the overlay draws for the
active bone: its swing cone (the elliptic cone's rim and spokes) and its twist arc, with the
bone's current swing and twist measured against them as the solver splits rotations
(``core.ranges``). Pure geometry (numpy on the evaluated pose, no gpu): tested without a window.
"""

from __future__ import annotations

import math

import numpy as np

from ...core import ranges

TWIST_AT = 0.8  # the twist arc's centre, as a share of the bone's length from its head
TWIST_RADIUS = 0.3  # the twist arc's radius, as a share of the bone's length


def _orthonormal(m) -> np.ndarray:
    """The rotation nearest the 3x3 ``m`` (object or parent scale taken out)."""
    u, _, vt = np.linalg.svd(np.asarray(m, dtype=float))
    r = u @ vt
    if np.linalg.det(r) < 0.0:
        r = u @ np.diag([1.0, 1.0, -1.0]) @ vt
    return r


def swing_twist(rotation: np.ndarray) -> tuple[float, float, float]:
    """(sx, sz, twist) [rad] of one rotation matrix, as the solver splits it (``core.ranges``)."""
    sx, sz, twist = ranges.swing_twist(np.asarray(rotation, dtype=float)[None])
    return float(sx[0]), float(sz[0]), float(twist[0])


def _semi_axes(rng, sx: float, sz: float) -> tuple[float, float]:
    """The cone's semi-axes [rad] in the quadrant of swing (sx, sz)."""
    ax = rng.swing_x_max if sx >= 0.0 else -rng.swing_x_min
    az = rng.swing_z_max if sz >= 0.0 else -rng.swing_z_min
    return max(ax, 0.0), max(az, 0.0)


def swing_measure(rng, sx: float, sz: float) -> float:
    """sqrt((sx/ax)^2 + (sz/az)^2): at most 1 inside the range's elliptic cone (a swing on a
    zero semi-axis counts as infinitely far out)."""
    total = 0.0
    for s, a in zip((sx, sz), _semi_axes(rng, sx, sz)):
        if abs(s) <= 1e-12:
            continue
        if a <= 0.0:
            return math.inf
        total += (s / a) ** 2
    return math.sqrt(total)


def range_frame(obj, pose_bone) -> np.ndarray:
    """The range's axes in world space (3x3, columns X Y Z): the bone's rest orientation as
    carried by its posed parent, turned by the range's ``roll`` about its Y."""
    carried = obj.matrix_world @ pose_bone.matrix @ pose_bone.matrix_basis.inverted()
    return _orthonormal(carried.to_3x3()) @ ranges.rotation_y(pose_bone.welman_ik_range.roll)


def range_outline(obj, pose_bone, segments: int = 32) -> dict:
    """The joint range of ``pose_bone`` (armature object ``obj``) as world-space points, from
    its evaluated pose; pure geometry (no gpu), what the overlay draws:

    - ``head`` (3,), ``length``: the bone's head and world length [m];
    - ``rim`` (segments, 3): the cone's rim, a closed loop at ``length`` from the head: the
      directions Rot(s) Y for swing vectors s on the elliptic boundary, quadrant by quadrant;
    - ``spokes`` (2k, 3): line pairs from the head to about eight of the rim points;
    - ``twist_arc`` (n, 3): a polyline about the bone's posed Y axis from twist_min to
      twist_max (the bone's range X axis swung but not twisted, turned by each twist);
    - ``twist_zero``, ``twist_tick`` (2, 3): lines from the arc's centre to twist 0 and to
      the current twist;
    - ``direction`` (2, 3): the head and the tail (the bone's current direction);
    - ``swing`` (sx, sz), ``twist`` [rad], ``swing_inside``, ``twist_inside``, ``inside``.
    """
    rng = pose_bone.welman_ik_range
    frame = range_frame(obj, pose_bone)
    roll = ranges.rotation_y(rng.roll)
    rotation = roll.T @ _orthonormal(pose_bone.matrix_basis.to_3x3()) @ roll  # R' = B^T R B
    sx, sz, twist = swing_twist(rotation)
    world = obj.matrix_world
    head = np.array(world @ pose_bone.head, dtype=float)
    tail = np.array(world @ pose_bone.tail, dtype=float)
    length = _norm(tail - head) or 1e-3

    phi = np.linspace(0.0, 2.0 * math.pi, segments, endpoint=False)
    cos, sin = np.cos(phi), np.sin(phi)
    ax = np.where(cos >= 0.0, max(rng.swing_x_max, 0.0), max(-rng.swing_x_min, 0.0))
    az = np.where(sin >= 0.0, max(rng.swing_z_max, 0.0), max(-rng.swing_z_min, 0.0))
    s = np.stack([ax * cos, np.zeros_like(phi), az * sin], axis=1)
    angle = np.linalg.norm(s, axis=1)
    unit = s / np.where(angle > 1e-12, angle, 1.0)[:, None]
    # Rot(u, angle) Y = Y cos(angle) + (u x Y) sin(angle), u x Y = (-uz, 0, ux) for u in XZ.
    local = np.stack([-unit[:, 2] * np.sin(angle), np.cos(angle), unit[:, 0] * np.sin(angle)], axis=1)
    rim = head + length * (local @ frame.T)
    spokes = np.empty((0, 3))
    if segments:
        ends = rim[:: max(1, segments // 8)]
        spokes = np.stack([np.broadcast_to(head, ends.shape), ends], axis=1).reshape(-1, 3)

    swung = frame @ ranges.compose(np.array([sx]), np.array([sz]), np.zeros(1))[0]  # without its twist
    centre = head + TWIST_AT * length * swung[:, 1]
    radius = TWIST_RADIUS * length
    low, high = rng.twist_min, rng.twist_max
    steps = max(2, int(segments * abs(high - low) / (2.0 * math.pi)) + 2)
    angles = np.linspace(low, high, steps)
    # Rot_Y(t) X = (cos t, 0, -sin t) in the swung frame.
    arc = centre + radius * (np.cos(angles)[:, None] * swung[:, 0] - np.sin(angles)[:, None] * swung[:, 2])
    current = math.cos(twist) * swung[:, 0] - math.sin(twist) * swung[:, 2]

    swing_inside = swing_measure(rng, sx, sz) <= 1.0 + 1e-6
    twist_inside = low - 1e-6 <= twist <= high + 1e-6
    return {
        "head": head,
        "length": length,
        "rim": rim,
        "spokes": spokes,
        "twist_arc": arc,
        "twist_zero": np.array([centre, centre + radius * 0.6 * swung[:, 0]]),
        "twist_tick": np.array([centre, centre + radius * 1.3 * current]),
        "direction": np.array([head, tail]),
        "swing": (sx, sz),
        "twist": twist,
        "swing_inside": swing_inside,
        "twist_inside": twist_inside,
        "inside": swing_inside and twist_inside,
    }


def active_range_bone(obj):
    """The active pose bone of armature ``obj`` if its joint range is in use, else None."""
    bone = obj.data.bones.active
    pose_bone = obj.pose.bones.get(bone.name) if bone is not None else None
    if pose_bone is None or not pose_bone.welman_ik_range.use:
        return None
    return pose_bone


def _norm(v) -> float:
    return math.sqrt(float(v @ v))
