"""The bone's rotation mode changes how the pose is stored, never the pose the drag gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scenes
from conftest import drag, pin, pin_errors, set_rotation_mode, world_point, world_pose
from mathutils import Euler, Quaternion

SHOULDER_R = np.array([-0.195, 0.027, 1.585])
TARGET = SHOULDER_R + 0.45 * np.array([-1.0, -0.3, -0.8]) / np.linalg.norm([-1.0, -0.3, -0.8])
MODES = ["QUATERNION", "XYZ", "ZXY", "AXIS_ANGLE"]


def _posed_rig(mode: str):
    """The basic human with every bone in ``mode``, pinned as the ``human`` fixture, hand.R dragged."""
    scenes.empty_scene()
    obj = scenes.basic_human(pins=())
    set_rotation_mode(obj, mode)
    pin(obj, scenes.DEMO_PINS)
    # Converge well past the comparison's 1e-5 m, so that rounding in how each mode stores
    # the start pose cannot end the solves at different points within tolerance.
    obj.welman_ik.tolerance = 1e-8
    assert drag("hand.R", TARGET) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand.R") - TARGET) <= 1e-4
    assert max(pin_errors(obj).values()) <= 1e-4
    assert all(pb.rotation_mode == mode for pb in obj.pose.bones)
    return world_pose(obj)


@pytest.fixture(scope="module")
def reference_pose():
    return _posed_rig("XYZ")


@pytest.mark.parametrize("mode", [m for m in MODES if m != "XYZ"])
def test_same_world_pose_in_every_mode(reference_pose, mode):
    pose = _posed_rig(mode)
    worst = max(
        max(np.abs(pose[n][0] - reference_pose[n][0]).max(), np.abs(pose[n][1] - reference_pose[n][1]).max())
        for n in reference_pose
    )
    assert worst <= 1e-5


def test_drag_moves_the_pose(reference_pose):
    """The comparison above is between moved poses, not rest poses."""
    scenes.empty_scene()
    rest = world_pose(scenes.basic_human(pins=()))
    assert np.linalg.norm(reference_pose["hand.R"][1] - rest["hand.R"][1]) > 0.2
    assert np.linalg.norm(reference_pose["forearm.R"][1] - rest["forearm.R"][1]) > 1e-3  # the elbow moved


def test_quaternion_keeps_its_hemisphere(human):
    """A bone stored with w < 0 keeps w < 0 (no sign flip) after a small drag."""
    pb = human.pose.bones["upper_arm.R"]
    q = Quaternion((1.0, 0.0, 0.0), 0.3)
    q.negate()
    pb.rotation_quaternion = q
    before = Quaternion(pb.rotation_quaternion)
    assert before.w < 0.0
    target = world_point(human, "hand.R") + np.array([-0.05, -0.05, 0.05])
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    after = Quaternion(pb.rotation_quaternion)
    assert after != before  # the bone moved
    assert after.dot(before) > 0.9
    assert max(abs(a - b) for a, b in zip(after, before, strict=True)) < 0.3


START_EULERS = {
    "near_pi": (0.05, math.pi - 0.01, 0.02),  # half-way round its own axis (Y)
    "near_minus_pi": (0.05, 0.01 - math.pi, 0.02),
    "other_branch": (math.pi - 0.3, math.pi - 0.2, 0.25 - math.pi),  # not the usual decomposition
}


@pytest.mark.parametrize("mode", ["XYZ", "ZXY", "YXZ"])
@pytest.mark.parametrize("start", list(START_EULERS))
def test_euler_stays_compatible(human, mode, start):
    """An Euler bone keeps channel values near its previous ones across small drags,
    whichever way the solver turns it: no 2 pi jump, no switch to the other decomposition."""
    pb = human.pose.bones["upper_arm.R"]
    pb.rotation_mode = mode
    pb.rotation_euler = Euler(START_EULERS[start], mode)
    before = tuple(pb.rotation_euler)
    for step in ([-0.04, -0.04, 0.03], [0.03, -0.05, -0.04]):
        target = world_point(human, "hand.R") + np.array(step)
        assert drag("hand.R", target) == {"FINISHED"}
        assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
        after = tuple(pb.rotation_euler)
        assert after != before
        assert max(abs(a - b) for a, b in zip(after, before, strict=True)) < 0.5, (before, after)
        before = after
