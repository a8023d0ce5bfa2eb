"""A bake's frames read at once (``bake.sampling.frames_at_once``: the action's F-curves
evaluated for a chunk of frames and read into the tree with a frame axis, nothing put on the
bones) give what sampling each frame on the bones gives: the same joint values, channels,
limits and ranges, on a mocap clip (Euler bones in their own orders, a moving root) and on a
keyed metarig in every rotation mode."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import import_clip, set_rotation_mode

from welman_ik.blender.bake.plan import BakePlan
from welman_ik.blender.bake.sampling import ClipSampler, frames_at_once
from welman_ik.blender.rig.channels import PoseSnapshot


def both_ways(obj, frames: list[int]) -> tuple[list, list]:
    """The samples of ``frames`` read at once and one by one (each on a fresh sampling)."""
    plan = BakePlan.make(bpy.context, obj, frames[0], frames[-1], 1, None, None, None)
    before = PoseSnapshot(obj)
    sampling = ClipSampler(plan)
    assert sampling.sampler.direct
    together = frames_at_once(sampling, frames)
    held = PoseSnapshot(obj).values
    before.restore(obj)
    ClipSampler(plan).at(frames[0])  # (the first frame builds the tree: on the bones, and no other)
    assert held == PoseSnapshot(obj).values
    before.restore(obj)
    alone = ClipSampler(plan)
    one_by_one = [alone.at(frame) for frame in frames]
    before.restore(obj)
    return together, one_by_one


def assert_same(together, one_by_one) -> None:
    assert [s.frame for s in together] == [s.frame for s in one_by_one]
    for a, b in zip(together, one_by_one):
        np.testing.assert_allclose(a.q0, b.q0, atol=2e-6, err_msg=f"frame {a.frame}")
        assert a.originals.keys() == b.originals.keys()
        for name in a.originals:
            assert a.originals[name].values == b.originals[name].values, (a.frame, name)
        np.testing.assert_array_equal(a.skeleton.lower, b.skeleton.lower)
        np.testing.assert_array_equal(a.skeleton.upper, b.skeleton.upper)
        assert (a.ranges is None) == (b.ranges is None)


def test_a_mocap_clip_reads_the_same_at_once():
    scenes.empty_scene()
    obj = import_clip("mixamo_clip.bvh", whole=True)
    feet = [pb.name for pb in obj.pose.bones if pb.name.endswith(("LeftFoot", "RightFoot"))]
    assert len(feet) == 2, feet
    for name in feet:
        scenes.pin_one(obj, name, "POSITION")
    scene = bpy.context.scene
    assert obj.pose.bones[feet[0]].rotation_mode not in {"QUATERNION", "XYZ"}
    together, one_by_one = both_ways(obj, list(range(scene.frame_start, scene.frame_start + 60)))
    assert_same(together, one_by_one)


@pytest.mark.parametrize("mode", ["QUATERNION", "ZXY", "AXIS_ANGLE"])
def test_a_keyed_rig_reads_the_same_at_once_in_every_mode(human, mode):
    set_rotation_mode(human, mode)
    path = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")
    scene = bpy.context.scene
    for frame, turn in ((1, 0.0), (11, 2.5), (21, -2.9)):  # past half a turn: the angles' branches
        scene.frame_set(frame)
        for name in ("thigh.L", "shin.L", "foot.L", "spine"):
            pb = human.pose.bones[name]
            if mode == "QUATERNION":
                pb.rotation_quaternion = (np.cos(turn / 2), np.sin(turn / 2), 0.0, 0.0)
            elif mode == "AXIS_ANGLE":
                pb.rotation_axis_angle = (turn, 1.0, 0.0, 0.0)
            else:
                pb.rotation_euler = (turn, 0.3, -0.2)
            pb.keyframe_insert(path, group=name)
        human.pose.bones["spine"].location = (0.0, 0.1 * turn, 0.0)
        human.pose.bones["spine"].keyframe_insert("location", group="spine")
    together, one_by_one = both_ways(human, list(range(1, 22)))
    assert_same(together, one_by_one)
