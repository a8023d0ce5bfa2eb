"""Checks a solve's inputs pass before anything changes: the pinned and dragged bones exist
and are not driven by the rig, and every goal point is a number near the armature. Each
refusal is a ``RigError`` whose message says what to change."""

from __future__ import annotations

import bpy
import numpy as np

from ..rig import driven
from ..rig.model import RigError
from ..rig.units import length_text
from .goals import held_bones

REACH_FACTOR = 1000.0  # goals farther than this many times the armature's size are refused


def rig_reach(obj) -> tuple[np.ndarray, float]:
    """(centre, bound) [m, world]: goals farther than ``bound`` from ``centre`` are refused
    as absurd: ``REACH_FACTOR`` times the size of the posed armature."""
    world = np.array(obj.matrix_world, dtype=float)
    n = len(obj.pose.bones)
    points = np.empty((2 * n, 3), dtype=np.float32)
    obj.pose.bones.foreach_get("head", points[:n].ravel())
    obj.pose.bones.foreach_get("tail", points[n:].ravel())
    points = points.astype(float) @ world[:3, :3].T + world[:3, 3]
    low, high = points.min(axis=0), points.max(axis=0)
    return 0.5 * (low + high), REACH_FACTOR * max(float(np.linalg.norm(high - low)), 1e-3)


def check_goal_point(what: str, point, reach: tuple[np.ndarray, float]) -> np.ndarray:
    """A world goal point, refused when not finite or absurdly far from the armature."""
    point = np.asarray(point, dtype=float).reshape(3)
    if not np.all(np.isfinite(point)):
        raise RigError(f"{what} is not a number (NaN or infinite)")
    centre, bound = reach
    if np.linalg.norm(point - centre) > bound:
        scene = bpy.context.scene
        raise RigError(f"{what} is {length_text(scene, float(np.linalg.norm(point - centre)))} from the armature, "
                       f"more than {REACH_FACTOR:g} times its size ({length_text(scene, bound)}); is it a typo?")
    return point


def check_pin_bones(obj, pins) -> None:
    """Refuse pins whose bone was renamed or deleted."""
    gone = [name for name in held_bones(pins) if name not in obj.pose.bones]
    if gone:
        raise RigError(f"A pin holds bone '{gone[0]}', which no longer exists; unpin or clear it")


def check_goal_bones(obj, dragged: str | None, pinned, translating=()) -> None:
    """Refuse a drag or a pin on a bone the rig drives (constraints, IK chains, drivers): the
    solver cannot hold it there. The message names the bone, what drives it and the control
    to drag instead. A dragged bone in ``translating`` (its head dragged: its rotation does
    not move it) may be driven in rotation alone."""
    names = ([dragged] if dragged else []) + [n for n in pinned if n != dragged]
    for name, found in driven.drives(obj, names).items():
        if name == dragged and name in translating and not found.location:
            continue
        raise RigError(found.message("drag" if name == dragged else "pin"))
