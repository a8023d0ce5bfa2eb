"""Viewport overlay: every pin drawn as its kind's shape (green where the evaluated pose holds
it, red where it misses), the drag goal, locked bones, and the joint range of the active bone
(its swing cone and twist arc).

Each pin's shape is built by ``pin_geometry`` (pure numpy, no gpu: tested without a window)
as world-space points keyed by (primitive, colour); ``draw`` merges the shapes of all pins
into one batch per key. What each kind draws:

- POSITION: the goal point; a red line from the bone's point to it when missed.
- ORIENTATION: the goal's axis triad at the bone's head (X red, Y green, Z blue; the held axes
  bright, the free ones faint), a dot at the head; when missed, the bone's own held axes in red.
- POSE: the orientation's triad and the position's goal point.
- LINE: a segment of the line through the location along the direction, the bone's point.
- PLANE: a translucent gridded square of the plane about the bone's point, the point.
- AIM: a ray from the bone's head along the aimed axis, as long as the way to the target, and
  the target; when missed, a faint line from the head to the target.
- REGION: the sphere as three great circles, the bone's point.
- TOGETHER: a tether between the two bones' points.
- BALANCE: the centre of mass, a plumb line down to the support's level, and the support
  polygon's outline through the planted pins (or the target point).
"""

from __future__ import annotations

import math
import time

import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

from ..core import ranges
from ..core.goals.balance import convex_hull_2d, nearest_in_polygon
from . import selection
from .goals import SUPPORT_KINDS, massive_bones


class DragState:
    """What the running interactive drag shows; ``latencies`` keeps the last drag's
    per-event milliseconds for measurements."""

    session = None
    latencies: list = []


DRAG_STATE = DragState()
PIN_HELD = (0.2, 0.9, 0.3, 1.0)
PIN_VIOLATED = (1.0, 0.15, 0.1, 1.0)
SHAPE_HELD = (0.2, 0.9, 0.3, 0.75)  # a goal's shape (line, plane, sphere, ...) where it is held
SHAPE_VIOLATED = (1.0, 0.15, 0.1, 0.75)
FILL_HELD = (0.2, 0.9, 0.3, 0.12)  # a plane's or support polygon's fill
FILL_VIOLATED = (1.0, 0.15, 0.1, 0.12)
FAINT_VIOLATED = (1.0, 0.15, 0.1, 0.4)
AXIS_HELD = ((1.0, 0.2, 0.25, 1.0), (0.35, 1.0, 0.2, 1.0), (0.2, 0.45, 1.0, 1.0))  # X, Y, Z held
AXIS_FREE = ((1.0, 0.2, 0.25, 0.22), (0.35, 1.0, 0.2, 0.22), (0.2, 0.45, 1.0, 0.22))  # X, Y, Z left free
DRAG_GOAL = (1.0, 0.8, 0.1, 1.0)
LOCKED = (0.6, 0.6, 0.6, 1.0)
RANGE_CONE = (0.35, 0.65, 1.0, 0.9)
RANGE_TWIST = (1.0, 0.6, 0.15, 1.0)
RANGE_INSIDE = (0.2, 0.9, 0.3, 1.0)
RANGE_OUTSIDE = (1.0, 0.15, 0.1, 1.0)
TWIST_AT = 0.8  # the twist arc's centre, as a share of the bone's length from its head
TWIST_RADIUS = 0.3  # the twist arc's radius, as a share of the bone's length
_handle = None


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


def _draw_range(obj, shader) -> None:
    pose_bone = active_range_bone(obj)
    if pose_bone is None:
        return
    outline = range_outline(obj, pose_bone)
    wide = Shaders.get().lines
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


# --------------------------------------------------------------------------- pin geometry

TRIAD = 0.8  # an orientation triad's arm, as a share of the bone's length ...
TRIAD_MIN = 0.1  # ... but at least this long [m]
LINE_HALF = 0.5  # a line pin's segment reaches at least this far [m] beyond the location and the point ...
LINE_BONES = 1.5  # ... or this many bone lengths, if longer
PLANE_HALF = 0.25  # half the side of a plane pin's square [m]
PLANE_CELLS = 4  # grid cells along each side of it
CIRCLE_SEGMENTS = 48  # per great circle of a region's sphere
MIN_THRESHOLD = 1e-4  # [m] the least miss drawn as one (as for position pins)


def _unit_circles(segments: int) -> np.ndarray:
    """(3 * segments * 2, 3) line pairs: the unit sphere's great circles about X, Y and Z."""
    t = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    c, s, z = np.cos(t), np.sin(t), np.zeros_like(t)
    loops = (np.stack([z, c, s], 1), np.stack([c, z, s], 1), np.stack([c, s, z], 1))
    return np.concatenate([np.stack([loop[:-1], loop[1:]], 1).reshape(-1, 3) for loop in loops])


def _plane_pattern(cells: int) -> tuple[np.ndarray, np.ndarray]:
    """The square [-1, 1]^2 as (u, v) pairs: grid line pairs (outline included), and two triangles."""
    ticks = np.linspace(-1.0, 1.0, cells + 1)
    lines = []
    for t in ticks:
        lines += [(t, -1.0), (t, 1.0), (-1.0, t), (1.0, t)]
    tris = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
    return np.array(lines), np.array(tris)


UNIT_CIRCLES = _unit_circles(CIRCLE_SEGMENTS)
PLANE_LINES, PLANE_TRIS = _plane_pattern(PLANE_CELLS)
AIM_AXES = {"X": (0, 1.0), "Y": (1, 1.0), "Z": (2, 1.0), "-X": (0, -1.0), "-Y": (1, -1.0), "-Z": (2, -1.0)}


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    n = _norm(v)
    return v / n if n > 1e-12 else np.array([0.0, 0.0, 1.0])


def _plane_basis(normal: np.ndarray) -> np.ndarray:
    """(3, 2): two unit vectors perpendicular to the unit ``normal`` and to each other."""
    x, y, z = (float(v) for v in normal)
    if abs(x) < 0.9:  # normal x (1, 0, 0)
        u = np.array([0.0, z, -y]) / math.hypot(y, z)
    else:  # normal x (0, 1, 0)
        u = np.array([-z, 0.0, x]) / math.hypot(x, z)
    a, b, c = u
    return np.array([[a, y * c - z * b], [b, z * a - x * c], [c, x * b - y * a]])


def _quaternion_matrix(q) -> np.ndarray:
    """The 3x3 rotation of a (w, x, y, z) quaternion, normalised (identity for a zero one)."""
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not n > 1e-12:
        return np.eye(3)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


class PinScene:
    """What the pins of one armature share in one draw: its world matrix, the miss threshold,
    every pose bone's evaluated frame and tail (read in bulk once), the centre of mass (once)."""

    def __init__(self, obj):
        self.obj = obj
        self.threshold = max(float(obj.welman_ik.tolerance), MIN_THRESHOLD)
        pose_bones = obj.pose.bones
        n = len(pose_bones)
        self.names = pose_bones.keys()
        self.index = {name: i for i, name in enumerate(self.names)}
        matrices = np.empty(16 * n, dtype=np.float32)
        tails = np.empty(3 * n, dtype=np.float32)
        pose_bones.foreach_get("matrix", matrices)  # column by column
        pose_bones.foreach_get("tail", tails)
        world = np.array(obj.matrix_world, dtype=float)
        self._raw = [matrices, tails, world]
        self._frames = None
        self._com = None
        self._support = None
        pins = self.pins = obj.welman_ik.pins
        k = len(pins)
        self.locations, self.directions = (_bulk(pins, name, 3) for name in ("location", "direction"))
        self.rotations = _bulk(pins, "rotation", 4)
        self.anchors, self.target_anchors, self.radii = (_bulk(pins, name, 1) for name in
                                                         ("anchor", "target_anchor", "radius"))
        self.held_axes = np.empty(3 * k, dtype=bool)
        pins.foreach_get("axes", self.held_axes)
        self.held_axes = self.held_axes.reshape(k, 3)
        self._raw += [self.locations, self.directions, self.rotations, self.anchors, self.target_anchors, self.radii,
                      self.held_axes]

    def signature(self) -> tuple:
        """Everything the pins' drawing depends on: the same signature, the same drawing."""
        pins, pose_bones = self.pins, self.obj.pose.bones
        flags = []
        for name, dtype in (("kind", np.int32), ("aim_axis", np.int32), ("enabled", bool), ("use_support", bool)):
            values = np.empty(len(pins), dtype=dtype)
            pins.foreach_get(name, values)
            flags.append(values)
        locks = np.ones(len(pose_bones), dtype=bool)
        for axis in ("lock_ik_x", "lock_ik_y", "lock_ik_z"):
            lock = np.empty(len(pose_bones), dtype=bool)
            pose_bones.foreach_get(axis, lock)
            locks &= lock
        self.locked = [i for i in np.flatnonzero(locks) if not selection.is_hidden(pose_bones[i])]
        masses = None
        if any(p.kind == "BALANCE" for p in pins):
            masses = np.empty(len(pose_bones), dtype=np.float32)
            pose_bones.foreach_get("welman_ik_mass", masses)
            masses = masses.tobytes()
        return (self.obj.as_pointer(), self.threshold, tuple(self.names), tuple(self.locked), masses,
                tuple((p.bone, p.target_bone) for p in pins), b"".join(a.tobytes() for a in self._raw + flags))

    def frames(self) -> tuple:
        """(heads, tails, unit axes (n, 3, 3), lengths) of every pose bone, world."""
        if self._frames is None:
            matrices, tails, world = self._raw[:3]
            frames = world @ matrices.reshape(-1, 4, 4).transpose(0, 2, 1).astype(float)
            heads = frames[:, :3, 3]
            tails = tails.reshape(-1, 3).astype(float) @ world[:3, :3].T + world[:3, 3]
            axes = frames[:, :3, :3] / np.maximum(np.linalg.norm(frames[:, :3, :3], axis=1), 1e-12)[:, None, :]
            self._frames = heads, tails, axes, np.maximum(np.linalg.norm(tails - heads, axis=1), 1e-6)
        return self._frames

    def bone(self, name: str):
        """(head, tail, unit axes 3x3 (columns X Y Z), length) of pose bone ``name``, world."""
        i = self.index[name]
        heads, tails, axes, lengths = self.frames()
        return heads[i], tails[i], axes[i], float(lengths[i])

    def point(self, name: str, anchor: float) -> np.ndarray:
        i = self.index[name]
        heads, tails = self.frames()[:2]
        return heads[i] + float(anchor) * (tails[i] - heads[i])

    def support(self) -> np.ndarray:
        """(k, 3) the locations of the enabled position and pose pins: the support polygon's corners."""
        if self._support is None:
            rows = [i for i, p in enumerate(self.pins) if p.enabled and p.kind in SUPPORT_KINDS]
            self._support = self.locations[rows].reshape(-1, 3)
        return self._support

    def centre_of_mass(self) -> np.ndarray:
        if self._com is None:
            names, masses, fractions = _masses(self.obj)
            if not names:
                raise ValueError("no bone has mass")
            rows = np.array([self.index[name] for name in names])
            heads, tails = self.frames()[:2]
            points = heads[rows] + fractions[:, None] * (tails[rows] - heads[rows])
            self._com = masses @ points / masses.sum()
        return self._com


def _bulk(collection, name: str, size: int) -> np.ndarray:
    """Property ``name`` of every item of ``collection`` (k, size), or (k,) for size 1."""
    values = np.empty(len(collection) * size, dtype=np.float32)
    collection.foreach_get(name, values)
    values = values.astype(float)
    return values if size == 1 else values.reshape(-1, size)


def _norm(v) -> float:
    return math.sqrt(float(v @ v))


_MASSES: dict = {}  # armature -> (its bones' names and mass overrides, massive_bones of them)


def _masses(obj):
    """``goals.massive_bones(obj)``, kept while the bones' names and masses stay the same
    (in pose mode the hierarchy and lengths cannot change)."""
    key = (obj.as_pointer(), obj.data.as_pointer())
    pose_bones = obj.pose.bones
    masses = np.empty(len(pose_bones), dtype=np.float32)
    pose_bones.foreach_get("welman_ik_mass", masses)
    signature = (tuple(pose_bones.keys()), masses.tobytes())
    found = _MASSES.get(key)
    if found is None or found[0] != signature:
        if len(_MASSES) > 16:
            _MASSES.clear()
        found = _MASSES[key] = (signature, massive_bones(obj))
    return found[1]


class Shapes:
    """World-space points by (primitive, colour): "POINTS" single points, "LINES" pairs,
    "TRIS" triples."""

    def __init__(self):
        self.parts: dict = {}

    def add(self, primitive: str, colour, points) -> None:
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        if len(points):
            self.parts.setdefault((primitive, tuple(colour)), []).append(points)

    def merged(self) -> dict:
        return {key: (arrays[0] if len(arrays) == 1 else np.concatenate(arrays)) for key, arrays in self.parts.items()}


def _triad(shapes: Shapes, origin, axes, held_axes, size: float) -> None:
    for k in range(3):
        colour = AXIS_HELD[k] if held_axes[k] else AXIS_FREE[k]
        shapes.add("LINES", colour, [origin, origin + size * axes[:, k]])


def _orientation(scene: PinScene, pin, i: int, shapes: Shapes) -> float:
    """Draw the goal's triad at the bone's head; the miss [m] as the solver measures it (the
    bone's length times the chord between each held axis and its goal)."""
    head, _, axes, length = scene.bone(pin.bone)
    goal = _quaternion_matrix(scene.rotations[i])
    held_axes = scene.held_axes[i].tolist()
    size = max(TRIAD * length, TRIAD_MIN)
    _triad(shapes, head, goal, held_axes, size)
    chords = np.linalg.norm(goal - axes, axis=0)
    miss = length * float(max((c for c, h in zip(chords, held_axes) if h), default=0.0))
    if miss > scene.threshold:
        for k in range(3):
            if held_axes[k]:
                shapes.add("LINES", PIN_VIOLATED, [head, head + size * axes[:, k]])
    return miss


def _measure_and_shape(scene: PinScene, pin, i: int, shapes: Shapes) -> float:
    """Add ``pin``'s shape except its status colour (added by the caller); its miss [m]."""
    kind = pin.kind
    threshold = scene.threshold
    if kind == "BALANCE":
        return _balance(scene, pin, i, shapes)
    point = scene.point(pin.bone, scene.anchors[i])
    location = scene.locations[i]
    if kind == "POSITION":
        miss = _norm(point - location)
        shapes.add("POINTS", _status(miss, threshold), [location])
        if miss > threshold:
            shapes.add("LINES", PIN_VIOLATED, [point, location])
        return miss
    if kind == "ORIENTATION":
        miss = _orientation(scene, pin, i, shapes)
        shapes.add("POINTS", _status(miss, threshold), [scene.bone(pin.bone)[0]])
        return miss
    if kind == "POSE":
        turn = _orientation(scene, pin, i, shapes)
        off = _norm(point - location)
        miss = max(turn, off)
        shapes.add("POINTS", _status(miss, threshold), [location])
        if off > threshold:
            shapes.add("LINES", PIN_VIOLATED, [point, location])
        return miss
    if kind == "LINE":
        d = _unit(scene.directions[i])
        length = scene.bone(pin.bone)[3]
        along = float((point - location) @ d)
        foot = location + along * d
        miss = _norm(point - foot)
        reach = max(LINE_HALF, LINE_BONES * length)
        ends = [location + (min(0.0, along) - reach) * d, location + (max(0.0, along) + reach) * d]
        shapes.add("LINES", _shape_status(miss, threshold), ends)
        shapes.add("POINTS", _status(miss, threshold), [point])
        if miss > threshold:
            shapes.add("LINES", PIN_VIOLATED, [point, foot])
        return miss
    if kind == "PLANE":
        n = _unit(scene.directions[i])
        height = float((point - location) @ n)
        foot = point - height * n
        miss = abs(height)
        frame = PLANE_HALF * _plane_basis(n).T  # (2, 3)
        shapes.add("LINES", _shape_status(miss, threshold), foot + PLANE_LINES @ frame)
        shapes.add("TRIS", FILL_HELD if miss <= threshold else FILL_VIOLATED, foot + PLANE_TRIS @ frame)
        shapes.add("POINTS", _status(miss, threshold), [point])
        if miss > threshold:
            shapes.add("LINES", PIN_VIOLATED, [point, foot])
        return miss
    if kind == "AIM":
        head, _, axes, length = scene.bone(pin.bone)
        index, sign = AIM_AXES.get(pin.aim_axis, (1, 1.0))
        aim = sign * axes[:, index]
        way = location - head
        distance = _norm(way)
        miss = 0.0 if distance < 1e-12 else length * _norm(way / distance - aim)
        status = _status(miss, threshold)
        shapes.add("LINES", status, [head, head + max(distance, length) * aim])
        shapes.add("POINTS", status, [location])
        if miss > threshold:
            shapes.add("LINES", FAINT_VIOLATED, [head, location])
        return miss
    if kind == "REGION":
        radius = max(float(scene.radii[i]), 0.0)
        offset = point - location
        distance = _norm(offset)
        miss = max(0.0, distance - radius)
        if radius > 0.0:
            shapes.add("LINES", _shape_status(miss, threshold), location + radius * UNIT_CIRCLES)
        shapes.add("POINTS", _status(miss, threshold), [point])
        if miss > threshold:
            shapes.add("LINES", PIN_VIOLATED, [point, location + radius * offset / distance])
        return miss
    if kind == "TOGETHER":
        other = scene.point(pin.target_bone, scene.target_anchors[i])
        miss = _norm(point - other)
        status = _status(miss, threshold)
        shapes.add("LINES", status, [point, other])
        shapes.add("POINTS", status, [point, other])
        return miss
    return math.inf


def _balance(scene: PinScene, pin, i: int, shapes: Shapes) -> float:
    """The centre of mass, its plumb line down to the ground level (the lowest support corner,
    or the location's height) and the support polygon (or the target); the miss [m]: how far
    the plumb point lies outside the polygon (or from the target), across the vertical."""
    threshold = scene.threshold
    up = _unit(scene.directions[i])
    com = scene.centre_of_mass()
    location = scene.locations[i]
    corners = np.zeros((0, 3))
    supported = pin.use_support
    support = scene.support() if supported else np.zeros((0, 3))
    below = support.mean(axis=0) if len(support) else location
    if float((com - below) @ up) < 0.0:  # the vertical's sign does not matter: the plumb line goes down
        up = -up
    if supported:
        level = float(np.min(support @ up)) if len(support) else float(location @ up)
        basis = _plane_basis(up)  # (3, 2) across the vertical
        flat = support @ basis
        hull = convex_hull_2d(flat)
        corners = support[hull]
        if len(hull):
            x = com @ basis
            miss = _norm(nearest_in_polygon(flat[hull], x)[0] - x)
        else:
            miss = math.inf
    else:
        level = float(location @ up)
        across = com - location
        miss = _norm(across - (across @ up) * up)
    ground = com - (float(com @ up) - level) * up
    status = _status(miss, threshold)
    shapes.add("LINES", _shape_status(miss, threshold), [com, ground])
    shapes.add("POINTS", status, [com, ground])
    if supported:
        if len(corners) >= 2:
            loop = np.stack([corners, np.roll(corners, -1, axis=0)], 1).reshape(-1, 3)
            shapes.add("LINES", _shape_status(miss, threshold), loop if len(corners) > 2 else corners)
        if len(corners) >= 3:
            fan = np.stack([np.broadcast_to(corners[0], corners[1:-1].shape), corners[1:-1], corners[2:]], 1)
            shapes.add("TRIS", FILL_HELD if miss <= threshold else FILL_VIOLATED, fan.reshape(-1, 3))
    else:
        shapes.add("POINTS", status, [location])
        if miss > threshold:
            shapes.add("LINES", PIN_VIOLATED, [ground, location - (float(location @ up) - level) * up])
    return miss


def _status(miss: float, threshold: float):
    return PIN_HELD if miss <= threshold else PIN_VIOLATED


def _shape_status(miss: float, threshold: float):
    return SHAPE_HELD if miss <= threshold else SHAPE_VIOLATED


def _drawable(obj, pin) -> bool:
    if not pin.enabled:
        return False
    if pin.kind == "BALANCE":
        return True
    if pin.bone not in obj.pose.bones:
        return False
    return pin.kind != "TOGETHER" or pin.target_bone in obj.pose.bones


def pin_shape(obj, pin, scene: PinScene | None = None, shapes: Shapes | None = None,
              index: int | None = None) -> tuple[bool, float]:
    """Add the shape of pin ``pin`` (``obj.welman_ik.pins[index]``) of armature ``obj`` to
    ``shapes``; (held, miss [m]) as measured on the evaluated pose. A pin that cannot be
    drawn (disabled, its bone gone, a balance on a rig without mass) adds nothing and counts
    as held."""
    scene = scene or PinScene(obj)
    shapes = shapes if shapes is not None else Shapes()
    if not _drawable(obj, pin):
        return True, 0.0
    if index is None:
        index = int(pin.path_from_id().rpartition("[")[2].rstrip("]"))
    try:
        miss = _measure_and_shape(scene, pin, index, shapes)
    except ValueError:  # a balance on a rig without mass: nothing to draw
        return True, 0.0
    return miss <= scene.threshold, miss


def pin_geometry(obj, pin, scene: PinScene | None = None) -> dict:
    """The overlay's drawing of one pin: {(primitive, colour): (n, 3) world points}, with
    primitive "POINTS", "LINES" (pairs) or "TRIS" (triples); pure geometry (no gpu)."""
    shapes = Shapes()
    pin_shape(obj, pin, scene, shapes)
    return shapes.merged()


def pin_held(obj, pin, scene: PinScene | None = None) -> bool:
    """Whether the evaluated pose holds ``pin``, as the overlay colours it."""
    return pin_shape(obj, pin, scene)[0]


class Cache:
    """The last drawing: its signature (``PinScene.signature``), its parts, and their gpu
    batches once drawn. Redraws of an unchanged pose (the view orbited, another region
    drawn) reuse both; a change of pose or pins builds them again."""

    key = None
    parts: dict = {}
    batches = None


def overlay_geometry(obj) -> dict:
    """Everything the overlay draws for armature ``obj`` but the joint range and the drag:
    every enabled pin, and the locked bones; as ``pin_geometry``."""
    scene = PinScene(obj)
    key = scene.signature()
    if key == Cache.key:
        return Cache.parts
    shapes = Shapes()
    for index, pin in enumerate(scene.pins):
        pin_shape(obj, pin, scene, shapes, index)
    shapes.add("LOCKED", LOCKED, scene.frames()[0][scene.locked])
    Cache.key, Cache.parts, Cache.batches = key, shapes.merged(), None
    return Cache.parts


# --------------------------------------------------------------------------- drawing


class Shaders:
    """The builtin shaders the overlay uses, looked up once (names differ across Blender
    3.x, 4.x, 5.x); ``None`` where a Blender has none (or no GPU: background mode)."""

    plain = None
    lines = None  # wide lines
    points = None  # round points
    looked_up = False

    @classmethod
    def get(cls):
        if not cls.looked_up:
            cls.looked_up = True
            cls.plain = _builtin("UNIFORM_COLOR", "3D_UNIFORM_COLOR")
            cls.lines = _builtin("POLYLINE_UNIFORM_COLOR", "3D_POLYLINE_UNIFORM_COLOR")
            cls.points = _builtin("POINT_UNIFORM_COLOR")
        return cls


def _builtin(*names):
    for name in names:
        try:
            return gpu.shader.from_builtin(name)
        except (ValueError, TypeError, SystemError, RuntimeError):
            continue
    return None


def _batch(shader, primitive: str, points):
    """A batch of world ``points`` as ``primitive`` for ``shader``."""
    data = np.ascontiguousarray(points, dtype=np.float32)
    try:
        return batch_for_shader(shader, primitive, {"pos": data})
    except (TypeError, ValueError):  # a Blender whose vertex buffers take no numpy arrays
        return batch_for_shader(shader, primitive, {"pos": data.tolist()})


def _batches(parts: dict) -> list:
    """(kind, colour, shader, batch) for each part, triangles first and points last."""
    shaders = Shaders.get()
    plain = shaders.plain
    out = []
    for primitive in ("TRIS", "LINES", "POINTS", "LOCKED"):
        for (kind, colour), points in parts.items():
            if kind != primitive or not len(points):
                continue
            if kind == "LINES" and shaders.lines is not None:
                shader = shaders.lines
            elif kind in {"POINTS", "LOCKED"}:
                shader = shaders.points or plain
            else:
                shader = plain
            out.append((kind, colour, shader, _batch(shader, "POINTS" if kind == "LOCKED" else kind, points)))
    return out


def draw_geometry(parts: dict, point_size: float = 10.0, line_width: float = 2.0) -> None:
    """Draw {(primitive, colour): points} (``overlay_geometry``) in the current 3D view; the
    batches of the cached drawing (``Cache``) are kept and drawn again."""
    if Shaders.get().plain is None:
        return
    if parts is Cache.parts:
        if Cache.batches is None:
            Cache.batches = _batches(parts)
        batches = Cache.batches
    else:
        batches = _batches(parts)
    region = bpy.context.region
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("NONE")
    gpu.state.depth_mask_set(False)
    for kind, colour, shader, batch in batches:
        shader.bind()
        if shader is Shaders.lines:
            shader.uniform_float("viewportSize", (region.width, region.height) if region is not None else (1.0, 1.0))
            shader.uniform_float("lineWidth", line_width)
        elif kind in {"POINTS", "LOCKED"}:
            gpu.state.point_size_set(point_size if kind == "POINTS" else 0.6 * point_size)
        shader.uniform_float("color", colour)
        batch.draw(shader)
    gpu.state.point_size_set(1.0)
    gpu.state.blend_set("NONE")


class Errors:
    """The draw handler never raises (it runs on every redraw): an error is printed once."""

    seen: set = set()


def draw() -> None:
    try:
        _draw_all()
    except Exception as error:  # noqa: BLE001 - a draw handler must not raise; say it once
        text = f"{type(error).__name__}: {error}"
        if text not in Errors.seen:
            Errors.seen.add(text)
            print(f"Welman IK overlay: {text}")
        try:
            gpu.state.blend_set("NONE")
            gpu.state.point_size_set(1.0)
        except Exception:  # noqa: BLE001, S110 - no GPU state to restore
            pass


def _draw_all() -> None:
    context = bpy.context
    obj = context.object
    if obj is None or obj.type != "ARMATURE" or obj.mode != "POSE":
        return
    shaders = Shaders.get()
    if shaders.plain is None:
        return
    started = time.perf_counter()
    parts = overlay_geometry(obj)
    built = time.perf_counter()
    draw_geometry(parts)
    DRAW_TIMES.append((1000.0 * (built - started), 1000.0 * (time.perf_counter() - built)))
    del DRAW_TIMES[:-100]
    session = DRAG_STATE.session
    if session is not None and session.goal is not None and session.obj == obj:
        goal = np.asarray(session.goal, dtype=float)
        draw_geometry({("POINTS", DRAG_GOAL): goal[None], ("LINES", DRAG_GOAL): np.array([session.effector(), goal])},
                      point_size=12.0)
    _draw_range(obj, shaders.plain)


DRAW_TIMES: list = []  # the last draws' (geometry, gpu calls) milliseconds for the pins (measurements)


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
