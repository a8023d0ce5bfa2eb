"""Natural posing on three real rigs: the Rigify human metarig, a Mixamo skeleton and a
Biovision BVH skeleton (both imported from the mocap fixtures), each with its feet pinned
and the human joint ranges set by ``joint_ranges(preset='AUTO')``. Everything is
measured on the pose Blender evaluates."""

from __future__ import annotations

import math
from dataclasses import dataclass

import bpy
import numpy as np
import pytest
import scenes
from conftest import drag, import_clip, local_rotation, pin_errors, rotation_angle, world_point
from test_joint_ranges import excess_degrees

from welman_ik.blender.drag.session import DragSession


@dataclass(frozen=True)
class Rig:
    name: str
    feet: tuple  # (shin, foot) per side: the shin's tail is the ankle, the foot's the toes
    hand: str
    spine: tuple  # the trunk, hips to chest
    head: str
    hips: str
    arms: tuple
    limbs: tuple  # the hinges: knees and elbows


METARIG = Rig("metarig", (("shin.L", "foot.L"), ("shin.R", "foot.R")), "hand.R",
              ("spine", "spine.001", "spine.002", "spine.003"), "spine.006", "spine",
              ("upper_arm.L", "forearm.L", "upper_arm.R", "forearm.R"),
              ("shin.L", "shin.R", "forearm.L", "forearm.R"))
MIXAMO = Rig("mixamo", (("mixamorig:LeftLeg", "mixamorig:LeftFoot"), ("mixamorig:RightLeg", "mixamorig:RightFoot")),
             "mixamorig:RightHand", ("mixamorig:Hips", "mixamorig:Spine", "mixamorig:Spine1", "mixamorig:Spine2"),
             "mixamorig:Head", "mixamorig:Hips",
             ("mixamorig:LeftArm", "mixamorig:LeftForeArm", "mixamorig:RightArm", "mixamorig:RightForeArm"),
             ("mixamorig:LeftLeg", "mixamorig:RightLeg", "mixamorig:LeftForeArm", "mixamorig:RightForeArm"))
BIOVISION = Rig("biovision", (("LeftKnee", "LeftAnkle"), ("RightKnee", "RightAnkle")), "RightWrist",
                ("Hips", "Chest", "Chest2"), "Head", "Hips",
                ("LeftShoulder", "LeftElbow", "RightShoulder", "RightElbow"),
                ("LeftKnee", "RightKnee", "LeftElbow", "RightElbow"))
RIGS = {"metarig": METARIG, "mixamo": MIXAMO, "biovision": BIOVISION}
CLIPS = {"mixamo": "mixamo_clip.bvh", "biovision": "mocapbank_clip.bvh"}


def build(rig: Rig):
    """The rig in its rest pose (a mocap skeleton's is its capture's T-pose), its
    animation removed, feet pinned (ankle and toes), human ranges set."""
    scenes.empty_scene()
    if rig.name == "metarig":
        obj = scenes.basic_human(pins=())
    else:
        obj = import_clip(CLIPS[rig.name])
        obj.animation_data_clear()
        for pb in obj.pose.bones:
            pb.location, pb.rotation_quaternion, pb.rotation_euler = (0, 0, 0), (1, 0, 0, 0), (0, 0, 0)
        bpy.context.view_layer.update()
    scenes.select(obj, [bone for side in rig.feet for bone in side])
    assert bpy.ops.welman_ik.pin(anchor=1.0) == {"FINISHED"}
    scenes.select(obj, ())
    assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"FINISHED"}
    assert all(obj.pose.bones[name].welman_ik_range.use for name in rig.limbs)
    return obj


@pytest.fixture(params=list(RIGS))
def posed(request):
    rig = RIGS[request.param]
    return rig, build(rig)


def world_rotations(obj, names) -> dict:
    bpy.context.view_layer.update()
    return {n: (obj.matrix_world @ obj.pose.bones[n].matrix).to_quaternion() for n in names}


def forward(obj, rig: Rig) -> np.ndarray:
    """The way the body faces: the feet's heel-to-toe direction, level."""
    d = sum(world_point(obj, foot, 1.0) - world_point(obj, foot, 0.0) for _, foot in rig.feet)
    d[2] = 0.0
    return d / np.linalg.norm(d)


def body_size(obj) -> float:
    bpy.context.view_layer.update()
    points = np.array([obj.matrix_world @ pb.head for pb in obj.pose.bones])
    return float(np.ptp(points[:, 2]))


def test_hand_out_and_back_gives_back_the_start_pose(posed):
    """The hand dragged 25 cm (scaled to a 1.8 m body) forward and up and back, in 1 cm
    steps, as mouse events of one drag: every bone ends within 1 degree of its start."""
    rig, obj = posed
    scale = body_size(obj) / 1.8
    names = [pb.name for pb in obj.pose.bones]
    start = world_rotations(obj, names)
    session = DragSession(obj, rig.hand, event_budget=1.0)
    origin = world_point(obj, rig.hand, session.anchor)
    ahead = forward(obj, rig)
    out = scale * (0.2 * ahead + np.array([0.0, 0.0, 0.15]))
    view = np.cross(out, [0.0, 0.0, 1.0]) if abs(out[2]) < np.linalg.norm(out) else np.array([0.0, 1.0, 0.0])
    view /= np.linalg.norm(view)
    for t in [*np.linspace(0.0, 1.0, 26), *np.linspace(1.0, 0.0, 26)]:
        session.move(origin + t * out - 5.0 * view, view)
        assert max(pin_errors(obj).values()) <= 1e-4
    end = world_rotations(obj, names)
    worst, bone = max((math.degrees(rotation_angle(start[n], end[n])), n) for n in names)
    assert worst <= 1.0, (bone, worst)


def test_a_reach_moves_the_arm_not_the_spine(posed):
    """A 15 cm reach forward (in reach of the arm): the hand gets there with the arm alone,
    the trunk and the head turned at most 0.5 degree (measured 0.00 on all three rigs)."""
    rig, obj = posed
    scale = body_size(obj) / 1.8
    watched = [*rig.spine, rig.head]
    before = world_rotations(obj, watched)
    target = world_point(obj, rig.hand) + 0.15 * scale * forward(obj, rig)
    assert drag(rig.hand, target) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, rig.hand) - target) <= 1e-4
    assert max(pin_errors(obj).values()) <= 1e-4
    after = world_rotations(obj, watched)
    turned = {n: math.degrees(rotation_angle(before[n], after[n])) for n in watched}
    assert max(turned.values()) <= 0.5, turned


@pytest.mark.parametrize("solver", ["SR_INVERSE", "CCD", "JACOBIAN_TRANSPOSE"])
def test_knees_and_elbows_never_bend_backwards(solver):
    """Seeded random drags of the hands and the hips on the Mixamo rig with human ranges:
    no joint leaves its range by more than 0.5 degree, under any solver, so no knee or elbow
    bends backwards. (A few bones of the captured pose start outside their anatomical range,
    fingers curled further than the tables give: those may not go further out.)"""
    obj = build(MIXAMO)
    obj.welman_ik.solver = solver
    ranged = [pb.name for pb in obj.pose.bones if pb.welman_ik_range.use]
    start = excess_degrees(obj, ranged)
    rng = np.random.default_rng(7)
    scale = body_size(obj) / 1.8
    for _ in range(6):
        bone = rng.choice(["mixamorig:RightHand", "mixamorig:LeftHand", "mixamorig:Hips"])
        anchor = 0.0 if bone == "mixamorig:Hips" else 1.0
        target = world_point(obj, bone, anchor) + scale * rng.uniform(-0.25, 0.25, 3)
        assert drag(bone, target, anchor=anchor) == {"FINISHED"}
        worst = excess_degrees(obj, ranged)
        beyond = {k: (start[k], v) for k, v in worst.items() if v > start[k] + 0.5}
        assert not beyond, beyond


def test_a_squat_bends_the_knees_forward_and_leaves_the_arms(posed):
    """The hips dragged down a ninth of the body's height, feet pinned: both knees move
    forward by more than the drop (measured 1.29-1.40 times it), the arms' own evaluated
    rotations (in their local spaces) stay within 0.05 degree and the head upright within 1
    (both measured 0.00)."""
    rig, obj = posed
    drop = body_size(obj) / 9.0
    knees = [shin for shin, _ in rig.feet]
    knee_before = {k: world_point(obj, k, 0.0) for k in knees}
    arms_before = {n: local_rotation(obj, n) for n in rig.arms}
    head_before = world_rotations(obj, [rig.head])[rig.head]
    ahead = forward(obj, rig)
    hips = world_point(obj, rig.hips, 0.0)
    assert drag(rig.hips, hips - np.array([0.0, 0.0, drop]), anchor=0.0) == {"FINISHED"}
    assert max(pin_errors(obj).values()) <= 1e-4
    assert np.linalg.norm(world_point(obj, rig.hips, 0.0) - (hips - [0.0, 0.0, drop])) <= 1e-4
    for k in knees:
        assert (world_point(obj, k, 0.0) - knee_before[k]) @ ahead > 1.0 * drop, k
    for n in rig.arms:
        assert math.degrees(rotation_angle(arms_before[n], local_rotation(obj, n))) <= 0.05, n
    head_after = world_rotations(obj, [rig.head])[rig.head]
    assert math.degrees(rotation_angle(head_before, head_after)) <= 1.0
