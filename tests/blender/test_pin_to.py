"""Pin To (``welman_ik.pin_to``): the selected pose bones pinned as they are now to follow the
other selected object, or a bone of another armature; its refusals (nothing changed); and how
a pin that follows is shown: the overlay draws its goal where the target has it now (and
nothing, without raising, once the target is gone), the pins list names the target, the panel
says which space the fields are in."""

from __future__ import annotations

import types

import bpy
import numpy as np
import pytest
import scenes
from conftest import world_point
from mathutils import Quaternion, Vector
from test_targets import _partner

from welman_ik.blender.rig.targets import other_point, world_fields
from welman_ik.blender.ui import panel, pin_list, pin_shapes

TETHER, TETHER_TARGET = pin_shapes.TETHER, pin_shapes.TETHER_TARGET


def _empty(obj, at, name: str = "Cup", selected: bool = True):
    """An Empty at ``at``, selected beside the armature (as a Shift+click in Object Mode does);
    the armature active and in Pose Mode again."""
    bpy.ops.object.mode_set(mode="OBJECT")
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location = tuple(at)
    empty.rotation_euler = (0.2, -0.3, 0.9)
    for o in bpy.context.scene.objects:
        o.select_set(o == obj or (selected and o == empty))
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    bpy.context.view_layer.update()
    return empty


def _pin_to(obj, bones, **options):
    scenes.select(obj, bones)
    with scenes.quiet():
        result = bpy.ops.welman_ik.pin_to(**options)
    scenes.select(obj, [])
    return result


def _parts(g: dict, primitive: str, colour=None) -> np.ndarray:
    found = [v for (kind, c), v in g.items() if kind == primitive and (colour is None or c == tuple(colour))]
    return np.concatenate(found) if found else np.zeros((0, 3))


def _turn(obj, bone: str) -> Quaternion:
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones[bone].matrix).to_quaternion()


def test_pin_to_an_empty_records_the_hand_in_its_space_and_the_hand_follows_it(bare_human):
    obj = bare_human
    cup = _empty(obj, world_point(obj, "hand.R") + [0.1, 0.0, 0.05])
    hand, turn = world_point(obj, "hand.R"), _turn(obj, "hand.R")
    assert _pin_to(obj, ["hand.R"]) == {"FINISHED"}
    (pin,) = obj.welman_ik.pins
    assert (pin.bone, pin.kind, pin.target_object, pin.space_name) == ("hand.R", "POSE", cup, "Cup")
    assert np.allclose(pin.location, cup.matrix_world.inverted() @ Vector(hand), atol=1e-5)  # in the cup's space
    world = world_fields(pin)
    assert np.allclose(world["location"], hand, atol=1e-5)  # the world place unchanged
    assert world["rotation"].rotation_difference(turn).angle < 1e-3

    cup.location = tuple(np.array(cup.location) + [0.05, -0.1, 0.08])  # the cup moves, the goal with it
    bpy.context.view_layer.update()
    goal = world_fields(pin)["location"]
    assert np.linalg.norm(goal - hand) > 0.1
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="hand.L", target=tuple(world_point(obj, "hand.L") + [0.0, -0.05, 0.05]))
    assert np.linalg.norm(world_point(obj, "hand.R", pin.anchor) - goal) < 1e-3
    assert world_fields(pin)["rotation"].rotation_difference(_turn(obj, "hand.R")).angle < 1e-2


def test_pin_to_again_replaces_the_pin_and_records_it_anew(bare_human):
    """The same bone pinned to the same kind again (after the cup moved): one pin, its record
    taken from where the hand is now, in the cup's space."""
    obj = bare_human
    cup = _empty(obj, world_point(obj, "hand.R"))
    assert _pin_to(obj, ["hand.R"], kind="POSITION") == {"FINISHED"}
    cup.location = tuple(np.array(cup.location) + [0.0, 0.0, 0.3])
    bpy.context.view_layer.update()
    assert _pin_to(obj, ["hand.R"], kind="POSITION") == {"FINISHED"}
    (pin,) = obj.welman_ik.pins
    assert np.allclose(world_fields(pin)["location"], world_point(obj, "hand.R"), atol=1e-5)


def test_pin_to_the_active_bone_of_a_second_metarig(bare_human):
    """Both rigs in Pose Mode, the partner's upper_arm.R active: Pin To pins hand.L to it (the
    fields in that bone's space); then named in the operator's properties, a together pin on
    hand.R meets the partner's hand.R."""
    obj = bare_human
    partner = _partner((0.9, 0.0, 0.0), walk=(0.0, -0.3, 0.0))
    bpy.ops.object.mode_set(mode="OBJECT")
    partner.select_set(True)
    bpy.ops.object.mode_set(mode="POSE")  # both rigs in Pose Mode, the first one active
    partner.data.bones.active = partner.data.bones["upper_arm.R"]
    scenes.select(partner, [])
    hand = world_point(obj, "hand.L")
    assert _pin_to(obj, ["hand.L"], kind="POSITION") == {"FINISHED"}
    pin = obj.welman_ik.pins[-1]
    assert (pin.target_object, pin.target_bone, pin.space_object, pin.space_bone) == (
        partner, "upper_arm.R", partner, "upper_arm.R")
    assert np.allclose(world_fields(pin)["location"], hand, atol=1e-5)
    assert pin_list.pin_name(pin) == "hand.L → Partner upper_arm.R"

    partner.select_set(False)
    assert _pin_to(obj, ["hand.R"], kind="TOGETHER", target="Partner", target_bone="hand.R") == {"FINISHED"}
    together = next(p for p in obj.welman_ik.pins if p.kind == "TOGETHER")
    assert (together.bone, together.target_object, together.target_bone) == ("hand.R", partner, "hand.R")
    assert pin_list.pin_name(together) == "hand.R → Partner hand.R"
    bpy.context.scene.frame_set(30)
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="spine.006", target=tuple(world_point(obj, "spine.006")))
    assert np.linalg.norm(world_point(obj, "hand.R") - other_point(together)) < 1e-3
    g = pin_shapes.pin_geometry(obj, together)  # drawn at the partner's point, not a bone of this rig
    assert np.allclose(_parts(g, "POINTS"), [world_point(obj, "hand.R"), other_point(together)], atol=1e-4)


def _cycle(obj):
    cup = _empty(obj, world_point(obj, "hand.L"))
    cup.parent, cup.parent_type, cup.parent_bone = obj, "BONE", "hand.R"
    return {}


@pytest.mark.parametrize(("setup", "options", "phrase"), [
    (lambda obj: _empty(obj, (0.5, 0.0, 1.0), selected=False) and {}, {},
     "Select the object to pin to as well (Shift+click it in Object Mode"),
    (lambda obj: {}, {"target": "Nothing"}, "There is no object 'Nothing'"),
    (_cycle, {}, "is parented to 'metarig'"),
    (lambda obj: {}, {"target": "metarig", "target_bone": "spine"}, "Together"),
    (lambda obj: _empty(obj, (0.5, 0.0, 1.0)) and {}, {"kind": "BALANCE"}, "balance pin"),
    (lambda obj: _empty(obj, (0.5, 0.0, 1.0)) and {}, {"target_bone": "hand.R"}, "has no bone 'hand.R'"),
    (lambda obj: _partner((0.9, 0.0, 0.0)) and {}, {"target": "Partner", "target_bone": "no_such"},
     "has no bone 'no_such'"),
    (lambda obj: _empty(obj, (0.5, 0.0, 1.0)) and {}, {"kind": "TOGETHER"}, "is no armature"),
], ids=["no target", "no such object", "cycle", "own bone", "balance", "empty's bone", "missing bone", "together"])
def test_pin_to_refuses_and_changes_nothing(bare_human, setup, options, phrase):
    obj = bare_human
    setup(obj)
    pin = obj.welman_ik.pins.add()  # one pin already there: it must stay as it is
    pin.bone, pin.kind, pin.location = "hand.R", "POSE", (0.1, 0.2, 0.3)
    before = [tuple(p.location) for p in obj.welman_ik.pins], [p.target_object for p in obj.welman_ik.pins]
    scenes.select(obj, ["hand.R"])
    with pytest.raises(RuntimeError) as error:
        bpy.ops.welman_ik.pin_to(**options)
    assert phrase in str(error.value), str(error.value)
    assert "nothing was pinned" in str(error.value)
    assert ([tuple(p.location) for p in obj.welman_ik.pins], [p.target_object for p in obj.welman_ik.pins]) == before


def test_the_sidebar_button_says_why_it_is_disabled(bare_human):
    obj = bare_human
    sidebar = types.SimpleNamespace(object=obj, region=types.SimpleNamespace(type="UI"), selected_objects=[obj])
    scenes.select(obj, ["hand.R"])
    from welman_ik.blender.pins.operators import NO_TARGET, WELMAN_IK_OT_pin_to

    assert WELMAN_IK_OT_pin_to.sidebar_refusal(sidebar) == NO_TARGET
    sidebar.selected_objects = [obj, bpy.data.objects.new("Cup", None)]
    assert WELMAN_IK_OT_pin_to.sidebar_refusal(sidebar) == ""
    scenes.select(obj, [])
    assert WELMAN_IK_OT_pin_to.sidebar_refusal(sidebar) == "Select one or more pose bones first"


# --------------------------------------------------------------------------- shown


def test_the_overlay_draws_the_goal_where_the_target_is_now_and_tethers_it(bare_human):
    obj = bare_human
    cup = _empty(obj, world_point(obj, "hand.R") + [0.1, 0.0, 0.0])
    assert _pin_to(obj, ["hand.R"], kind="POSITION") == {"FINISHED"}
    (pin,) = obj.welman_ik.pins
    cup.location = tuple(np.array(cup.location) + [0.0, 0.0, 0.2])
    bpy.context.view_layer.update()
    goal = world_fields(pin)["location"]
    g = pin_shapes.pin_geometry(obj, pin)
    assert np.allclose(_parts(g, "POINTS"), [goal], atol=1e-5)  # the goal where the cup has it now
    assert np.allclose(_parts(g, "LINES", pin_shapes.PIN_VIOLATED), [world_point(obj, "hand.R"), goal], atol=1e-5)
    assert np.allclose(_parts(g, "THIN", TETHER), [world_point(obj, "hand.R"), goal], atol=1e-5)
    assert np.allclose(_parts(g, "THIN", TETHER_TARGET), [goal, cup.matrix_world.translation], atol=1e-5)
    kept = pin_shapes.overlay_geometry(obj)
    cup.location = tuple(np.array(cup.location) + [0.0, 0.1, 0.0])  # the cup alone moves: drawn anew
    bpy.context.view_layer.update()
    moved = pin_shapes.overlay_geometry(obj)
    assert moved is not kept
    assert np.allclose(_parts(moved, "POINTS", pin_shapes.PIN_VIOLATED), [world_fields(pin)["location"]], atol=1e-5)


def test_a_lost_target_draws_nothing_and_raises_nothing(bare_human):
    obj = bare_human
    cup = _empty(obj, world_point(obj, "hand.R"))
    assert _pin_to(obj, ["hand.R", "foot.L"], kind="POSE") == {"FINISHED"}
    bpy.data.objects.remove(cup)
    hand = next(p for p in obj.welman_ik.pins if p.bone == "hand.R")
    assert pin_shapes.pin_geometry(obj, hand) == {}
    assert pin_shapes.overlay_geometry(obj) == {}  # neither pin, nor anything else
    from welman_ik.blender.ui import overlay

    overlay.draw()  # (no GPU here: the handler must still not raise)
    assert pin_list.pin_name(hand) == "hand.R → Cup"


class _Recorder:
    """Stands in for a UILayout: records (what, text or property, icon, alert) of each item."""

    def __init__(self, log: list, parent=None):
        self.log, self.parent, self.active, self.alert = log, parent, True, False
        self.use_property_split = self.use_property_decorate = False

    def _alert(self) -> bool:
        return self.alert or (self.parent is not None and self.parent._alert())

    def row(self, *args, **kwargs):
        return _Recorder(self.log, self)

    column = row

    def label(self, text="", icon="NONE", **kwargs):
        self.log.append(("label", text, icon, self._alert()))

    def prop(self, data, name, text=None, **kwargs):
        assert name in data.bl_rna.properties, name
        self.log.append(("prop", name, text, False))

    def prop_search(self, data, name, search_data, search_name, text=None, **kwargs):
        assert search_name in search_data.bl_rna.properties
        self.log.append(("search", name, text, search_data.id_data.name))


def _row(obj, pin) -> list:
    log: list = []
    settings = obj.welman_ik
    index = list(settings.pins).index(pin)
    pin_list.WELMAN_IK_UL_pins.draw_item(None, bpy.context, _Recorder(log), settings, pin, 0, settings,
                                         "active_pin_index", index)
    return [entry[1:3] for entry in log if entry[0] == "label"]


def test_the_pins_list_and_the_panel_name_the_target(bare_human):
    obj = bare_human
    cup = _empty(obj, world_point(obj, "hand.R"))
    assert _pin_to(obj, ["hand.R"]) == {"FINISHED"}
    (pin,) = obj.welman_ik.pins
    assert _row(obj, pin) == [("hand.R → Cup always", "NONE")]
    log: list = []
    panel.draw_pin_fields(_Recorder(log), pin, obj)
    assert ("prop", "target_object", "Target", False) in log
    assert ("label", "Location, Rotation: in Cup's space", "ORIENTATION_LOCAL", False) in log

    partner = _partner((0.9, 0.0, 0.0))
    pin.target_object = partner
    log.clear()
    panel.draw_pin_fields(_Recorder(log), pin, obj)
    assert ("search", "target_bone", "Bone", "Partner") in log  # the bone of the target armature

    pin.target_object = cup
    bpy.data.objects.remove(cup)
    assert _row(obj, pin) == [("hand.R → Cup always", "ERROR")]
    log.clear()
    panel.draw_pin_fields(_Recorder(log), pin, obj)
    alert = [entry for entry in log if entry[0] == "label" and entry[3]]
    assert alert and alert[0][2] == "ERROR"
    said = " ".join(entry[1] for entry in alert)
    assert "target 'Cup' was deleted" in said and "Set its Target again" in said
