"""The limb does what the limb can, the head keeps looking, and scripted steps come back:
measured on the evaluated pose of the Rigify basic human metarig, both feet pinned (toes'
and heels' tails), as scripts drag it (``bpy.ops.welman_ik.drag``)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import drag, pin_errors, rotation_angle, world_point

TRUNK = ("spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005")  # pelvis to neck
HEAD = "spine.006"
HAND = "hand.R"
ARM = ("upper_arm.R", "forearm.R", "hand.R")


def standing(solver: str, ranges: bool):
    scenes.empty_scene()
    obj = scenes.basic_human(pins=scenes.FEET)
    obj.welman_ik.keyframes = "NEVER"
    obj.welman_ik.solver = solver
    if ranges:
        with scenes.quiet():
            assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"FINISHED"}
    bpy.context.view_layer.update()
    return obj


def world_rotations(obj) -> dict:
    bpy.context.view_layer.update()
    return {pb.name: (obj.matrix_world @ pb.matrix).to_quaternion() for pb in obj.pose.bones}


def angle(a, b) -> float:
    """Degrees between two orientations (``conftest.rotation_angle``)."""
    return float(np.degrees(rotation_angle(a, b)))


def in_reach(obj) -> dict:
    """Targets 0.8 of the arm's length from the upper arm's head (the rig faces -Y)."""
    root = world_point(obj, "upper_arm.R", 0.0)
    length = sum(obj.pose.bones[b].bone.length for b in ARM)
    side = root - world_point(obj, "spine.003", 0.0)
    side[2] = 0.0
    side /= np.linalg.norm(side)
    forward = np.array([0.0, -1.0, 0.0])
    knee = world_point(obj, "shin.R", 0.0)
    across = -0.6 * side + 0.8 * forward
    ways = {"up": np.array([0.0, 0.0, 1.0]), "side": side, "forward": forward, "across": across / np.linalg.norm(across),
            "down": (knee - root) / np.linalg.norm(knee - root)}
    return {name: root + 0.8 * length * way for name, way in ways.items()}


def turns(obj, before: dict) -> tuple[float, float]:
    after = world_rotations(obj)
    return max(angle(before[n], after[n]) for n in TRUNK), angle(before[HEAD], after[HEAD])


@pytest.mark.parametrize(("solver", "ranges"), [
    *(pytest.param(s, r, id=f"{s}-{'ranges' if r else 'free'}") for s in ("SR_INVERSE", "CCD", "JACOBIAN_TRANSPOSE")
      for r in (False, True)),
    pytest.param("QUASI_NEWTON", False, id="QUASI_NEWTON-free"),
    pytest.param("QUASI_NEWTON", True, id="QUASI_NEWTON-ranges"),
])
def test_the_arm_reaches_and_the_trunk_stays(solver, ranges):
    """Up, out to the side, forward, across the chest and down toward the knee, 0.8 of the
    arm's length from the shoulder, each in one drag: the hand within 1 mm, the feet within
    0.1 mm, the trunk and the head turned at most 0.5 degree (measured 0.00 in 39 of the 40
    reaches; before the limbs-first stage: 2-54 each). The quasi-Newton solver with the
    human ranges is the exception for the trunk, held to 4 degrees: on the way up its arm
    stage stops short (0.5-21 mm, with the arm against its ranges) in the last nine strides
    of the approach, so the trunk joins for the rest (3.34 degrees; the head still 0.00)."""
    obj = standing(solver, ranges)
    trunk_limit = 4.0 if (solver, ranges) == ("QUASI_NEWTON", True) else 0.5
    start = {pb.name: pb.matrix_basis.copy() for pb in obj.pose.bones}
    for name, target in in_reach(obj).items():
        for pb in obj.pose.bones:
            pb.matrix_basis = start[pb.name]
        before = world_rotations(obj)
        assert drag(HAND, target) == {"FINISHED"}, name
        trunk, head = turns(obj, before)
        assert np.linalg.norm(world_point(obj, HAND) - target) <= 1e-3, name
        assert max(pin_errors(obj).values()) <= 1e-4, name
        assert trunk <= trunk_limit and head <= 0.5, (name, trunk, head)


def test_in_steps_the_trunk_stays_too():
    """The same reach up, in 12 scripted steps, with the human ranges: the trunk and the head
    turn at most 0.5 degree (measured 0.00)."""
    obj = standing("SR_INVERSE", True)
    before = world_rotations(obj)
    origin, target = world_point(obj, HAND), in_reach(obj)["up"]
    for t in np.linspace(0.0, 1.0, 13)[1:]:
        assert drag(HAND, origin + t * (target - origin)) == {"FINISHED"}
    trunk, head = turns(obj, before)
    assert np.linalg.norm(world_point(obj, HAND) - target) <= 1e-3
    assert trunk <= 0.5 and head <= 0.5, (trunk, head)


@pytest.mark.parametrize("gaze", [True, False])
def test_out_of_reach_the_trunk_leans_and_the_head_keeps_looking(gaze):
    """A target far across and in front of the body: the trunk leans to reach it; with the
    gaze (the default) the head keeps its world orientation within 1 degree, without it the
    head turns with the chest."""
    obj = standing("SR_INVERSE", True)
    obj.welman_ik.gaze = gaze
    before = world_rotations(obj)
    target = world_point(obj, "spine.003") + np.array([0.4, -0.7, 0.0])
    assert drag(HAND, target) == {"FINISHED"}
    trunk, head = turns(obj, before)
    assert np.linalg.norm(world_point(obj, HAND) - target) <= 1e-3
    assert max(pin_errors(obj).values()) <= 1e-4
    assert trunk > 10.0
    if gaze:
        assert head <= 1.0, head
    else:
        assert head > 10.0, head


@pytest.mark.parametrize("step", [0.01, 0.05])
@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE"])
def test_scripted_steps_out_and_back_give_back_the_start(solver, step):
    """The hand 25 cm out (sideways and up) and back in scripted steps: one run of drags, so
    every bone ends within 1 degree of where it started, the feet within 0.1 mm. A drag of
    another bone in between starts a new run (its own start)."""
    obj = standing(solver, False)
    start = {pb.name: pb.matrix_basis.to_quaternion() for pb in obj.pose.bones}
    origin = world_point(obj, HAND)
    out = np.array([-0.15, 0.0, 0.2])
    n = round(np.linalg.norm(out) / step)
    for i in [*range(1, n + 1), *range(n - 1, -1, -1)]:
        assert drag(HAND, origin + out * i / n) == {"FINISHED"}
        assert max(pin_errors(obj).values()) <= 1e-4
    worst, bone = max((angle(start[pb.name], pb.matrix_basis.to_quaternion()), pb.name) for pb in obj.pose.bones)
    assert worst <= 1.0, (worst, bone)
