"""Every pin kind on the Rigify basic human, measured on the pose Blender evaluates."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import scenes
from conftest import drag, pin, pin_errors, rotation_angle, world_point
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
    obj = bare_human
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    pin(obj, ["hand.R"], kind="ORIENTATION", axes=(False, True, False))
    held = axis_of(obj, "hand.R", "Y")
    assert drag("hand.R", world_point(obj, "hand.R", 0.0) + np.array([0.1, -0.25, 0.2]), anchor=0.0) == {"FINISHED"}
    assert float(np.arccos(np.clip(axis_of(obj, "hand.R", "Y") @ held, -1, 1))) <= 0.5 * DEG
    assert obj.welman_ik.last_solve.converged


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
    obj = bare_human
    pin(obj, ["foot.L", "foot.R"])
    before = [(p.bone, p.kind) for p in obj.welman_ik.pins]
    session = DragSession(obj, "hand.R")
    start = world_point(obj, "hand.R", 0.5)
    session.move(start + np.array([0.0, -10.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    assert "pinned orientation" in session.toggle_pin(bpy.context, "ORIENTATION", "spine.006")
    assert "pinned balance" in session.toggle_pin(bpy.context, "BALANCE", "")
    assert [(p.bone, p.kind) for p in obj.welman_ik.pins][-2:] == [("spine.006", "ORIENTATION"), ("", "BALANCE")]
    head = bone_rotation(obj, "spine.006")
    goal = start + np.array([0.15, 0.0, -0.3])
    session.move(goal + np.array([0.0, -10.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    assert rotation_angle(bone_rotation(obj, "spine.006"), head) <= 0.5 * DEG
    assert "unpinned orientation" in session.toggle_pin(bpy.context, "ORIENTATION", "spine.006")
    session.cancel()
    assert [(p.bone, p.kind) for p in obj.welman_ik.pins] == before


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


@pytest.mark.parametrize("kind", ["POSITION", "ORIENTATION", "POSE", "LINE", "PLANE", "AIM", "REGION", "TOGETHER",
                                  "BALANCE"])
def test_the_panel_edits_each_kind_fields(bare_human, kind):
    from test_range_ui import draw

    from welman_ik.blender.ui import panel

    obj = bare_human
    if kind == "TOGETHER":
        scenes.select(obj, ["hand.L", "hand.R"])
        obj.data.bones.active = obj.data.bones["hand.R"]
        assert bpy.ops.welman_ik.pin(kind=kind) == {"FINISHED"}
    elif kind == "BALANCE":
        assert bpy.ops.welman_ik.pin(kind=kind) == {"FINISHED"}
    else:
        pin(obj, ["hand.L"], kind=kind)
    obj.welman_ik.active_pin_index = 0
    shown = [c[1] for c in draw(panel.WELMAN_IK_PT_pins) if c[0] == "prop"]
    assert "kind" in shown
    assert set(panel.PIN_FIELDS[kind]) <= set(shown)


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
        assert np.linalg.norm(centre_of_mass(obj)[:2] - over[:2]) <= 1.0 * MM, frame
    balance.frame_start = balance.frame_end = 0
    balance.follow = True  # (a balance pin has no animated place of its own: it holds its location)
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=11) == {"FINISHED"}
    for frame in range(1, 12):  # in force on every frame now, over the same point
        bpy.context.scene.frame_set(frame)
        assert np.linalg.norm(centre_of_mass(obj)[:2] - over[:2]) <= 1.0 * MM, frame


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
    "PLANE": ("forearm.L", {}), "AIM": ("spine.006", {}), "REGION": ("spine.006", {"radius": 0.03}),
    "BALANCE": ("spine", {}),
}


@pytest.mark.parametrize("kind", list(KIND_PINS))
@pytest.mark.parametrize("solver", ["SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE"])
def test_every_kind_under_every_solver_holds_or_refuses(bare_human, solver, kind):
    """The feet pinned, one pin of each kind, the right hand dragged 15 cm forward and up:
    the drag finishes with every goal met on the evaluated pose (``last_solve``) and the hand
    within 10 mm, or is refused with the pose unchanged."""
    obj = bare_human
    obj.welman_ik.solver = solver
    pin(obj, ["foot.L", "foot.R", "heel.02.L", "heel.02.R"])
    bone, options = KIND_PINS[kind]
    pin(obj, [bone], kind=kind, **options)
    before = {pb.name: tuple(pb.matrix_basis.col[i][j] for i in range(4) for j in range(4)) for pb in obj.pose.bones}
    target = world_point(obj, "hand.R") + np.array([0.0, -0.1, 0.1])
    result = drag("hand.R", target)
    if result == {"CANCELLED"}:
        after = {pb.name: tuple(pb.matrix_basis.col[i][j] for i in range(4) for j in range(4)) for pb in obj.pose.bones}
        assert after == before
        return
    last = obj.welman_ik.last_solve
    assert result == {"FINISHED"}
    assert last.converged, last.message
    assert last.max_pin_error <= 1.0 * MM, last.message
    assert np.linalg.norm(world_point(obj, "hand.R") - target) <= 10.0 * MM
