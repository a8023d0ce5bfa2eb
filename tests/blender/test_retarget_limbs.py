"""A retarget's limbs bent as the source's whatever the two bodies' proportions and whatever
bends them: a hand or foot reaches from its shoulder or hip as far as the target's own limb
does with its elbow or knee bent as the source's (``retarget_limbs.reach``), and a limb the rig's
own IK bends is twisted until it bends in the source's plane (``retarget_twist``), measured on
the evaluated pose of a generated Rigify rig."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import retarget_gates
import scenes
from conftest import import_clip
from test_retarget import _curves

from welman_ik.blender.bake import retarget_limbs, retarget_twist


def _limb(bend: float, upper: float, lower: float, frames: int = 1, about: np.ndarray | None = None) -> np.ndarray:
    """(frames, 3, 3) heads of a limb hanging down, its upper bone ``upper`` long, bent by
    ``bend`` [rad] forward (toward -Y), turned about its own line (top to end) by ``about``
    (frames,) [rad]."""
    about = np.zeros(frames) if about is None else about
    middle = np.array([0.0, 0.0, -upper])
    end = middle + lower * np.array([0.0, -np.sin(bend), -np.cos(bend)])
    heads = np.array([np.zeros(3), middle, end])
    axis = end / np.linalg.norm(end)
    out = []
    for angle in about:  # Rodrigues' turn about the limb's line
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        turn = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
        out.append(heads @ turn.T)
    return np.array(out)


@pytest.mark.parametrize("bend", [0.0, 0.3, 1.2, 2.0])
def test_a_limb_reaches_as_far_as_the_targets_does_bent_as_the_sources(bend):
    source = _limb(bend, 0.40, 0.45)
    roles = {"a": "thigh.L", "b": "shin.L", "c": "foot.L"}
    target_roles = {"x": "thigh.L", "y": "shin.L", "z": "foot.L"}
    target_heads = {"x": np.zeros(3), "y": np.array([0.0, 0.0, -0.30]), "z": np.array([0.0, 0.0, -0.62])}
    reach = retarget_limbs.reach(source, {"a": 0, "b": 1, "c": 2}, roles, target_roles, target_heads, "L", retarget_limbs.LEG)
    # The target's own thigh and shin (0.30, 0.32) reach there only with the knee bent by ``bend``.
    far = float(np.linalg.norm(reach[0]))
    cos = (far * far - 0.30 ** 2 - 0.32 ** 2) / (2 * 0.30 * 0.32)
    assert np.degrees(abs(np.arccos(np.clip(cos, -1, 1)) - bend)) < 1e-6
    along = (source[0, 2] - source[0, 0]) / np.linalg.norm(source[0, 2] - source[0, 0])
    assert np.allclose(reach[0] / far, along)


def test_a_limb_without_its_bones_has_no_reach():
    roles = {"a": "thigh.L", "c": "foot.L"}
    assert retarget_limbs.reach(_limb(0.5, 0.4, 0.4), {"a": 0, "c": 2}, roles, {}, {}, "L", retarget_limbs.LEG) is None


def test_the_twist_a_limb_misses_is_its_turn_about_its_line_from_the_sources_plane():
    about = np.linspace(-2.5, 2.5, 9)
    source = _limb(0.8, 0.3, 0.3, 9)
    target = _limb(0.8, 0.3, 0.3, 9, about)
    missed = retarget_twist._missed(target, source)
    assert np.allclose(missed, -about, atol=1e-9)  # turned back by as much, either way


def test_a_straight_limb_takes_its_twist_from_the_frames_around_it():
    about = np.full(5, 0.5)
    bends = np.array([0.8, 0.8, 0.0, 0.8, 0.8])
    source = np.concatenate([_limb(b, 0.3, 0.3) for b in bends])
    target = np.concatenate([_limb(b, 0.3, 0.3, 1, about[:1]) for b in bends])
    assert np.allclose(retarget_twist._missed(target, source), -0.5)


@pytest.mark.once
def test_a_generated_rigify_rig_upright_its_knees_and_elbows_bent_in_the_sources_planes():
    scenes.empty_scene()
    source = import_clip("pymo_walk.bvh")
    bpy.ops.object.mode_set(mode="OBJECT")
    source.select_set(False)
    target = scenes.generated_rigify()
    bpy.ops.welman_ik.retarget_map_fill(source=source.name)
    frames = list(range(1, 61))
    assert bpy.ops.welman_ik.retarget(source=source.name, frame_start=frames[0], frame_end=frames[-1]) == {"FINISHED"}
    cs, s = retarget_gates.joints(source, frames)
    ct, t = retarget_gates.joints(target, frames)
    for parts in (("thigh", "shin", "foot"), ("upper_arm", "forearm", "hand")):
        for side in "LR":
            bend_s, axis_s = retarget_gates._bend(cs, s, parts, side)
            bend_t, axis_t = retarget_gates._bend(ct, t, parts, side)
            both = (bend_s > 15) & (bend_t > 15)
            assert both.sum() > 10
            assert retarget_gates.angle(axis_s[both], axis_t[both]).max() <= 20.0, (parts, side)
            if parts[0] == "thigh":  # the knee bent as the source's
                assert np.abs(bend_s - bend_t).max() <= 10.0, side
    # Upright: the shoulder line faces as the source's, seen from above.
    def facing(c, x):
        v = x[:, c["upper_arm.L"]] - x[:, c["upper_arm.R"]]
        return np.arctan2(v[:, 1], v[:, 0])

    assert np.degrees(np.abs(np.angle(np.exp(1j * (facing(cs, s) - facing(ct, t)))))).max() <= 15.0
    # The twist goes on the IK chain's first control, a control like the others.
    keyed = {c.data_path.split('"')[1] for c in _curves(target.animation_data.action)}
    assert {"thigh_ik.L", "upper_arm_ik.R"} <= keyed
    # Flat on the floor where the source's foot is (its heel planted, its toe down): the target's
    # toe at its own rest height, whatever its foot bone's pitch in either rest.
    scale = target.matrix_world.to_scale()[0]
    flat_frames = 0
    for side in "LR":
        foot = target.data.bones[f"DEF-foot.{side}"]
        rest_heel, rest_toe = ((target.matrix_world @ end).z for end in (foot.head_local, foot.tail_local))
        toe_s = s[:, cs[f"toe.{side}"], 2]
        flat = (np.abs(t[:, ct[f"foot.{side}"], 2] - rest_heel) < 0.003 * scale) & (toe_s - toe_s.min() < 0.015)
        flat_frames += int(flat.sum())
        assert np.abs(t[flat, ct[f"toe.{side}"], 2] - rest_toe).max(initial=0.0) <= 0.015 * scale, side
    assert flat_frames >= 5
    # No deforming bone longer than its rest by more than 1% (the rig's IK shortens its bent
    # limbs by itself, as for any pose: reported in words, not counted), in the evaluated pose.
    deform = [b.name for b in target.data.bones if b.use_deform]
    pose, world = retarget_gates.pose_matrices(target, deform, frames)
    along = np.linalg.norm((world[:, None] @ pose)[..., :3, 1], axis=-1) / scale
    assert along.max() <= 1.01, deform[int(np.argmax(along.max(axis=0)))]
    stretch = next(item for item in target.welman_ik.last_solve.groups if item.group == "stretch")
    assert stretch.error == pytest.approx(float(np.abs(np.where(along > 1.0, along - 1.0, 0.0)).max()), abs=1e-3)


def _lifting(plants: list):
    """A retarget of one foot standing 0.05 above its floor on every frame, lined up flat
    (its toe 0.1 ahead of its ankle and 0.04 below), with ``plants``."""
    from types import SimpleNamespace

    count = 30
    return SimpleNamespace(frames=list(range(count)), plants=plants,
                           lines=[SimpleNamespace(target="foot", group="feet")],
                           places={0: np.tile([0.0, 0.0, 0.15], (count, 1))}, turns={0: np.tile(np.eye(3), (count, 1, 1))})


def test_a_toe_planted_alone_between_heel_plants_does_not_bob_the_body(monkeypatch):
    """Heels that ask the body down 5 cm, and between them a toe the foot puts down by pitching
    about its ankle: the body stays down through it (it would go back up by 5 cm for the toe's
    frames and down again), and only goes lower where pitching no longer reaches."""
    from welman_ik.blender.bake import retarget_feet

    monkeypatch.setattr(retarget_feet, "floor_height", lambda retarget, plant: 0.10 if plant.heel else 0.06)
    heel, toe = np.zeros(3), np.array([0.0, 0.1, -0.04])
    plants = [retarget_feet.Plant("foot", heel, heel, 0, 9, heel=True),
              retarget_feet.Plant("foot", toe, toe, 10, 19),
              retarget_feet.Plant("foot", heel, heel, 20, 29, heel=True)]
    lift = retarget_feet.body_lift(_lifting(plants))
    assert np.allclose(lift, -0.05)
    # A toe whose ankle stands too high for pitching to reach (0.9 of its 0.108 reach): down as far as that needs.
    monkeypatch.setattr(retarget_feet, "floor_height", lambda retarget, plant: 0.10 if plant.heel else -0.02)
    lift = retarget_feet.body_lift(_lifting(plants))
    reach = retarget_feet.PITCH * np.linalg.norm(toe)
    assert np.allclose(lift[10:20], -0.02 - (0.15 - reach)) and np.allclose(lift[:10], -0.05)
    # With a heel planted on those frames too, the toe's leg puts it down: the body follows the heel.
    held = [retarget_feet.Plant("foot", heel, heel, 0, 29, heel=True), retarget_feet.Plant("foot", toe, toe, 10, 19)]
    assert np.allclose(retarget_feet.body_lift(_lifting(held)), -0.05)


@pytest.mark.once
def test_a_generated_rigify_rig_with_its_limbs_in_fk_holds_every_gate():
    """Its FK legs hang from spine bones that copy its hips by constraints: the plants hold on
    the evaluated pose, the knees bend as the source's, and no deforming bone changes length."""
    scenes.empty_scene()
    source = import_clip("pymo_walk.bvh")
    bpy.ops.object.mode_set(mode="OBJECT")
    source.select_set(False)
    target = scenes.generated_rigify()
    for side in "LR":
        for holder in ("upper_arm_parent", "thigh_parent"):
            target.pose.bones[f"{holder}.{side}"]["IK_FK"] = 1.0
    bpy.ops.welman_ik.retarget_map_fill(source=source.name)
    assert {item.target_bone for item in target.welman_ik.retarget_map} >= {"thigh_fk.L", "foot_fk.R", "hand_fk.L"}
    frames = list(range(1, 61))
    assert bpy.ops.welman_ik.retarget(source=source.name, frame_start=frames[0], frame_end=frames[-1]) == {"FINISHED"}
    last = target.welman_ik.last_solve
    assert last.converged, last.message
    gates = {item.group: item.error for item in last.groups}
    assert gates["plants"] <= 0.001 and gates["stretch"] <= 0.01 and math.degrees(gates["bends"]) <= 10.0, gates
    # Measured here too: the plants' heels against where each plant began, and every deforming bone's length.
    deform = [b.name for b in target.data.bones if b.use_deform]
    pose, world = retarget_gates.pose_matrices(target, deform, frames)
    along = np.linalg.norm((world[:, None] @ pose)[..., :3, 1], axis=-1)
    assert np.abs(along - 1.0).max() <= 0.01
    # The controls the map leaves out (the FK spine and its tweaks, between the torso and the
    # legs) are not moved: their keys, if any, stay at rest.
    for curve in _curves(target.animation_data.action):
        bone = curve.data_path.split('"')[1]
        if bone in {"spine_fk", "spine_fk.001", "tweak_spine"} and "rotation" in curve.data_path:
            rest = 1.0 if curve.data_path.endswith("quaternion") and curve.array_index == 0 else 0.0
            assert all(abs(k.co[1] - rest) < 1e-6 for k in curve.keyframe_points), curve.data_path


@pytest.mark.once
def test_a_source_without_hands_moves_a_rigify_rigs_ik_arms():
    """The walk with its hand bones taken out, onto a generated Rigify rig whose arms are in IK:
    each IK hand is held at the end of the source's forearm, turned as it, so the arms follow
    the source's (they stayed at rest before, and the forearms stretched to reach)."""
    scenes.empty_scene()
    source = import_clip("pymo_walk.bvh")
    bpy.ops.object.mode_set(mode="EDIT")
    bones = source.data.edit_bones
    for name in [b.name for b in bones if "Hand" in b.name]:
        bones.remove(bones[name])
    bpy.ops.object.mode_set(mode="OBJECT")
    source.select_set(False)
    target = scenes.generated_rigify()
    bpy.ops.welman_ik.retarget_map_fill(source=source.name)
    by_target = {item.target_bone: item.source_bone for item in target.welman_ik.retarget_map}
    assert by_target["hand_ik.L"] == "LeftForeArm" and by_target["hand_ik.R"] == "RightForeArm"
    frames = list(range(1, 61))
    assert bpy.ops.welman_ik.retarget(source=source.name, frame_start=frames[0], frame_end=frames[-1]) == {"FINISHED"}
    assert target.welman_ik.last_solve.converged, target.welman_ik.last_solve.message
    pose_t, world_t = retarget_gates.pose_matrices(target, ["DEF-upper_arm.L", "DEF-forearm.R", "DEF-hand.R"], frames)
    pose_s, world_s = retarget_gates.pose_matrices(source, ["LeftArm", "RightForeArm"], frames)
    along_t = (world_t[:, None] @ pose_t)[..., :3, 1]
    along_s = (world_s[:, None] @ pose_s)[..., :3, 1]
    along_t /= np.linalg.norm(along_t, axis=-1, keepdims=True)
    along_s /= np.linalg.norm(along_s, axis=-1, keepdims=True)
    off = np.degrees(np.arccos(np.clip(np.einsum("fbi,fbi->fb", along_t[:, :2], along_s), -1.0, 1.0)))
    assert off.max() <= 10.0  # the upper arm and forearm as the source's
    hand = np.degrees(np.arccos(np.clip(np.einsum("fi,fi->f", along_t[:, 2], along_t[:, 1]), -1.0, 1.0)))
    assert hand.max() <= 10.0  # the hand along its forearm
