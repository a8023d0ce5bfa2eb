"""Writing joint values back onto the pose bones in bulk, and the pose Blender evaluates from them."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from conftest import channels
from mathutils import Euler, Matrix, Quaternion, Vector

from welman_ik.blender.rig.evaluated import anchor_points
from welman_ik.blender.rig.model import RigModel
from welman_ik.blender.rig.rotations import AXES, FEW_ROWS

# The right arm's chain in every rotation mode, each starting away from rest: a quaternion
# of length 1.3 with w < 0, Euler angles past a half turn, an axis-angle about -Y.
START = {
    "hand.R": ("QUATERNION", -1.3 * Quaternion((0.0, 0.0, 1.0), 0.4)),
    "forearm.R": ("ZXY", Euler((0.3, 0.2, 0.1 + 2.0 * math.pi), "ZXY")),  # hinges in XYZ: converted
    "upper_arm.R": ("XYZ", Euler((0.2, -0.1, 0.3), "XYZ")),
    "shoulder.R": ("AXIS_ANGLE", (-0.5, 0.0, -1.0, 0.0)),
    "spine.003": ("YXZ", Euler((0.1, 0.2, 0.3), "YXZ")),  # IK-limited: hinges in its own order
}
ROOT_START = (0.01, 0.02, -0.03)


def pose_start(obj) -> None:
    for name, (mode, rotation) in START.items():
        pb = obj.pose.bones[name]
        pb.rotation_mode = mode
        if mode == "QUATERNION":
            pb.rotation_quaternion = rotation
        elif mode == "AXIS_ANGLE":
            pb.rotation_axis_angle = rotation
        else:
            pb.rotation_euler = rotation
    limited = obj.pose.bones["spine.003"]
    limited.use_ik_limit_x, limited.ik_min_x, limited.ik_max_x = True, -2.0, 2.0
    obj.pose.bones["spine"].location = ROOT_START
    bpy.context.view_layer.update()


def f32(values) -> tuple:
    """``values`` as single-precision channels hold them."""
    return tuple(np.float32(values).tolist())


def hinges(model, name) -> list[int]:
    return [model.bones[name].hinges[a] for a in AXES]


def moved_q(model, scale: float = 1.0) -> np.ndarray:
    """The start values with every hinge turned a little (each by its own amount) and the root slid."""
    q = model.q0.copy()
    for k, b in enumerate(model.bones.values()):
        for i, a in enumerate(AXES):
            q[b.hinges[a]] += scale * 0.05 * ((k + i) % 3 - 1 + 0.5)
        for i, a in enumerate(sorted(b.slides)):
            q[b.slides[a]] += scale * 0.01 * (i + 1)
    return q


def assert_evaluated_follows(obj, model, q, tolerance=1e-5) -> None:
    """The pose Blender evaluates puts every bone's head and tail where the model does."""
    bpy.context.view_layer.update()
    names = list(model.bones)
    kin = model.skeleton.forward(q)
    for anchor in (0.0, 1.0):
        joints, local = zip(*(model.anchor_local(n, anchor) for n in names))
        expected = kin.points(np.array(joints), np.array(local))
        found = anchor_points(obj, names, [anchor] * len(names))
        assert np.abs(found - expected).max() <= tolerance


def assert_channels_are_written(obj, model, q) -> None:
    """What ``channels(q)`` says the write puts on each bone is on it, to single precision."""
    for name, (path, rotation, location) in model.channels(q).items():
        pb = obj.pose.bones[name]
        assert tuple(getattr(pb, path)) == f32(rotation), name
        if location is not None:
            assert tuple(pb.location) == f32(location), name


def test_write_puts_each_mode_and_the_evaluated_pose_follows(bare_human):
    obj = bare_human
    pose_start(obj)
    before = channels(obj)
    previous = {name: obj.pose.bones[name] for name in START}
    previous = {name: (tuple(pb.rotation_quaternion), tuple(pb.rotation_euler), tuple(pb.rotation_axis_angle))
                for name, pb in previous.items()}
    model = RigModel(obj, ["hand.R"])
    assert model.bones["spine.003"].order == "YXZ" and model.bones["forearm.R"].order == "XYZ"
    q = moved_q(model)
    expected_channels = model.channels(q)

    written = model.write(q)

    assert written == list(model.bones)
    pbs = obj.pose.bones
    # Euler in the hinges' order: the angles themselves.
    for name in ("upper_arm.R", "spine.003"):
        assert tuple(pbs[name].rotation_euler) == f32(q[hinges(model, name)])
    # Euler in another order: the same rotation, the angles closest to the previous ones (no 2 pi jump).
    turned = Euler(q[hinges(model, "forearm.R")].tolist(), "XYZ")
    euler = pbs["forearm.R"].rotation_euler
    reference = turned.to_matrix().to_euler("ZXY", Euler(previous["forearm.R"][1], "ZXY"))
    assert np.abs(np.array(euler) - np.array(reference)).max() < 1e-5
    assert np.abs(np.array(euler) - np.array(previous["forearm.R"][1])).max() < 0.5
    # Quaternion: the rotation, on the hemisphere the bone held.
    quat = np.array(pbs["hand.R"].rotation_quaternion)
    reference = np.array(Euler(q[hinges(model, "hand.R")].tolist(), "XYZ").to_quaternion())
    assert quat @ np.array(previous["hand.R"][0]) > 0.0
    assert np.abs(quat + reference).max() < 1e-6  # (the start had w < 0)
    # Axis-angle: the rotation, the axis on the side it was.
    angle, *axis = pbs["shoulder.R"].rotation_axis_angle
    reference = Euler(q[hinges(model, "shoulder.R")].tolist(), "XYZ").to_quaternion()
    assert abs(abs(Quaternion(axis, angle).dot(reference)) - 1.0) < 1e-6
    assert np.dot(axis, previous["shoulder.R"][2][1:]) > 0.0
    # The root's location: its slides.
    root = model.bones["spine"]
    assert tuple(pbs["spine"].location) == f32(q[[root.slides[a] for a in AXES]])
    # Only each mode's own channel changed; bones outside the model not at all.
    after = channels(obj)
    for name, values in before.items():
        if name not in model.bones:
            assert after[name] == values, name
    slots = {"QUATERNION": 1, "AXIS_ANGLE": 3}
    for name, (mode, _) in START.items():
        slot = slots.get(mode, 2)
        assert all(after[name][i] == before[name][i] for i in range(6) if i != slot), name
    assert model.channels(q) == expected_channels
    assert_channels_are_written(obj, model, q)
    assert_evaluated_follows(obj, model, q)


def test_writing_the_start_back_restores_every_channel_bit_for_bit(bare_human):
    obj = bare_human
    pose_start(obj)
    before = channels(obj)
    bpy.context.view_layer.update()
    start_pose = {pb.name: (tuple(pb.head), tuple(pb.tail)) for pb in obj.pose.bones}
    model = RigModel(obj, ["hand.R", "hand.L"])
    q = moved_q(model)
    model.write(q)
    assert channels(obj) != before
    written = channels(obj)

    # One bone back at its start values: its original channels (the unnormalised quaternion too).
    partial = q.copy()
    partial[hinges(model, "hand.R")] = model.q0[hinges(model, "hand.R")]
    assert "hand.R" not in model.write(partial)
    now = channels(obj)
    assert now["hand.R"] == before["hand.R"]
    assert all(now[n] == written[n] for n in now if n != "hand.R")
    assert_evaluated_follows(obj, model, partial)

    assert model.write(model.q0) == []
    assert channels(obj) == before
    bpy.context.view_layer.update()
    assert {pb.name: (tuple(pb.head), tuple(pb.tail)) for pb in obj.pose.bones} == start_pose


def test_only_bones_changed_since_the_last_write_are_written(bare_human):
    obj = bare_human
    pose_start(obj)
    model = RigModel(obj, ["hand.R"])
    q = moved_q(model)
    model.write(q)
    obj.pose.bones["forearm.R"].rotation_euler = (1.0, 2.0, 3.0)  # by hand, between two writes
    again = q.copy()
    again[hinges(model, "hand.R")] += 0.01
    assert model.write(again) == list(model.bones)  # still every bone away from its start
    assert tuple(obj.pose.bones["forearm.R"].rotation_euler) == f32([1.0, 2.0, 3.0])
    assert model.moved(again) == list(model.bones)
    assert model.moved(model.q0) == []


@pytest.mark.parametrize("mode", ["ZXY", "QUATERNION", "AXIS_ANGLE"])
def test_many_bones_of_one_mode(bare_human, mode):
    """A whole body in one mode (as an imported clip's Euler order): every bone written, each
    continuous with its previous value, the evaluated pose on the model's."""
    obj = bare_human
    for k, pb in enumerate(obj.pose.bones):
        pb.rotation_mode = mode
        start = Euler((0.1 * (k % 3), 0.2, -0.1), "XYZ")
        other = k % 2  # every other bone on the other hemisphere, the other side, a turn away
        if mode == "QUATERNION":
            pb.rotation_quaternion = -start.to_quaternion() if other else start.to_quaternion()
        elif mode == "AXIS_ANGLE":
            axis, angle = start.to_quaternion().to_axis_angle()
            pb.rotation_axis_angle = (-angle, *(-axis)) if other else (angle, *axis)
        else:
            euler = start.to_matrix().to_euler(mode)
            euler.z += 2.0 * math.pi * other
            pb.rotation_euler = euler
    bpy.context.view_layer.update()
    before = channels(obj)
    model = RigModel(obj, ["hand.R", "hand.L", "toe.L", "toe.R"])
    assert len(model.bones) > FEW_ROWS
    q = moved_q(model, 0.5)
    model.write(q)
    for name in model.bones:
        pb = obj.pose.bones[name]
        reference = Euler(q[hinges(model, name)].tolist(), "XYZ")
        if mode == "QUATERNION":
            assert abs(abs(pb.rotation_quaternion.dot(reference.to_quaternion())) - 1.0) < 1e-6
            assert np.dot(pb.rotation_quaternion, before[name][1]) > 0.0
        elif mode == "AXIS_ANGLE":
            angle, *axis = pb.rotation_axis_angle
            assert abs(abs(Quaternion(axis, angle).dot(reference.to_quaternion())) - 1.0) < 1e-6
            assert np.dot(axis, before[name][3][1:]) > 0.0
        else:
            held = Euler(before[name][2], mode)
            assert np.abs(np.array(pb.rotation_euler) - np.array(reference.to_matrix().to_euler(mode, held))).max() < 1e-5
            assert np.abs(np.array(pb.rotation_euler) - np.array(held)).max() < 0.5
    assert_channels_are_written(obj, model, q)
    assert_evaluated_follows(obj, model, q)
    model.write(model.q0)
    assert channels(obj) == before


def _mathutils_euler(pose_bone, order: str, compatible: Euler | None) -> Euler:
    """One bone's rotation as Euler angles in ``order``, by mathutils, bone by bone."""
    mode = pose_bone.rotation_mode
    if mode == order:
        return pose_bone.rotation_euler.copy()
    if mode == "QUATERNION":
        rotation = pose_bone.rotation_quaternion.normalized()
    elif mode == "AXIS_ANGLE":
        angle, *axis = pose_bone.rotation_axis_angle
        axis = Vector(axis)
        rotation = Quaternion(axis.normalized() if axis.length > 0 else Vector((0.0, 1.0, 0.0)), angle)
    else:
        rotation = pose_bone.rotation_euler.to_matrix()
    return rotation.to_euler(order, compatible) if compatible is not None else rotation.to_euler(order)


@pytest.mark.parametrize("seed", range(4))
def test_reading_every_bone_at_once_gives_what_mathutils_gives_bone_by_bone(bare_human, seed):
    """``read_eulers`` (every bone in one pass over arrays) against mathutils bone by bone: every
    rotation mode, every Euler order to read in, channels far from rest (unnormalised and
    zero quaternions, angles past a turn, a zero axis, the gimbal lock), with and without
    angles to stay close to: within mathutils' single precision."""
    from welman_ik.blender.rig.channels import PoseArrays
    from welman_ik.blender.rig.reading import read_eulers
    from welman_ik.blender.rig.rotations import EULER_ORDERS, order_axes

    rng = np.random.default_rng(seed)
    pose_bones = bare_human.pose.bones
    modes, orders = ["QUATERNION", "AXIS_ANGLE", *sorted(EULER_ORDERS)], sorted(EULER_ORDERS)
    wanted = []
    for i, pb in enumerate(pose_bones):
        pb.rotation_mode = modes[i % len(modes)]
        pb.rotation_quaternion = (0.0, 0.0, 0.0, 0.0) if i == 3 else rng.normal(size=4) * rng.uniform(0.2, 3.0)
        pb.rotation_euler = (0.3, math.pi / 2, -0.7) if i % 5 == 0 else rng.uniform(-7.0, 7.0, 3)  # locked at 5s
        pb.rotation_axis_angle = (rng.uniform(-7.0, 7.0), *((0.0, 0.0, 0.0) if i == 1 else rng.normal(size=3)))
        wanted.append(pb.rotation_mode if i % 4 == 0 and pb.rotation_mode in EULER_ORDERS else orders[i % 6])
    wanted = np.array(wanted)
    rows, previous = np.arange(len(pose_bones)), rng.uniform(-7.0, 7.0, (len(pose_bones), 3))
    pose = PoseArrays(pose_bones)
    read = read_eulers(pose, rows, wanted, order_axes(wanted))
    near = read_eulers(pose, rows, wanted, order_axes(wanted), previous)
    for i, pb in enumerate(pose_bones):
        np.testing.assert_allclose(read[i], _mathutils_euler(pb, wanted[i], None), atol=1e-5, err_msg=pb.name)
        np.testing.assert_allclose(near[i], _mathutils_euler(pb, wanted[i], Euler(previous[i].tolist(), wanted[i])),
                                   atol=1e-5, err_msg=pb.name)
        if pb.rotation_mode == wanted[i]:  # the channels themselves, exactly
            assert tuple(read[i]) == tuple(pb.rotation_euler)


@pytest.mark.parametrize("path", ["turning", "tumbling", "locked"])
def test_a_clip_read_at_once_picks_each_frame_as_frame_by_frame_bit_for_bit(path, monkeypatch):
    """``closest_in_order`` (each frame's Euler angles closest to the frame's before, every frame
    at once) gives what ``closest_euler`` frame after frame gives, to the bit, without going
    frame by frame itself: a turning path whose angles wind through several whole turns, a
    tumbling one (a random rotation every frame, no frame near its before) and one through the
    gimbal lock, where the nearer of the two decompositions changes."""
    from welman_ik.blender.rig import rotations
    from welman_ik.blender.rig.rotations import (
        closest_euler,
        closest_in_order,
        euler_pairs,
        euler_quaternions,
        order_axes,
        quaternion_matrices,
    )

    rng = np.random.default_rng(7)
    frames, bones = 300, 6
    axes = np.tile(order_axes(np.array(["XYZ", "ZXY", "YZX", "XZY", "ZYX", "YXZ"])), (frames, 1))
    t = np.linspace(0.0, 1.0, frames)[:, None, None]
    if path == "turning":
        angles = rng.uniform(-3.0, 3.0, (1, bones, 3)) + t * rng.uniform(-25.0, 25.0, (1, bones, 3))
    elif path == "tumbling":
        angles = rng.uniform(-np.pi, np.pi, (frames, bones, 3))
    else:
        angles = np.broadcast_to(np.array([0.4, 0.0, -0.3]) + t * np.array([2.0, 0.0, 1.5]), (frames, bones, 3)).copy()
        angles[..., 1] = np.pi / 2 + 0.3 * np.sin(np.linspace(0.0, 20.0, frames))[:, None]
    matrices = quaternion_matrices(euler_quaternions(angles.reshape(-1, 3), axes))
    both = euler_pairs(matrices, axes).reshape(2, frames, bones, 3)
    previous = rng.uniform(-7.0, 7.0, (bones, 3))
    expected, near = np.empty((frames, bones, 3)), previous
    for frame in range(frames):
        near = expected[frame] = closest_euler(both[:, frame], near)
    shapes = []  # of each ``closest_euler`` call's decompositions: whole chunks, not one frame (its loop)

    def counted(pairs, before):
        shapes.append(pairs.shape)
        return closest_euler(pairs, before)

    monkeypatch.setattr(rotations, "closest_euler", counted)
    assert np.array_equal(closest_in_order(both, previous), expected)
    assert shapes and all(shape == both.shape for shape in shapes), shapes
    assert np.abs(np.diff(expected, axis=0)).max() < (np.pi if path != "tumbling" else np.inf)


def test_ends_read_for_every_bone_at_once_are_bone_ends_bit_for_bit(bare_human):
    """``EndsReader`` (every pose bone's head and tail in two ``foreach_get`` calls, the asked
    bones picked out) reads exactly what ``bone_ends`` reads bone by bone, in any order and with
    a bone asked twice, on a posed rig moved, turned and scaled in the world; the points
    worked out from either reading are the same."""
    from welman_ik.blender.rig.evaluated import EndsReader, bone_ends, points_at

    model = RigModel(bare_human, ["hand.R"])
    model.write(moved_q(model, 3.0))
    bare_human.matrix_world = Matrix.LocRotScale(Vector((0.3, -1.2, 0.5)), Euler((0.2, -0.4, 1.1)),
                                                 Vector((1.5, 1.5, 1.5)))
    bpy.context.view_layer.update()
    names = list(reversed(model.bones))
    names.insert(3, names[0])
    read = EndsReader(bare_human)
    for bones in (names, names[:2], names[5:6]):
        ends, world = read(bones)
        expected_ends, expected_world = bone_ends(bare_human, bones)
        assert ends.shape == (len(bones), 6)
        assert ends.tolist() == [list(row) for row in expected_ends]
        assert world == expected_world
        anchors = np.linspace(0.0, 1.0, len(bones))
        assert np.array_equal(points_at([(ends, world)], anchors), points_at([(expected_ends, expected_world)], anchors))
    assert not np.allclose(read(names[:1])[0], read(names[1:2])[0])  # a real reading, bone by bone
