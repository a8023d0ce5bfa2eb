"""Retarget on real rigs and clips: a fixture mocap clip (Blender's BVH importer) baked onto
the basic human metarig, onto a Mixamo-named skeleton and onto a generated Rigify rig, all
measured on the evaluated pose of the written action: the source's contacts held by the
target's feet, the hips on the scaled source path, each hand pointing from its shoulder as
the source's does, no flips, and every existing action untouched. Bad input is refused with
nothing changed."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import scenes
from conftest import import_clip

from welman_ik.blender.bake import retarget as retarget_goals
from welman_ik.blender.rig.body import pose_matrices

CLIP = "mocapbank_clip.bvh"
FRAMES = (1, 40)


def _source_and(target_factory, clip: str = CLIP):
    """(source, target): the clip imported, then the target made and active in pose mode."""
    scenes.empty_scene()
    source = import_clip(clip)
    bpy.ops.object.mode_set(mode="OBJECT")
    source.select_set(False)
    target = target_factory()
    return source, target


def _curves(action) -> list:
    """Every F-curve of ``action``: its slots' channelbags (4.4+) or its own list."""
    if hasattr(action, "layers") and len(action.layers):
        return [c for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                for c in bag.fcurves]
    return list(action.fcurves) if hasattr(action, "fcurves") else []


def _keys(action) -> dict:
    """Every key of every F-curve of ``action``, to tell it untouched."""
    out = {}
    for curve in _curves(action):
        co = np.empty(2 * len(curve.keyframe_points))
        curve.keyframe_points.foreach_get("co", co)
        out[curve.data_path, curve.array_index] = co
    return out


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _retarget(target, source, **options) -> set:
    options = {"frame_start": FRAMES[0], "frame_end": FRAMES[1], **options}
    return bpy.ops.welman_ik.retarget(source=source.name, **options)


def _groups(target) -> dict:
    return {g.group: g.error for g in target.welman_ik.last_solve.groups}


def _heads(obj, bones, frames) -> np.ndarray:
    pose, world = pose_matrices(obj, bones, frames)
    return (world[:, None] @ pose)[..., :3, 3]


def _directions(obj, pairs, frames) -> np.ndarray:
    """(frames, pairs, 3) the unit direction from each pair's first bone's head to its second's."""
    names = sorted({n for pair in pairs for n in pair})
    heads = _heads(obj, names, frames)
    at = {n: i for i, n in enumerate(names)}
    vectors = np.stack([heads[:, at[b]] - heads[:, at[a]] for a, b in pairs], axis=1)
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def _check_motion(target, source, shoulders_hands_t, shoulders_hands_s) -> None:
    """The figures every retarget must meet, measured on the evaluated poses."""
    groups = _groups(target)
    assert groups["plants"] <= 1e-3  # the feet drift at most 1 mm in the source's contacts
    assert groups["hips"] <= 0.02
    frames = list(range(FRAMES[0], FRAMES[1] + 1))
    # Independently of the retarget's own figures: each hand's direction from its shoulder.
    angles = np.degrees(np.arccos(np.clip(np.einsum(
        "fpi,fpi->fp", _directions(target, shoulders_hands_t, frames), _directions(source, shoulders_hands_s, frames)),
        -1.0, 1.0)))
    assert angles.max() <= 10.0, angles.max()
    # The plants' own points, evaluated, stay where they are planted.
    found = retarget_goals.make(bpy.context, target, source, frames, _scale(target, source), True)
    assert found.plants, "the clip's feet plant somewhere"
    for plant in found.plants:
        heads = pose_matrices(target, [plant.bone], frames[plant.first:plant.last + 1])
        m = heads[1] @ heads[0][:, 0]
        points = m[:, :3, 3] + (m[:, :3, :3] / np.linalg.norm(m[:, :3, :3], axis=-2, keepdims=True)) @ plant.local
        assert np.linalg.norm(points - points[0], axis=1).max() <= 1e-3


def _scale(target, source) -> float:
    from welman_ik.blender.rig.retarget_map import retarget_scale

    return retarget_scale(target, source)


def _no_flips(target, source, pairs) -> None:
    """No mapped bone turns more than 30 degrees in one frame where its source bone turns less."""
    frames = list(range(FRAMES[0], FRAMES[1] + 1))
    targets, sources = zip(*pairs)
    turned = []
    for obj, names in ((target, list(targets)), (source, list(sources))):
        pose, world = pose_matrices(obj, names, frames)
        r = (world[:, None] @ pose)[..., :3, :3]
        r = r / np.linalg.norm(r, axis=-2, keepdims=True)
        step = np.einsum("fbji,fbjk->fbik", r[:-1], r[1:])
        turned.append(np.degrees(np.arccos(np.clip((np.trace(step, axis1=-2, axis2=-1) - 1) / 2, -1, 1))))
    assert not np.any((turned[0] > 30.0) & (turned[1] < 30.0))


def test_onto_the_metarig():
    source, target = _source_and(lambda: scenes.basic_human(pins=()))
    before = _keys(source.animation_data.action)
    assert _retarget(target, source) == {"FINISHED"}
    action = target.animation_data.action
    assert action.name == "metarig.welman_retarget"
    assert _same(_keys(source.animation_data.action), before)
    assert {"plants", "hips", "hands", "feet", "head", "orientations"} <= set(_groups(target))
    assert target.welman_ik.last_solve.message.startswith("gates ")
    _check_motion(target, source, [("upper_arm.L", "hand.L"), ("upper_arm.R", "hand.R")],
                  [("LeftShoulder", "LeftWrist"), ("RightShoulder", "RightWrist")])
    _no_flips(target, source, [(t.target_bone, t.source_bone) for t in target.welman_ik.retarget_map])
    # The map it filled on first use is saved with the file.
    assert len(target.welman_ik.retarget_map) > 15


def test_a_clip_without_contacts_says_so():
    """Contact settings no foot meets: nothing is planted, and the result says that no contact
    was found rather than leaving the plants out without a word."""
    source, target = _source_and(lambda: scenes.basic_human(pins=()))
    target.welman_ik.contact_height = 0.0
    target.welman_ik.contact_speed = 0.0
    assert _retarget(target, source) == {"FINISHED"}
    message = target.welman_ik.last_solve.message
    assert "no foot contacts found in the clip" in message, message


@pytest.mark.once
def test_onto_a_mixamo_named_skeleton_keeps_its_own_action():
    def mixamo():
        obj = import_clip("mixamo_clip.bvh")
        return obj

    source, target = _source_and(mixamo)
    own = target.animation_data.action
    before = {a.name: _keys(a) for a in (own, source.animation_data.action)}
    assert _retarget(target, source) == {"FINISHED"}
    assert target.animation_data.action.name == f"{target.name}.welman_retarget"
    assert all(_same(_keys(bpy.data.actions[name]), keys) for name, keys in before.items())
    _check_motion(target, source, [("mixamorig:LeftArm", "mixamorig:LeftHand")], [("LeftShoulder", "LeftWrist")])


@pytest.mark.once
def test_onto_a_generated_rigify_rig_keys_its_controls():
    source, target = _source_and(scenes.generated_rigify)
    assert _retarget(target, source) == {"FINISHED"}
    by_target = {line.target_bone: line.kind for line in target.welman_ik.retarget_map}
    # The rig's switches say IK: the IK hands and feet follow, the FK arm and leg are left alone.
    assert by_target["hand_ik.L"] == "POSE" and by_target["foot_ik.R"] == "POSE" and "forearm_fk.L" not in by_target
    keyed = {c.data_path.split('"')[1] for c in _curves(target.animation_data.action)}
    assert {"torso", "hand_ik.L", "foot_ik.L", "head"} <= keyed
    mechanism = [name for name in keyed if name.startswith(("DEF-", "ORG-", "MCH-"))]
    assert not mechanism
    groups = _groups(target)
    assert groups["plants"] <= 1e-3 and groups["hips"] <= 0.02
    _no_flips(target, source, [(line.target_bone, line.source_bone) for line in target.welman_ik.retarget_map]
              + [("DEF-shin.L", "LeftKnee"), ("DEF-thigh.R", "RightHip")])
    # Whatever the evaluated rig misses is reported, group by group.
    assert {"hands", "head", "feet", "orientations"} <= set(groups)


@pytest.mark.parametrize("case", ["no animation", "itself", "missing bone", "absurd scale", "not an armature"])
def test_bad_input_is_refused_and_nothing_changes(case):
    source, target = _source_and(lambda: scenes.basic_human(pins=()))
    name = source.name
    if case == "no animation":
        source.animation_data_clear()
    if case == "itself":
        name = target.name
    if case == "missing bone":
        bpy.ops.welman_ik.retarget_map_fill(source=name)
        target.welman_ik.retarget_map[0].source_bone = "NoSuchBone"
    if case == "not an armature":
        bpy.ops.mesh.primitive_cube_add()
        name = bpy.context.object.name
        bpy.context.view_layer.objects.active = target
        bpy.ops.object.mode_set(mode="POSE")
    actions = {a.name: _keys(a) for a in bpy.data.actions}
    pose = [tuple(pb.rotation_quaternion) + tuple(pb.location) for pb in target.pose.bones]
    options = {"scale": 1e9} if case == "absurd scale" else {}
    with pytest.raises(RuntimeError):
        bpy.ops.welman_ik.retarget(source=name, **options)
    assert {a.name for a in bpy.data.actions} == set(actions)
    assert all(_same(_keys(bpy.data.actions[n]), k) for n, k in actions.items())
    assert [tuple(pb.rotation_quaternion) + tuple(pb.location) for pb in target.pose.bones] == pose
    assert target.animation_data is None or target.animation_data.action is None


def test_a_nan_scale_is_refused():
    source, target = _source_and(lambda: scenes.basic_human(pins=()))
    with pytest.raises(RuntimeError, match="finite"):
        bpy.ops.welman_ik.retarget(source=source.name, scale=math.nan)
    assert target.animation_data is None or target.animation_data.action is None


@pytest.mark.once
def test_joint_ranges_hold_through_a_retarget():
    """The metarig's natural joint ranges set: no bone leaves its range by more than half a
    degree on any frame of the evaluated, retargeted action."""
    from test_joint_ranges import excess_degrees

    source, target = _source_and(lambda: scenes.basic_human(pins=()))
    assert bpy.ops.welman_ik.joint_ranges(preset="AUTO", every_bone=True) == {"FINISHED"}
    ranged = [pb.name for pb in target.pose.bones if pb.welman_ik_range.use]
    assert len(ranged) > 15
    assert _retarget(target, source, frame_end=20) == {"FINISHED"}
    worst = 0.0
    for frame in range(FRAMES[0], 21):
        bpy.context.scene.frame_set(frame)
        worst = max(worst, max(excess_degrees(target, ranged).values()))
    assert worst <= 0.5, worst
    assert _groups(target)["plants"] <= 1e-3


def test_a_retarget_cancelled_midway_leaves_nothing():
    """Esc in the middle of an interactive retarget (``RetargetRun.abort``, what its modal calls):
    the target's own action assigned again, its pose as it was, no new action."""
    from welman_ik.blender.bake.baker import RetargetRun
    from welman_ik.blender.rig.retarget_map import fill

    source, target = _source_and(lambda: scenes.basic_human(pins=()))
    own = bpy.data.actions.new("own")
    target.animation_data_create().action = own
    target.pose.bones["hand.L"].rotation_quaternion = (0.9, 0.1, 0.3, 0.0)
    pose = [tuple(pb.rotation_quaternion) + tuple(pb.location) for pb in target.pose.bones]
    names = {a.name for a in bpy.data.actions}
    fill(target, source)
    run = RetargetRun(bpy.context, target, source, list(range(1, 11)), 1.1, True)
    assert target.animation_data.action.name == "metarig.welman_retarget"
    for _ in range(4):
        run.next()
    run.abort()
    assert target.animation_data.action == own
    assert {a.name for a in bpy.data.actions} == names
    assert [tuple(pb.rotation_quaternion) + tuple(pb.location) for pb in target.pose.bones] == pose
