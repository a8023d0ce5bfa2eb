"""Viewport overlay: pins at their goals (red when violated), the drag goal, locked bones, and
the joint range of the active bone (its swing cone and twist arc)."""

from __future__ import annotations

import math

import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

from ..core import ranges
from . import selection
from .solve import anchor_world


class DragState:
    """What the running interactive drag shows; ``latencies`` keeps the last drag's
    per-event milliseconds for measurements."""

    session = None
    latencies: list = []


DRAG_STATE = DragState()
PIN_HELD = (0.2, 0.9, 0.3, 1.0)
PIN_VIOLATED = (1.0, 0.15, 0.1, 1.0)
DRAG_GOAL = (1.0, 0.8, 0.1, 1.0)
LOCKED = (0.6, 0.6, 0.6, 1.0)
RANGE_CONE = (0.35, 0.65, 1.0, 0.9)
RANGE_TWIST = (1.0, 0.6, 0.15, 1.0)
RANGE_INSIDE = (0.2, 0.9, 0.3, 1.0)
RANGE_OUTSIDE = (1.0, 0.15, 0.1, 1.0)
TWIST_AT = 0.8  # the twist arc's centre, as a share of the bone's length from its head
TWIST_RADIUS = 0.3  # the twist arc's radius, as a share of the bone's length
_handle = None


def _shader():
    for name in ("UNIFORM_COLOR", "3D_UNIFORM_COLOR"):  # Blender 4.x, 3.x
        try:
            return gpu.shader.from_builtin(name)
        except (ValueError, TypeError):
            continue
    return None


def _line_shader():
    """A shader for wide lines (Blender 4.x, 3.x names), or None: lines are then drawn 1 px wide
    by the plain shader (``gpu.state.line_width_set`` is ignored by Metal and Vulkan)."""
    for name in ("POLYLINE_UNIFORM_COLOR", "3D_POLYLINE_UNIFORM_COLOR"):
        try:
            return gpu.shader.from_builtin(name)
        except (ValueError, TypeError):
            continue
    return None


def _draw(shader, kind: str, points, color) -> None:
    if len(points):
        batch = batch_for_shader(shader, kind, {"pos": [tuple(p) for p in points]})
        shader.uniform_float("color", color)
        batch.draw(shader)


# --------------------------------------------------------------------------- joint range geometry


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
    length = float(np.linalg.norm(tail - head)) or 1e-3

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


def _draw_range(obj, shader) -> None:
    pose_bone = active_range_bone(obj)
    if pose_bone is None:
        return
    outline = range_outline(obj, pose_bone)
    wide = _line_shader()
    region = bpy.context.region
    if wide is not None and region is not None:
        wide.bind()
        wide.uniform_float("viewportSize", (region.width, region.height))
        wide.uniform_float("lineWidth", 2.0)
        shader = wide
    gpu.state.blend_set("ALPHA")
    rim = outline["rim"]
    _draw(shader, "LINES", np.stack([rim, np.roll(rim, -1, axis=0)], axis=1).reshape(-1, 3), RANGE_CONE)
    _draw(shader, "LINES", outline["spokes"], RANGE_CONE)
    _draw(shader, "LINE_STRIP", outline["twist_arc"], RANGE_TWIST)
    _draw(shader, "LINES", outline["twist_zero"], RANGE_TWIST)
    _draw(shader, "LINES", outline["twist_tick"], RANGE_INSIDE if outline["twist_inside"] else RANGE_OUTSIDE)
    _draw(shader, "LINES", outline["direction"], RANGE_INSIDE if outline["inside"] else RANGE_OUTSIDE)
    gpu.state.blend_set("NONE")


def draw() -> None:
    context = bpy.context
    obj = context.object
    if obj is None or obj.type != "ARMATURE" or obj.mode != "POSE":
        return
    shader = _shader()
    if shader is None:
        return
    settings = obj.welman_ik
    held, violated, misses = [], [], []
    for pin in settings.pins:
        if not pin.enabled or pin.bone not in obj.pose.bones:
            continue
        goal = np.array(pin.location)
        point = anchor_world(obj, obj.pose.bones[pin.bone], pin.anchor)
        if np.linalg.norm(point - goal) > max(settings.tolerance, 1e-4):
            violated.append(goal)
            misses += [point, goal]
        else:
            held.append(goal)
    locked = [
        np.array(obj.matrix_world @ pb.head)
        for pb in obj.pose.bones
        if pb.lock_ik_x and pb.lock_ik_y and pb.lock_ik_z and not selection.is_hidden(pb)
    ]
    gpu.state.point_size_set(10.0)
    gpu.state.depth_test_set("NONE")
    _draw(shader, "POINTS", held, PIN_HELD)
    _draw(shader, "POINTS", violated, PIN_VIOLATED)
    _draw(shader, "LINES", misses, PIN_VIOLATED)
    gpu.state.point_size_set(6.0)
    _draw(shader, "POINTS", locked, LOCKED)
    session = DRAG_STATE.session
    if session is not None and session.goal is not None and session.obj == obj:
        gpu.state.point_size_set(12.0)
        _draw(shader, "POINTS", [session.goal], DRAG_GOAL)
        _draw(shader, "LINES", [session.effector(), session.goal], DRAG_GOAL)
    gpu.state.point_size_set(1.0)
    _draw_range(obj, shader)


def register() -> None:
    global _handle
    if _handle is None:
        _handle = bpy.types.SpaceView3D.draw_handler_add(draw, (), "WINDOW", "POST_VIEW")


def unregister() -> None:
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None
    DRAG_STATE.session = None
