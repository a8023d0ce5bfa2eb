"""Blender's own bone settings are honoured, checked on the bones' channels after write-back."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import scenes
from conftest import channels, drag, pin_errors, world_point
from mathutils import Quaternion

REACH = np.array([-0.06, -0.08, 0.07])  # a small, reachable move of the right hand [m]


def _angle_from_rest(pb) -> float:
    """Rotation angle [rad] of a pose bone from its rest orientation."""
    if pb.rotation_mode == "QUATERNION":
        q = Quaternion(pb.rotation_quaternion).normalized()
    else:
        q = pb.rotation_euler.to_quaternion()
    return 2.0 * math.acos(min(1.0, abs(q.w)))


@pytest.mark.parametrize("bone", ["forearm.R", "upper_arm.R", "spine.002"])
def test_ik_locked_bone_never_rotates(human, bone):
    pb = human.pose.bones[bone]
    pb.lock_ik_x = pb.lock_ik_y = pb.lock_ik_z = True
    before = channels(human)
    target = world_point(human, "hand.R") + REACH
    assert drag("hand.R", target) == {"FINISHED"}
    after = channels(human)
    assert after[bone] == before[bone]
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4
    # The bones next to it did move: the lock is what kept this one still.
    neighbours = {pb.name for pb in human.pose.bones[bone].children} | {human.pose.bones[bone].parent.name}
    assert any(after[n] != before[n] for n in neighbours)


@pytest.mark.parametrize("mode", ["XYZ", "ZXY"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_lock_rotation_keeps_euler_channel(human, mode, axis):
    pb = human.pose.bones["upper_arm.R"]
    pb.rotation_mode = mode
    pb.rotation_euler = (0.1, -0.2, 0.15)
    pb.lock_rotation[axis] = True
    start = tuple(pb.rotation_euler)
    target = world_point(human, "hand.R") + REACH
    assert drag("hand.R", target) == {"FINISHED"}
    end = tuple(pb.rotation_euler)
    assert end[axis] == start[axis]
    free = [i for i in range(3) if i != axis]
    assert max(abs(end[i] - start[i]) for i in free) > 1e-3  # the bone did rotate about the others
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4


LIMITS = {
    "upper_arm.R": ((-0.3, 0.5), (-0.2, 0.2), (-0.4, 0.3)),
    "forearm.R": ((-0.1, 0.6), (-0.1, 0.1), (-0.2, 0.2)),
    "shoulder.R": ((-0.1, 0.1), (-0.1, 0.1), (-0.1, 0.1)),
    "spine.001": ((-0.2, 0.2), (-0.15, 0.15), (-0.2, 0.2)),
    "spine.002": ((-0.2, 0.1), (-0.1, 0.15), (-0.15, 0.2)),
    "spine.003": ((-0.1, 0.1), (-0.1, 0.1), (-0.1, 0.1)),
}


def test_ik_limits_never_exceeded(human):
    for name, bounds in LIMITS.items():
        pb = human.pose.bones[name]
        pb.rotation_mode = "XYZ"
        for axis, (lo, hi) in zip("xyz", bounds, strict=True):
            setattr(pb, f"use_ik_limit_{axis}", True)
            setattr(pb, f"ik_min_{axis}", lo)
            setattr(pb, f"ik_max_{axis}", hi)
    hand = world_point(human, "hand.R")
    moves = [
        [-0.1, -0.15, 0.1],   # reachable
        [-2.0, -0.5, 0.5],    # far out of reach
        [0.3, -0.4, -0.6],    # down and forward, at the edge of the limits
        [-0.5, 2.0, 1.5],     # out of reach behind
        [-0.05, -0.1, 0.2],   # back to a reachable place
    ]
    at_bound = 0
    for move in moves:
        assert drag("hand.R", hand + np.array(move)) == {"FINISHED"}
        for name, bounds in LIMITS.items():
            euler = human.pose.bones[name].rotation_euler
            for i, (lo, hi) in enumerate(bounds):
                assert lo - 1e-6 <= euler[i] <= hi + 1e-6, (move, name, i, euler[i])
                at_bound += min(abs(euler[i] - lo), abs(euler[i] - hi)) < 1e-4
    assert at_bound > 0  # the unreachable drags pressed against the limits


def _spine_turn(obj, stiffness: float) -> float:
    pb = obj.pose.bones["spine.002"]
    pb.ik_stiffness_x = pb.ik_stiffness_y = pb.ik_stiffness_z = stiffness
    target = world_point(obj, "hand.R") + np.array([0.05, -0.3, -0.25])
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand.R") - target) <= 1e-4
    assert max(pin_errors(obj).values()) <= 1e-4
    return _angle_from_rest(pb)


def test_stiffness_moves_bone_less():
    scenes.empty_scene()
    free = _spine_turn(scenes.basic_human(), 0.0)
    scenes.empty_scene()
    stiff = _spine_turn(scenes.basic_human(), 0.99)
    assert free > 0.02  # without stiffness the spine takes a visible share of the move
    assert stiff < 0.25 * free


def test_lock_and_unlock_operators(bare_human):
    bones = bare_human.pose.bones
    scenes.select(bare_human, ["upper_arm.R", "forearm.R", "spine.002"])
    assert bpy.ops.welman_ik.lock() == {"FINISHED"}
    for pb in bones:
        locked = pb.name in ("upper_arm.R", "forearm.R", "spine.002")
        assert (pb.lock_ik_x, pb.lock_ik_y, pb.lock_ik_z) == (locked, locked, locked), pb.name
    scenes.select(bare_human, ["forearm.R"])
    assert bpy.ops.welman_ik.unlock() == {"FINISHED"}
    for pb in bones:
        locked = pb.name in ("upper_arm.R", "spine.002")
        assert (pb.lock_ik_x, pb.lock_ik_y, pb.lock_ik_z) == (locked, locked, locked), pb.name
    scenes.select(bare_human, ())
    with pytest.raises(RuntimeError, match="Select one or more pose bones"):
        bpy.ops.welman_ik.lock()
    assert bones["upper_arm.R"].lock_ik_x and not bones["forearm.R"].lock_ik_x


def _squat(obj, drop):
    settings = obj.welman_ik
    for p in settings.pins:
        p.enabled = p.bone != "hand.L"
    target = world_point(obj, "spine", 0.0) + np.asarray(drop)
    assert drag("spine", target, anchor=0.0) == {"FINISHED"}
    return target


def test_lock_location_root_fully_locked(human):
    root = human.pose.bones["spine"]
    root.lock_location = (True, True, True)
    before = tuple(root.location)
    _squat(human, [0.0, 0.0, -0.25])
    assert tuple(root.location) == before


def test_lock_location_root_partly_locked(human):
    """The root's local X and Z locked: the squat still happens, along its local Y (the
    spine's own axis, nearly world up)."""
    root = human.pose.bones["spine"]
    root.lock_location = (True, False, True)
    before = tuple(root.location)
    axis = world_point(human, "spine", 1.0) - world_point(human, "spine", 0.0)
    target = _squat(human, -0.2 * axis / np.linalg.norm(axis))
    after = tuple(root.location)
    assert after[0] == before[0] and after[2] == before[2]
    assert abs(after[1] - before[1]) > 0.1
    assert np.linalg.norm(world_point(human, "spine", 0.0) - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4
