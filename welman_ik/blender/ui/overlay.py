"""Viewport overlay: the draw handler. Over the 3D view in pose mode it draws every pin's shape
(dim where the pin is not in force on the scene's current frame; a pin that follows a target
at its moving goal, tethered to it by thin lines) and the locked bones (built
by ``pin_shapes``; one gpu batch per (primitive, colour), kept with the cached drawing while
neither the pose, the pins nor the set of pins in force changes), the running drag's goal (read from ``drag.state``), and the joint
range of the active bone (built by ``range_shapes``: its swing cone and twist arc). The
handler never raises: an error is printed once.
"""

from __future__ import annotations

import time

import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

from ..drag.state import DRAG_STATE
from .pin_shapes import Cache, overlay_geometry
from .range_shapes import active_range_bone, range_outline

DRAG_GOAL = (1.0, 0.8, 0.1, 1.0)
RANGE_CONE = (0.35, 0.65, 1.0, 0.9)
RANGE_TWIST = (1.0, 0.6, 0.15, 1.0)
RANGE_INSIDE = (0.2, 0.9, 0.3, 1.0)
RANGE_OUTSIDE = (1.0, 0.15, 0.1, 1.0)
_handle = None


def _draw(shader, kind: str, points, color) -> None:
    if len(points):
        batch = batch_for_shader(shader, kind, {"pos": [tuple(p) for p in points]})
        shader.uniform_float("color", color)
        batch.draw(shader)


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
    """(kind, colour, shader, batch) for each part, triangles first and points last ("THIN":
    lines drawn thin)."""
    shaders = Shaders.get()
    plain = shaders.plain
    out = []
    for primitive in ("TRIS", "THIN", "LINES", "POINTS", "LOCKED"):
        for (kind, colour), points in parts.items():
            if kind != primitive or not len(points):
                continue
            if kind in {"LINES", "THIN"} and shaders.lines is not None:
                shader = shaders.lines
            elif kind in {"POINTS", "LOCKED"}:
                shader = shaders.points or plain
            else:
                shader = plain
            primitive_drawn = {"LOCKED": "POINTS", "THIN": "LINES"}.get(kind, kind)
            out.append((kind, colour, shader, _batch(shader, primitive_drawn, points)))
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
            shader.uniform_float("lineWidth", 1.0 if kind == "THIN" else line_width)
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
    DRAG_STATE.session = None
    # The gpu batches and shaders first, while the GPU module is there to free them: at exit
    # Blender may have torn down its types already (the handler's removal below then fails),
    # and a class attribute would outlive the GPU module (Blender reports memory not freed).
    Cache.key, Cache.parts, Cache.batches = None, {}, None
    Shaders.plain = Shaders.lines = Shaders.points = None
    Shaders.looked_up = False
    if _handle is not None:
        handle, _handle = _handle, None
        bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
