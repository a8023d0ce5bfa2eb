"""What the pins' shapes are drawn with: the colours (green where a pin is held, red where it
is missed, dim where it is not in force on the scene's frame; an orientation's X, Y, Z), the
sizes, the unit patterns (a sphere's great circles, a plane's grid), a little vector algebra,
and ``Shapes``, the drawing gathered by (primitive, colour), with ``IdleShapes`` for a pin out
of force.
"""

from __future__ import annotations

import math

import numpy as np

PIN_HELD = (0.2, 0.9, 0.3, 1.0)
PIN_VIOLATED = (1.0, 0.15, 0.1, 1.0)
SHAPE_HELD = (0.2, 0.9, 0.3, 0.75)  # a goal's shape (line, plane, sphere, ...) where it is held
SHAPE_VIOLATED = (1.0, 0.15, 0.1, 0.75)
FILL_HELD = (0.2, 0.9, 0.3, 0.12)  # a plane's or support polygon's fill
FILL_VIOLATED = (1.0, 0.15, 0.1, 0.12)
FAINT_VIOLATED = (1.0, 0.15, 0.1, 0.4)
TETHER = (0.45, 0.75, 1.0, 0.8)  # a following pin's thin line from the bone's point to its moving goal ...
TETHER_TARGET = (0.45, 0.75, 1.0, 0.3)  # ... and, faint, from the goal to what it follows
AXIS_HELD = ((1.0, 0.2, 0.25, 1.0), (0.35, 1.0, 0.2, 1.0), (0.2, 0.45, 1.0, 1.0))  # X, Y, Z held
AXIS_FREE = ((1.0, 0.2, 0.25, 0.22), (0.35, 1.0, 0.2, 0.22), (0.2, 0.45, 1.0, 0.22))  # X, Y, Z left free
LOCKED = (0.6, 0.6, 0.6, 1.0)  # a locked bone's head
IDLE = (0.5, 0.56, 0.68)  # every part of a pin out of force on the scene's frame, in this colour ...
IDLE_ALPHA = 0.4  # ... at this share of the part's own opacity
PIN_IDLE = (*IDLE, IDLE_ALPHA)  # its marker
TRIAD = 0.8  # an orientation triad's arm, as a share of the bone's length ...
TRIAD_MIN = 0.1  # ... but at least this long [m]
LINE_HALF = 0.5  # a line pin's segment reaches at least this far [m] beyond the location and the point ...
LINE_BONES = 1.5  # ... or this many bone lengths, if longer
PLANE_HALF = 0.25  # half the side of a plane pin's square [m]
PLANE_CELLS = 4  # grid cells along each side of it
CIRCLE_SEGMENTS = 48  # per great circle of a region's sphere


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


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    n = norm(v)
    return v / n if n > 1e-12 else np.array([0.0, 0.0, 1.0])


def plane_basis(normal: np.ndarray) -> np.ndarray:
    """(3, 2): two unit vectors perpendicular to the unit ``normal`` and to each other."""
    x, y, z = (float(v) for v in normal)
    if abs(x) < 0.9:  # normal x (1, 0, 0)
        u = np.array([0.0, z, -y]) / math.hypot(y, z)
    else:  # normal x (0, 1, 0)
        u = np.array([-z, 0.0, x]) / math.hypot(x, z)
    a, b, c = u
    return np.array([[a, y * c - z * b], [b, z * a - x * c], [c, x * b - y * a]])


def quaternion_matrix(q) -> np.ndarray:
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


def norm(v) -> float:
    return math.sqrt(float(v @ v))


class Shapes:
    """World-space points by (primitive, colour): "POINTS" single points, "LINES" pairs,
    "THIN" pairs drawn as thin lines, "TRIS" triples."""

    def __init__(self):
        self.parts: dict = {}

    def add(self, primitive: str, colour, points) -> None:
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        if len(points):
            self.parts.setdefault((primitive, tuple(colour)), []).append(points)

    def miss(self, primitive: str, colour, points) -> None:
        """A part that shows a miss (the line from the bone's point to where it should be)."""
        self.add(primitive, colour, points)

    def merged(self) -> dict:
        return {key: (arrays[0] if len(arrays) == 1 else np.concatenate(arrays)) for key, arrays in self.parts.items()}


def idle_colour(colour) -> tuple:
    """What ``colour`` becomes on a pin out of force: ``IDLE``, fainter by ``IDLE_ALPHA``."""
    return (*IDLE, IDLE_ALPHA * float(colour[3]))


class IdleShapes:
    """Draws a pin out of force on the scene's frame into ``shapes``: its shape dim
    (``idle_colour``), its misses left out (it holds nothing on this frame)."""

    def __init__(self, shapes: Shapes):
        self.shapes = shapes

    def add(self, primitive: str, colour, points) -> None:
        self.shapes.add(primitive, idle_colour(colour), points)

    def miss(self, primitive: str, colour, points) -> None:
        pass


def triad(shapes: Shapes, origin, axes, held_axes, size: float) -> None:
    for k in range(3):
        colour = AXIS_HELD[k] if held_axes[k] else AXIS_FREE[k]
        shapes.add("LINES", colour, [origin, origin + size * axes[:, k]])


def pin_colour(miss: float, threshold: float):
    return PIN_HELD if miss <= threshold else PIN_VIOLATED


def shape_colour(miss: float, threshold: float):
    return SHAPE_HELD if miss <= threshold else SHAPE_VIOLATED
