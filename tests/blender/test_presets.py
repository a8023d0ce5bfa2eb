"""Human joint-range presets in real Blender: the Rigify human metarig, a generated Rigify
rig, and the Mixamo and Biovision BVH fixtures. AUTO recognises the naming and sets ranges
whose positive swing_x really flexes each knee and elbow, measured on the evaluated pose."""

from __future__ import annotations

import addon_utils
import bpy
import numpy as np
import pytest
import scenes
from conftest import import_clip
from mathutils import Quaternion

from welman_ik.blender.rig import presets
from welman_ik.blender.rig.selection import set_selected

BACKWARD = np.array([0.0, 1.0, 0.0])  # every rig here faces -Y

# rig: (naming, [(thigh, shin), ...], [(upper arm, forearm), ...], some bones that get no range)
RIGS = {
    "metarig": ("METARIG", [("thigh.L", "shin.L"), ("thigh.R", "shin.R")],
                [("upper_arm.L", "forearm.L"), ("upper_arm.R", "forearm.R")], ["spine", "heel.02.L", "jaw"]),
    "mixamo": ("MIXAMO", [("mixamorig:LeftUpLeg", "mixamorig:LeftLeg"), ("mixamorig:RightUpLeg", "mixamorig:RightLeg")],
               [("mixamorig:LeftArm", "mixamorig:LeftForeArm"), ("mixamorig:RightArm", "mixamorig:RightForeArm")],
               ["mixamorig:Hips", "mixamorig:HeadTop_End"]),
    "biovision": ("BVH", [("LeftHip", "LeftKnee"), ("RightHip", "RightKnee")],
                  [("LeftShoulder", "LeftElbow"), ("RightShoulder", "RightElbow")], ["Hips"]),
}


def _load(rig: str):
    scenes.empty_scene()
    if rig == "metarig":
        addon_utils.enable("rigify", default_set=True)
        bpy.ops.object.armature_human_metarig_add()
    else:
        import_clip("mixamo_clip.bvh" if rig == "mixamo" else "mocapbank_clip.bvh")
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    _rest_pose(obj)
    scenes.select(obj, ())
    return obj


def _rest_pose(obj) -> None:
    """No animation, every bone at rest, in quaternion mode."""
    obj.animation_data_clear()
    for pb in obj.pose.bones:
        pb.rotation_mode = "QUATERNION"
        pb.location = (0.0, 0.0, 0.0)
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        pb.scale = (1.0, 1.0, 1.0)
    bpy.context.view_layer.update()


def _points(obj, bones) -> dict:
    bpy.context.view_layer.update()
    m = obj.matrix_world
    return {b: (np.array(m @ obj.pose.bones[b].head), np.array(m @ obj.pose.bones[b].tail)) for b in bones}


def _flex(obj, bone: str, angle: float) -> None:
    """Pose ``bone`` by a swing of ``angle`` about its range's X axis: R = B R_x(angle) B^T."""
    pb = obj.pose.bones[bone]
    roll = Quaternion((0.0, 1.0, 0.0), pb.welman_ik_range.roll)
    pb.rotation_quaternion = roll @ Quaternion((1.0, 0.0, 0.0), angle) @ roll.inverted()


def _ranges(obj) -> dict:
    return {pb.name: (pb.welman_ik_range.use, tuple(getattr(pb.welman_ik_range, f) for f in presets.RANGE_FIELDS))
            for pb in obj.pose.bones}


@pytest.mark.parametrize("rig", list(RIGS))
def test_auto_recognises_the_naming_and_flexes_knees_and_elbows_forward_the_right_way(rig):
    naming, legs, arms, untouched = RIGS[rig]
    obj = _load(rig)
    assert presets.recognised(obj) == naming
    assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"FINISHED"}
    in_use = {pb.name for pb in obj.pose.bones if pb.welman_ik_range.use}
    assert {b for pair in legs + arms for b in pair} <= in_use
    assert not in_use & set(untouched)
    for proximal, hinge in legs + arms:
        limits = obj.pose.bones[hinge].welman_ik_range
        is_knee = (proximal, hinge) in legs
        # Straight (the rest bend undone) to full flexion, AAOS: knee 135, elbow 150; no hyperextension
        # (a rest pose a little past straight keeps its own few degrees).
        arc = np.degrees(limits.swing_x_max - limits.swing_x_min)
        assert (135 if is_knee else 150) - 0.5 < arc < (135 if is_knee else 150) + 5
        assert -np.radians(25) < limits.swing_x_min <= 0.0
        before = _points(obj, (proximal, hinge))
        _flex(obj, hinge, np.radians(60))
        after = _points(obj, (proximal, hinge))
        _rest_pose(obj)
        moved = after[hinge][1] - before[hinge][1]
        reach_before = np.linalg.norm(before[hinge][1] - before[proximal][0])
        reach_after = np.linalg.norm(after[hinge][1] - after[proximal][0])
        assert reach_after < reach_before - 0.01, f"{hinge}: flexion brings the tail toward the {proximal} head"
        if is_knee:
            assert moved @ BACKWARD > 0.5 * np.linalg.norm(moved), f"{hinge}: the knee carries the foot backward"
        else:
            assert moved @ -BACKWARD > 0.3 * np.linalg.norm(moved), f"{hinge}: the elbow carries the hand forward"
    for thigh, _ in legs:
        before = _points(obj, (thigh,))[thigh][1]
        _flex(obj, thigh, np.radians(45))
        moved = _points(obj, (thigh,))[thigh][1] - before
        _rest_pose(obj)
        assert moved @ -BACKWARD > 0.5 * np.linalg.norm(moved), f"{thigh}: hip flexion carries the knee forward"


def test_generated_rigify_gets_ranges_on_its_controls():
    scenes.empty_scene()
    obj = scenes.generated_rigify()
    _rest_pose(obj)
    assert presets.recognised(obj) == "RIGIFY"
    assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"FINISHED"}
    in_use = {pb.name for pb in obj.pose.bones if pb.welman_ik_range.use}
    for control in ("upper_arm_fk.L", "forearm_fk.R", "hand_fk.L", "thigh_fk.R", "shin_fk.L", "foot_fk.L",
                    "spine_fk.002", "neck", "head", "shoulder.L", "hips", "chest"):
        assert control in in_use
    assert not any(n.startswith(("ORG-", "DEF-", "MCH-")) for n in in_use)
    assert "torso" not in in_use and "root" not in in_use
    before = _points(obj, ("shin_fk.L",))
    _flex(obj, "shin_fk.L", np.radians(60))
    moved = _points(obj, ("shin_fk.L",))["shin_fk.L"][1] - before["shin_fk.L"][1]
    assert moved @ BACKWARD > 0.5 * np.linalg.norm(moved)


def test_selected_bones_only_then_clear():
    obj = _load("metarig")
    scenes.select(obj, ("shin.L", "forearm.R"))
    assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"FINISHED"}
    assert {pb.name for pb in obj.pose.bones if pb.welman_ik_range.use} == {"shin.L", "forearm.R"}
    scenes.select(obj, ())
    assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"FINISHED"}
    assert sum(pb.welman_ik_range.use for pb in obj.pose.bones) > 40
    scenes.select(obj, ("shin.L",))
    assert bpy.ops.welman_ik.joint_ranges(preset="CLEAR") == {"FINISHED"}
    assert not obj.pose.bones["shin.L"].welman_ik_range.use and obj.pose.bones["shin.R"].welman_ik_range.use
    scenes.select(obj, ())
    assert bpy.ops.welman_ik.joint_ranges(preset="CLEAR") == {"FINISHED"}
    assert not any(pb.welman_ik_range.use for pb in obj.pose.bones)


def _plain_armature(names):
    """An armature whose bones have ``names``, chained, in pose mode."""
    scenes.empty_scene()
    bpy.ops.object.armature_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="EDIT")
    bones = obj.data.edit_bones
    first = bones[0]
    first.name = names[0]
    parent = first
    for i, name in enumerate(names[1:], start=1):
        bone = bones.new(name)
        bone.head, bone.tail = (0.0, 0.0, float(i)), (0.0, 0.0, float(i) + 1.0)
        bone.parent = parent
        parent = bone
    bpy.ops.object.mode_set(mode="POSE")
    scenes.select(obj, ())
    return obj


def test_unknown_naming_warns_and_changes_nothing_but_human_guesses():
    obj = _plain_armature(["Pelvis", "Waist", "Chest_Bone", "NeckBone", "HeadBone"])
    assert presets.recognised(obj) == ""
    before = _ranges(obj)
    assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"CANCELLED"}
    assert _ranges(obj) == before
    assert bpy.ops.welman_ik.joint_ranges(preset="HUMAN") == {"FINISHED"}
    assert {pb.name for pb in obj.pose.bones if pb.welman_ik_range.use} == {"Waist", "Chest_Bone", "NeckBone",
                                                                             "HeadBone"}
    other = _plain_armature(["Bone", "Bone.001"])
    assert bpy.ops.welman_ik.joint_ranges(preset="HUMAN") == {"CANCELLED"}
    assert not any(pb.welman_ik_range.use for pb in other.pose.bones)


def test_recognised_follows_renames():
    obj = _load("biovision")
    assert presets.recognised(obj) == "BVH"
    assert presets.recognised(obj) == "BVH"  # cached
    bpy.ops.object.mode_set(mode="EDIT")
    for bone in obj.data.edit_bones:
        bone.name = f"B{bone.name[::-1]}"
    bpy.ops.object.mode_set(mode="POSE")
    assert presets.recognised(obj) == ""
    set_selected(obj.pose.bones[0], False)


def test_non_armature_is_refused():
    obj = _load("mixamo")
    before = _ranges(obj)
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.mesh.primitive_cube_add()
    assert presets.recognised(bpy.context.object) == ""
    with pytest.raises(RuntimeError) as error:
        bpy.ops.welman_ik.joint_ranges(preset="AUTO")
    assert "not an armature" in str(error.value)
    assert _ranges(obj) == before
