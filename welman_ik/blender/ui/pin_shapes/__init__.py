"""The shape of every pin kind as world-space geometry (green where the evaluated pose holds
the pin, red where it misses), and the locked bones: what the overlay draws for an armature's
pins. Each pin's shape is built by ``pin_geometry`` (pure numpy, no gpu: tested without a
window) as world-space points keyed by (primitive, colour); ``overlay_geometry`` merges the
shapes of all pins and keeps the result while nothing changes (``Cache``). The armature and
its pins are read once per draw (``scene``); the kinds are drawn by ``kinds`` and ``balance``
with ``parts`` (colours, sizes, ``Shapes``). What each kind draws:

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

from .kinds import AIM_AXES, measure_and_shape
from .parts import (
    AXIS_FREE,
    AXIS_HELD,
    CIRCLE_SEGMENTS,
    FAINT_VIOLATED,
    FILL_HELD,
    FILL_VIOLATED,
    LINE_BONES,
    LINE_HALF,
    LOCKED,
    PIN_HELD,
    PIN_VIOLATED,
    PLANE_CELLS,
    PLANE_HALF,
    PLANE_LINES,
    PLANE_TRIS,
    SHAPE_HELD,
    SHAPE_VIOLATED,
    TRIAD,
    TRIAD_MIN,
    UNIT_CIRCLES,
    Shapes,
)
from .scene import MIN_THRESHOLD, PinScene

__all__ = [
    "AIM_AXES", "AXIS_FREE", "AXIS_HELD", "CIRCLE_SEGMENTS", "FAINT_VIOLATED", "FILL_HELD", "FILL_VIOLATED", "LINE_BONES",
    "LINE_HALF", "LOCKED", "MIN_THRESHOLD", "PIN_HELD", "PIN_VIOLATED", "PLANE_CELLS", "PLANE_HALF", "PLANE_LINES",
    "PLANE_TRIS", "SHAPE_HELD", "SHAPE_VIOLATED", "TRIAD", "TRIAD_MIN", "UNIT_CIRCLES", "Cache", "PinScene", "Shapes",
    "overlay_geometry", "pin_geometry", "pin_held", "pin_shape",
]


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
        miss = measure_and_shape(scene, pin, index, shapes)
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
