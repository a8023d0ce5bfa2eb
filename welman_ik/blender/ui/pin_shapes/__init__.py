"""The shape of every pin kind as world-space geometry (green where the evaluated pose holds
the pin, red where it misses), and the locked bones: what the overlay draws for an armature's
pins. A pin with a frame range that leaves out the scene's current frame is not in force
there: its shape is drawn dim (``IDLE``) and without its miss lines. Each pin's shape is
built by ``pin_geometry`` (pure numpy, no gpu: tested without a window) as world-space points
keyed by (primitive, colour); ``overlay_geometry`` merges the shapes of all pins and keeps
the result while nothing changes (``Cache``; the frame counts through which pins are in force
on it). The armature and its pins are read once per draw (``scene``); the kinds are drawn by
``kinds`` and ``balance`` with ``parts`` (colours, sizes, ``Shapes``). What each kind draws:

- POSITION: the goal point; a red line from the bone's point to it when missed.
- ORIENTATION: the goal's axis triad at the bone's head (X red, Y green, Z blue; the held axes
  bright, the free ones faint), a dot at the head; when missed, the bone's own held axes in red.
- POSE: the orientation's triad and the position's goal point.
- LINE: a segment of the line through the location along the direction, the bone's point.
- PLANE: a translucent gridded square of the plane about the bone's point, the point.
- AIM: a ray from the bone's head along the aimed axis, as long as the way to the target, and
  the target; when missed, a faint line from the head to the target.
- REGION: the sphere as three great circles, the bone's point.
- TOGETHER: a tether between the two bones' points (the other may be another armature's).
- BALANCE: the centre of mass, a plumb line down to the support's level, and the support
  polygon's outline through the planted pins (or the target point).

A pin that follows a target (``following``) is drawn where the target has its goal now, and,
in force, with thin lines ("THIN") from the bone's point to the goal and, faint, from the goal
to the target's origin; a pin whose target is lost draws nothing.
"""

from __future__ import annotations

from .following import tether
from .kinds import AIM_AXES, measure_and_shape
from .parts import (
    AXIS_FREE,
    AXIS_HELD,
    CIRCLE_SEGMENTS,
    FAINT_VIOLATED,
    FILL_HELD,
    FILL_VIOLATED,
    IDLE,
    IDLE_ALPHA,
    LINE_BONES,
    LINE_HALF,
    LOCKED,
    PIN_HELD,
    PIN_IDLE,
    PIN_VIOLATED,
    PLANE_CELLS,
    PLANE_HALF,
    PLANE_LINES,
    PLANE_TRIS,
    SHAPE_HELD,
    SHAPE_VIOLATED,
    TETHER,
    TETHER_TARGET,
    TRIAD,
    TRIAD_MIN,
    UNIT_CIRCLES,
    IdleShapes,
    Shapes,
    idle_colour,
)
from .scene import MIN_THRESHOLD, PinScene, pins_in_force

__all__ = [
    "AIM_AXES", "AXIS_FREE", "AXIS_HELD", "CIRCLE_SEGMENTS", "FAINT_VIOLATED", "FILL_HELD", "FILL_VIOLATED", "IDLE",
    "IDLE_ALPHA", "LINE_BONES", "LINE_HALF", "LOCKED", "MIN_THRESHOLD", "PIN_HELD", "PIN_IDLE", "PIN_VIOLATED",
    "PLANE_CELLS", "PLANE_HALF", "PLANE_LINES", "PLANE_TRIS", "SHAPE_HELD", "SHAPE_VIOLATED", "TETHER", "TETHER_TARGET",
    "TRIAD", "TRIAD_MIN", "UNIT_CIRCLES", "Cache", "IdleShapes", "PinScene", "Shapes", "idle_colour",
    "overlay_geometry", "pin_geometry", "pin_held", "pin_shape", "pins_in_force",
]


def _drawable(obj, pin, scene: PinScene, index: int) -> bool:
    if not pin.enabled or index in scene.followers.lost:
        return False
    if pin.kind == "BALANCE":
        return True
    if pin.bone not in obj.pose.bones:
        return False
    return pin.kind != "TOGETHER" or index in scene.followers.met or pin.target_bone in obj.pose.bones


def pin_shape(obj, pin, scene: PinScene | None = None, shapes: Shapes | None = None,
              index: int | None = None) -> tuple[bool, float]:
    """Add the shape of pin ``pin`` (``obj.welman_ik.pins[index]``) of armature ``obj`` to
    ``shapes``; (held, miss [m]) as measured on the evaluated pose. A pin that cannot be
    drawn (disabled, its bone gone, its target lost, a balance on a rig without mass) adds
    nothing and counts as held; a pin out of force on the scene's frame is drawn dim, without
    its misses (and its tether), and counts as held (it holds nothing there), its miss
    measured all the same."""
    scene = scene or PinScene(obj)
    shapes = shapes if shapes is not None else Shapes()
    if not pin.enabled:
        return True, 0.0
    if index is None:
        index = int(pin.path_from_id().rpartition("[")[2].rstrip("]"))
    if not _drawable(obj, pin, scene, index):
        return True, 0.0
    idle = not scene.in_force[index]
    try:
        miss = measure_and_shape(scene, pin, index, IdleShapes(shapes) if idle else shapes)
    except ValueError:  # a balance on a rig without mass: nothing to draw
        return True, 0.0
    if not idle:
        tether(scene, pin, index, shapes)
    return idle or miss <= scene.threshold, miss


def pin_geometry(obj, pin, scene: PinScene | None = None) -> dict:
    """The overlay's drawing of one pin: {(primitive, colour): (n, 3) world points}, with
    primitive "POINTS", "LINES" (pairs) or "TRIS" (triples); pure geometry (no gpu). On the
    scene's current frame unless ``scene`` says otherwise."""
    shapes = Shapes()
    pin_shape(obj, pin, scene, shapes)
    return shapes.merged()


def pin_held(obj, pin, scene: PinScene | None = None) -> bool:
    """Whether the evaluated pose holds ``pin``, as the overlay colours it (a pin out of force
    on the frame counts as held)."""
    return pin_shape(obj, pin, scene)[0]


class Cache:
    """The last drawing: its signature (``PinScene.signature``), its parts, and their gpu
    batches once drawn. Redraws of an unchanged pose (the view orbited, another region
    drawn) reuse both; a change of pose or pins, or a new frame that brings a pin into force
    or out of it, builds them again."""

    key = None
    parts: dict = {}
    batches = None


def overlay_geometry(obj, frame: int | None = None) -> dict:
    """Everything the overlay draws for armature ``obj`` but the joint range and the drag:
    every enabled pin (dim where out of force on ``frame``, the context scene's current frame
    unless given), and the locked bones; as ``pin_geometry``."""
    scene = PinScene(obj, frame)
    key = scene.signature()
    if key == Cache.key:
        return Cache.parts
    shapes = Shapes()
    for index, pin in enumerate(scene.pins):
        pin_shape(obj, pin, scene, shapes, index)
    shapes.add("LOCKED", LOCKED, scene.frames()[0][scene.locked])
    Cache.key, Cache.parts, Cache.batches = key, shapes.merged(), None
    return Cache.parts
