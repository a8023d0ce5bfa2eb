"""Pin-and-drag on the Rigify basic human: reachable and unreachable targets, the squat."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from conftest import drag, pin, pin_errors, world_point

from welman_ik.blender.drag.solver import DragSolver
from welman_ik.core import SOLVERS

SHOULDER_R = np.array([-0.195, 0.027, 1.585])
DIRECTIONS = np.array([
    [-1.0, -1.0, 0.0], [-1.0, -0.3, -0.8], [-0.2, -1.0, -0.3], [0.3, -1.0, 0.1], [-1.0, 0.0, 0.6],
    [-0.6, -0.6, 0.8], [-0.7, 0.5, -0.5], [-1.0, -0.2, -1.0], [0.1, -1.0, 0.5], [-0.4, -0.9, -0.9],
])
REACHABLE = [SHOULDER_R + 0.45 * d / np.linalg.norm(d) for d in DIRECTIONS]


def _settle(obj):
    """Targets are posed from rest: reset the pose between drags."""
    for pb in obj.pose.bones:
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        pb.rotation_euler = (0.0, 0.0, 0.0)
        pb.location = (0.0, 0.0, 0.0)


@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON"])
@pytest.mark.parametrize("target", REACHABLE, ids=[f"t{i}" for i in range(len(REACHABLE))])
def test_newton_solvers_meet_reachable_targets(human, target, solver):
    human.welman_ik.solver = solver
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4
    assert human.welman_ik.last_solve.converged


@pytest.mark.parametrize("solver", ["CCD", "JACOBIAN_TRANSPOSE"])
def test_ccd_and_transpose_meet_reachable_targets(human, solver):
    """Every reachable target met, on the evaluated pose, within the budget (they once only
    had to say honestly that they had not)."""
    human.welman_ik.solver = solver
    for target in REACHABLE:
        _settle(human)
        assert drag("hand.R", target) == {"FINISHED"}
        worst = max(np.linalg.norm(world_point(human, "hand.R") - target), *pin_errors(human).values())
        last = human.welman_ik.last_solve
        assert last.converged, last.message
        assert worst <= human.welman_ik.tolerance + 1e-6  # channels are stored as float32
        assert last.iterations <= human.welman_ik.max_iterations


LIMIT = 0.2  # rad


def test_unreachable_target_closest_point(human):
    """2 m away with pins first: the pins hold, the hand stops at the closest reachable point."""
    settings = human.welman_ik
    hand = world_point(human, "hand.R")
    target = hand + np.array([-2.0, 0.0, 0.0])

    # Slow reference: the same problem with ten times the budget and a tight tolerance.
    reference = DragSolver(human, settings, "hand.R")
    problem = reference.problem()
    problem.max_iterations, problem.tolerance = 3000, 1e-9
    reference.drag_goal.target = target
    ref = SOLVERS["SR_INVERSE"](problem, reference.q)
    ref_kin = reference.model.skeleton.forward(ref.q)
    ref_hand = reference.drag_goal.point(ref_kin)

    assert drag("hand.R", target) == {"FINISHED"}
    reached = world_point(human, "hand.R")
    assert np.all(np.isfinite(reached))
    assert max(pin_errors(human).values()) <= 1e-4
    # The closest reachable point: no farther from the target than the slow solve got (the
    # valley of closest points is flat along the arm's swing, so the point itself may differ).
    assert np.linalg.norm(reached - target) <= np.linalg.norm(ref_hand - target) + 1e-3
    assert not settings.last_solve.converged


@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON"])
def test_unreachable_with_limits_never_leaves_them(human, solver):
    """IK limits of 0.2 rad on the arm and two spine bones (the free reach turns the upper arm
    and the forearm 0.34-0.37 rad), the hand dragged 2 m out of reach: every limited bone stays
    within its limits, in the model and on the evaluated pose."""
    human.welman_ik.solver = solver
    for name in ("upper_arm.R", "forearm.R", "spine.001", "spine.002"):
        pb = human.pose.bones[name]
        for axis in "xyz":
            setattr(pb, f"use_ik_limit_{axis}", True)
            setattr(pb, f"ik_min_{axis}", -LIMIT)
            setattr(pb, f"ik_max_{axis}", LIMIT)
    target = world_point(human, "hand.R") + np.array([-2.0, -0.5, 0.5])
    model_solver = DragSolver(human, human.welman_ik, "hand.R")
    model_solver.solve(target)
    sk = model_solver.model.skeleton
    assert np.all(model_solver.q >= sk.lower) and np.all(model_solver.q <= sk.upper)  # exactly, in the model
    drag("hand.R", target)
    # On the evaluated pose: each limited bone's rotation from rest (its local-space evaluated
    # matrix) as Euler angles in the bone's own order, within the IK limits.
    bpy.context.view_layer.update()
    for name in ("upper_arm.R", "forearm.R", "spine.001", "spine.002"):
        pb = human.pose.bones[name]
        local = human.convert_space(pose_bone=pb, matrix=pb.matrix, from_space="POSE", to_space="LOCAL")
        order = pb.rotation_mode if pb.rotation_mode in {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"} else "XYZ"
        angles = np.array(local.to_euler(order))
        assert np.all(np.isfinite(angles)) and np.all(np.abs(angles) <= LIMIT + 1e-4), (name, angles)
    assert max(pin_errors(human).values()) <= 1e-4


def test_squat_moves_root_and_feet_hold(human):
    """Drag the root (spine, anchor 0) 0.25 m down with the feet pinned."""
    settings = human.welman_ik
    for existing in settings.pins:
        existing.enabled = existing.bone != "hand.L"
    pelvis = world_point(human, "spine", 0.0)
    target = pelvis - np.array([0.0, 0.0, 0.25])
    assert drag("spine", target, anchor=0.0) == {"FINISHED"}
    assert np.linalg.norm(world_point(human, "spine", 0.0) - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4
    assert human.pose.bones["spine"].location.length > 0.2  # the root's translation did it


@pytest.mark.parametrize("scale", [(2.0, 2.0, 2.0), (1.0, 1.5, 0.8)], ids=["uniform", "non-uniform"])
def test_scaled_and_rotated_armature(bare_human, scale):
    """The armature object's world matrix, scale included, is respected: pins hold and the
    hand reaches in world space."""
    obj = bare_human
    obj.scale = scale
    obj.rotation_euler = (0.0, 0.0, 0.7)
    obj.location = (1.0, -2.0, 0.5)
    bpy.context.view_layer.update()
    pin(obj, ("toe.L", "toe.R", "heel.02.L", "heel.02.R", "hand.L"))
    target = world_point(obj, "hand.R") + np.array([0.15, -0.2, 0.25])
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand.R") - target) <= 1e-4
    assert max(pin_errors(obj).values()) <= 1e-4
