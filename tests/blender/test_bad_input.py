"""Bad input gets a clear message and changes nothing; real imported rigs just work."""

from __future__ import annotations

import addon_utils
import bpy
import numpy as np
import pytest
import scenes
from conftest import FIXTURES, channels, drag, pin, pin_errors, pins_state, world_point

from welman_ik.blender.rig.keyframes import action_fcurves


def _state(obj) -> tuple:
    """Everything a failed operator must leave alone: the pose, the pins, the animation."""
    keys = [
        (fc.data_path, fc.array_index, tuple(tuple(k.co) for k in fc.keyframe_points))
        for fc in action_fcurves(obj)
    ]
    action = obj.animation_data.action if obj.animation_data else None
    return channels(obj), pins_state(obj), action, keys


def _refused(phrase: str, call, *args, **kwargs) -> None:
    with pytest.raises(RuntimeError) as error:
        call(*args, **kwargs)
    assert phrase in str(error.value)


def _hand_target(obj) -> np.ndarray:
    return world_point(obj, "hand.R") + np.array([-0.05, -0.05, 0.05])


def test_active_object_is_a_mesh(human):
    target = _hand_target(human)
    before = _state(human)
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.mesh.primitive_cube_add()
    assert bpy.context.object.type == "MESH"
    _refused("not an armature", drag, "hand.R", target)
    assert _state(human) == before
    assert human.animation_data is None


def test_no_active_object(human):
    target = _hand_target(human)
    before = _state(human)
    bpy.context.view_layer.objects.active = None
    _refused("not an armature", drag, "hand.R", target)
    assert _state(human) == before
    assert human.animation_data is None


def test_unknown_bone(human):
    before = _state(human)
    _refused("Bone 'hand.X' does not exist", drag, "hand.X", (0.0, -0.3, 1.0))
    assert _state(human) == before
    assert human.animation_data is None


@pytest.mark.parametrize(("axis", "value", "message"), [(1, float("nan"), "not a number"),
                                                      (0, float("inf"), "from the armature"),
                                                      (2, 5000.0, "1000 times its size")],
                         ids=["nan", "infinite", "absurd"])
def test_target_not_finite(human, axis, value, message):
    target = _hand_target(human)
    target[axis] = value
    before = _state(human)
    _refused(message, drag, "hand.R", target)
    assert _state(human) == before
    assert human.animation_data is None


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e30, -3000.0], ids=["nan", "inf", "1e30", "far"])
def test_pin_location_absurd(human, value):
    """A pin whose location is not finite or absurdly far is refused before anything changes
    (the root was once keyed at 8.5e37 m)."""
    human.welman_ik.pins[0].location[0] = value
    before = repr(_state(human))  # NaN is not equal to itself
    _refused(f"The location of the pin on '{human.welman_ik.pins[0].bone}'", drag, "hand.R", _hand_target(human))
    assert repr(_state(human)) == before
    assert human.animation_data is None


def test_weight_zero_pin_does_not_count(human):
    """A weight-0 pin is informative: it never makes a solve unconverged."""
    far = human.welman_ik.pins.add()
    far.bone, far.weight = "hand.R", 0.0
    far.location = world_point(human, "hand.R") + np.array([0.0, 0.0, 0.5])  # conflicts with the drag
    human.welman_ik.pins[-1].enabled = True
    target = world_point(human, "forearm.R", 1.0) + np.array([0.0, -0.05, 0.0])
    assert drag("forearm.R", target) == {"FINISHED"}
    last = human.welman_ik.last_solve
    assert last.converged, last.message
    assert np.linalg.norm(world_point(human, "forearm.R") - target) <= 1e-4


def test_dragged_pinned_bone_with_nan_keeps_its_pin(human):
    """A pinned bone's pin moves with a drag of it; a refused drag leaves the pin in place."""
    target = world_point(human, "hand.L") + np.array([0.0, float("nan"), 0.0])
    before = _state(human)
    _refused("not a number", drag, "hand.L", target)
    assert _state(human) == before


def test_nothing_can_move(human):
    human.welman_ik.chain_length = 1
    pb = human.pose.bones["hand.R"]
    pb.lock_ik_x = pb.lock_ik_y = pb.lock_ik_z = True
    before = _state(human)
    _refused("Nothing can move bone 'hand.R'", drag, "hand.R", _hand_target(human))
    assert _state(human) == before
    assert human.animation_data is None


def test_pin_on_a_bone_that_is_gone(human):
    human.welman_ik.pins[2].bone = "gone.bone"
    before = _state(human)
    _refused("'gone.bone', which no longer exists", drag, "hand.R", _hand_target(human))
    assert _state(human) == before
    assert human.animation_data is None


def test_edit_mode(human):
    target = _hand_target(human)
    before = _state(human)
    bpy.ops.object.mode_set(mode="EDIT")
    _refused("Leave edit mode", drag, "hand.R", target)
    bpy.ops.object.mode_set(mode="POSE")
    assert _state(human) == before
    assert human.animation_data is None


def test_pin_with_nothing_selected(human):
    scenes.select(human, ())
    before = _state(human)
    _refused("Select one or more pose bones first", bpy.ops.welman_ik.pin)
    assert _state(human) == before


# -- a real motion-capture rig -------------------------------------------------------------

HAND = "mixamorig:RightHand"
TOES = ("mixamorig:LeftToeBase", "mixamorig:RightToeBase")


@pytest.fixture
def mixamo():
    """The Mixamo clip imported by Blender's BVH importer, in pose mode, both feet pinned."""
    scenes.empty_scene()
    addon_utils.enable("io_anim_bvh", default_set=True)
    assert bpy.ops.import_anim.bvh(filepath=str(FIXTURES / "mixamo_clip.bvh"), global_scale=0.01) == {"FINISHED"}
    obj = bpy.context.object
    assert obj.type == "ARMATURE" and len(obj.pose.bones) == 55
    bpy.ops.object.mode_set(mode="POSE")
    obj.welman_ik.solver = "SR_INVERSE"
    pin(obj, TOES)
    return obj


def test_mixamo_drag(mixamo):
    target = world_point(mixamo, HAND) + np.array([0.05, -0.06, 0.08])
    assert drag(HAND, target) == {"FINISHED"}
    assert np.linalg.norm(world_point(mixamo, HAND) - target) <= 1e-4
    errors = pin_errors(mixamo)
    assert set(errors) == set(TOES)
    assert max(errors.values()) <= 1e-4


def test_mixamo_end_joint_drag(mixamo):
    """A bone the importer made up a length for can be dragged like any other."""
    end = "mixamorig:HeadTop_End"
    target = world_point(mixamo, end) + np.array([0.04, -0.05, -0.03])
    assert drag(end, target) == {"FINISHED"}
    assert np.linalg.norm(world_point(mixamo, end) - target) <= 1e-4
    assert max(pin_errors(mixamo).values()) <= 1e-4


def test_mixamo_nan_drag_changes_nothing(mixamo):
    before = _state(mixamo)
    assert before[3]  # the clip's own keys are part of what must stay
    _refused("not a number", drag, HAND, (float("nan"), 0.0, 1.0))
    assert _state(mixamo) == before
