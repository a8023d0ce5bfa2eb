"""Natural posing: the preferred pose as the lowest-priority task (Yamane & Nakamura 2003).

Measured on the evaluated pose of the Rigify basic human metarig, feet pinned, with the
interactive drag fed mouse rays as a user's mouse would give them.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import drag, pin_errors, world_point

from welman_ik.blender.drag.session import DragSession

FRONT = np.array([0.0, 1.0, 0.0])  # the view looks along +Y at the rig, which faces -Y


@pytest.fixture
def standing():
    """The metarig with its feet (toes and heels) and left hand pinned."""
    scenes.empty_scene()
    return scenes.basic_human(pins=scenes.DEMO_PINS)


def world_rotations(obj) -> dict:
    bpy.context.view_layer.update()
    return {pb.name: (obj.matrix_world @ pb.matrix).to_quaternion() for pb in obj.pose.bones}


def angle(a, b) -> float:
    """Degrees between two orientations, whatever the quaternions' signs."""
    return float(np.degrees(2.0 * np.arccos(min(1.0, abs(a.dot(b))))))


def move(session: DragSession, point) -> None:
    """One mouse event whose ray passes through ``point`` (an orthographic front view)."""
    session.move(np.asarray(point) - 5.0 * FRONT, FRONT)


@pytest.mark.parametrize(("solver", "reference", "worst_degrees"), [
    ("SR_INVERSE", "START", 1.0), ("SR_INVERSE", "NONE", None),
    ("JACOBIAN_TRANSPOSE", "START", 1.0),
])
def test_hand_out_and_back_gives_back_the_start_pose(standing, solver, reference, worst_degrees):
    """Drag a hand 25 cm out and back in 1 cm steps: with the preferred pose the drag's start,
    every bone ends within 1 degree of where it started. Without one, the least-norm steps
    leave the body elsewhere (about 6 degrees here): the test shows the difference is real.
    (CCD is not held to this: its sweeps turn the pinned left hand about its held tail, a
    motion no position goal sees, by up to 100 degrees; the mocap issue's pin orientation
    is what fixes it.)"""
    standing.welman_ik.reference = reference
    standing.welman_ik.solver = solver
    # At the far end the drag pulls against the pins; CCD and the Jacobian transpose, with
    # no null space, give the pins a fraction of a millimetre there.
    pin_tolerance = 1e-4 if solver == "SR_INVERSE" else 5e-4
    start = world_rotations(standing)
    session = DragSession(standing, "hand.R", event_budget=1.0)  # the pose, not the machine's speed
    origin = world_point(standing, "hand.R", session.anchor)
    out = np.array([-0.15, 0.0, 0.2])  # sideways and up, in the view plane
    steps = np.linspace(0.0, 1.0, 26)
    for t in [*steps, *steps[::-1]]:
        move(session, origin + t * out)
        assert max(pin_errors(standing).values()) <= pin_tolerance
    end = world_rotations(standing)
    worst, worst_bone = max((angle(start[name], end[name]), name) for name in start)
    if worst_degrees is not None:
        assert worst <= worst_degrees, (worst, worst_bone)
    else:
        assert worst > 2.0, worst


def arm_posture(obj) -> tuple[float, float]:
    """(wrist [deg], elbow [m]) of the evaluated pose: the hand's Y axis off the forearm's, and
    the world-Z part of the elbow's offset from the line from the shoulder to the wrist."""
    bpy.context.view_layer.update()
    hand, forearm = ((obj.matrix_world @ obj.pose.bones[n].matrix).to_3x3().col[1].normalized()
                     for n in ("hand.R", "forearm.R"))
    wrist = float(np.degrees(hand.angle(forearm, 0.0)))
    shoulder, elbow, joint = (world_point(obj, n, 0.0) for n in ("upper_arm.R", "forearm.R", "hand.R"))
    line = (joint - shoulder) / np.linalg.norm(joint - shoulder)
    offset = (elbow - shoulder) - np.dot(elbow - shoulder, line) * line
    return wrist, float(offset[2])


@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE"])
def test_the_arm_reaches_as_a_person_does(solver):
    """Feet pinned, the human ranges, hand.R dragged in one drag 0.8 of the arm's length from
    the shoulder up, out to the side, forward and across the chest: the wrist within 25
    degrees of the forearm's line and the elbow at most 2 cm above the shoulder-wrist line
    (before the arm's posture: up to 60-92 degrees and 2-8 cm), the hand on its target, the
    trunk where it was (``scripts/bench_reaches.py`` measures every case)."""
    scenes.empty_scene()
    obj = scenes.basic_human(pins=scenes.FEET)
    obj.welman_ik.keyframes = "NEVER"
    obj.welman_ik.solver = solver
    with scenes.quiet():
        assert bpy.ops.welman_ik.joint_ranges(preset="AUTO") == {"FINISHED"}
    bpy.context.view_layer.update()
    root = world_point(obj, "upper_arm.R", 0.0)
    length = sum(obj.pose.bones[b].bone.length for b in ("upper_arm.R", "forearm.R", "hand.R"))
    side = root - world_point(obj, "spine.003", 0.0)
    side[2] = 0.0
    side /= np.linalg.norm(side)
    forward = np.array([0.0, -1.0, 0.0])
    across = -0.6 * side + 0.8 * forward
    ways = {"up": np.array([0.0, 0.0, 1.0]), "side": side, "forward": forward, "across": across / np.linalg.norm(across)}
    start = {pb.name: pb.matrix_basis.copy() for pb in obj.pose.bones}
    chest = world_rotations(obj)["spine.003"]
    for name, way in ways.items():
        for pb in obj.pose.bones:
            pb.matrix_basis = start[pb.name]
        target = root + 0.8 * length * way
        assert drag("hand.R", target) == {"FINISHED"}, name
        wrist, elbow = arm_posture(obj)
        assert np.linalg.norm(world_point(obj, "hand.R") - target) <= 1e-3, name
        assert wrist <= 25.0 and elbow <= 0.02, (name, wrist, elbow)
        assert angle(chest, world_rotations(obj)["spine.003"]) <= 0.5, name
