"""What drives a bone, and what to drag instead (welman_ik.blender.rig.driven), in real Blender:
a generated Rigify human, and an armature built here with constraints, an IK chain and
drivers of its own."""

from __future__ import annotations

import bpy
import pytest
import scenes

from welman_ik.blender.rig.driven import (
    LOCATION,
    ROTATION,
    drive,
    drives,
    frozen_bones,
    is_hidden_from_user,
    rigid_parent,
)

# -- a generated Rigify human -------------------------------------------------------


@pytest.fixture
def rigify():
    """A Rigify human generated from the basic human metarig, in pose mode."""
    scenes.empty_scene()
    return scenes.generated_rigify()


def set_rig_property(rig, bone: str, prop: str, value) -> None:
    """Set one of Rigify's switch properties and let the drivers that read it run."""
    rig.pose.bones[bone][prop] = value
    rig.update_tag()
    bpy.context.view_layer.update()


def assert_control(rig, name: str) -> None:
    """``name`` is a bone the user can see, select and drag."""
    pb = rig.pose.bones[name]
    assert drive(rig, name) is None, name
    assert not is_hidden_from_user(rig, pb), name
    assert not pb.bone.hide_select, name


RIGIFY_DRIVEN = {
    # bone: (channels, control, bones the cause names, alternatives that must be offered)
    "DEF-hand.L": ({ROTATION, LOCATION}, "hand_ik.L", ("hand_tweak.L",), ("hand_fk.L",)),
    "ORG-hand.L": ({ROTATION, LOCATION}, "hand_ik.L", ("MCH-upper_arm_ik_target.L",), ("hand_fk.L",)),
    "ORG-forearm.L": ({ROTATION, LOCATION}, "hand_ik.L", ("MCH-forearm_ik.L",), ("forearm_fk.L",)),
    "MCH-forearm_ik.L": ({ROTATION}, "hand_ik.L", ("IK", "MCH-upper_arm_ik_target.L"), ("forearm_fk.L",)),
    "upper_arm_ik.L": ({ROTATION}, "hand_ik.L", ("'MCH-forearm_ik.L' (chain of 2)",), ("upper_arm_fk.L",)),
    "thigh_ik.R": ({ROTATION}, "foot_ik.R", ("'MCH-shin_ik.R' (chain of 2)",), ("thigh_fk.R",)),
    "ORG-shin.L": ({ROTATION, LOCATION}, "foot_ik.L", ("MCH-shin_ik.L",), ("shin_fk.L",)),
    "DEF-upper_arm.L.001": ({ROTATION, LOCATION}, "hand_ik.L", ("upper_arm_tweak.L.001", "Stretch To"),
                            ("upper_arm_fk.L",)),
    "ORG-spine.006": ({ROTATION, LOCATION}, "head", ("'head'",), ()),
    "ORG-shoulder.L": ({ROTATION, LOCATION}, "shoulder.L", ("'shoulder.L'",), ()),
    "MCH-upper_arm_ik_target.L": ({LOCATION}, "hand_ik.L", ("Copy Location", "'hand_ik.L'"), ()),
    "MCH-spine.001": ({ROTATION, LOCATION}, "spine_fk.001", ("influence 0.5", "'hips'"), ("hips",)),
}


@pytest.mark.parametrize("bone", list(RIGIFY_DRIVEN))
def test_rigify_driven_bones(rigify, bone):
    channels, control, named, alternatives = RIGIFY_DRIVEN[bone]
    found = drive(rigify, bone)
    assert found is not None
    assert found.bone == bone
    assert set(found.channels) == channels
    assert found.control == control
    for name in named:
        assert name in found.cause, (bone, found.cause)
    for name in alternatives:
        assert name in found.alternatives, (bone, found.alternatives)
    for name in (found.control, *found.alternatives):
        assert_control(rigify, name)
    message = found.message()
    assert message.startswith(f"Bone '{bone}' cannot be dragged: {found.cause}.")
    assert f"Drag '{control}' instead" in message


def test_rigify_messages(rigify):
    assert drive(rigify, "DEF-hand.L").message() == (
        "Bone 'DEF-hand.L' cannot be dragged: its Copy Transforms constraint follows 'hand_tweak.L'. "
        "Drag 'hand_ik.L' instead (or 'hand_fk.L', 'hand_tweak.L').")
    assert drive(rigify, "ORG-forearm.L").message("pin") == (
        "Bone 'ORG-forearm.L' cannot be pinned: its Copy Transforms constraint follows 'MCH-forearm_ik.L'. "
        "Pin 'hand_ik.L' instead (or 'forearm_fk.L', 'forearm_tweak.L').")
    assert drive(rigify, "MCH-forearm_ik.L").cause == (
        "its IK constraint (chain of 2) reaches for 'MCH-upper_arm_ik_target.L'")
    assert drive(rigify, "upper_arm_ik.L").cause == (
        "it is in the chain of the IK constraint of 'MCH-forearm_ik.L' (chain of 2), which reaches for "
        "'MCH-upper_arm_ik_target.L'")


RIGIFY_CONTROLS = ("hand_ik.L", "hand_ik.R", "torso", "hips", "chest", "hand_fk.L", "forearm_fk.L",
                   "upper_arm_fk.L", "foot_ik.L", "foot_ik.R", "head", "neck", "shoulder.L", "root",
                   "hand_tweak.L", "spine_fk.001", "toe_ik.L", "foot_heel_ik.L")


@pytest.mark.parametrize("bone", RIGIFY_CONTROLS)
def test_rigify_controls_not_driven(rigify, bone):
    assert_control(rigify, bone)


def test_rigify_every_suggestion_is_a_control(rigify):
    """Whatever driven bone is asked about, a control is found, and every bone suggested
    exists, is visible and selectable, and is not driven itself."""
    names = [pb.name for pb in rigify.pose.bones]
    every = drives(rigify, names)
    assert every == {name: found for name in names if (found := drive(rigify, name)) is not None}
    visible_driven = {name for name in every if not is_hidden_from_user(rigify, rigify.pose.bones[name])}
    assert visible_driven == {"upper_arm_ik.L", "upper_arm_ik.R", "thigh_ik.L", "thigh_ik.R"}  # IK chains
    for found in every.values():
        assert found.control is not None, (found.bone, found.cause)
        assert found.channels and found.channels <= {ROTATION, LOCATION}
        for name in (found.control, *found.alternatives):
            assert_control(rigify, name)


def test_rigify_follows_the_ik_fk_switch(rigify):
    """With the left arm switched to FK (Rigify's IK_FK = 1, set through drivers on the
    constraint influences), the arm's ORG bones follow the FK controls, and the suggestion
    says so; the right arm stays IK."""
    set_rig_property(rigify, "upper_arm_parent.L", "IK_FK", 1.0)
    assert drive(rigify, "ORG-hand.L").cause == "its Copy Transforms constraint follows 'hand_fk.L'"
    assert drive(rigify, "ORG-hand.L").control == "hand_fk.L"
    assert drive(rigify, "DEF-hand.L").control == "hand_fk.L"
    assert drive(rigify, "ORG-forearm.L").control == "forearm_fk.L"
    assert drive(rigify, "ORG-forearm.R").control == "hand_ik.R"
    set_rig_property(rigify, "upper_arm_parent.L", "IK_FK", 0.0)
    assert drive(rigify, "ORG-hand.L").control == "hand_ik.L"


def test_rigify_frozen_bones(rigify):
    names = [pb.name for pb in rigify.pose.bones]
    frozen = frozen_bones(rigify, names)
    mechanism = {n for n in names if n.startswith(("MCH-", "ORG-", "DEF-"))}
    assert len(mechanism) > 100
    assert mechanism <= frozen  # hidden in the MCH, ORG and DEF collections
    assert {"VIS_upper_arm_ik_pole.L", "thigh_ik_target.L"} <= frozen  # hidden bones
    assert {"upper_arm_ik.L", "thigh_ik.L"} <= frozen  # visible, but their rotation is the IK's
    assert not frozen & set(RIGIFY_CONTROLS)
    assert frozen_bones(rigify, ["hand_ik.L", "DEF-hand.L", "no such bone"]) == {"DEF-hand.L"}


def test_rigify_rigid_parents(rigify):
    """Rigify's parent switches are Armature constraints whose weights drivers set: by
    default the IK hands, the IK feet and the torso are carried by the root."""
    bones = rigify.pose.bones
    for name in ("MCH-hand_ik.parent.L", "MCH-hand_ik.parent.R", "MCH-foot_ik.parent.L", "MCH-foot_ik.parent.R",
                 "MCH-torso.parent"):
        assert rigid_parent(rigify, bones[name]) == ("root", "ARMATURE"), name
        assert drive(rigify, name) is None
    assert rigid_parent(rigify, bones["MCH-upper_arm_ik_target.parent.L"]) == ("ORG-shoulder.L", "ARMATURE")
    assert rigid_parent(rigify, bones["torso"]) is None
    assert rigid_parent(rigify, bones["hand_ik.L"]) is None
    # IK_parent 2 carries the left IK hand with the torso (the drivers set the weights).
    set_rig_property(rigify, "upper_arm_parent.L", "IK_parent", 2)
    assert rigid_parent(rigify, bones["MCH-hand_ik.parent.L"]) == ("torso", "ARMATURE")
    assert rigid_parent(rigify, bones["MCH-hand_ik.parent.R"]) == ("root", "ARMATURE")


# -- an armature built here ---------------------------------------------------------


BONES = {
    # name: (head, tail, parent, connected)
    "root": ((0, 0, 0), (0, 0.5, 0), None, False),
    "spine": ((0, 0, 1), (0, 0, 1.5), "root", False),
    "upper": ((0.2, 0, 1.5), (0.5, 0, 1.5), "spine", False),
    "lower": ((0.5, 0, 1.5), (0.8, 0, 1.5), "upper", True),
    "ik_target": ((0.8, 0, 1.5), (0.9, 0, 1.5), "root", False),
    "thumb": ((0.8, 0, 1.5), (0.85, 0, 1.5), "lower", True),
    "a1": ((-0.2, 0, 1.5), (-0.5, 0, 1.5), "spine", False),
    "a2": ((-0.5, 0, 1.5), (-0.8, 0, 1.5), "a1", True),
    "leader": ((0, 1, 0), (0, 1, 0.3), "root", False),
    "follower": ((0, 0, 1.5), (0, 0, 1.8), "spine", True),
    "adder": ((0, 0.1, 1.5), (0, 0.1, 1.8), "spine", False),
    "holder": ((1, 1, 0), (1, 1, 0.3), "root", False),
    "carried": ((1, 1, 0.5), (1, 1, 0.8), None, False),
    "half_carried": ((1, 1.2, 0.5), (1, 1.2, 0.8), None, False),
    "skinned": ((1, 1.4, 0.5), (1, 1.4, 0.8), None, False),
    "blended": ((1, 1.6, 0.5), (1, 1.6, 0.8), None, False),
    "knob": ((-1, 1, 0), (-1, 1, 0.2), "root", False),
    "twister": ((0, -0.1, 1.5), (0, -0.1, 1.8), "spine", False),
    "slider": ((0, -0.2, 1.5), (0, -0.2, 1.8), "spine", False),
    "muted": ((0, -0.3, 1.5), (0, -0.3, 1.8), "spine", False),
    "unused_path": ((0, -0.4, 1.5), (0, -0.4, 1.8), "spine", False),
    "aimer": ((0, -0.5, 1.5), (0, -0.5, 1.8), "root", False),
    "limited": ((0, -0.6, 1.5), (0, -0.6, 1.8), "spine", False),
    "switched_off": ((0, -0.7, 1.5), (0, -0.7, 1.8), "spine", False),
    "offset": ((0, -0.8, 1.5), (0, -0.8, 1.8), "spine", False),
    "hidden": ((0, -0.9, 1.5), (0, -0.9, 1.8), "spine", False),
    "tucked_away": ((0, -1.0, 1.5), (0, -1.0, 1.8), "spine", False),
}


def constraint(obj, bone: str, kind: str, subtarget: str = "", **settings):
    c = obj.pose.bones[bone].constraints.new(kind)
    if hasattr(c, "target"):
        c.target = obj
        c.subtarget = subtarget
    for key, value in settings.items():
        setattr(c, key, value)
    return c


def add_driver(obj, bone: str, path: str, index: int, source: str, transform: str = "", data_path: str = ""):
    fcurve = obj.pose.bones[bone].driver_add(path, index)
    driver = fcurve.driver
    driver.type = "AVERAGE"
    variable = driver.variables.new()
    variable.type = "TRANSFORMS" if transform else "SINGLE_PROP"
    target = variable.targets[0]
    target.id = obj
    if transform:
        target.bone_target = source
        target.transform_type = transform
    else:
        target.data_path = data_path
    return fcurve


@pytest.fixture
def handmade():
    """An armature with an IK chain, Copy Rotation, Child Of, Armature, Damped Track and
    Limit constraints and drivers, in pose mode."""
    scenes.empty_scene()
    data = bpy.data.armatures.new("Handmade")
    obj = bpy.data.objects.new("Handmade", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for name, (head, tail, parent, connected) in BONES.items():
        bone = data.edit_bones.new(name)
        bone.head, bone.tail = head, tail
        if parent is not None:
            bone.parent = data.edit_bones[parent]
            bone.use_connect = connected
    bpy.ops.object.mode_set(mode="POSE")

    constraint(obj, "lower", "IK", "ik_target", chain_count=2)
    constraint(obj, "a2", "IK", "ik_target", chain_count=1, use_tail=False)  # the chain is 'a1' alone
    constraint(obj, "follower", "COPY_ROTATION", "leader")
    constraint(obj, "adder", "COPY_ROTATION", "leader", mix_mode="ADD")  # its own rotation adds on top
    constraint(obj, "carried", "CHILD_OF", "holder")
    constraint(obj, "half_carried", "CHILD_OF", "holder", use_scale_z=False)
    skin = obj.pose.bones["skinned"].constraints.new("ARMATURE")
    skin.targets.new()
    skin.targets[0].target, skin.targets[0].subtarget, skin.targets[0].weight = obj, "holder", 1.0
    blend = obj.pose.bones["blended"].constraints.new("ARMATURE")
    for bone in ("holder", "leader"):
        t = blend.targets.new()
        t.target, t.subtarget, t.weight = obj, bone, 0.5
    constraint(obj, "aimer", "DAMPED_TRACK", "leader")
    constraint(obj, "limited", "LIMIT_ROTATION", use_limit_x=True)
    constraint(obj, "limited", "COPY_SCALE", "leader")
    constraint(obj, "switched_off", "COPY_TRANSFORMS", "leader", mute=True)
    constraint(obj, "switched_off", "COPY_ROTATION", "leader", influence=0.0)
    constraint(obj, "offset", "COPY_LOCATION", "leader", use_offset=True)

    obj.pose.bones["twister"].rotation_mode = "XYZ"
    add_driver(obj, "twister", "rotation_euler", 1, "knob", transform="LOC_X")
    add_driver(obj, "slider", "location", 2, "knob", data_path='pose.bones["knob"].location[0]')
    add_driver(obj, "muted", "rotation_quaternion", 0, "knob", transform="ROT_Z").mute = True
    add_driver(obj, "unused_path", "rotation_euler", 0, "knob", transform="ROT_Z")  # it rotates by quaternion

    hidden = obj.pose.bones["hidden"]
    if "hide" in bpy.types.PoseBone.bl_rna.properties:  # Blender 5.0
        hidden.hide = True
    else:
        hidden.bone.hide = True
    tucked = obj.pose.bones["tucked_away"].bone
    if hasattr(data, "collections"):  # Blender 4.0+
        shown, tucked_away = data.collections.new("Shown"), data.collections.new("Tucked away")
        for pb in obj.pose.bones:
            shown.assign(pb.bone)
        shown.unassign(tucked)
        tucked_away.assign(tucked)
        tucked_away.is_visible = False
    else:  # Blender 3.x
        tucked.layers = [i == 1 for i in range(32)]
    bpy.context.view_layer.update()
    return obj


def test_handmade_ik_chain(handmade):
    lower = drive(handmade, "lower")
    assert lower.channels == {ROTATION}
    assert lower.control == "ik_target"
    assert lower.message() == ("Bone 'lower' cannot be dragged: its IK constraint (chain of 2) reaches for "
                               "'ik_target'. Drag 'ik_target' instead.")
    upper = drive(handmade, "upper")
    assert upper.channels == {ROTATION}
    assert upper.message("pin") == ("Bone 'upper' cannot be pinned: it is in the chain of the IK constraint of "
                                    "'lower' (chain of 2), which reaches for 'ik_target'. Pin 'ik_target' instead.")
    # Above the chain, below its tip and the target itself: their own channels decide.
    for name in ("spine", "root", "thumb", "ik_target"):
        assert drive(handmade, name) is None, name
    # Without 'use tail' the IK's owner is the chain's tip, not part of it.
    assert drive(handmade, "a2") is None
    assert "of 'a2' (chain of 1)" in drive(handmade, "a1").cause
    # An IK constraint switched off, or without a target, does not pose a chain.
    handmade.pose.bones["lower"].constraints["IK"].mute = True
    assert drive(handmade, "upper") is None and drive(handmade, "lower") is None
    handmade.pose.bones["lower"].constraints["IK"].mute = False
    handmade.pose.bones["lower"].constraints["IK"].target = None
    bpy.context.view_layer.update()
    assert drive(handmade, "upper") is None


def test_handmade_copy_rotation(handmade):
    found = drive(handmade, "follower")
    assert found.channels == {ROTATION}  # its location is its parent's tail (connected)
    assert found.rotation and not found.location
    assert found.message() == ("Bone 'follower' cannot be dragged: its Copy Rotation constraint follows 'leader'. "
                               "Drag 'leader' instead.")
    assert drive(handmade, "adder") is None  # mix 'ADD': its own rotation still counts


def test_handmade_damped_track_drives_rotation_only(handmade):
    found = drive(handmade, "aimer")
    assert found.channels == {ROTATION}
    assert found.cause == "its Damped Track constraint aims it at 'leader'"
    assert found.control == "leader"


def test_handmade_rigid_parents(handmade):
    bones = handmade.pose.bones
    assert rigid_parent(handmade, bones["carried"]) == ("holder", "CHILD_OF")
    assert rigid_parent(handmade, bones["skinned"]) == ("holder", "ARMATURE")
    assert rigid_parent(handmade, bones["half_carried"]) is None  # scale not inherited
    assert rigid_parent(handmade, bones["blended"]) is None  # two bones at 0.5
    assert rigid_parent(handmade, bones["follower"]) is None
    for name in ("carried", "half_carried", "skinned", "blended"):
        assert drive(handmade, name) is None, name
    bones["carried"].constraints[0].influence = 0.5
    assert rigid_parent(handmade, bones["carried"]) is None


def test_handmade_keeping_constraints(handmade):
    """Limit, Copy Scale, a switched-off or zero-influence constraint and a Copy Location
    with offset leave the bone's own channels in charge."""
    for name in ("limited", "switched_off", "offset"):
        assert drive(handmade, name) is None, name


def test_handmade_drivers(handmade):
    twister = drive(handmade, "twister")
    assert twister.channels == {ROTATION}
    assert twister.message() == ("Bone 'twister' cannot be dragged: a driver on its rotation reads 'knob'. "
                                 "Drag 'knob' instead.")
    slider = drive(handmade, "slider")
    assert slider.channels == {LOCATION}
    assert slider.cause == "a driver on its location reads 'knob'"
    assert slider.control == "knob"
    assert drive(handmade, "muted") is None
    assert drive(handmade, "unused_path") is None  # a driver on a rotation the bone's mode does not use
    assert drive(handmade, "knob") is None


def test_handmade_frozen_bones(handmade):
    names = list(BONES)
    frozen = frozen_bones(handmade, names)
    assert frozen == {"upper", "lower", "a1", "follower", "aimer", "twister", "hidden", "tucked_away"}
    assert is_hidden_from_user(handmade, handmade.pose.bones["tucked_away"])
    assert not is_hidden_from_user(handmade, handmade.pose.bones["slider"])


def test_unknown_bone_and_not_an_armature(handmade):
    with pytest.raises(KeyError):
        drive(handmade, "no such bone")
    mesh = bpy.data.objects.new("Empty", None)
    with pytest.raises(ValueError):
        drive(mesh, "root")
