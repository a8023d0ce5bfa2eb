"""Pins on the world (``target_object``, ``target_bone``): a pin's place, orientation and
direction recorded in its target's space, and from then on held where the target has them,
in the drag (on the target as it is now) and on every frame of a bake (as Blender evaluates
the target there). Measured on the evaluated pose against the target's evaluated matrix."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import scenes
from conftest import world_point
from mathutils import Quaternion, Vector
from test_bake import _keys

from welman_ik.blender.rig.keyframes import action_fcurves
from welman_ik.blender.rig.targets import world_fields


def _rest_keys(obj, frame: int = 1) -> None:
    """Key every bone's rotation at rest: an action to bake over."""
    for pb in obj.pose.bones:
        pb.keyframe_insert("rotation_quaternion", frame=frame)


def _object_mode_then(obj, make):
    bpy.ops.object.mode_set(mode="OBJECT")
    made = make()
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    return made


def _cup(at, keyed: bool = True, name: str = "Cup"):
    """An Empty at ``at``; ``keyed``: keyed to move 60 cm (forward, in and down) and turn 90
    degrees about the vertical over frames 1 to 60."""
    scene = bpy.context.scene
    empty = bpy.data.objects.new(name, None)
    scene.collection.objects.link(empty)
    empty.location = tuple(at)
    if keyed:
        empty.keyframe_insert("location", frame=1)
        empty.keyframe_insert("rotation_euler", frame=1)
        empty.location = tuple(np.asarray(at) + [0.35, -0.45, -0.15])
        empty.rotation_euler = (0.0, 0.0, math.radians(90.0))
        empty.keyframe_insert("location", frame=60)
        empty.keyframe_insert("rotation_euler", frame=60)
    scene.frame_set(1)
    return empty


def _bone_turn(obj, bone: str):
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones[bone].matrix).to_quaternion()


def _angle(a, b) -> float:
    return math.degrees(a.rotation_difference(b).angle) % 360.0


def test_setting_a_target_records_the_pin_in_its_space_and_keeps_it_in_the_world(bare_human):
    obj = bare_human
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.R") + [0.1, 0.0, 0.0], keyed=False))
    cup.rotation_euler = (0.3, 0.2, 1.0)
    cup.scale = (2.0, 2.0, 2.0)
    bpy.context.view_layer.update()
    pin = scenes.pin_one(obj, "hand.R", "POSE")
    world = (np.array(pin.location), pin.rotation[:])
    pin.target_object = cup
    local = (cup.matrix_world.inverted() @ Vector(world[0]))
    assert np.allclose(pin.location, local, atol=1e-5)  # the record: in the cup's space
    now = world_fields(pin)
    assert np.allclose(now["location"], world[0], atol=1e-5)
    assert _angle(now["rotation"], Quaternion(world[1])) < 1e-3
    pin.target_object = None  # back in the world, where it was
    assert np.allclose(pin.location, world[0], atol=1e-5)


def test_a_hand_on_a_moving_prop_holds_on_every_baked_frame(bare_human):
    """An Empty keyed to move 60 cm and turn 90 degrees over 60 frames; hand.R pinned to it
    (pose), both feet pinned (pose); the bake: the hand within 1 mm and 1 degree of its
    recorded place on the Empty on every frame, the feet within 1 mm; the original action and
    the Empty's own are untouched."""
    obj = bare_human
    _rest_keys(obj)
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.R")))
    cup_keys = [tuple(k.co) for fc in action_fcurves(cup) for k in fc.keyframe_points]
    for foot in ("foot.L", "foot.R"):
        scenes.pin_one(obj, foot, "POSE")
    hand = scenes.pin_one(obj, "hand.R", "POSE")
    hand.target_object = cup
    original, original_keys = obj.animation_data.action, _keys(obj)
    feet = {(b, a): world_point(obj, b, a) for b in ("foot.L", "foot.R") for a in (0.0, 1.0)}
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=60) == {"FINISHED"}
    miss, turn, slide = [], [], []
    for frame in range(1, 61):
        bpy.context.scene.frame_set(frame)
        goal = world_fields(hand)  # the cup's evaluated matrix on the frame times the record
        miss.append(float(np.linalg.norm(world_point(obj, "hand.R", hand.anchor) - goal["location"])))
        turn.append(_angle(_bone_turn(obj, "hand.R"), goal["rotation"]))
        slide.append(max(float(np.linalg.norm(world_point(obj, b, a) - p)) for (b, a), p in feet.items()))
    assert max(miss) < 1e-3 and max(min(t, 360.0 - t) for t in turn) < 1.0 and max(slide) < 1e-3, (
        max(miss), max(turn), max(slide))
    assert obj.animation_data.action is not original
    obj.animation_data.action = original
    assert _keys(obj) == original_keys
    assert [tuple(k.co) for fc in action_fcurves(cup) for k in fc.keyframe_points] == cup_keys


def _partner(at, walk=(0.0, -1.0, 0.0)):
    """A second metarig standing at ``at``, its object keyed to walk ``walk`` over frames 1 to
    60 with its chest turning 25 degrees; returns it (the first rig active again after)."""
    first = bpy.context.object
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.object.armature_basic_human_metarig_add()
    partner = bpy.context.object
    partner.name = "Partner"
    partner.location = tuple(at)
    partner.keyframe_insert("location", frame=1)
    partner.location = tuple(np.asarray(at) + walk)
    partner.keyframe_insert("location", frame=60)
    chest = partner.pose.bones["spine.003"]
    chest.rotation_mode = "XYZ"
    chest.keyframe_insert("rotation_euler", frame=1)
    chest.rotation_euler = (0.0, math.radians(25.0), 0.0)
    chest.keyframe_insert("rotation_euler", frame=60)
    bpy.context.scene.frame_set(1)
    bpy.context.view_layer.objects.active = first
    for o in bpy.context.view_layer.objects:
        o.select_set(o == first)
    bpy.ops.object.mode_set(mode="POSE")
    return partner


def _partner_keys(partner) -> list:
    return [(fc.data_path, fc.array_index, tuple(k.co)) for fc in action_fcurves(partner)
            for k in fc.keyframe_points]


def test_a_hand_on_another_character_holds_on_every_baked_frame(bare_human):
    """A second metarig walks 1 m with its chest turning; the first rig's hand.L pinned
    (position) to the partner's upper_arm.R, the first rig's root free: the bake keeps the
    hand within 1 mm of its place on the partner on every frame; the partner's action is
    untouched."""
    obj = bare_human
    _rest_keys(obj)
    partner = _partner((1.05, 0.0, 0.0))
    partner_keys = _partner_keys(partner)
    hand = scenes.pin_one(obj, "hand.L", "POSITION")
    hand.target_object = partner
    hand.target_bone = "upper_arm.R"
    assert (hand.space_object, hand.space_bone) == (partner, "upper_arm.R")
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=60, move_root=True) == {"FINISHED"}
    miss = []
    for frame in range(1, 61):
        bpy.context.scene.frame_set(frame)
        goal = world_fields(hand)["location"]
        miss.append(float(np.linalg.norm(world_point(obj, "hand.L", hand.anchor) - goal)))
    assert max(miss) < 1e-3, max(miss)
    bpy.context.scene.frame_set(60)
    assert world_point(obj, "hand.L")[1] < -0.9  # the hand went the metre along with the partner
    assert _partner_keys(partner) == partner_keys and partner.animation_data.action.users == 1


def test_a_drag_holds_a_pin_where_its_target_is_now(bare_human):
    """The Empty a hand is pinned to moved 20 cm (not keyed); dragging the other hand brings
    the pinned hand to where the Empty has it now."""
    obj = bare_human
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.R"), keyed=False))
    hand = scenes.pin_one(obj, "hand.R", "POSITION")
    hand.target_object = cup
    cup.location = tuple(np.array(cup.location) + [0.1, -0.15, 0.05])
    bpy.context.view_layer.update()
    goal = world_fields(hand)["location"]
    assert np.linalg.norm(goal - world_point(obj, "hand.R")) > 0.15
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="hand.L", target=tuple(world_point(obj, "hand.L") + [0.0, -0.1, 0.1]))
    assert np.linalg.norm(world_point(obj, "hand.R", hand.anchor) - goal) < 1e-3
    assert np.allclose(hand.location, (0.0, 0.0, 0.0), atol=1e-5)  # the record is unchanged


def test_a_together_pin_meets_another_armatures_bone(bare_human):
    obj = bare_human
    partner = _partner((1.05, 0.0, 0.0), walk=(0.0, -0.3, 0.0))
    scenes.select(obj, ["hand.L", "hand.R"])
    obj.data.bones.active = obj.data.bones["hand.R"]
    with scenes.quiet():
        assert bpy.ops.welman_ik.pin(kind="TOGETHER") == {"FINISHED"}
    pin = next(p for p in obj.welman_ik.pins if p.kind == "TOGETHER")
    pin.target_object = partner
    pin.target_bone = "hand.R"
    pin.target_anchor = 1.0
    bpy.context.scene.frame_set(30)
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="spine.006", target=tuple(world_point(obj, "spine.006")))
    partner_hand = world_point(partner, "hand.R")
    assert np.linalg.norm(world_point(obj, pin.bone, pin.anchor) - partner_hand) < 1e-3


def test_a_deleted_target_disables_its_pin_and_the_bake_goes_on(bare_human, capfd):
    """The Empty a hand follows deleted: the bake says so, keeps the pin (disabled) and holds
    the other pins; the same for a partner's bone renamed, in a drag."""
    obj = bare_human
    _rest_keys(obj)
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.R")))
    scenes.pin_one(obj, "foot.L", "POSE")
    hand = scenes.pin_one(obj, "hand.R", "POSE")
    hand.target_object = cup
    bpy.data.objects.remove(cup)
    assert hand.target_object is None
    capfd.readouterr()
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=5) == {"FINISHED"}
    said = capfd.readouterr().out
    pins = {p.bone: p for p in obj.welman_ik.pins}  # (looked up again: a pin added moves the others)
    assert not pins["hand.R"].enabled and pins["foot.L"].enabled and len(pins) == 2
    assert "target 'Cup' was deleted" in said


def test_a_renamed_target_bone_disables_its_pin_in_a_drag(bare_human, capfd):
    obj = bare_human
    partner = _partner((1.05, 0.0, 0.0))
    hand = scenes.pin_one(obj, "hand.L", "POSITION")
    hand.target_object, hand.target_bone = partner, "upper_arm.R"
    partner.data.bones["upper_arm.R"].name = "arm_upper.R"
    before = world_point(obj, "hand.R")
    capfd.readouterr()
    assert bpy.ops.welman_ik.drag(bone="hand.R", target=tuple(before + [0.0, -0.1, 0.0])) == {"FINISHED"}
    said = capfd.readouterr().out
    assert not hand.enabled
    assert "bone 'upper_arm.R' of its target 'Partner' is gone" in said
    assert np.linalg.norm(world_point(obj, "hand.R") - before - [0.0, -0.1, 0.0]) < 1e-3


@pytest.mark.parametrize("how", ["parented", "pinned back"])
def test_a_cycle_is_refused_and_nothing_changes(bare_human, how):
    """A target that moves with this armature's pose (parented to its hand) or follows it back
    (the partner's pin on this armature) is refused, the pose unchanged."""
    obj = bare_human
    if how == "parented":
        cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.L"), keyed=False))
        cup.parent, cup.parent_type, cup.parent_bone = obj, "BONE", "hand.R"
        target, bone = cup, ""
    else:
        target, bone = _partner((1.05, 0.0, 0.0)), "upper_arm.R"
        back = target.welman_ik.pins.add()
        back.bone, back.kind, back.target_object, back.target_bone = "hand.R", "POSITION", obj, "hand.L"
    hand = scenes.pin_one(obj, "hand.L", "POSITION")
    hand.target_object, hand.target_bone = target, bone
    before = world_point(obj, "hand.R")
    with pytest.raises(RuntimeError, match="cannot follow its target"):
        bpy.ops.welman_ik.drag(bone="hand.R", target=tuple(before + [0.0, -0.1, 0.0]))
    assert np.allclose(world_point(obj, "hand.R"), before)


def test_a_floor_on_a_slope_follows_its_object(bare_human):
    """A floor pin given a tilted Empty as its target lies on the Empty's XY plane: the pelvis
    dragged down keeps the toes on or above that slope."""
    obj = bare_human
    slope = _object_mode_then(obj, lambda: _cup((0.0, 0.0, 0.03), keyed=False, name="Slope"))
    slope.rotation_euler = (math.radians(10.0), 0.0, 0.0)
    bpy.context.view_layer.update()
    for toe in ("toe.L", "toe.R"):
        scenes.pin_one(obj, toe, "FLOOR")  # (its head and tail)
    for pin in obj.welman_ik.pins:
        pin.target_object = slope
    pin = obj.welman_ik.pins[0]
    assert np.allclose(pin.location, (0.0, 0.0, 0.0)) and np.allclose(pin.direction, (0.0, 0.0, 1.0))
    normal = np.array(slope.matrix_world.to_3x3() @ Vector((0.0, 0.0, 1.0)))
    origin = np.array(slope.matrix_world.translation)
    hips = world_point(obj, "spine", 0.0)
    for step in range(1, 9):
        with scenes.quiet():
            bpy.ops.welman_ik.drag(bone="spine", anchor=0.0, target=tuple(hips - [0.0, 0.0, 0.05 * step]))
    heights = [float((world_point(obj, toe) - origin) @ normal) for toe in ("toe.L", "toe.R")]
    assert min(heights) >= -1e-4, heights


def test_a_target_survives_save_and_reopen(bare_human, tmp_path):
    obj = bare_human
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.R")))
    hand = scenes.pin_one(obj, "hand.R", "POSE")
    hand.target_object = cup
    record, name = tuple(hand.location), obj.name
    path = tmp_path / "held.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects[name]
    hand = next(p for p in obj.welman_ik.pins if p.bone == "hand.R")
    assert hand.target_object == bpy.data.objects["Cup"] and tuple(hand.location) == record
    bpy.context.scene.frame_set(30)
    assert np.allclose(world_fields(hand)["location"], bpy.data.objects["Cup"].matrix_world.translation, atol=1e-5)


def test_a_target_linked_from_a_library_is_followed(bare_human, tmp_path):
    """An Empty linked from another file (read-only) is a target like a local one."""
    obj = bare_human
    library = tmp_path / "props.blend"
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.R") + [0.05, -0.1, 0.0], keyed=False))
    bpy.data.libraries.write(str(library), {cup})
    bpy.data.objects.remove(cup)
    with bpy.data.libraries.load(str(library), link=True) as (_, into):
        into.objects = ["Cup"]
    linked = into.objects[0]
    bpy.context.scene.collection.objects.link(linked)
    bpy.context.view_layer.update()
    assert linked.library is not None
    hand = scenes.pin_one(obj, "hand.R", "POSITION")
    hand.target_object = linked
    goal = world_fields(hand)["location"]
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="hand.L", target=tuple(world_point(obj, "hand.L")))
    assert np.linalg.norm(world_point(obj, "hand.R", hand.anchor) - goal) < 1e-3


def _axis(obj, bone: str, index: int) -> np.ndarray:
    bpy.context.view_layer.update()
    matrix = obj.matrix_world @ obj.pose.bones[bone].matrix
    return np.array(matrix.col[index].to_3d().normalized())


@pytest.mark.parametrize("kind", ["ORIENTATION", "LINE", "PLANE", "AIM", "REGION"])
def test_every_kind_with_a_place_follows_its_target(bare_human, kind):
    """hand.L pinned by ``kind`` to an Empty, the Empty then moved 12 cm and turned 30
    degrees: a drag of the other hand brings hand.L to what the pin asks where the Empty is
    now (its line, plane, aim, region or orientation carried with it), measured on the
    evaluated pose."""
    obj = bare_human
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.L") + [0.0, 0.0, 0.02], keyed=False))
    pin = scenes.pin_one(obj, "hand.L", kind)
    pin.target_object = cup
    cup.location = tuple(np.array(cup.location) + [-0.04, -0.1, 0.05])
    cup.rotation_euler = (0.0, math.radians(10.0), math.radians(30.0))
    bpy.context.view_layer.update()
    goal = world_fields(pin)
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="hand.R", target=tuple(world_point(obj, "hand.R") + [0.0, -0.05, 0.0]))
    point = world_point(obj, "hand.L", pin.anchor)
    location, direction = goal["location"], goal["direction"] / np.linalg.norm(goal["direction"])
    if kind == "ORIENTATION":
        turn = _angle(_bone_turn(obj, "hand.L"), goal["rotation"])
        assert min(turn, 360.0 - turn) < 0.1
    elif kind == "LINE":
        off = point - location
        assert np.linalg.norm(off - (off @ direction) * direction) < 1e-3
    elif kind == "PLANE":
        assert abs((point - location) @ direction) < 1e-3
    elif kind == "AIM":
        head = world_point(obj, "hand.L", 0.0)
        way = (location - head) / np.linalg.norm(location - head)
        assert math.degrees(math.acos(min(1.0, float(way @ _axis(obj, "hand.L", 1))))) < 0.1
    else:
        assert np.linalg.norm(point - location) <= pin.radius + 1e-3
    assert obj.welman_ik.last_solve.converged


def test_a_pin_unpinned_during_a_drag_comes_back_on_its_target_after_cancel(bare_human):
    """The drag's P key unpins a hand that follows an Empty; cancel puts the pin back exactly,
    still on the Empty (not recorded again)."""
    from welman_ik.blender.drag.session import DragSession
    from welman_ik.blender.pins.records import fields_of

    obj = bare_human
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand.R"), keyed=False))
    hand = scenes.pin_one(obj, "hand.R", "POSITION")
    hand.target_object = cup
    cup.location = tuple(np.array(cup.location) + [0.0, -0.1, 0.0])  # so a record again would differ
    bpy.context.view_layer.update()
    before = fields_of(hand)
    session = DragSession(obj, "hand.L", event_budget=None)
    assert "unpinned position hand.R" in session.toggle_pin(bpy.context, "POSITION", "hand.R")
    assert len(obj.welman_ik.pins) == 0
    session.cancel()
    assert fields_of(obj.welman_ik.pins[0]) == before
    assert obj.welman_ik.pins[0].target_object == cup


def test_a_rigify_hand_control_follows_a_moving_prop():
    """On a generated Rigify rig the IK hand control, pinned (pose) to a moving Empty with the
    IK feet pinned, goes with it by its own location (a control that floats free): within
    1 mm and 1 degree on every baked frame, the feet within 1 mm."""
    scenes.empty_scene()
    obj = scenes.generated_rigify()
    for pb in obj.pose.bones:
        pb.keyframe_insert("rotation_quaternion" if pb.rotation_mode == "QUATERNION" else "rotation_euler", frame=1)
    cup = _object_mode_then(obj, lambda: _cup(world_point(obj, "hand_ik.R")))
    for foot in ("foot_ik.L", "foot_ik.R"):
        scenes.pin_one(obj, foot, "POSE")
    scenes.pin_one(obj, "hand_ik.R", "POSE").target_object = cup
    feet = {b: world_point(obj, b) for b in ("foot_ik.L", "foot_ik.R")}
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=60, step=3) == {"FINISHED"}
    hand = obj.welman_ik.pins[-1]
    for frame in range(1, 61, 3):
        bpy.context.scene.frame_set(frame)
        goal = world_fields(hand)
        assert np.linalg.norm(world_point(obj, "hand_ik.R", hand.anchor) - goal["location"]) < 1e-3, frame
        turn = _angle(_bone_turn(obj, "hand_ik.R"), goal["rotation"])
        assert min(turn, 360.0 - turn) < 1.0, frame
        assert max(float(np.linalg.norm(world_point(obj, b) - p)) for b, p in feet.items()) < 1e-3, frame
    # The arm follows its IK control in the evaluated pose: the deforming hand is at the cup too.
    assert np.linalg.norm(world_point(obj, "DEF-hand.R", 0.0) - world_point(obj, "hand_ik.R", 0.0)) < 1e-3
