"""Real rigs: a generated Rigify human, bones with constraints and non-default inheritance.

Every case either lands within tolerance in the pose Blender evaluates, with `last_solve`
saying so, or is refused before anything changes. Nothing is measured on the solver's
model: the errors come from the evaluated pose bones.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import channels, pin, pin_errors, world_point

from welman_ik.blender.drag.session import DragSession

TOLERANCE = 1e-4  # [m] in the evaluated pose


@pytest.fixture
def rigify():
    """A Rigify human generated from the basic human metarig, in pose mode, IK feet pinned."""
    scenes.empty_scene()
    return scenes.generated_rigify(pins=("foot_ik.L", "foot_ik.R"))


def drag(bone: str, target, anchor: float = 1.0):
    return bpy.ops.welman_ik.drag(bone=bone, target=tuple(float(v) for v in target), anchor=anchor)


def check_landed(obj, bone: str, target, anchor: float) -> None:
    """The dragged point and every pin within tolerance in the evaluated pose, and the
    figures `last_solve` reports are those of the evaluated pose."""
    reached = np.linalg.norm(world_point(obj, bone, anchor) - target)
    pins = max(pin_errors(obj).values(), default=0.0)
    last = obj.welman_ik.last_solve
    assert reached <= TOLERANCE, (bone, reached, last.message)
    assert pins <= TOLERANCE, (bone, pins, last.message)
    assert last.converged and last.message == "", (last.message, last.drag_error, last.max_pin_error)
    assert last.drag_error == pytest.approx(reached, abs=2e-6)
    assert last.max_pin_error == pytest.approx(pins, abs=2e-6)


@pytest.mark.parametrize(("bone", "offset", "anchor"), [
    ("hand_ik.L", (0.1, -0.15, 0.1), 0.0),     # IK control: translates, the arm follows by its IK
    ("hand_ik.R", (-0.05, -0.2, -0.2), 0.0),
    ("torso", (0.0, 0.05, -0.15), 0.0),        # the torso squats; the IK feet stay pinned
    ("chest", (0.0, -0.08, 0.0), 1.0),
    ("hips", (0.03, 0.0, 0.0), 1.0),
    ("head", (0.04, -0.03, 0.0), 1.0),
    ("hand_fk.L", (0.0, -0.1, 0.1), 1.0),      # FK controls rotate their chain
    ("forearm_fk.R", (0.0, -0.1, 0.05), 1.0),
    ("foot_ik.L", (0.0, -0.1, 0.05), 0.0),     # a pinned bone dragged: its pin follows it
])
def test_rigify_controls_land(rigify, bone, offset, anchor):
    target = world_point(rigify, bone, anchor) + np.array(offset)
    assert drag(bone, target, anchor) == {"FINISHED"}
    check_landed(rigify, bone, target, anchor)


@pytest.mark.parametrize("solver", ["CCD", "SR_INVERSE", "QUASI_NEWTON", "JACOBIAN_TRANSPOSE"])
def test_rigify_far_reach_lands_under_every_solver(rigify, solver):
    """The FK hand reaching far across and up, past the arm's length, the feet held: the trunk
    bends through Rigify's spine controls, whose turn reaches the arm only in part (a Copy
    Transforms of the chest at half influence), so the evaluated hand misses where the model's
    holds and the drag corrects. Under every solver it lands in the evaluated pose (CCD's
    correcting rounds are small least-norm steps from the pose it found)."""
    rigify.welman_ik.solver = solver
    target = world_point(rigify, "hand_fk.R") + np.array([0.3, -0.6, 0.4])
    assert drag("hand_fk.R", target) == {"FINISHED"}
    check_landed(rigify, "hand_fk.R", target, 1.0)


def test_rigify_fk_arm_in_fk_mode(rigify):
    """With the arm switched to FK (Rigify's IK_FK property), the FK hand control drags the
    arm and the deforming hand follows it; the IK chain bones are then refused as before."""
    rigify.pose.bones["upper_arm_parent.L"]["IK_FK"] = 1.0
    rigify.update_tag()
    bpy.context.view_layer.update()
    target = world_point(rigify, "hand_fk.L") + np.array([0.05, -0.1, 0.1])
    assert drag("hand_fk.L", target) == {"FINISHED"}
    check_landed(rigify, "hand_fk.L", target, 1.0)
    deforming = world_point(rigify, "DEF-hand.L")
    assert np.linalg.norm(deforming - world_point(rigify, "hand_fk.L")) <= 1e-4


def test_rigify_ik_hand_translates(rigify):
    """Dragging an IK hand control moves its location channels, as Blender's grab does."""
    target = world_point(rigify, "hand_ik.L", 0.0) + np.array([0.1, -0.1, 0.1])
    drag("hand_ik.L", target, 0.0)
    assert rigify.pose.bones["hand_ik.L"].location.length > 0.1
    assert rigify.pose.bones["root"].location.length == 0.0


def test_rigify_interactive_drag_of_torso(rigify):
    """The modal drag of the torso, event by event: the figures are evaluated at every event,
    and after confirm the torso is where the mouse put it with the feet held."""
    session = DragSession(rigify, "torso", 0.0)
    start = world_point(rigify, "torso", 0.0)
    for step in range(1, 11):
        goal = start + np.array([0.0, 0.0, -0.015 * step])
        session.move(goal + np.array([0.0, -5.0, 0.0]), (0.0, 1.0, 0.0))  # a ray through the goal
        assert session.figures.max_pin_error <= TOLERANCE
    session.confirm(bpy.context)
    check_landed(rigify, "torso", session.goal, 0.0)


@pytest.mark.parametrize("bone", ["DEF-hand.L", "ORG-forearm.L", "MCH-forearm_ik.L", "upper_arm_ik.L"])
def test_rigify_driven_bones_refused(rigify, bone):
    """Bones driven by the rig's constraints cannot be dragged: refused with the bone, what
    drives it and a control to drag instead; nothing changes."""
    before = channels(rigify)
    target = world_point(rigify, bone) + np.array([0.0, -0.1, 0.0])
    with pytest.raises(RuntimeError) as error:
        drag(bone, target)
    text = str(error.value)
    assert bone in text and "instead" in text
    assert channels(rigify) == before
    assert rigify.animation_data is None or rigify.animation_data.action is None


def test_rigify_pin_on_driven_bone_refused(rigify):
    """A pin on a bone the rig drives cannot be held by posing it: refused at solve time."""
    pin(rigify, ("DEF-foot.R",))
    before = channels(rigify)
    target = world_point(rigify, "hand_ik.L", 0.0) + np.array([0.1, -0.1, 0.1])
    with pytest.raises(RuntimeError) as error:
        drag("hand_ik.L", target, 0.0)
    assert "DEF-foot.R" in str(error.value) and "instead" in str(error.value)
    assert channels(rigify) == before


# -- a hand-made rig --------------------------------------------------------------------


def human_with(setup):
    scenes.empty_scene()
    rig = scenes.basic_human()
    setup(rig)
    bpy.context.view_layer.update()
    return rig


def no_inherit_rotation(rig):
    rig.data.bones["forearm.R"].use_inherit_rotation = False


def no_inherit_scale(rig):
    rig.pose.bones["upper_arm.R"].scale = (1.3, 1.3, 1.3)
    rig.data.bones["forearm.R"].inherit_scale = "NONE"


def average_scale_non_uniform(rig):
    rig.pose.bones["upper_arm.R"].scale = (1.0, 1.3, 0.8)
    rig.data.bones["forearm.R"].inherit_scale = "AVERAGE"


def global_location(rig):
    rig.data.bones["shoulder.R"].use_local_location = False
    rig.pose.bones["shoulder.R"].location = (0.02, 0.01, 0.03)


def unparent(rig, bone: str) -> None:
    bpy.ops.object.mode_set(mode="EDIT")
    rig.data.edit_bones[bone].parent = None
    bpy.ops.object.mode_set(mode="POSE")


def child_of(rig):
    """The right shoulder has no parent: it follows the chest by a Child Of constraint with
    its inverse set (as Blender's Set Inverse does), then the chest turns."""
    unparent(rig, "shoulder.R")
    follow_chest(rig, (0.98, 0.0, 0.2, 0.0))


def armature_constraint(rig):
    """The right shoulder has no parent: an Armature constraint carries it by the chest (as
    Rigify's parent-switch bones are carried), then the chest turns."""
    unparent(rig, "shoulder.R")
    constraint = rig.pose.bones["shoulder.R"].constraints.new("ARMATURE")
    target = constraint.targets.new()
    target.target, target.subtarget, target.weight = rig, "spine.003", 1.0
    rig.pose.bones["spine.003"].rotation_quaternion = (0.98, 0.0, 0.2, 0.0)


def child_of_parented(rig):
    """A Child Of on a bone that keeps its parent: Blender applies the target on top of the
    parent, which only the evaluated pose knows; the loop closes on it."""
    follow_chest(rig, (0.995, 0.0, 0.1, 0.0))


def follow_chest(rig, chest_turn) -> None:
    """A Child Of on the right shoulder toward the chest, its inverse set as Blender's Set
    Inverse does; then the chest turns by quaternion ``chest_turn``."""
    constraint = rig.pose.bones["shoulder.R"].constraints.new("CHILD_OF")
    constraint.target, constraint.subtarget = rig, "spine.003"
    bpy.context.view_layer.update()
    constraint.inverse_matrix = rig.pose.bones["spine.003"].matrix.inverted()
    rig.pose.bones["spine.003"].rotation_quaternion = chest_turn


def copy_rotation(rig):
    """The right upper arm copies the left one's rotation (mirrored): the forearm and hand
    reach alone."""
    constraint = rig.pose.bones["upper_arm.R"].constraints.new("COPY_ROTATION")
    constraint.target, constraint.subtarget = rig, "upper_arm.L"
    constraint.mix_mode = "REPLACE"


def armature_object_parented(rig):
    """The armature rides on an empty that is moved and turned after pinning."""
    empty = bpy.data.objects.new("carrier", None)
    bpy.context.scene.collection.objects.link(empty)
    rig.parent = empty
    empty.location = (0.3, -0.2, 0.1)
    empty.rotation_euler = (0.0, 0.0, 0.4)


@pytest.mark.parametrize("setup", [no_inherit_rotation, no_inherit_scale, average_scale_non_uniform,
                                   global_location, child_of, armature_constraint, child_of_parented, copy_rotation,
                                   armature_object_parented])
def test_hand_made_rig_lands(setup):
    rig = human_with(setup)
    target = world_point(rig, "hand.R") + np.array([-0.1, -0.15, 0.1])
    assert drag("hand.R", target) == {"FINISHED"}
    check_landed(rig, "hand.R", target, 1.0)


def test_pins_stay_in_world_when_the_carrier_moves():
    """Pins are world space: moving the object the armature is parented to does not move them."""
    rig = human_with(armature_object_parented)
    held = {p.bone: tuple(p.location) for p in rig.welman_ik.pins}
    bpy.data.objects["carrier"].location.x += 0.2
    bpy.context.view_layer.update()
    target = world_point(rig, "hand.R") + np.array([0.0, -0.1, 0.1])
    drag("hand.R", target)
    assert {p.bone: tuple(p.location) for p in rig.welman_ik.pins} == held
    assert max(pin_errors(rig).values()) <= TOLERANCE


def test_ik_constraint_chain_refused():
    """A bone inside the chain of the rig's own IK constraint is posed by that constraint:
    refused, naming the IK target to drag instead."""
    def ik(rig):
        target = rig.data.edit_bones if False else None  # noqa: F841 - keep the rig in pose mode
        constraint = rig.pose.bones["forearm.L"].constraints.new("IK")
        constraint.target, constraint.subtarget, constraint.chain_count = rig, "hand.R", 2
    rig = human_with(ik)
    before = channels(rig)
    with pytest.raises(RuntimeError) as error:
        drag("forearm.L", world_point(rig, "forearm.L") + np.array([0.0, -0.1, 0.0]))
    assert "forearm.L" in str(error.value) and "IK" in str(error.value)
    assert channels(rig) == before


def posed_scaled(rig):
    """Every kind of pure kinematics at once: scales (uniform), an unconnected bone's
    location, a rotated chest, no rotation inheritance, no scale inheritance, global
    location, on an armature object that is itself scaled and parented."""
    armature_object_parented(rig)
    rig.scale = (1.2, 1.2, 1.2)
    rig.pose.bones["spine.003"].rotation_quaternion = (0.96, 0.1, 0.2, -0.1)
    rig.pose.bones["upper_arm.R"].scale = (1.3, 1.3, 1.3)
    rig.pose.bones["upper_arm.L"].scale = (0.8, 0.8, 0.8)
    rig.data.bones["forearm.R"].use_inherit_rotation = False
    rig.data.bones["forearm.L"].inherit_scale = "NONE"
    rig.data.bones["shoulder.R"].use_local_location = False
    rig.pose.bones["shoulder.R"].location = (0.02, 0.01, 0.03)
    rig.pose.bones["shoulder.L"].location = (-0.01, 0.02, 0.0)
    rig.data.bones["hand.L"].use_inherit_rotation = False
    rig.data.bones["hand.L"].inherit_scale = "NONE"


@pytest.mark.parametrize("setup", [no_inherit_rotation, no_inherit_scale, global_location, posed_scaled,
                                   child_of, armature_constraint])
@pytest.mark.parametrize("translating", [(), ("shoulder.R", "shoulder.L")], ids=["fixed", "sliding"])
def test_model_is_the_evaluated_pose(setup, translating):
    """Pure kinematics is modelled exactly: the hinge tree puts every bone's head and tail
    where Blender's evaluation does (single-precision storage aside)."""
    from welman_ik.blender.rig.model import RigModel

    rig = human_with(setup)
    names = [pb.name for pb in rig.pose.bones]
    model = RigModel(rig, names, translating=translating)
    kin = model.skeleton.forward(model.q0)
    for name in names:
        for anchor in (0.0, 1.0):
            joint, local = model.anchor_local(name, anchor)
            modelled = kin.points(np.array([joint]), local[None])[0]
            assert np.linalg.norm(modelled - world_point(rig, name, anchor)) <= 2e-6, (name, anchor)


def test_rigify_no_silent_miss_on_any_selectable_bone(rigify):
    """Every bone a user can select on the generated rig, dragged by its head and by its tail
    3-4 cm with the IK feet pinned: refused with a message, or landed within tolerance in the
    evaluated pose, or reported as missed (not converged, with the reason). Never a miss
    reported as converged."""
    from welman_ik.blender.rig.channels import PoseSnapshot
    from welman_ik.blender.rig.driven import is_hidden_from_user

    start = PoseSnapshot(rigify)
    selectable = [pb.name for pb in rigify.pose.bones if not is_hidden_from_user(rigify, pb)]
    outcomes = {"refused": 0, "landed": 0, "reported": 0}
    for name in selectable:
        for anchor in (0.0, 1.0):
            start.restore(rigify)
            target = world_point(rigify, name, anchor) + np.array([0.02, -0.03, 0.02])
            try:
                drag(name, target, anchor)
            except RuntimeError as error:
                assert "instead" in str(error) or "Nothing can move" in str(error), str(error)
                outcomes["refused"] += 1
                continue
            last = rigify.welman_ik.last_solve
            reached = np.linalg.norm(world_point(rigify, name, anchor) - target)
            pins = max(pin_errors(rigify).values())
            if reached <= TOLERANCE and pins <= TOLERANCE:
                outcomes["landed"] += 1
            else:
                assert not last.converged and last.message, (name, anchor, reached, pins)
                assert last.drag_error == pytest.approx(reached, abs=2e-6)
                outcomes["reported"] += 1
    assert len(selectable) > 60 and outcomes["landed"] >= 0.9 * 2 * len(selectable), outcomes
