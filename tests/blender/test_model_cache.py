"""Scripted drags keep the hinge tree between calls (``rig.model.cached_model``): a call after
any change to what the tree is built from builds it again, and every call ends exactly where
a call with a newly built tree ends. A stale tree would be a silent miss."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes

from welman_ik.blender.rig import model as rig_model

DRAGGED = "hand.R"
FIRST, SECOND = np.array([0.0, -0.06, 0.05]), np.array([0.02, -0.10, 0.09])  # [m] from the hand's rest


def _edit(obj, change) -> None:
    bpy.ops.object.mode_set(mode="EDIT")
    change(obj.data.edit_bones)
    bpy.ops.object.mode_set(mode="POSE")


def _collection_hidden(obj) -> None:
    bone = obj.data.bones["forearm.R"]
    collections = list(getattr(bone, "collections", ()))
    if not collections:
        pytest.skip("this Blender has no bone collections")
    for c in collections:
        c.is_visible = False


def _driver(obj) -> None:
    curve = obj.pose.bones["forearm.R"].driver_add("rotation_quaternion", 1)
    curve.driver.expression = "0.1"


def _constraint(obj) -> None:
    c = obj.pose.bones["forearm.R"].constraints.new("COPY_ROTATION")
    c.target, c.subtarget = obj, "spine.003"


def _range(obj) -> None:
    r = obj.pose.bones["upper_arm.R"].welman_ik_range
    r.use = True
    r.swing_x_min, r.swing_x_max = -0.2, 0.2


def _pin_head(obj) -> None:
    pin = obj.welman_ik.pins.add()
    pin.bone = "spine.006"
    pin.location = obj.matrix_world @ obj.pose.bones["spine.006"].tail


MUTATIONS = {
    "rest roll": lambda obj: _edit(obj, lambda eb: setattr(eb["forearm.R"], "roll", eb["forearm.R"].roll + 0.3)),
    "rest length": lambda obj: _edit(obj, lambda eb: setattr(eb["hand.R"], "length", eb["hand.R"].length * 1.3)),
    "parent": lambda obj: _edit(obj, lambda eb: setattr(eb["upper_arm.R"], "parent", eb["spine.003"])),
    "bone added": lambda obj: _edit(obj, lambda eb: setattr(eb.new("extra"), "tail", (0.0, 0.0, 0.1))),
    "IK lock": lambda obj: setattr(obj.pose.bones["forearm.R"], "lock_ik_x", True),
    "IK limit": lambda obj: (setattr(obj.pose.bones["forearm.R"], "use_ik_limit_z", True),
                             setattr(obj.pose.bones["forearm.R"], "ik_min_z", -0.05)),
    "stiffness": lambda obj: setattr(obj.pose.bones["upper_arm.R"], "ik_stiffness_y", 0.9),
    "rotation lock": lambda obj: obj.pose.bones["upper_arm.R"].lock_rotation.__setitem__(0, True),
    "rotation mode": lambda obj: (setattr(obj.pose.bones["forearm.R"], "rotation_mode", "ZXY"),
                                  setattr(obj.pose.bones["forearm.R"], "use_ik_limit_x", True)),
    "hidden bone": lambda obj: setattr(obj.data.bones["forearm.R"], "hide", True),
    "hidden collection": _collection_hidden,
    "constraint": _constraint,
    "driver": _driver,
    "joint range": _range,
    "inherit rotation": lambda obj: setattr(obj.data.bones["hand.R"], "use_inherit_rotation", False),
    "inherit scale": lambda obj: setattr(obj.data.bones["forearm.R"], "inherit_scale", "NONE"),  # an enum, read in bulk
    "armature moved": lambda obj: setattr(obj, "location", (0.3, 0.0, 0.0)),
    "pose scale": lambda obj: setattr(obj.pose.bones["upper_arm.R"], "scale", (1.2, 1.2, 1.2)),
    "pin added": _pin_head,
    "chain length": lambda obj: setattr(obj.welman_ik, "chain_length", 3),
}


def _fresh_human():
    """A fresh scene and no kept tree: the pinned basic human (no keys) and its dragged point."""
    scenes.empty_scene()
    rig_model._MODELS.clear()
    obj = scenes.basic_human()
    obj.welman_ik.keyframes = "NEVER"
    return obj, np.array(obj.matrix_world @ obj.pose.bones[DRAGGED].tail)


def _pose(obj) -> dict:
    return {pb.name: (tuple(pb.location), tuple(pb.rotation_quaternion), tuple(pb.rotation_euler))
            for pb in obj.pose.bones}


def _two_drags(change, forget: bool, set_up=None) -> tuple[dict, int, bool]:
    """A fresh scene (``set_up`` on it first): a scripted drag, ``change``, a second drag
    (``forget``: with the kept tree forgotten first). Returns every bone's channels after it,
    the trees built for it and whether ``change`` changed the rig's fingerprint."""
    from welman_ik.blender.rig.fingerprint import fingerprint

    obj, rest = _fresh_human()
    if set_up is not None:
        set_up(obj)
    assert bpy.ops.welman_ik.drag(bone=DRAGGED, target=tuple(rest + FIRST)) == {"FINISHED"}
    before = fingerprint(obj)
    change(obj)
    changed = fingerprint(obj) != before
    if forget:
        rig_model._MODELS.clear()
    built = []
    original = rig_model.RigModel.__init__

    def counted(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    rig_model.RigModel.__init__ = counted
    try:
        assert bpy.ops.welman_ik.drag(bone=DRAGGED, target=tuple(rest + SECOND)) == {"FINISHED"}
    finally:
        rig_model.RigModel.__init__ = original
    return _pose(obj), len(built), changed


def test_an_unchanged_rig_keeps_its_tree_and_ends_where_a_new_tree_would():
    kept, built, _ = _two_drags(lambda obj: None, forget=False)
    assert built == 0
    fresh, _, _ = _two_drags(lambda obj: None, forget=True)
    assert kept == fresh


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_a_change_builds_the_tree_again(name):
    kept, built, _ = _two_drags(MUTATIONS[name], forget=False)
    fresh, _, _ = _two_drags(MUTATIONS[name], forget=True)
    assert built == 1, f"{name}: the kept tree was used"
    assert kept == fresh


def test_a_new_armature_in_place_of_a_deleted_one_builds_its_own_tree():
    """The kept tree belongs to an armature that is gone; a new one (which may take its
    address) gets a tree of its own, and its drag ends where a newly built tree ends."""
    old, rest = _fresh_human()
    assert bpy.ops.welman_ik.drag(bone=DRAGGED, target=tuple(rest + FIRST)) == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.data.objects.remove(old)
    obj = scenes.basic_human()
    obj.welman_ik.keyframes = "NEVER"
    assert bpy.ops.welman_ik.drag(bone=DRAGGED, target=tuple(rest + SECOND)) == {"FINISHED"}
    kept = _pose(obj)
    obj, rest = _fresh_human()
    assert bpy.ops.welman_ik.drag(bone=DRAGGED, target=tuple(rest + SECOND)) == {"FINISHED"}
    assert kept == _pose(obj)


def _driven_by(obj, bone: str) -> None:
    """forearm.R's Y turn driven by a variable reading ``bone``'s X rotation."""
    curve = obj.pose.bones["forearm.R"].driver_add("rotation_quaternion", 1)
    curve.driver.type = "SUM"
    variable = curve.driver.variables.new()
    variable.type = "TRANSFORMS"
    target = variable.targets[0]
    target.id, target.bone_target, target.transform_type = obj, bone, "ROT_X"


def _constrained_to(obj, bone: str) -> None:
    c = obj.pose.bones["forearm.R"].constraints.new("COPY_ROTATION")
    c.target, c.subtarget, c.influence = obj, bone, 0.2


# What a rig set up before the first drag has changed in its depths before the second: (set up, change).
DEEP_CHANGES = {
    "driver variable's bone": (lambda obj: _driven_by(obj, "spine.003"), lambda obj: setattr(
        obj.animation_data.drivers[0].driver.variables[0].targets[0],
        "bone_target", "spine.002")),
    "driver variable's channel": (lambda obj: _driven_by(obj, "spine.003"), lambda obj: setattr(
        obj.animation_data.drivers[0].driver.variables[0].targets[0], "transform_type", "ROT_Z")),
    "constraint's bone": (lambda obj: _constrained_to(obj, "spine.003"),
                          lambda obj: setattr(obj.pose.bones["forearm.R"].constraints[0], "subtarget", "spine.002")),
    "constraint's influence": (lambda obj: _constrained_to(obj, "spine.003"),
                               lambda obj: setattr(obj.pose.bones["forearm.R"].constraints[0], "influence", 0.6)),
}


@pytest.mark.parametrize("name", list(DEEP_CHANGES))
def test_a_change_deep_in_a_driver_or_a_constraint_builds_the_tree_again(name):
    """A driver's variable's target and a constraint's settings are read to their depth (the
    fingerprint sees the change itself, not only the pose it drives): changed between two
    scripted drags, the tree is built again, and the drag ends where a new tree ends."""
    set_up, change = DEEP_CHANGES[name]
    kept, built, changed = _two_drags(change, forget=False, set_up=set_up)
    fresh, _, _ = _two_drags(change, forget=True, set_up=set_up)
    assert changed, f"{name}: the fingerprint did not see it"
    assert built == 1, f"{name}: the kept tree was used"
    assert kept == fresh
