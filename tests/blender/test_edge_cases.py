"""Rigs posed the way artists leave them: past their limits, connected bones with stray
locations, axis-angle keys, drags that come back to where they started."""

from __future__ import annotations

import bpy
import numpy as np
from conftest import channels, drag, pin_errors, world_point
from mathutils import Quaternion

from welman_ik.blender.drag.session import DEFAULT_ANCHOR, DragSession
from welman_ik.blender.rig import keyframes

FRONT = np.array([0.0, 1.0, 0.0])


def test_locked_bone_posed_past_its_limits_is_left_alone(human):
    forearm = human.pose.bones["forearm.R"]
    forearm.rotation_quaternion = Quaternion((1.0, 0.0, 0.0), 1.2)
    forearm.use_ik_limit_x, forearm.ik_max_x = True, 0.5
    forearm.lock_ik_x = forearm.lock_ik_y = forearm.lock_ik_z = True
    before = channels(human)["forearm.R"]
    drag("hand.R", world_point(human, "hand.R") + np.array([0.0, -0.05, 0.05]))
    assert channels(human)["forearm.R"] == before
    assert not keyframes.bone_fcurves(human, "forearm.R")


def test_movable_bone_past_its_limit_is_not_snapped_back(human):
    """A bone posed past its IK limit by hand may move back toward it, never jump to it."""
    spine = human.pose.bones["spine.002"]
    spine.rotation_mode = "XYZ"
    spine.rotation_euler = (0.3 + 2 * np.pi, 0.0, 0.0)
    spine.use_ik_limit_x, spine.ik_min_x, spine.ik_max_x = True, -0.2, 0.2
    drag("hand.R", world_point(human, "hand.R") + np.array([0.0, -0.001, 0.0]))
    assert abs(spine.rotation_euler[0] - (0.3 + 2 * np.pi)) < 0.1  # no 2 pi jump, no snap to 0.2


def test_drag_back_to_the_start_restores_the_channels(human):
    """Every mouse event writes what changed since the last one, so a drag that comes back
    leaves the pose as the solver has it, to the bit where the solver is back at the start:
    the hand 14 cm out, then back where it started (0.1 mm, each time), the pins held."""
    session = DragSession(human, "hand.R", event_budget=None)
    start = world_point(human, "hand.R", DEFAULT_ANCHOR)
    for point in (start + [0.1, 0.0, 0.1], start):
        session.move(np.array([point[0], -10.0, point[2]]), FRONT)
        np.testing.assert_allclose(session.goal[[0, 2]], point[[0, 2]], atol=1e-9)  # (the ray's closest point)
        assert np.linalg.norm(world_point(human, "hand.R", DEFAULT_ANCHOR) - session.goal) <= 1e-4
        assert max(pin_errors(human).values()) <= 1e-4
    assert np.linalg.norm(world_point(human, "hand.R", DEFAULT_ANCHOR) - start) <= 1e-4
    bpy.context.view_layer.update()
    kin = session.solver.model.skeleton.forward(session.solver.q)
    expected = session.solver.drag_goal.point(kin)
    assert np.linalg.norm(world_point(human, "hand.R", DEFAULT_ANCHOR) - expected) < 1e-6


def test_connected_bone_location_is_ignored(human):
    human.pose.bones["forearm.R"].location = (0.05, 0.1, 0.0)  # Blender ignores it: connected
    target = world_point(human, "hand.R") + np.array([0.05, -0.1, 0.05])
    drag("hand.R", target)
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4


def test_axis_angle_axis_keeps_its_side(bare_human):
    bone = bare_human.pose.bones["forearm.R"]
    bone.rotation_mode = "AXIS_ANGLE"
    bone.rotation_axis_angle = (-0.4, 1.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    drag("hand.R", world_point(bare_human, "hand.R") + np.array([0.0, -0.02, 0.02]))
    angle, *axis = bone.rotation_axis_angle
    assert axis[0] > 0.5  # same side as (1, 0, 0): keys interpolate through the small rotation
    assert angle < 0.0


def test_cancel_restores_the_settings_the_drag_changed(human):
    settings = human.welman_ik
    settings.last_solve.iterations = 7
    session = DragSession(human, "hand.R")
    session.change_chain_length(+2)
    session.cycle_solver()
    start = world_point(human, "hand.R", DEFAULT_ANCHOR)
    session.move(np.array([start[0] + 0.05, -10.0, start[2]]), FRONT)
    session.cancel()
    assert settings.chain_length == 0
    assert settings.solver == "SR_INVERSE"
    assert settings.last_solve.iterations == 7
