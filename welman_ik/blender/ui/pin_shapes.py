"""The shape of every pin kind as world-space geometry (green where the evaluated pose holds
the pin, red where it misses), and the locked bones: what the overlay draws for an armature's
pins. Each pin's shape is built by ``pin_geometry`` (pure numpy, no gpu: tested without a
window) as world-space points keyed by (primitive, colour); ``overlay_geometry`` merges the
shapes of all pins and keeps the result while nothing changes (``Cache``). What each kind draws:

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

import numpy as np

from ...core.goals.balance import convex_hull_2d, nearest_in_polygon
from ..pins.goals import SUPPORT_KINDS, massive_bones
from ..rig import selection

PIN_HELD = (0.2, 0.9, 0.3, 1.0)
PIN_VIOLATED = (1.0, 0.15, 0.1, 1.0)
SHAPE_HELD = (0.2, 0.9, 0.3, 0.75)  # a goal's shape (line, plane, sphere, ...) where it is held
SHAPE_VIOLATED = (1.0, 0.15, 0.1, 0.75)
FILL_HELD = (0.2, 0.9, 0.3, 0.12)  # a plane's or support polygon's fill
FILL_VIOLATED = (1.0, 0.15, 0.1, 0.12)
FAINT_VIOLATED = (1.0, 0.15, 0.1, 0.4)
AXIS_HELD = ((1.0, 0.2, 0.25, 1.0), (0.35, 1.0, 0.2, 1.0), (0.2, 0.45, 1.0, 1.0))  # X, Y, Z held
AXIS_FREE = ((1.0, 0.2, 0.25, 0.22), (0.35, 1.0, 0.2, 0.22), (0.2, 0.45, 1.0, 0.22))  # X, Y, Z left free
LOCKED = (0.6, 0.6, 0.6, 1.0)  # a locked bone's head
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
            names, masses, fractions = massive_bones(self.obj)
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
