"""Viewport overlay: pins at their goals (red when violated), the drag goal, locked bones."""

from __future__ import annotations

import bpy
import gpu
import numpy as np
from gpu_extras.batch import batch_for_shader

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
_handle = None


def _shader():
    for name in ("UNIFORM_COLOR", "3D_UNIFORM_COLOR"):  # Blender 4.x, 3.x
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
