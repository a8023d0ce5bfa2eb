"""Every pin kind on the Rigify basic human, measured on the pose Blender evaluates."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import scenes
from conftest import drag, pin, pin_by_kind, pin_errors, rotation_angle, world_point
from mathutils import Quaternion

from welman_ik.blender.drag.session import DragSession
from welman_ik.blender.pins.goals import centre_of_mass
from welman_ik.blender.rig import keyframes
from welman_ik.core.goals.balance import convex_hull_2d

MM = 1e-3
DEG = math.radians(1.0)


def bone_rotation(obj, bone: str) -> Quaternion:
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones[bone].matrix).to_quaternion()


def axis_of(obj, bone: str, axis: str) -> np.ndarray:
    bpy.context.view_layer.update()
    m = np.array((obj.matrix_world @ obj.pose.bones[bone].matrix).to_3x3())
    index, sign = "XYZ".index(axis[-1]), (-1.0 if axis.startswith("-") else 1.0)
    return sign * m[:, index] / np.linalg.norm(m[:, index])


def facing_axis(obj, bone: str, direction) -> str:
    """The bone axis (e.g. '-Z') closest to the world ``direction``."""
    options = [s + a for a in "XYZ" for s in ("", "-")]
    return max(options, key=lambda a: float(axis_of(obj, bone, a) @ np.asarray(direction)))


def inside_polygon(corners: np.ndarray, point: np.ndarray, slack: float = 0.01 * MM) -> bool:
    """Whether ``point`` (x, y) lies inside the convex polygon of ``corners`` (k, 2), or
    at most ``slack`` outside it."""
    hull = corners[convex_hull_2d(corners)]
    edges = np.roll(hull, -1, axis=0) - hull
    to_point = point - hull
    cross = (edges[:, 0] * to_point[:, 1] - edges[:, 1] * to_point[:, 0]) / np.linalg.norm(edges, axis=1)
    return bool(np.all(cross >= -slack) or np.all(cross <= slack))


def squat(obj, depth: float = 0.25):
    pelvis = world_point(obj, "spine", 0.0)
    return drag("spine", pelvis - np.array([0.0, 0.0, depth]), anchor=0.0)


@pytest.mark.parametrize("depth", [0.15, 0.25])
@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE"])
def test_pose_pins_hold_the_feet_while_the_pelvis_squats(bare_human, solver, depth):
    """POSE pins on both feet, the pelvis dragged 15 or 25 cm down: every solver gets it
    there (the transpose stopped 224 mm short) with the feet held in place and turn."""
    obj = bare_human
    obj.welman_ik.solver = solver
    pin(obj, ["foot.L", "foot.R"], kind="POSE")
    before = {name: (world_point(obj, name), bone_rotation(obj, name)) for name in ("foot.L", "foot.R")}
    target = world_point(obj, "spine", 0.0) - np.array([0.0, 0.0, depth])
    assert squat(obj, depth) == {"FINISHED"}
    for name, (point, rotation) in before.items():
        assert np.linalg.norm(world_point(obj, name) - point) <= 1.0 * MM
        assert rotation_angle(bone_rotation(obj, name), rotation) <= math.radians(0.5)
    assert np.linalg.norm(world_point(obj, "spine", 0.0) - target) <= 1.0 * MM  # it did squat, all the way
    assert obj.welman_ik.last_solve.converged
    assert obj.welman_ik.last_solve.max_pin_error <= 1.0 * MM


def test_orientation_pin_holds_only_the_axes_ticked(bare_human):
    """Only the hand's Y axis ticked: the drag keeps Y where it was (0.01 degrees; measured
    0.00001) and turns X, which it does not hold, by 6.9 degrees."""
    obj = bare_human
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    pin(obj, ["hand.R"], kind="ORIENTATION", axes=(False, True, False))
    held, free = axis_of(obj, "hand.R", "Y"), axis_of(obj, "hand.R", "X")
    assert drag("hand.R", world_point(obj, "hand.R", 0.0) + np.array([0.1, -0.25, 0.2]), anchor=0.0) == {"FINISHED"}
    assert vector_angle(axis_of(obj, "hand.R", "Y"), held) <= 0.01 * DEG
    turned = vector_angle(axis_of(obj, "hand.R", "X"), free)
    assert turned > 3.0 * DEG, math.degrees(turned)
    assert obj.welman_ik.last_solve.converged


def vector_angle(a, b) -> float:
    """The angle [rad] between vectors ``a`` and ``b`` (exact at small angles, unlike arccos)."""
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), float(np.dot(a, b))))


def test_aim_keeps_the_head_looking_while_dragging(bare_human):
    obj = bare_human
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    axis = facing_axis(obj, "spine.006", (0.0, -1.0, 0.0))  # the head faces -Y
    pin(obj, ["spine.006"], kind="AIM", aim_axis=axis)
    aim = next(p for p in obj.welman_ik.pins if p.kind == "AIM")
    target = np.array(aim.location)
    hand = world_point(obj, "hand.R")
    for step in (np.array([0.1, -0.3, -0.4]), np.array([0.3, -0.5, -0.7])):
        assert drag("hand.R", hand + step) == {"FINISHED"}
        assert aim_error(obj, "spine.006", axis, target) <= 1.0 * DEG
        assert max(pin_errors(obj).values()) <= 0.1 * MM


def test_hands_together_meet_and_follow_the_drag(bare_human):
    obj = bare_human
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    scenes.select(obj, ["hand.L", "hand.R"])
    obj.data.bones.active = obj.data.bones["hand.R"]
    assert bpy.ops.welman_ik.pin(kind="TOGETHER") == {"FINISHED"}
    scenes.select(obj, ())
    together = next(p for p in obj.welman_ik.pins if p.kind == "TOGETHER")
    assert (together.bone, together.target_bone) == ("hand.L", "hand.R")
    chest = world_point(obj, "spine.003", 1.0)
    target = chest + np.array([0.0, -0.35, -0.15])
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand.R") - target) <= 1.0 * MM
    assert np.linalg.norm(world_point(obj, "hand.L") - world_point(obj, "hand.R")) <= 1.0 * MM
    assert max(pin_errors(obj).values()) <= 0.1 * MM


def test_line_plane_and_region(bare_human):
    obj = bare_human
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    pin(obj, ["hand.L"], kind="LINE")
    pin(obj, ["forearm.L"], kind="PLANE")
    pin(obj, ["spine.006"], kind="REGION", radius=0.03)
    pins = {p.kind: p for p in obj.welman_ik.pins}
    line, plane, region = pins["LINE"], pins["PLANE"], pins["REGION"]
    np.testing.assert_allclose(np.array(line.direction), axis_of(obj, "hand.L", "Y"), atol=1e-6)
    assert tuple(plane.direction) == (0.0, 0.0, 1.0) and region.radius == pytest.approx(0.03)
    assert drag("hand.R", world_point(obj, "hand.R") + np.array([0.1, -0.25, -0.3])) == {"FINISHED"}
    on_line = world_point(obj, "hand.L") - np.array(line.location)
    d = np.array(line.direction)
    assert np.linalg.norm(on_line - (on_line @ d) * d) <= 0.1 * MM
    assert abs((world_point(obj, "forearm.L") - np.array(plane.location)) @ np.array(plane.direction)) <= 0.1 * MM
    assert np.linalg.norm(world_point(obj, "spine.006") - np.array(region.location)) <= 0.03 + 0.1 * MM
    assert obj.welman_ik.last_solve.converged


def far_reach(obj):
    hand = world_point(obj, "hand.R")
    return drag("hand.R", hand + np.array([0.25, -0.95, -0.55]))


def support_polygon(obj) -> np.ndarray:
    return np.array([p.location for p in obj.welman_ik.pins if p.kind == "POSITION"])[:, :2]


def test_balance_keeps_the_centre_of_mass_over_the_feet_in_a_far_reach(bare_human):
    obj = bare_human
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R", "toe.L", "toe.R"])
    polygon = support_polygon(obj)
    assert inside_polygon(polygon, centre_of_mass(obj)[:2])

    # Without balance the reach carries the centre of mass out past the toes.
    scenes.select(obj, ())
    start = {pb.name: (tuple(pb.rotation_quaternion), tuple(pb.location)) for pb in obj.pose.bones}
    far_reach(obj)
    assert not inside_polygon(polygon, centre_of_mass(obj)[:2])
    for pb in obj.pose.bones:
        pb.rotation_quaternion, pb.location = start[pb.name]

    assert bpy.ops.welman_ik.pin(kind="BALANCE", use_support=True) == {"FINISHED"}
    balance = next(p for p in obj.welman_ik.pins if p.kind == "BALANCE")
    assert balance.bone == "" and balance.use_support
    assert far_reach(obj) == {"FINISHED"}
    assert inside_polygon(polygon, centre_of_mass(obj)[:2])
    assert max(pin_errors(obj).values()) <= 0.1 * MM


def test_balance_over_a_point(bare_human):
    obj = bare_human
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    assert bpy.ops.welman_ik.pin(kind="BALANCE") == {"FINISHED"}
    balance = next(p for p in obj.welman_ik.pins if p.kind == "BALANCE")
    over = np.array(balance.location)
    far_reach(obj)
    com = centre_of_mass(obj)
    assert np.linalg.norm(com[:2] - over[:2]) <= 1.0 * MM
    assert obj.welman_ik.last_solve.max_pin_error <= 1.0 * MM


def test_every_field_survives_save_and_reload(bare_human, tmp_path):
    obj = bare_human
    pin(obj, ["hand.L"], kind="ORIENTATION", axes=(True, False, True))
    pin(obj, ["forearm.L"], kind="PLANE")
    pin(obj, ["spine.006"], kind="AIM", aim_axis="-Z")
    pin(obj, ["hand.R"], kind="REGION", radius=0.07)
    scenes.select(obj, ["foot.L", "foot.R"])
    obj.data.bones.active = obj.data.bones["foot.R"]
    bpy.ops.welman_ik.pin(kind="TOGETHER", anchor=0.5)
    assert bpy.ops.welman_ik.pin(kind="BALANCE", use_support=False) == {"FINISHED"}
    obj.pose.bones["spine"].welman_ik_mass = 12.5
    fields = ("bone", "kind", "anchor", "location", "rotation", "axes", "direction", "radius", "aim_axis",
              "target_bone", "target_anchor", "use_support", "weight", "enabled")

    name = obj.name

    def state():
        o = bpy.data.objects[name]
        return [tuple(tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v
                      for v in (getattr(p, f) for f in fields)) for p in o.welman_ik.pins]

    before = state()
    assert len(before) == 6
    path = str(tmp_path / "kinds.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert state() == before
    assert bpy.data.objects[name].pose.bones["spine"].welman_ik_mass == pytest.approx(12.5)


def test_a_together_pin_on_a_missing_bone_is_refused(bare_human):
    obj = bare_human
    pin(obj, ["foot.L", "foot.R"])
    scenes.select(obj, ["hand.L", "hand.R"])
    obj.data.bones.active = obj.data.bones["hand.R"]
    bpy.ops.welman_ik.pin(kind="TOGETHER")
    scenes.select(obj, ())
    next(p for p in obj.welman_ik.pins if p.kind == "TOGETHER").target_bone = "no.such.bone"
    before = world_point(obj, "hand.R")
    with pytest.raises(RuntimeError, match="no.such.bone"):
        drag("hand.R", before + np.array([0.0, -0.2, 0.0]))
    assert np.array_equal(world_point(obj, "hand.R"), before)


def test_together_needs_two_bones(bare_human):
    obj = bare_human
    obj.data.bones.active = obj.data.bones["hand.R"]
    scenes.select(obj, ["hand.L"])  # hand.R stays active, but not selected
    with pytest.raises(RuntimeError, match="Together joins two bones"):
        bpy.ops.welman_ik.pin(kind="TOGETHER")
    assert len(obj.welman_ik.pins) == 0


def test_shortcut_toggles_a_pin_while_dragging_and_cancel_takes_it_back(bare_human):
    """Orientation (the head) and balance pinned by their shortcuts mid-drag: the hand then
    reaches its goal (0.1 mm) with the head held to 0.01 degrees (measured 0.00001); the same
    drag with balance alone turns the head (9.7 degrees), so the orientation pin is what held
    it. Cancel takes both pins back."""
    obj = bare_human
    pin(obj, ["foot.L", "foot.R"])
    before = [(p.bone, p.kind) for p in obj.welman_ik.pins]
    start = world_point(obj, "hand.R", 0.5)
    head = bone_rotation(obj, "spine.006")
    goal = start + np.array([0.15, 0.0, -0.3])
    turns = []
    for kinds in (("ORIENTATION", "BALANCE"), ("BALANCE",)):
        session = DragSession(obj, "hand.R", event_budget=None)
        session.move(start + np.array([0.0, -10.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        for kind in kinds:
            bone = "spine.006" if kind == "ORIENTATION" else ""
            assert f"pinned {kind.lower()}" in session.toggle_pin(bpy.context, kind, bone)
        pinned = [(p.bone, p.kind) for p in obj.welman_ik.pins][len(before):]
        assert pinned == [("spine.006" if k == "ORIENTATION" else "", k) for k in kinds]
        session.move(goal + np.array([0.0, -10.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        np.testing.assert_allclose(session.goal[[0, 2]], goal[[0, 2]], atol=1e-9)  # (the ray's closest point)
        assert np.linalg.norm(world_point(obj, "hand.R", 0.5) - session.goal) <= 0.1 * MM
        assert max(pin_errors(obj).values()) <= 0.1 * MM
        turns.append(quaternion_angle(bone_rotation(obj, "spine.006"), head))
        if "ORIENTATION" in kinds:
            assert "unpinned orientation" in session.toggle_pin(bpy.context, "ORIENTATION", "spine.006")
        session.cancel()
        assert [(p.bone, p.kind) for p in obj.welman_ik.pins] == before
    assert turns[0] <= 0.01 * DEG, math.degrees(turns[0])
    assert turns[1] > 1.0 * DEG, math.degrees(turns[1])


def aim_error(obj, bone: str, axis: str, target) -> float:
    """The angle [rad] between ``bone``'s ``axis`` and the way from its head to ``target``."""
    head = world_point(obj, bone, 0.0)
    way = (target - head) / np.linalg.norm(target - head)
    return float(np.arccos(np.clip(axis_of(obj, bone, axis) @ way, -1, 1)))


def assert_feet_and_head_held(obj, held, axis: str, target, frame: int) -> None:
    """The pose pins ``held`` (bone -> (point, rotation)) within 1 mm and 0.5 degrees, the
    head's aim within 1 degree, on ``frame``."""
    for name, (point, rotation) in held.items():
        assert np.linalg.norm(world_point(obj, name) - point) <= 1.0 * MM, frame
        assert rotation_angle(bone_rotation(obj, name), rotation) <= math.radians(0.5), frame
    assert aim_error(obj, "spine.006", axis, target) <= 1.0 * DEG, frame


def keys(obj) -> dict:
    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points]
            for fc in keyframes.action_fcurves(obj)}


def keyed_squat(obj, depth: float = 0.2):
    """Frame 1 the rest pose, frame 11 the pelvis ``depth`` lower (position pins on the feet
    only while it is made): a squat whose feet roll and slide between the keys."""
    scene = bpy.context.scene
    scene.frame_current = 1
    for pb in obj.pose.bones:
        pb.keyframe_insert("rotation_quaternion", group=pb.name)
        pb.keyframe_insert("location", group=pb.name)
    pin(obj, ["foot.L", "foot.R"])
    scene.frame_current = 11
    squat(obj, depth)
    for pb in obj.pose.bones:
        pb.keyframe_insert("rotation_quaternion", group=pb.name)
        pb.keyframe_insert("location", group=pb.name)
    bpy.ops.welman_ik.clear_pins()
    scene.frame_set(1)


def test_bake_holds_pose_and_aim_pins_on_every_frame(bare_human):
    obj = bare_human
    keyed_squat(obj)
    original = obj.animation_data.action
    source = keys(obj)
    pin(obj, ["foot.L", "foot.R"], kind="POSE")
    # Between the keys the source rolls the feet up to 122 degrees and slides them 65 mm, and
    # turns the head 5.8 degrees off its target.
    held = {p.bone: (np.array(p.location), Quaternion(p.rotation)) for p in obj.welman_ik.pins}
    axis = facing_axis(obj, "spine.006", (0.0, -1.0, 0.0))
    pin(obj, ["spine.006"], kind="AIM", aim_axis=axis)
    target = np.array(next(p for p in obj.welman_ik.pins if p.kind == "AIM").location)
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=11) == {"FINISHED"}
    baked = obj.animation_data.action
    assert baked is not original
    keyframes.assign_action(obj, original)
    assert keys(obj) == source  # the original action untouched
    keyframes.assign_action(obj, baked)
    for frame in range(1, 12):
        bpy.context.scene.frame_set(frame)
        assert_feet_and_head_held(obj, held, axis, target, frame)
    assert obj.welman_ik.last_solve.converged


PANEL_FIELDS = {  # kind -> the properties the pins panel shows for the active pin, in order
    "POSITION": ["kind", "anchor", "target_object", "location", "weight"],
    "ORIENTATION": ["kind", "target_object", "rotation", "axes", "weight"],
    "POSE": ["kind", "anchor", "target_object", "location", "rotation", "axes", "weight"],
    "LINE": ["kind", "anchor", "target_object", "location", "direction", "weight"],
    "PLANE": ["kind", "anchor", "target_object", "location", "direction", "weight"],
    "AIM": ["kind", "aim_axis", "target_object", "location", "weight"],
    "REGION": ["kind", "anchor", "target_object", "location", "radius", "weight"],
    "TOGETHER": ["kind", "anchor", "target_object", "target_bone", "target_anchor", "weight"],
    "BALANCE": ["kind", "use_support", "location", "direction", "welman_ik_mass"],  # (the active bone's mass)
}


@pytest.mark.parametrize("kind", list(PANEL_FIELDS))
def test_the_panel_edits_each_kind_fields(bare_human, kind):
    """The panel shows the fields the kind uses, and no other (a position pin has no radius,
    a region no direction)."""
    from test_range_ui import draw

    from welman_ik.blender.ui import panel

    obj = bare_human
    pin_by_kind(obj, kind)
    obj.welman_ik.active_pin_index = 0
    shown = [c[1] for c in draw(panel.WELMAN_IK_PT_pins) if c[0] == "prop"]
    assert shown == PANEL_FIELDS[kind]


def test_undo_gives_back_every_field(bare_human):
    obj = bare_human
    name = obj.name
    bpy.ops.ed.undo_push(message="start")
    pin(obj, ["spine.006"], kind="AIM", aim_axis="-Z")
    pin(obj, ["hand.R"], kind="REGION", radius=0.07)
    assert bpy.ops.welman_ik.pin(kind="BALANCE", use_support=False) == {"FINISHED"}
    bpy.ops.ed.undo_push(message="pinned")

    def state():
        return [(p.bone, p.kind, p.aim_axis, round(p.radius, 6), p.use_support, tuple(p.location))
                for p in bpy.data.objects[name].welman_ik.pins]

    pinned = state()
    aim, region, balance = bpy.data.objects[name].welman_ik.pins
    aim.aim_axis, region.radius, balance.use_support, balance.location = "X", 0.3, True, (1.0, 2.0, 3.0)
    bpy.ops.ed.undo_push(message="edited")
    assert state() != pinned
    bpy.ops.ed.undo()
    assert state() == pinned
    bpy.ops.ed.undo()
    assert state() == []


def test_motion_edit_holds_pose_and_aim_pins_through_its_window(bare_human):
    obj = bare_human
    keyed_squat(obj, depth=0.1)
    pin(obj, ["foot.L", "foot.R"], kind="POSE")
    held = {p.bone: (np.array(p.location), Quaternion(p.rotation)) for p in obj.welman_ik.pins}
    axis = facing_axis(obj, "spine.006", (0.0, -1.0, 0.0))
    pin(obj, ["spine.006"], kind="AIM", aim_axis=axis)
    target = np.array(next(p for p in obj.welman_ik.pins if p.kind == "AIM").location)
    scene = bpy.context.scene
    scene.frame_set(6)
    hand = world_point(obj, "hand.R")
    assert bpy.ops.welman_ik.edit_motion(bone="hand.R", target=tuple(hand + np.array([0.05, -0.1, 0.05])), frame=6,
                                         falloff=3) == {"FINISHED"}
    for frame in range(3, 10):
        scene.frame_set(frame)
        assert_feet_and_head_held(obj, held, axis, target, frame)


def test_the_mass_model_of_a_generated_rigify_rig_weighs_its_controls_once():
    from welman_ik.blender.pins.goals import massive_bones

    scenes.empty_scene()
    rig = scenes.generated_rigify()
    names, masses, _ = massive_bones(rig)
    assert masses.sum() == pytest.approx(1.0)
    assert not [n for n in names if n.startswith(("ORG-", "DEF-", "MCH-")) or "tweak" in n or "_ik" in n]
    assert {"thigh_fk.L", "shin_fk.R", "upper_arm_fk.L", "head"} <= set(names)
    thigh = masses[names.index("thigh_fk.L")]
    assert thigh == pytest.approx(0.1416, abs=1e-3)  # de Leva's thigh
    # Hiding bones in the viewport changes nothing.
    for pb in rig.pose.bones:
        if pb.name.startswith("upper_arm_fk"):
            (pb if "hide" in pb.bl_rna.properties else pb.bone).hide = True
    assert massive_bones(rig)[0] == names
    # Rigify's limbs on IK do not follow the FK controls the masses are on: refused, not missed.
    bpy.ops.welman_ik.pin(kind="BALANCE")  # (no bone needed)
    with pytest.raises(RuntimeError, match="IK_FK"):
        bpy.ops.welman_ik.drag(bone="hand_ik.L", target=tuple(world_point(rig, "hand_ik.L") + np.array([0, 0, 0.05])))


def test_bake_takes_a_balance_pin_with_a_frame_range_or_follow(bare_human):
    """A balance pin on frames 5-9, then on every frame: the baked centre of mass stays over
    its place within 0.1 mm on those frames (measured at most 0.0001 mm, then 0.0084); the
    squat alone moves it up to 1.6 mm off."""
    obj = bare_human
    keyed_squat(obj, 0.15)
    pin(obj, ["foot.L", "foot.R"])
    assert bpy.ops.welman_ik.pin(kind="BALANCE") == {"FINISHED"}
    balance = next(p for p in obj.welman_ik.pins if p.kind == "BALANCE")
    balance.frame_start, balance.frame_end = 5, 9
    obj.welman_ik.motion_falloff = 3
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=11) == {"FINISHED"}
    over = np.array(balance.location)
    for frame in range(5, 10):
        bpy.context.scene.frame_set(frame)
        assert np.linalg.norm(centre_of_mass(obj)[:2] - over[:2]) <= 0.1 * MM, frame
    balance.frame_start = balance.frame_end = 0
    balance.follow = True  # (a balance pin has no animated place of its own: it holds its location)
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=11) == {"FINISHED"}
    for frame in range(1, 12):  # in force on every frame now, over the same point
        bpy.context.scene.frame_set(frame)
        assert np.linalg.norm(centre_of_mass(obj)[:2] - over[:2]) <= 0.1 * MM, frame


def test_bake_refuses_a_support_balance_on_frames_without_support(bare_human):
    obj = bare_human
    keyed_squat(obj, 0.15)
    pin(obj, ["foot.L", "foot.R"])
    for p in obj.welman_ik.pins:
        p.frame_start, p.frame_end = 1, 5
    assert bpy.ops.welman_ik.pin(kind="BALANCE", use_support=True) == {"FINISHED"}
    action = obj.animation_data.action
    with pytest.raises(RuntimeError, match=r"frame\(s\) 6-11"):
        bpy.ops.welman_ik.bake(frame_start=1, frame_end=11)
    assert obj.animation_data.action is action


def test_confirm_right_after_a_pin_toggle_keeps_the_drag(bare_human):
    obj = bare_human
    pin(obj, ["foot.L", "foot.R"])
    session = DragSession(obj, "hand.R", event_budget=None)
    session.move(np.array([-1.0, -10.0, 3.0]), np.array([0.0, 1.0, 0.0]))  # out of reach, up
    session.toggle_pin(bpy.context, "ORIENTATION", "hand.L")
    moved = session.confirm(bpy.context)
    assert moved and not obj.welman_ik.last_solve.converged
    assert "out of reach" in obj.welman_ik.last_solve.message
    assert max(pin_errors(obj).values()) <= 0.1 * MM


def test_a_pin_weight_that_is_not_a_number_is_refused(bare_human):
    obj = bare_human
    pin(obj, ["foot.L"])
    pin(obj, ["spine.006"], kind="AIM")
    obj.welman_ik.pins[1].weight = float("nan")
    with pytest.raises(RuntimeError, match="weight of the aim pin on 'spine.006' is not a number"):
        drag("hand.R", world_point(obj, "hand.R") + np.array([0.0, -0.1, 0.0]))


KIND_PINS = {  # kind -> (bone, pin options): one pin of the kind besides the feet
    "POSITION": ("hand.L", {}), "ORIENTATION": ("hand.L", {}), "POSE": ("hand.L", {}), "LINE": ("hand.L", {}),
    "PLANE": ("forearm.L", {}), "AIM": ("spine.006", {}), "REGION": ("spine.006", {"radius": 0.25}),
    "BALANCE": ("spine", {}), "FLOOR": ("hand.L", {"anchor": 1.0}),
}
# The right hand 50 cm forward and 35 cm down: the body bends over the feet, carrying the left
# arm, the head and the centre of mass along. Measured without the kind's pin (its error,
# least over the four solvers): position 372 mm, orientation 40 degrees, pose both, line
# 221 mm, plane 88 mm, aim 7.8 degrees, region (25 cm) 49 mm, balance 97 mm, floor (a ceiling 5 cm
# over the left hand, which swings up 11-41 cm) 62 mm; with it every
# error is at most 0.0083 mm or 0.0035 degrees (the feet 0.0099 mm; on bpy 5.0 the transpose
# holds the aim to 0.020 degrees, within the tolerance it reports as met), and the hand
# reaches its target (0.01 mm). ``test_without_its_pin_each_kind_misses`` checks the former.
KIND_DRAG = (0.1, -0.5, -0.35)
KIND_MM, KIND_DEG = 0.02 * MM, 0.05 * DEG
REFUSED: set = set()  # (solver, kind) a solver refuses (a goal class's ``refused_by``): none today


def quaternion_angle(a, b) -> float:
    """The angle [rad] of the rotation between quaternions ``a`` and ``b`` (w, x, y, z), in
    double precision (``rotation_angle``'s arccos of a single-precision dot product cannot
    tell angles below about 0.04 degrees)."""
    a, b = (np.array(v, dtype=float) / np.linalg.norm(np.array(v, dtype=float)) for v in (a, b))
    w = a[0] * b[0] + a[1:] @ b[1:]  # conj(a) * b
    v = a[0] * b[1:] - b[0] * a[1:] - np.cross(a[1:], b[1:])
    return float(2.0 * np.arctan2(np.linalg.norm(v), abs(w)))


def kind_error(obj, p) -> tuple[float, float]:
    """A pin's own error on the evaluated pose, whether or not it is enabled: (distance [m],
    angle [rad]) by its kind's meaning (the point from its goal, the line or plane, outside
    the region; the centre of mass across from its place; the bone's turn; the aimed axis off
    the target)."""
    if p.kind == "BALANCE":
        return float(np.linalg.norm(centre_of_mass(obj)[:2] - np.array(p.location)[:2])), 0.0
    if p.kind == "AIM":
        return 0.0, aim_error(obj, p.bone, p.aim_axis, np.array(p.location))
    point, location = world_point(obj, p.bone, p.anchor), np.array(p.location)
    turn = quaternion_angle(bone_rotation(obj, p.bone), p.rotation)
    normal = np.array(p.direction) / np.linalg.norm(np.array(p.direction))
    off = point - location
    return {
        "POSITION": (float(np.linalg.norm(off)), 0.0),
        "ORIENTATION": (0.0, turn),
        "POSE": (float(np.linalg.norm(off)), turn),
        "LINE": (float(np.linalg.norm(off - (off @ normal) * normal)), 0.0),
        "PLANE": (abs(float(off @ normal)), 0.0),
        "REGION": (max(0.0, float(np.linalg.norm(off)) - p.radius), 0.0),
        "FLOOR": (max(0.0, -float(off @ normal)), 0.0),
    }[p.kind]


def pin_kind(obj, kind: str):
    bone, options = KIND_PINS[kind]
    pin(obj, [bone], kind=kind, **options)
    held = obj.welman_ik.pins[-1]
    if kind == "FLOOR":  # a ceiling 5 cm over the left hand (the plane's free side below): the bend swings it up
        held.location = world_point(obj, bone, held.anchor) + np.array([0.0, 0.0, 0.05])
        held.direction = (0.0, 0.0, -1.0)
    return held


@pytest.mark.parametrize("kind", list(KIND_PINS))
@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE"])
def test_every_kind_under_every_solver_holds_or_refuses(bare_human, solver, kind):
    """The feet pinned, one pin of each kind, the right hand dragged 50 cm forward and 35 cm
    down, which bends the body (``KIND_DRAG``): the pin's own error on the evaluated pose stays
    within 0.02 mm or 0.007 degrees, the feet within 0.02 mm, and the hand reaches its target
    within 0.1 mm; only the pairs in ``REFUSED`` may be refused, with the pose unchanged."""
    obj = bare_human
    obj.welman_ik.solver = solver
    obj.welman_ik.keep_balance = False  # (standing balanced, the body would not strain every kind)
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    held = pin_kind(obj, kind)
    before = {pb.name: tuple(pb.matrix_basis.col[i][j] for i in range(4) for j in range(4)) for pb in obj.pose.bones}
    target = world_point(obj, "hand.R") + np.array(KIND_DRAG)
    try:
        result = drag("hand.R", target)
    except RuntimeError:
        result = {"CANCELLED"}
    if (solver, kind) in REFUSED:
        assert result == {"CANCELLED"}
        after = {pb.name: tuple(pb.matrix_basis.col[i][j] for i in range(4) for j in range(4)) for pb in obj.pose.bones}
        assert after == before
        return
    assert result == {"FINISHED"}
    distance, angle = kind_error(obj, held)
    assert distance <= KIND_MM, distance
    assert angle <= KIND_DEG, math.degrees(angle)
    assert max(pin_errors(obj).values()) <= KIND_MM
    assert np.linalg.norm(world_point(obj, "hand.R") - target) <= 0.1 * MM
    last = obj.welman_ik.last_solve
    assert last.converged, last.message
    assert last.max_pin_error <= KIND_MM, last.message


@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE"])
def test_without_its_pin_each_kind_misses(bare_human, solver):
    """The drag of ``test_every_kind_under_every_solver_holds_or_refuses`` strains every
    kind: with a pin of each kind recorded but disabled, each one's error is at least ten
    times that test's tolerance (at least 48 mm or 7.8 degrees)."""
    obj = bare_human
    obj.welman_ik.solver = solver
    obj.welman_ik.keep_balance = False  # (standing balanced, the body would not strain every kind)
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    for kind in KIND_PINS:
        pin_kind(obj, kind)
    kinds = list(obj.welman_ik.pins)[4:]  # (read once all are added: adding moves the collection)
    for p in kinds:
        p.enabled = False
    assert drag("hand.R", world_point(obj, "hand.R") + np.array(KIND_DRAG)) == {"FINISHED"}
    for p in kinds:
        distance, angle = kind_error(obj, p)
        assert distance >= 10 * KIND_MM or angle >= 10 * KIND_DEG, (p.kind, distance, math.degrees(angle))
        assert distance >= 40 * MM or angle >= 7 * DEG, (p.kind, distance, math.degrees(angle))
