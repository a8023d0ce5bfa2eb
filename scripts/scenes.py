"""Scenes shared by the demo, the benchmarks and the Blender tests (bpy module)."""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import addon_utils
import bpy

from welman_ik.cleanup.clips import quiet

FEET = ("toe.L", "toe.R", "heel.02.L", "heel.02.R")
DEMO_PINS = FEET + ("hand.L",)


def load_addon() -> None:
    """Register Welman IK from this checkout (idempotent)."""
    import welman_ik

    if not hasattr(bpy.types.Object, "welman_ik"):
        welman_ik.register()


def empty_scene() -> None:
    """Factory settings, an empty file; Welman IK registered."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    load_addon()


def basic_human(pins=DEMO_PINS):
    """The Rigify basic human metarig in pose mode, with position pins on ``pins``."""
    return _metarig(bpy.ops.object.armature_basic_human_metarig_add, pins)


def human(pins=()):
    """The Rigify human metarig (fingers, face) in pose mode, with position pins on ``pins``."""
    return _metarig(bpy.ops.object.armature_human_metarig_add, pins)


def _metarig(add, pins):
    """The metarig Rigify's ``add`` operator adds, in pose mode, with position pins on ``pins``."""
    addon_utils.enable("rigify", default_set=True)
    add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    pin_bones(obj, pins)
    return obj


def generated_rigify(pins=(), metarig=None):
    """A Rigify human generated from the basic human metarig (``metarig``: another, such as
    ``human``) by ``rigify_generate``, as a user does, in pose mode, with position pins on
    ``pins`` (for example its IK foot controls)."""
    (metarig or basic_human)(pins=())
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.pose.rigify_generate()
    rig = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    pin_bones(rig, pins)
    return rig


def pin_bones(obj, pins) -> None:
    """Position pins on bones ``pins`` where they are (the pin operator), then no selection."""
    if pins:
        select(obj, pins)
        bpy.ops.welman_ik.pin()
    select(obj, ())


def pin_one(obj, bone: str, kind: str):
    """Pin bone ``bone`` by ``kind`` where it is (the pin operator, quietly), then no selection;
    returns its pin (the first of the bone's pins of that kind)."""
    select(obj, [bone])
    with quiet():
        assert bpy.ops.welman_ik.pin(kind=kind) == {"FINISHED"}
    select(obj, ())
    return next(p for p in obj.welman_ik.pins if p.bone == bone and p.kind == kind)


def select(obj, names) -> None:
    from welman_ik.blender.rig.selection import set_selected

    names = set(names)
    for pb in obj.pose.bones:
        set_selected(pb, pb.name in names)


def profiled(call, top: int = 25, callees: str = "") -> str:
    """Run ``call()`` under cProfile; the ``top`` entries by cumulative and by own time, and
    what the functions matching ``callees`` (a pstats pattern) called, if given."""
    profiler = cProfile.Profile()
    profiler.enable()
    call()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    if callees:
        stats.sort_stats("cumulative").print_callees(callees)
    return out.getvalue()
