"""The panel and the drag as a user reads them: what redraws after a change, which settings
can be keyed, the drag button's poll, the words of the drag's header and status bar, lengths
in the scene's units, and the pins list's filter. (The redraws themselves, the markers appearing
and vanishing, are checked in the real window: ``tests/e2e``'s panel mode.)"""

from __future__ import annotations

import types

import bpy
import pytest
import scenes
from conftest import pin, pin_by_kind

from welman_ik.blender.drag import operator as drag_operator
from welman_ik.blender.drag.session import DragSession
from welman_ik.blender.rig import properties, views
from welman_ik.blender.rig import units as units_module
from welman_ik.blender.rig.units import length_text
from welman_ik.blender.ui import panel


@pytest.fixture
def redraws(monkeypatch) -> list:
    """Each call of ``views.redraw`` (the operators call it through the module)."""
    calls: list = []
    monkeypatch.setattr(views, "redraw", lambda *args: calls.append(args))
    return calls


@pytest.mark.parametrize("call", [
    lambda obj: pin(obj, ["hand.R"]),
    lambda obj: (scenes.select(obj, ["foot.L"]), bpy.ops.welman_ik.unpin())[1],
    lambda obj: bpy.ops.welman_ik.clear_pins(),
    lambda obj: bpy.ops.welman_ik.remove_pin(index=0),
    lambda obj: (scenes.select(obj, ["hand.R"]), bpy.ops.welman_ik.lock())[1],
    lambda obj: bpy.ops.welman_ik.joint_ranges(preset="AUTO", every_bone=True),
    lambda obj: bpy.ops.welman_ik.dismiss_ranges_offer(),
], ids=["pin", "unpin", "clear", "remove_pin", "lock", "joint_ranges", "dismiss"])
def test_every_operator_that_changes_what_is_shown_redraws(human, redraws, call):
    redraws.clear()
    result = call(human)
    assert result in (None, {"FINISHED"})
    assert redraws, "no redraw after the change"


def test_a_refused_operator_does_not_pretend(human, redraws):
    scenes.select(human, [])
    with pytest.raises(RuntimeError):
        bpy.ops.welman_ik.unpin()  # nothing selected: poll refuses
    assert not redraws


def test_a_script_changing_a_pin_or_range_redraws(human, redraws):
    human.welman_ik.pins[0].enabled = False
    assert len(redraws) == 1
    human.pose.bones["forearm.L"].welman_ik_range.swing_x_max = 0.3
    assert len(redraws) == 2


def test_undo_and_redo_redraw():
    for name in views.HANDLERS:
        assert views._redraw_after_undo in getattr(bpy.app.handlers, name)


@pytest.mark.parametrize("group", [properties.WELMAN_IK_Settings, properties.WELMAN_IK_Pin,
                                   properties.WELMAN_IK_Range])
def test_no_setting_can_be_keyed(human, group):
    """No keyframe dot beside a setting: a solve reads each as it is, a key would be a trap."""
    animatable = [p.identifier for p in group.bl_rna.properties
                  if p.identifier != "rna_type" and p.is_animatable]
    assert animatable == []
    with pytest.raises(TypeError):
        human.keyframe_insert("welman_ik.tolerance")


def test_the_drag_button_says_why_it_is_disabled(human):
    """From the sidebar with no active bone the drag's button is disabled; a script that names its
    bone is not refused."""
    sidebar = types.SimpleNamespace(object=human, region=types.SimpleNamespace(type="UI"))
    human.data.bones.active = None
    assert not drag_operator.WELMAN_IK_OT_drag.poll(sidebar)
    human.data.bones.active = human.data.bones["hand.R"]
    assert drag_operator.WELMAN_IK_OT_drag.poll(sidebar)
    human.data.bones.active = None
    assert drag_operator.WELMAN_IK_OT_drag.poll(types.SimpleNamespace(object=human, region=None))
    assert bpy.ops.welman_ik.drag(bone="hand.R", target=(0.5, -0.2, 1.3)) == {"FINISHED"}


def test_the_drag_header_speaks_as_the_panel_does(human):
    scene = bpy.context.scene
    drag = DragSession(human, "hand.R")
    assert "SR Inverse" in drag.header(scene) and "SR_INVERSE" not in drag.header(scene)
    drag.move((0.4, -5.0, 1.2), (0.0, 1.0, 0.0))
    text = drag.header(scene)
    assert "SR Inverse" in text and "SR_INVERSE" not in text and "P/O" not in text
    assert f"pins {length_text(scene, drag.figures.max_pin_error)}" in text
    drag.cancel()


def test_the_status_bar_names_every_key_the_drag_takes():
    """Each key the modal drag handles has its icon and meaning in the status bar."""
    shown = {icon for icons, _ in drag_operator.KEY_HINTS for icon in icons}
    for key in drag_operator.PIN_SHORTCUTS:
        assert f"EVENT_{key}" in shown, key
    assert {"MOUSE_LMB", "MOUSE_RMB", "EVENT_TAB", "EVENT_SHIFT", "EVENT_CTRL"} <= shown
    log = []
    layout = types.SimpleNamespace(
        row=lambda **kw: layout, separator=lambda **kw: None,
        label=lambda text="", icon="NONE": log.append((text, icon)))
    drag_operator.draw_status(types.SimpleNamespace(layout=layout), bpy.context)
    assert ("Confirm", "NONE") in log and ("", "MOUSE_LMB") in log
    assert all(icon in drag_operator._icons() for _, icon in log)


@pytest.fixture
def units():
    """The scene's unit settings, put back as they were after the test."""
    settings = bpy.context.scene.unit_settings
    kept = (settings.system, settings.length_unit, settings.scale_length)
    yield settings
    settings.system, settings.length_unit, settings.scale_length = kept


def test_lengths_in_the_scene_units(units):
    """Three significant digits in the unit of the scene's system that reads best, whichever
    single unit its fields show; times in ms below a second, in s above."""
    scene = bpy.context.scene
    units.system, units.length_unit, units.scale_length = "METRIC", "METERS", 1.0
    assert length_text(scene, 3.08e-7) == "0.308 µm"
    assert length_text(scene, 3.214e-6) == "3.21 µm"
    assert length_text(scene, 2.81e-3) == "2.81 mm"
    assert length_text(scene, 1.35) == "1.35 m"
    assert length_text(scene, 0.9996) == "1.00 m"  # rounded into the next unit
    assert length_text(scene, 0.0) == "0 µm"
    units.length_unit = "MILLIMETERS"  # (the fields' unit: the figures read best all the same)
    assert length_text(scene, 3.214e-6) == "3.21 µm"
    units.scale_length = 0.01  # one Blender unit is a centimetre
    assert length_text(scene, 1.0) == "1.00 cm"
    units.scale_length = 1.0
    units.length_unit = "ADAPTIVE"
    assert length_text(scene, 3.0e-8) == "0.0300 µm"  # below the smallest unit: in it
    units.system, units.length_unit = "IMPERIAL", "INCHES"
    assert length_text(scene, 0.0254) == '1.00"'
    assert length_text(scene, 1.5) == "4.92'"
    units.system = "NONE"
    assert length_text(scene, 0.5) == "0.500"
    assert units_module.time_text(112982.23) == "113 s" and units_module.time_text(2.834) == "2.83 ms"


def test_the_pins_list_filters_by_the_names_it_shows(human):
    """Blender's wildcards on what each row shows: a bone, a balance pin's centre of mass."""
    assert bpy.ops.welman_ik.pin(kind="BALANCE") == {"FINISHED"}
    settings = human.welman_ik
    names = [panel.pin_name(p) for p in settings.pins]
    assert "centre of mass" in names

    def shown(pattern: str, invert: bool = False) -> list:
        ul = types.SimpleNamespace(filter_name=pattern, bitflag_filter_item=1 << 30, use_filter_invert=invert,
                                   use_filter_sort_alpha=False)
        flags, _ = panel.WELMAN_IK_UL_pins.filter_items(ul, bpy.context, settings, "pins")
        return [name for name, flag in zip(names, flags) if flag & ul.bitflag_filter_item]

    assert sorted(shown("*.L")) == sorted(n for n in names if n.endswith(".L")) != []
    assert shown("centre") == ["centre of mass"]
    assert shown("HEEL") == [n for n in names if "heel" in n] != []
    assert sorted(shown("heel", invert=True)) == sorted(n for n in names if "heel" not in n)
    ul = types.SimpleNamespace(filter_name="", bitflag_filter_item=1 << 30, use_filter_invert=False,
                               use_filter_sort_alpha=True)
    flags, order = panel.WELMAN_IK_UL_pins.filter_items(ul, bpy.context, settings, "pins")
    assert flags == [] and [names[i] for i in sorted(range(len(names)), key=order.__getitem__)] == sorted(names)


def test_the_bake_buttons_say_why_they_are_disabled(human):
    """From the sidebar: Bake and Edit Motion greyed out on an armature with no animation (a
    script still gets the error that says so); keyed, they are available."""
    from welman_ik.blender.bake import operators as bake_operators

    sidebar = types.SimpleNamespace(object=human, region=types.SimpleNamespace(type="UI"))
    assert not bake_operators.WELMAN_IK_OT_bake.poll(sidebar)
    assert not bake_operators.WELMAN_IK_OT_edit_motion.poll(sidebar)
    with pytest.raises(RuntimeError, match="no action to bake"):
        bpy.ops.welman_ik.bake(frame_start=1, frame_end=3)
    human.pose.bones["hand.R"].keyframe_insert("location", frame=1)
    assert bake_operators.WELMAN_IK_OT_bake.poll(sidebar)
    human.data.bones.active = None
    assert not bake_operators.WELMAN_IK_OT_edit_motion.poll(sidebar)
    human.data.bones.active = human.data.bones["hand.R"]
    assert bake_operators.WELMAN_IK_OT_edit_motion.poll(sidebar)
    for each in human.welman_ik.pins:
        each.enabled = False
    assert not bake_operators.WELMAN_IK_OT_bake.poll(sidebar)


class _Layout:
    """Stands in for a UILayout: every property and operator drawn must exist; records
    (kind, text) of what is drawn."""

    def __init__(self, log: list):
        self.log = log

    def __getattr__(self, name):  # row, column, box, split, separator, ...
        return lambda *args, **kwargs: _Layout(self.log)

    def prop(self, data, name, **kwargs):
        assert name in data.bl_rna.properties, name
        rna = data.bl_rna.properties[name]  # (a checkbox's text is beside it, not in the label column)
        self.log.append(("check" if rna.type == "BOOLEAN" else "prop", kwargs.get("text", rna.name)))

    def prop_search(self, data, name, *args, **kwargs):
        self.prop(data, name, **kwargs)

    def label(self, text="", **kwargs):
        self.log.append(("label", text))

    def operator(self, idname, **kwargs):
        module, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), name), idname
        self.log.append(("operator", kwargs.get("text", "")))
        return types.SimpleNamespace()


def _drawn(panel_class) -> list:
    """(kind, text) of what ``panel_class`` draws in the current context."""
    log: list = []
    fake = types.SimpleNamespace(layout=_Layout(log))
    fake.draw_offer = lambda *args: panel.WELMAN_IK_PT_pins.draw_offer(fake, *args)
    panel_class.draw(fake, bpy.context)
    return log


LABEL_COLUMN = 11  # characters the default sidebar's label column shows whole (at the default UI scale: "Location X"
# and "Root Motion" do, "Contact Speed" does not)


@pytest.mark.parametrize("name", ["WELMAN_IK_PT_main", "WELMAN_IK_PT_solver", "WELMAN_IK_PT_pins",
                                  "WELMAN_IK_PT_last_solve", "WELMAN_IK_PT_bake"])
def test_every_panel_draws_with_labels_that_fit(human, name):
    """Each sub-panel draws on a pinned rig, with a selected pin; every field's label fits the
    default sidebar's label column ("Max Iter...", "Contact ..." and "Preferre..." did not)."""
    human.pose.bones["hand.R"].keyframe_insert("location", frame=1)
    log = _drawn(getattr(panel, name))
    assert log
    long = [text for kind, text in log if kind == "prop" and len(text) > LABEL_COLUMN]
    assert long == []


@pytest.mark.parametrize("kind", [k[0] for k in properties.PIN_KINDS])
def test_every_pin_kind_fields_fit(bare_human, kind):
    obj = bare_human
    obj.data.bones.active = obj.data.bones["spine"]  # (a balance pin shows the active bone's mass)
    pin_by_kind(obj, kind)
    obj.welman_ik.active_pin_index = 0
    log = _drawn(panel.WELMAN_IK_PT_pins)
    assert [text for kind_, text in log if kind_ == "prop" and len(text) > LABEL_COLUMN] == []


def test_the_retarget_panel_draws_with_labels_that_fit(bare_human):
    """The Retarget section with a source chosen, its map filled and a retarget's figures: every
    field's label fits, and it offers Fill Map and Retarget for that source."""
    from conftest import import_clip

    from welman_ik.blender.ui import retarget_panel

    target = bare_human
    bpy.ops.object.mode_set(mode="OBJECT")
    source = import_clip("mocapbank_clip.bvh")
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = target
    target.welman_ik.retarget_source = source
    assert bpy.ops.welman_ik.retarget(frame_start=1, frame_end=3) == {"FINISHED"}  # the panel's source
    log = _drawn(retarget_panel.WELMAN_IK_PT_retarget)
    assert ("operator", "Fill Map") in log and any(kind == "label" and text.startswith("Hips:") for kind, text in log)
    long = [text for kind, text in log if kind == "prop" and len(text) > LABEL_COLUMN]
    assert long == []
