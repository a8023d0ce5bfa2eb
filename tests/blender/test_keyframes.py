"""Keying of solved poses per the ``keyframes`` setting (Blender 4.5 and 5.0 animation APIs)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from conftest import channels, drag, pin_errors, world_point, world_pose

from welman_ik.blender.rig import keyframes
from welman_ik.blender.rig.keyframes import action_fcurves, bone_fcurves

FRAME = 7
MOVE = np.array([-0.1, -0.2, -0.15])  # the right hand forward and down: the body leans in
# Bones no goal moves (the neck and the head move: they keep the head looking where it looked
# while the body leans, and are keyed like any moved bone).
STILL = ["breast.L", "breast.R", "pelvis.L", "pelvis.R"]


def _drag_at_frame(obj, mode: str):
    obj.welman_ik.keyframes = mode
    bpy.context.scene.frame_current = FRAME
    before = channels(obj)
    target = world_point(obj, "hand.R") + MOVE
    assert drag("hand.R", target) == {"FINISHED"}
    after = channels(obj)
    moved = {n for n in after if after[n] != before[n]}
    assert {"hand.R", "forearm.R", "upper_arm.R"} <= moved
    return moved, target


def _animated(obj) -> set:
    return {pb.name for pb in obj.pose.bones if bone_fcurves(obj, pb.name)}


def _moved_by(obj, names, least: float) -> set:
    """Of the bones ``names``, those whose rotation or location channels changed by more
    than ``least`` since the channels ``_drag_at_frame`` recorded (a fresh metarig: at rest)."""
    out = set()
    for name in names:
        pb = obj.pose.bones[name]
        rotation = np.array(pb.rotation_quaternion) - (1.0, 0.0, 0.0, 0.0) if pb.rotation_mode == "QUATERNION" \
            else np.array(pb.rotation_euler)
        if max(np.abs(rotation).max(), np.abs(np.array(pb.location)).max()) > least:
            out.add(name)
    return out


def _keyed_at(fc, frame) -> bool:
    return any(abs(k.co[0] - frame) < 1e-9 for k in fc.keyframe_points)


def test_always_keys_every_moved_bone(human):
    moved, target = _drag_at_frame(human, "ALWAYS")
    changed, moved = moved, _animated(human)
    assert _moved_by(human, changed, 1e-4) <= moved <= changed  # keyed: what visibly moved, and only what moved
    assert max(pin_errors(human).values()) <= 1e-4
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    solved = world_pose(human)
    for name in moved:
        pb = human.pose.bones[name]
        curves = bone_fcurves(human, name)
        paths = {(fc.data_path, fc.array_index) for fc in curves}
        rotation = "rotation_quaternion" if pb.rotation_mode == "QUATERNION" else "rotation_euler"
        width = 4 if rotation == "rotation_quaternion" else 3
        assert {(f'pose.bones["{name}"].{rotation}', i) for i in range(width)} <= paths, name
        for fc in curves:
            assert fc.group is not None and fc.group.name == name
            assert _keyed_at(fc, FRAME)
    assert "spine" in moved  # the root translated: its location is keyed too
    assert {('pose.bones["spine"].location', i) for i in range(3)} <= {
        (fc.data_path, fc.array_index) for fc in bone_fcurves(human, "spine")
    }
    assert not _animated(human) & set(STILL)

    # The keys evaluate to the solved pose, leaving the frame and coming back.
    bpy.context.scene.frame_set(1)
    bpy.context.scene.frame_set(FRAME)
    keyed = world_pose(human)
    worst = max(max(np.abs(keyed[n][0] - solved[n][0]).max(), np.abs(keyed[n][1] - solved[n][1]).max())
                for n in solved)
    assert worst <= human.welman_ik.tolerance  # the bones left unkeyed moved less


def test_a_hand_drag_keys_only_the_bones_that_visibly_moved(human):
    """Feet and the left hand pinned, the right hand dragged out and up in steps: the legs and
    the left arm change by rounding at most, and get no keys; after leaving the frame
    and coming back, the keyed pose still holds every pin and the dragged hand."""
    human.welman_ik.keyframes = "ALWAYS"
    human.welman_ik.reference = "START"
    bpy.context.scene.frame_current = FRAME
    before = channels(human)
    target = world_point(human, "hand.R")
    for _ in range(6):
        target = target + np.array([0.0, -0.02, 0.03])
        assert drag("hand.R", target) == {"FINISHED"}
    after = channels(human)
    changed = {n for n in after if after[n] != before[n]}
    keyed = _animated(human)
    assert {"forearm.R", "upper_arm.R"} <= keyed <= changed  # (the hand keeps its turn on the forearm)
    assert not keyed & {"thigh.L", "shin.L", "foot.L", "thigh.R", "shin.R", "foot.R"}
    angle, length = keyframes.key_thresholds(human, human.welman_ik.tolerance)
    assert 0.0 < angle < 1e-5 and length == pytest.approx(0.5 * human.welman_ik.tolerance)
    bpy.context.scene.frame_set(1)
    bpy.context.scene.frame_set(FRAME)
    assert max(pin_errors(human).values()) <= 2.0 * human.welman_ik.tolerance
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 2.0 * human.welman_ik.tolerance


def test_never_keys_nothing(human):
    _drag_at_frame(human, "NEVER")
    assert action_fcurves(human) == []


@pytest.mark.parametrize("auto", [True, False])
def test_autokey_follows_blender(human, auto):
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = auto
    moved, _ = _drag_at_frame(human, "AUTOKEY")
    if auto:
        assert _moved_by(human, moved, 1e-4) <= _animated(human) <= moved
        assert all(_keyed_at(fc, FRAME) for fc in action_fcurves(human))
    else:
        assert action_fcurves(human) == []


def test_chain_length_keys_only_the_chain(human):
    human.welman_ik.chain_length = 2
    human.welman_ik.keyframes = "ALWAYS"
    bpy.context.scene.frame_current = FRAME
    before = channels(human)
    assert drag("hand.R", world_point(human, "hand.R") + np.array([-0.03, -0.05, 0.04])) == {"FINISHED"}
    after = channels(human)
    assert {n for n in after if after[n] != before[n]} == {"hand.R", "forearm.R"}
    assert _animated(human) == {"hand.R", "forearm.R"}
    assert all(_keyed_at(fc, FRAME) for fc in action_fcurves(human))


def test_key_thresholds_follow_the_armature_scale(human):
    """A rig at object scale 0.01 (a centimetre rig, as FBX imports are) is a hundredth of the
    size in the world: a bone must turn 100 times as far to move a point as far, and a location
    channel change 100 times as large."""
    tolerance = human.welman_ik.tolerance
    angle, length = keyframes.key_thresholds(human, tolerance)
    human.scale = (0.01, 0.01, 0.01)
    bpy.context.view_layer.update()
    scaled = keyframes.key_thresholds(human, tolerance)
    assert scaled == pytest.approx((100.0 * angle, 100.0 * length), rel=1e-5)
