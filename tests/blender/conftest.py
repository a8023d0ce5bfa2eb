"""Blender tests: real Blender (the bpy module), each test on a fresh factory scene."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import bpy
import scenes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def human():
    """The Rigify basic human metarig in pose mode, feet and left hand pinned."""
    scenes.empty_scene()
    return scenes.basic_human()


@pytest.fixture
def bare_human():
    """The Rigify basic human metarig in pose mode, no pins."""
    scenes.empty_scene()
    return scenes.basic_human(pins=())


CLIP_SCALES = {"pymo_walk.bvh": 0.0254}  # inches; the others are in centimetres


def import_clip(name, whole: bool = False):
    """A fixture clip (its name, or the path of a clip made from one) imported with Blender's
    BVH importer (in metres), the new armature in pose mode; ``whole``: the scene's frame range
    set to the clip's frames."""
    import addon_utils  # on the path once bpy is imported

    addon_utils.enable("io_anim_bvh", default_set=True)
    path = name if isinstance(name, Path) else FIXTURES / name
    bpy.ops.import_anim.bvh(filepath=str(path), global_scale=CLIP_SCALES.get(path.name, 0.01),
                            update_scene_duration=whole)
    if whole:  # the importer ends the scene one frame past the last key
        bpy.context.scene.frame_end = int(bpy.context.object.animation_data.action.frame_range[1])
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def world_point(obj, bone: str, anchor: float = 1.0) -> np.ndarray:
    """World position of a point along an evaluated pose bone (0 head, 1 tail)."""
    bpy.context.view_layer.update()
    pb = obj.pose.bones[bone]
    return np.array(obj.matrix_world @ (pb.head + anchor * (pb.tail - pb.head)))


def rotation_angle(a, b) -> float:
    """The angle [rad, 0..pi] of the rotation between quaternions ``a`` and ``b``, whichever
    sign either has."""
    return float(2.0 * np.arccos(min(1.0, abs(a.normalized().dot(b.normalized())))))


def local_rotation(obj, bone: str):
    """The evaluated pose bone's rotation from its rest in its own local space (constraints,
    drivers and inheritance included, unlike ``matrix_basis``), as a quaternion."""
    bpy.context.view_layer.update()
    pb = obj.pose.bones[bone]
    local = obj.convert_space(pose_bone=pb, matrix=pb.matrix, from_space="POSE", to_space="LOCAL")
    return local.to_3x3().normalized().to_quaternion()


def pin_errors(obj) -> dict:
    """Distance [m] of every enabled position pin's point from its goal, from the evaluated pose."""
    return {
        p.bone: float(np.linalg.norm(world_point(obj, p.bone, p.anchor) - np.array(p.location)))
        for p in obj.welman_ik.pins
        if p.enabled and p.kind == "POSITION"
    }


def world_pose(obj) -> dict:
    """World head and tail of every bone, evaluated."""
    bpy.context.view_layer.update()
    m = obj.matrix_world
    return {pb.name: (np.array(m @ pb.head), np.array(m @ pb.tail)) for pb in obj.pose.bones}


def channels(obj) -> dict:
    """Every pose channel of every bone, exactly as stored."""
    return {
        pb.name: (
            tuple(pb.location), tuple(pb.rotation_quaternion), tuple(pb.rotation_euler),
            tuple(pb.rotation_axis_angle), tuple(pb.scale), pb.rotation_mode,
        )
        for pb in obj.pose.bones
    }


def drag(bone: str, target, anchor: float = 1.0):
    return bpy.ops.welman_ik.drag(bone=bone, target=tuple(float(v) for v in target), anchor=anchor)


def pins_state(obj) -> list:
    """Every pin's stored fields, for before/after comparisons."""
    return [
        (p.bone, p.kind, p.anchor, tuple(p.location), tuple(p.rotation), p.weight, p.enabled)
        for p in obj.welman_ik.pins
    ]


def set_rotation_mode(obj, mode: str) -> None:
    """Put every pose bone of ``obj`` in rotation mode ``mode`` (the pose at rest)."""
    for pb in obj.pose.bones:
        pb.rotation_mode = mode


def pin(obj, names, **options) -> None:
    """Pin bones ``names`` where they are now through the operator, then deselect all."""
    scenes.select(obj, names)
    assert bpy.ops.welman_ik.pin(**options) == {"FINISHED"}
    scenes.select(obj, ())


def pin_by_kind(obj, kind: str) -> None:
    """One pin of ``kind`` through the operator: a together pin joins hand.L to the active
    hand.R, a balance pin takes no bone, any other kind goes on hand.L."""
    if kind == "TOGETHER":
        scenes.select(obj, ["hand.L", "hand.R"])
        obj.data.bones.active = obj.data.bones["hand.R"]
        assert bpy.ops.welman_ik.pin(kind=kind) == {"FINISHED"}
    elif kind == "BALANCE":
        assert bpy.ops.welman_ik.pin(kind=kind) == {"FINISHED"}
    else:
        pin(obj, ["hand.L"], kind=kind)


_exit_status = 0


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "once: what it checks does not depend on Blender's version (a Dask cluster's scheduling, a "
        "solver's own numerics at length): the Makefile runs it on the main bpy only, not again on 4.2 and 5.0")


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


def pytest_unconfigure(config):
    """End the process once pytest has reported: a process that imports bpy as a module can
    hang at exit while Python classes are registered (ours, or the UI script of a rig that
    Rigify generated in a test)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_exit_status)
