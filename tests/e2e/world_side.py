"""E2E harness, Blender side of the ``world`` mode (pins on the world): imported by
``blender_side.py``, which calls ``setup`` after building the metarig and serves ``OPS`` as its
``op`` requests (``bind`` first hands over its state: the window, the 3D viewport and its sidebar).

``setup`` puts an Empty "Cup" (a cube 8 cm wide) at the right hand, a little past and below its
fingertips, not selected. The driver does the rest in the window, as a person would; these ops
only look: ``world_look`` (the mode, the selected objects and bones, where things are in the
window, the pins with their goals in the world, the hand's evaluated tail, the pins list's
labels, whether the sidebar's Pin To is enabled and why not) and ``world_hover`` (the Python
command of the sidebar button under the pointer, as Ctrl+Shift+C over it copies it: how the
driver finds the buttons it clicks).
"""

from __future__ import annotations

import types

import bpy
from bpy_extras import view3d_utils
from mathutils import Vector

CUP = "Cup"
CUP_SIZE = 0.04  # the Empty's display size: a cube 8 cm wide
CUP_OFFSET = (-0.03, 0.0, -0.07)  # from the right hand's tail to the Cup's origin [m]: the faint tether shows
HAND = "hand.R"  # the bone pinned to the Cup (its tail: Pin To's default anchor)
OTHER = "hand.L"  # the bone then dragged
BODY = "spine.002"  # a bone clicked to make the armature active in Object Mode
S = types.SimpleNamespace(state=None)


def bind(state) -> None:
    """blender_side's state (``window``, ``area``, ``region``, ``ui_region``, ``events``)."""
    S.state = state


def setup(obj) -> None:
    """The Cup at the right hand (evaluated), linked beside the armature, not selected."""
    bpy.context.view_layer.update()
    tail = obj.matrix_world @ obj.pose.bones[HAND].tail
    cup = bpy.data.objects.new(CUP, None)
    cup.empty_display_type = "CUBE"
    cup.empty_display_size = CUP_SIZE
    cup.location = tail + Vector(CUP_OFFSET)
    (obj.users_collection[0] if obj.users_collection else bpy.context.scene.collection).objects.link(cup)
    cup.select_set(False)
    bpy.context.view_layer.update()


def _window(world) -> list | None:
    st = S.state
    rv3d = st.area.spaces.active.region_3d
    p = view3d_utils.location_3d_to_region_2d(st.region, rv3d, Vector(world))
    return None if p is None else [st.region.x + float(p.x), st.region.y + float(p.y)]


def _evaluated_point(obj, name: str, anchor: float) -> Vector:
    """A point along pose bone ``name`` as the depsgraph evaluated it, in the world."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    pb = evaluated.pose.bones[name]
    return evaluated.matrix_world @ (pb.head + anchor * (pb.tail - pb.head))


class Recorder:
    """Stands in for a UILayout: keeps the text of every label drawn (any other call gives
    another recorder)."""

    def __init__(self, log: list):
        self.log = log

    def __getattr__(self, name):
        return lambda *args, **kwargs: Recorder(self.log)

    def label(self, text="", **kwargs):
        self.log.append(text)


def _list_labels(obj) -> list:
    """The text of each row of the sidebar's pins list, as its ``draw_item`` draws it."""
    from welman_ik.blender.ui import pin_list

    settings = obj.welman_ik
    ui_list = types.SimpleNamespace()
    rows = []
    with bpy.context.temp_override(window=S.state.window, screen=S.state.window.screen, area=S.state.area,
                                   region=S.state.ui_region):
        for i, pin in enumerate(settings.pins):
            log: list = []
            pin_list.WELMAN_IK_UL_pins.draw_item(ui_list, bpy.context, Recorder(log), settings, pin, 0, settings,
                                                 "active_pin_index", i)
            rows.append(" ".join(log))
    return rows


def _pin_to_button(obj) -> dict:
    """Whether the sidebar's Pin To is enabled (its poll from the sidebar), and the reason it
    gives when not."""
    from welman_ik.blender.pins.operators import WELMAN_IK_OT_pin_to

    st = S.state
    with bpy.context.temp_override(window=st.window, screen=st.window.screen, area=st.area, region=st.ui_region):
        enabled = bool(bpy.ops.welman_ik.pin_to.poll())
        refusal = WELMAN_IK_OT_pin_to.sidebar_refusal(bpy.context) if obj.mode == "POSE" else ""
    return {"enabled": enabled, "refusal": refusal}


def look(obj, request) -> dict:
    from welman_ik.blender.rig.targets import lost_reason, world_fields

    bpy.context.view_layer.update()
    view_layer = bpy.context.view_layer
    cup = bpy.data.objects.get(CUP)
    active = view_layer.objects.active
    pins = []
    for pin in obj.welman_ik.pins:
        row = {"bone": pin.bone, "kind": pin.kind, "anchor": pin.anchor, "enabled": pin.enabled,
               "target_object": pin.target_object.name if pin.target_object else None,
               "target_bone": pin.target_bone, "space_name": pin.space_name, "record": list(pin.location)}
        if pin.bone in obj.pose.bones and pin.kind in {"POSITION", "POSE"}:
            goal = Vector(world_fields(pin)["location"])
            point = _evaluated_point(obj, pin.bone, pin.anchor)
            row.update(goal=list(goal), point=list(point), error=(point - goal).length, lost=lost_reason(pin),
                       goal_window=_window(goal))
        pins.append(row)
    mode = obj.mode
    out = {
        "mode": mode,
        "active_object": active.name if active else None,
        "selected_objects": sorted(o.name for o in view_layer.objects if o.select_get()),
        "active_bone": obj.data.bones.active.name if obj.data.bones.active else None,
        "selected_bones": sorted(b.name for b in obj.data.bones if b.select) if mode == "POSE" else [],
        "hand_tail": list(_evaluated_point(obj, HAND, 1.0)),
        "other_tail": list(_evaluated_point(obj, OTHER, 1.0)),
        "cup": list(cup.matrix_world.translation) if cup else None,
        "windows": {
            "cup": _window(cup.matrix_world.translation) if cup else None,
            # The cube's outer edge (the side away from the hand): a click there picks the Cup.
            "cup_edge": _window(cup.matrix_world @ Vector((-CUP_SIZE, 0.0, 0.0))) if cup else None,
            HAND: _window(_evaluated_point(obj, HAND, 0.5)),
            OTHER: _window(_evaluated_point(obj, OTHER, 0.5)),
            BODY: _window(_evaluated_point(obj, BODY, 0.5)),
        },
        "pins": pins,
        "list_labels": _list_labels(obj),
        "pin_to": _pin_to_button(obj),
    }
    return out


def hover(obj, request) -> dict:
    """The Python command of the sidebar button under the pointer (Blender's Copy Python
    Command, Ctrl+Shift+C over a button; None over no operator button), and the last mouse
    position the window saw (``events``: blender_side's event log), so the driver knows that the
    pointer's move had arrived."""
    st = S.state
    command = None
    with bpy.context.temp_override(window=st.window, screen=st.window.screen, area=st.area, region=st.ui_region):
        if bpy.ops.ui.copy_python_command_button.poll():
            bpy.context.window_manager.clipboard = ""
            bpy.ops.ui.copy_python_command_button()
            command = bpy.context.window_manager.clipboard
    moves = [e for e in st.events if e["type"] in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}]
    return {"command": command, "last_mouse": [moves[-1]["x"], moves[-1]["y"]] if moves else None}


OPS = {"world_look": look, "world_hover": hover}
