"""Pins with frame ranges as the user sees them on the scene's current frame: the overlay draws
a pin out of force dim and without its miss line, a pin in force green or red by its own miss;
the pins list tells each pin's point (heel, toe, head, tail, an anchor) and its frames."""

from __future__ import annotations

import types

import bpy
import numpy as np
from conftest import world_point

from welman_ik.blender.ui import panel, pin_list, pin_shapes

HELD, VIOLATED, IDLE = pin_shapes.PIN_HELD, pin_shapes.PIN_VIOLATED, pin_shapes.PIN_IDLE
LIFT = np.array([0.0, 0.0, 0.2])


def plant(obj, bone: str, anchor: float, start: int, end: int, offset=(0.0, 0.0, 0.0)):
    """A position pin as Detect Contacts makes one: at ``anchor`` along ``bone``, in force on
    frames ``start``..``end``, ``offset`` from where the point is now."""
    p = obj.welman_ik.pins.add()
    p.bone, p.kind, p.anchor = bone, "POSITION", anchor
    p.frame_start, p.frame_end = start, end
    p.location = world_point(obj, bone, anchor) + np.asarray(offset)
    return p


def on_frame(frame: int) -> dict:
    """The overlay's drawing of the active armature on ``frame``."""
    bpy.context.scene.frame_set(frame)
    return pin_shapes.overlay_geometry(bpy.context.object)


def colours(parts: dict, primitive: str) -> set:
    return {colour for kind, colour in parts if kind == primitive}


def test_a_plant_out_of_force_is_dim_without_its_line(bare_human):
    """Fifteen plants after a bake that held them: on a frame none applies to (the pose
    elsewhere), every marker dim and no line; on a plant's frames, its own colour."""
    obj = bare_human
    for k in range(15):
        plant(obj, ("foot.L", "foot.R")[k % 2], (0.0, 1.0)[k % 3 == 0], 10 + 10 * k, 15 + 10 * k, offset=LIFT)
    parts = on_frame(1)
    assert colours(parts, "POINTS") == {IDLE}
    assert len(parts[("POINTS", IDLE)]) == 15
    assert not any(kind == "LINES" for kind, _ in parts)  # no miss line, not even a dim one
    assert all(colour[:3] == pin_shapes.IDLE for _, colour in parts if colour != pin_shapes.LOCKED)

    parts = on_frame(12)  # the first plant alone is in force; the pose misses it by LIFT
    assert len(parts[("POINTS", VIOLATED)]) == 1 and len(parts[("POINTS", IDLE)]) == 14
    first = obj.welman_ik.pins[0]
    line = parts[("LINES", VIOLATED)]
    assert np.allclose(line, [world_point(obj, first.bone, first.anchor), np.array(first.location)], atol=1e-5)

    first.location = world_point(obj, first.bone, first.anchor)  # now the pose holds it
    parts = pin_shapes.overlay_geometry(obj)
    assert colours(parts, "POINTS") == {HELD, IDLE} and not any(kind == "LINES" for kind, _ in parts)


def test_the_range_ends_are_in_force_and_always_is_every_frame(bare_human):
    obj = bare_human
    plant(obj, "foot.L", 0.0, 5, 8, offset=LIFT)
    plant(obj, "hand.L", 1.0, 0, 0, offset=LIFT)
    ranged, always = obj.welman_ik.pins
    for frame, expected in ((4, False), (5, True), (8, True), (9, False)):
        bpy.context.scene.frame_set(frame)
        assert list(pin_shapes.PinScene(obj).in_force) == [expected, True], frame
        g = pin_shapes.pin_geometry(obj, ranged)
        assert set(g) == ({("POINTS", VIOLATED), ("LINES", VIOLATED)} if expected else {("POINTS", IDLE)}), frame
        assert pin_shapes.pin_held(obj, ranged) is not expected  # out of force it holds nothing: not red
        assert set(pin_shapes.pin_geometry(obj, always)) == {("POINTS", VIOLATED), ("LINES", VIOLATED)}
    # A frame given: the scene's own (9) is not asked.
    assert ("LINES", VIOLATED) in pin_shapes.pin_geometry(obj, ranged, pin_shapes.PinScene(obj, frame=6))
    assert ("LINES", VIOLATED) in pin_shapes.overlay_geometry(obj, frame=6)


def test_every_kind_out_of_force_is_dim_and_draws_no_miss(bare_human):
    """Each kind's shape keeps its form, only dimmed: no status colour, no miss line."""
    obj = bare_human
    far = world_point(obj, "hand.L") + np.array([0.0, -0.5, 0.3])
    for kind in ("POSITION", "ORIENTATION", "POSE", "LINE", "PLANE", "AIM", "REGION", "TOGETHER"):
        p = obj.welman_ik.pins.add()
        p.bone, p.kind, p.location, p.target_bone = "hand.L", kind, far, "hand.R"
        p.rotation, p.frame_start, p.frame_end = (0.0, 1.0, 0.0, 0.0), 20, 30
    b = obj.welman_ik.pins.add()
    b.kind, b.location, b.direction, b.frame_start, b.frame_end = "BALANCE", far, (0.0, 0.0, 1.0), 20, 30
    bpy.context.scene.frame_set(25)
    inside = {p.kind: pin_shapes.pin_geometry(obj, p) for p in obj.welman_ik.pins}
    bpy.context.scene.frame_set(1)
    for p in obj.welman_ik.pins:
        g = pin_shapes.pin_geometry(obj, p)
        assert g and all(colour[:3] == pin_shapes.IDLE for _, colour in g), p.kind
        assert all(c[3] < 1.0 for _, c in g), p.kind
        kept = {kind: sum(len(v) for (k, c), v in inside[p.kind].items()
                          if k == kind and c not in {VIOLATED, pin_shapes.FAINT_VIOLATED})
                for kind in ("POINTS", "LINES", "TRIS")}
        drawn = {kind: sum(len(v) for (k, _), v in g.items() if k == kind) for kind in ("POINTS", "LINES", "TRIS")}
        assert drawn["POINTS"] == sum(len(v) for (k, _), v in inside[p.kind].items() if k == "POINTS"), p.kind
        assert drawn["LINES"] <= sum(len(v) for (k, _), v in inside[p.kind].items() if k == "LINES"), p.kind
        assert drawn["LINES"] >= kept["LINES"] and drawn["TRIS"] == kept["TRIS"], p.kind
    parts = pin_shapes.overlay_geometry(obj)
    assert not {VIOLATED, HELD} & {colour for _, colour in parts}


def test_the_support_polygon_is_made_of_the_plants_in_force(bare_human):
    obj = bare_human
    for bone, start, end in (("toe.L", 0, 0), ("toe.R", 0, 0), ("heel.02.L", 0, 0), ("heel.02.R", 1, 5),
                             ("hand.L", 10, 20)):
        plant(obj, bone, 1.0, start, end)
    obj.welman_ik.pins.add().kind = "BALANCE"
    obj.welman_ik.pins[-1].use_support = True
    bpy.context.scene.frame_set(3)
    assert len(pin_shapes.PinScene(obj).support()) == 4
    bpy.context.scene.frame_set(15)
    scene = pin_shapes.PinScene(obj)
    assert len(scene.support()) == 4
    assert np.allclose(scene.support()[-1], obj.welman_ik.pins[4].location)


def test_the_drawing_is_kept_across_frames_until_a_pin_comes_into_force(bare_human):
    """The frame decides through which pins are in force: frames that change nothing keep the
    drawing (no work per pin), a frame that brings a pin in or out builds it again."""
    obj = bare_human
    plant(obj, "foot.L", 0.0, 10, 20, offset=LIFT)
    first = on_frame(1)
    assert on_frame(5) is first  # (no animation: the pose is the same on every frame)
    inside = on_frame(10)
    assert inside is not first and ("LINES", VIOLATED) in inside
    assert on_frame(20) is inside
    assert on_frame(21) is not inside and ("POINTS", IDLE) in pin_shapes.overlay_geometry(obj)


# --------------------------------------------------------------------------- the pins list


class Recorder:
    """Stands in for a UILayout: records labels (text, greyed or not) and props."""

    def __init__(self, log: list, parent: Recorder | None = None):
        self.log, self.parent = log, parent
        self.active, self.alignment = True, "EXPAND"

    def _active(self) -> bool:
        return self.active and (self.parent is None or self.parent._active())

    def row(self, *args, **kwargs) -> Recorder:
        return Recorder(self.log, self)

    def label(self, text="", icon="NONE", **kwargs):
        self.log.append(("label", text, self._active()))

    def prop(self, data, name, **kwargs):
        self.log.append(("prop", name))


def row_labels(obj, pin) -> list:
    log: list = []
    settings = obj.welman_ik
    pin_list.WELMAN_IK_UL_pins.draw_item(None, bpy.context, Recorder(log), settings, pin, 0, settings,
                                         "active_pin_index", 0)
    return [entry[1:] for entry in log if entry[0] == "label"]


def test_the_list_row_tells_heel_from_toe_and_the_frames(bare_human):
    obj = bare_human
    for bone, anchor, start, end in (("foot.L", 0.0, 1, 40), ("foot.L", 1.0, 41, 60), ("hand.L", 1.0, 0, 0),
                                     ("hand.R", 0.0, 0, 0), ("forearm.L", 0.35, 0, 0)):
        plant(obj, bone, anchor, start, end)
    turn = obj.welman_ik.pins.add()
    turn.bone, turn.kind, turn.frame_start, turn.frame_end = "hand.R", "ORIENTATION", 3, 9
    heel, toe, tail, head, between, turn = obj.welman_ik.pins  # (an add may move the earlier ones)
    bpy.context.scene.frame_set(20)
    # One label each, the name first (a narrow sidebar cuts the end), greyed out of force.
    assert row_labels(obj, heel) == [("foot.L heel 1–40", True)]
    assert row_labels(obj, toe) == [("foot.L toe 41–60", False)]  # greyed: not in force on 20
    assert row_labels(obj, tail) == [("hand.L always", True)]  # (the tail, the default, goes without saying)
    assert row_labels(obj, head) == [("hand.R head always", True)]
    assert row_labels(obj, between) == [("forearm.L 0.35 always", True)]
    assert row_labels(obj, turn) == [("hand.R 3–9", False)]  # an orientation holds no point
    bpy.context.scene.frame_set(41)
    assert row_labels(obj, heel) == [("foot.L heel 1–40", False)] and row_labels(obj, toe)[0][1]
    # A framed pin on a bone that is not a foot is no plant: its point is the bone's.
    plant(obj, "hand.L", 0.0, 20, 40)
    assert pin_list.pin_detail(obj.welman_ik.pins[-1]) == "head 20–40"
    assert panel.WELMAN_IK_UL_pins is pin_list.WELMAN_IK_UL_pins and panel.pin_name is pin_list.pin_name
    # Short enough beside the name in Blender's default sidebar.
    assert max(len(pin_list.pin_detail(p)) for p in obj.welman_ik.pins) <= len("0.35 always")


def test_the_list_still_filters_and_sorts_by_name(bare_human):
    obj = bare_human
    for bone, anchor, start, end in (("foot.R", 1.0, 30, 40), ("foot.L", 1.0, 30, 40), ("foot.L", 0.0, 1, 20),
                                     ("hand.L", 1.0, 0, 0), ("foot.L", 1.0, 1, 20)):
        plant(obj, bone, anchor, start, end)
    settings = obj.welman_ik

    def shown(pattern: str) -> list:
        ul = types.SimpleNamespace(filter_name=pattern, bitflag_filter_item=1 << 30, use_filter_invert=False,
                                   use_filter_sort_alpha=False)
        flags, _ = pin_list.WELMAN_IK_UL_pins.filter_items(ul, bpy.context, settings, "pins")
        return [i for i, flag in enumerate(flags) if flag & ul.bitflag_filter_item]

    assert shown("foot.L") == [1, 2, 4] and shown("*.R") == [0] and shown("hand") == [3]
    ul = types.SimpleNamespace(filter_name="", bitflag_filter_item=1 << 30, use_filter_invert=False,
                               use_filter_sort_alpha=True)
    _, order = pin_list.WELMAN_IK_UL_pins.filter_items(ul, bpy.context, settings, "pins")
    rows = sorted(range(len(settings.pins)), key=order.__getitem__)
    # By name; one bone's pins by their frames, heel before toe.
    assert rows == [2, 4, 1, 0, 3]
    assert [pin_list.pin_detail(settings.pins[i]) for i in rows[:3]] == ["heel 1–20", "toe 1–20", "toe 30–40"]
