"""remove_pin by index (also a pin whose bone is gone), its refusals, the pins list and the
last solve's message in the panel, and the pin operator's refusal of a degenerate armature."""

from __future__ import annotations

from types import SimpleNamespace

import bpy
import numpy as np
import pytest
import scenes
from conftest import channels, drag, pin_errors, pins_state, world_point

from welman_ik.blender.ui import panel, pin_list


def _refused(phrase: str, call, *args, **kwargs) -> None:
    with pytest.raises(RuntimeError) as error:
        call(*args, **kwargs)
    assert phrase in str(error.value), str(error.value)


def _bones(obj) -> list:
    return [p.bone for p in obj.welman_ik.pins]


def test_remove_pin_by_index(human):
    bones = _bones(human)
    assert len(bones) == 5
    kept = pins_state(human)
    assert bpy.ops.welman_ik.remove_pin(index=2) == {"FINISHED"}
    assert pins_state(human) == kept[:2] + kept[3:]
    assert bpy.ops.welman_ik.remove_pin(index=0) == {"FINISHED"}
    assert pins_state(human) == kept[1:2] + kept[3:]


def test_remove_pin_unset_index_is_the_active_pin(human):
    kept = pins_state(human)
    human.welman_ik.active_pin_index = 3
    assert bpy.ops.welman_ik.remove_pin() == {"FINISHED"}
    assert pins_state(human) == kept[:3] + kept[4:]
    assert human.welman_ik.active_pin_index == 3
    assert bpy.ops.welman_ik.remove_pin() == {"FINISHED"}  # the last pin: the index follows
    assert pins_state(human) == kept[:3]
    assert human.welman_ik.active_pin_index == 2


@pytest.mark.parametrize("index", [5, 99, -1], ids=["one-past", "far", "negative"])
def test_remove_pin_out_of_range(human, index):
    kept = pins_state(human)
    _refused(f"Pin index {index} is out of range: armature 'metarig' has 5 pin(s)",
             bpy.ops.welman_ik.remove_pin, index=index)
    assert pins_state(human) == kept


def test_remove_pin_whose_bone_was_renamed(human):
    """A pin on a renamed bone blocks every drag until it is removed; remove_pin removes it."""
    index = _bones(human).index("hand.L")
    human.data.bones["hand.L"].name = "hand_renamed.L"
    assert human.welman_ik.pins[index].bone == "hand.L"
    target = world_point(human, "hand.R") + np.array([-0.05, -0.05, 0.05])
    _refused("'hand.L', which no longer exists", drag, "hand.R", target)
    assert bpy.ops.welman_ik.remove_pin(index=index) == {"FINISHED"}
    assert "hand.L" not in _bones(human) and len(human.welman_ik.pins) == 4
    assert drag("hand.R", target) == {"FINISHED"}
    assert np.linalg.norm(world_point(human, "hand.R") - target) <= 1e-4
    assert max(pin_errors(human).values()) <= 1e-4


# -- the pins list and the last solve in the panel (drawn into a recording stand-in) --------


class Recorder:
    """Stands in for a UILayout: records labels, props and operator buttons."""

    def __init__(self, log: list, parent: Recorder | None = None):
        self.log, self.parent = log, parent
        self.active = True
        self.use_property_split = False

    def _active(self) -> bool:
        return self.active and (self.parent is None or self.parent._active())

    def _child(self, *args, **kwargs) -> Recorder:
        return Recorder(self.log, self)

    row = column = box = _child

    def label(self, text="", icon="NONE", **kwargs):
        self.log.append(("label", text, icon, self._active()))

    def prop(self, data, name, **kwargs):
        self.log.append(("prop", name, self._active()))

    def operator(self, idname, **kwargs):
        button = SimpleNamespace()
        self.log.append(("operator", idname, kwargs.get("icon"), button))
        return button


def _draw_pins(obj) -> list:
    settings = obj.welman_ik
    rows = []
    for index, pin in enumerate(settings.pins):
        log = []
        panel.WELMAN_IK_UL_pins.draw_item(None, bpy.context, Recorder(log), settings, pin, 0, settings,
                                          "active_pin_index", index)
        rows.append(log)
    return rows


def test_pins_list_rows(human):
    human.data.bones["toe.R"].name = "toe_renamed.R"
    rows = _draw_pins(human)
    gone = _bones(human).index("toe.R")
    for index, log in enumerate(rows):
        labels = [entry for entry in log if entry[0] == "label"]
        if index == gone:
            assert labels == [("label", "bone 'toe.R' missing", "ERROR", False)]  # greyed, with the reason
        else:  # the whole name, then the point and the frames; the enable toggle and the kind beside it
            pin = human.welman_ik.pins[index]
            assert labels == [("label", f"{pin.bone} {pin_list.pin_detail(pin)}", "NONE", True)]
            assert [entry[1] for entry in log if entry[0] == "prop"] == ["enabled", "kind"]


def test_the_list_remove_button_removes_the_active_pin_even_of_a_missing_bone(human):
    human.data.bones["toe.R"].name = "toe_renamed.R"
    gone = _bones(human).index("toe.R")
    human.welman_ik.active_pin_index = gone
    assert bpy.ops.welman_ik.remove_pin() == {"FINISHED"}
    assert "toe.R" not in _bones(human)
    human.welman_ik.pins.clear()
    assert not bpy.ops.welman_ik.remove_pin.poll()  # nothing to remove: the button is disabled


def _draw_last_solve(obj, width: int = 300) -> list:
    log = []
    context = SimpleNamespace(object=obj, region=SimpleNamespace(width=width), preferences=bpy.context.preferences)
    panel.WELMAN_IK_PT_last_solve.draw(SimpleNamespace(layout=Recorder(log)), context)
    return [entry for entry in log if entry[0] == "label"]


def test_last_solve_message_in_the_panel(human):
    last = human.welman_ik.last_solve
    assert last.message == ""
    last.iterations, last.milliseconds, last.converged = 12, 3.5, True
    labels = _draw_last_solve(human)
    assert labels[-1][1:3] == ("Converged", "CHECKMARK")  # no message: nothing more
    last.converged = False
    last.message = ("'hand.R' (dragged) is 12.50 mm off: out of reach with the pins held; "
                    "'toe.L' (pinned) is 3.20 mm off: constraints or drivers move it where the solver cannot follow")
    labels = _draw_last_solve(human)
    start = [entry[1] for entry in labels].index("Not converged") + 1
    lines = labels[start:]
    assert len(lines) > 1  # wrapped to the sidebar
    assert lines[0][2] == "ERROR"
    assert " ".join(entry[1] for entry in lines) == last.message
    assert all(len(entry[1]) <= 60 for entry in lines)
    last.converged = True
    assert _draw_last_solve(human)[start][2] == "INFO"


# -- pin: a degenerate armature transform is refused ----------------------------------------


@pytest.mark.parametrize("broken", ["zero-scale", "flat", "nan"])
def test_pin_refuses_a_degenerate_transform(bare_human, broken):
    obj = bare_human
    if broken == "zero-scale":
        obj.scale = (0.0, 0.0, 0.0)
    elif broken == "flat":
        obj.scale = (1.0, 0.0, 1.0)
    else:
        obj.location[0] = float("nan")
    scenes.select(obj, ("hand.R", "foot.L"))
    before = repr((channels(obj), pins_state(obj)))
    _refused("Armature 'metarig' has a degenerate transform (zero scale?)", bpy.ops.welman_ik.pin)
    assert repr((channels(obj), pins_state(obj))) == before
    assert len(obj.welman_ik.pins) == 0


def test_pin_refuses_a_bone_with_no_finite_position(bare_human):
    obj = bare_human
    obj.pose.bones["forearm.R"].rotation_quaternion[1] = float("nan")
    scenes.select(obj, ("hand.R", "foot.L"))
    _refused("has no finite position", bpy.ops.welman_ik.pin)
    assert len(obj.welman_ik.pins) == 0
