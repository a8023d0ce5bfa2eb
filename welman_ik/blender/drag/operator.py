"""The interactive drag as an operator: ``ModalDrag`` (the bone under the mouse follows it,
re-solved on every event; shared with the motion edit), ``bpy.ops.welman_ik.drag``, and the
keys that toggle pins while dragging."""

from __future__ import annotations

import contextlib
import functools

import bpy
from bpy.props import FloatProperty, FloatVectorProperty, StringProperty

from ..pins.following import release_lost
from ..rig import views
from ..rig.model import RigError
from ..rig.polls import ArmatureOperator
from ..rig.units import length_text, time_text
from . import session, solver, viewport
from .state import DRAG_STATE

# While dragging, a key toggles a pin of its kind on the bone under the mouse.
PIN_SHORTCUTS = {"P": "POSITION", "O": "ORIENTATION", "L": "LINE", "N": "PLANE", "A": "AIM", "R": "REGION",
                 "T": "TOGETHER", "B": "BALANCE", "F": "FLOOR"}


def pin_shortcut(event) -> str | None:
    """The pin kind an event's key toggles while dragging (Shift+P: pose), or None."""
    if event.type == "P" and event.shift:
        return "POSE"
    return PIN_SHORTCUTS.get(event.type) if not event.shift else None


# The status bar while dragging, as Blender's own modal tools show their keys: (icons, meaning).
KEY_HINTS = (
    (("MOUSE_LMB",), "Confirm"), (("MOUSE_RMB",), "Cancel"),
    (("EVENT_CTRL", "MOUSE_MMB_SCROLL"), "Chain Length"), (("EVENT_TAB",), "Next Solver"),
    ((), "Pin the bone under the mouse (again: unpin):"), (("EVENT_P",), "Position"),
    (("EVENT_SHIFT", "EVENT_P"), "Pose"), (("EVENT_O",), "Orientation"),
    (("EVENT_L",), "Line"), (("EVENT_N",), "Plane"), (("EVENT_A",), "Aim"), (("EVENT_R",), "Region"),
    (("EVENT_T",), "Together"), (("EVENT_B",), "Balance"), (("EVENT_F",), "Floor"),
)
ICON_STAND_INS = {"MOUSE_MMB_SCROLL": "MOUSE_MMB"}  # (Blender 3.4 and 4.2 have no scroll-wheel icon)


@functools.cache
def _icons() -> frozenset:
    return frozenset(bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"].enum_items.keys())


def draw_status(header, context) -> None:
    """The status bar's draw while dragging: each key's icon and what it does."""
    layout = header.layout
    for icons, meaning in KEY_HINTS:
        row = layout.row(align=True)
        for icon in icons:
            row.label(text="", icon=icon if icon in _icons() else ICON_STAND_INS.get(icon, "BLANK1"))
        row.label(text=meaning)
        layout.separator()


def report_lost(operator, obj) -> None:
    """Disable the pins whose target is gone and say so: the solve goes on without them."""
    for text in release_lost(obj):
        operator.report({"WARNING"}, text)


class ModalDrag:
    """The interactive drag, shared by the drag and the motion edit: the bone under the
    mouse (or the active bone) follows the mouse, re-solved on every event. A subclass
    makes the session (``_start``) and says what confirming does (``_confirm``)."""

    # SKIP_SAVE: each drag starts from the contract's defaults, not from the last drag's values.
    bone: StringProperty(name="Bone", options={"SKIP_SAVE"},
                         description="Pose bone to move (empty: the bone under the mouse, or the active bone)")
    target: FloatVectorProperty(name="Target", size=3, subtype="TRANSLATION", unit="LENGTH", options={"SKIP_SAVE"},
                                description="World-space goal of the anchor point")
    anchor: FloatProperty(name="Anchor", min=0.0, max=1.0, default=1.0, subtype="FACTOR", options={"SKIP_SAVE"},
                          description="The dragged point along the bone: 0 head, 1 tail "
                          "(interactive drags default to the middle unless this is set)")

    def _bone(self, context) -> str | None:
        if self.bone:
            return self.bone
        active = context.active_pose_bone
        if active is None:
            self.report({"ERROR"}, "No bone given and no active pose bone")
            return None
        return active.name

    def invoke(self, context, event):
        if self.refused(context):
            return {"CANCELLED"}
        report_lost(self, context.object)
        in_viewport = context.region is not None and context.region.type == "WINDOW" and context.region_data
        # From the viewport itself (the shortcut) drag the bone under the mouse; from the
        # sidebar's button, the active bone, in the area's main view.
        region, rv3d = (context.region, context.region_data) if in_viewport else viewport.view_region(context)
        if region is None or rv3d is None:
            self.report({"ERROR"}, "The interactive drag needs a 3D viewport; "
                        "from a script, give bone and target (the default, EXEC, form)")
            return {"CANCELLED"}
        obj = context.object
        mouse = viewport.region_mouse(region, event)
        bone = self.bone or (viewport.bone_under_mouse(region, rv3d, obj, mouse) if in_viewport else "")
        if not bone:
            bone = self._bone(context)
            if bone is None:
                return {"CANCELLED"}
        anchor = self.anchor if self.properties.is_property_set("anchor") else session.DEFAULT_ANCHOR
        try:
            self._session = self._start(context, obj, bone, anchor)
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        self._view = (region, rv3d)
        # The bone moves by the mouse's motion from here, wherever the mouse is (over the
        # sidebar's button, or a few pixels off the bone under the shortcut).
        self._grab = viewport.grab_offset(region, rv3d, self._session.effector(), mouse)
        DRAG_STATE.session = self._session
        context.window_manager.modal_handler_add(self)
        context.area.header_text_set(self._session.header(context.scene))
        if context.workspace is not None:
            context.workspace.status_text_set(draw_status)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        try:
            return self._handle(context, event)
        except Exception as error:  # noqa: BLE001 - never leave a half-finished drag behind
            with contextlib.suppress(Exception):
                self._session.cancel()
            self.report({"ERROR"}, f"The drag stopped ({type(error).__name__}: {error}); the pose is restored")
            return self._finish(context, {"CANCELLED"})

    def _handle(self, context, event):
        drag = self._session
        if event.type == "MOUSEMOVE":
            region, rv3d = self._view
            x, y = viewport.region_mouse(region, event)
            origin, direction = viewport.mouse_ray(region, rv3d, (x + self._grab[0], y + self._grab[1]))
            try:
                drag.move(origin, direction)
            except RigError as error:
                self.report({"WARNING"}, str(error))
        elif event.value == "PRESS" and (
            event.type in {"PAGE_UP", "PAGE_DOWN"} or (event.ctrl and event.type in {"WHEELUPMOUSE", "WHEELDOWNMOUSE"})
        ):
            drag.change_chain_length(1 if event.type in {"PAGE_UP", "WHEELUPMOUSE"} else -1)
        elif event.value == "PRESS" and event.type == "TAB":
            drag.cycle_solver()
        elif event.value == "PRESS" and not (event.ctrl or event.alt) and pin_shortcut(event) is not None:
            region, rv3d = self._view
            hovered = viewport.bone_under_mouse(region, rv3d, context.object, viewport.region_mouse(region, event))
            try:
                self.report({"INFO"}, drag.toggle_pin(context, pin_shortcut(event), hovered or ""))
            except RigError as error:
                self.report({"WARNING"}, str(error))
        elif event.value == "PRESS" and event.type in {"LEFTMOUSE", "RET", "NUMPAD_ENTER"}:
            # The redo panel re-runs the script form from the start pose: give it this drag.
            self.bone, self.anchor = drag.bone, drag.anchor
            self.target = tuple(drag.goal if drag.goal is not None else drag.effector())
            return self._finish(context, self._confirm(context, drag))
        elif event.value == "PRESS" and event.type in {"RIGHTMOUSE", "ESC"}:
            drag.cancel()
            return self._finish(context, {"CANCELLED"})
        else:
            return {"RUNNING_MODAL"}
        if context.area is not None:
            context.area.header_text_set(drag.header(context.scene))
            context.area.tag_redraw()
        # The pose is written in bulk (``foreach_set``), which sends no notifier: the Properties
        # editor's bone transform would show the old values until the mouse passed over it.
        views.redraw(("PROPERTIES",))
        return {"RUNNING_MODAL"}

    def _finish(self, context, result):
        DRAG_STATE.latencies = list(self._session.milliseconds)
        DRAG_STATE.session = None
        if context.area is not None:
            context.area.header_text_set(None)
            context.area.tag_redraw()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        views.redraw()  # the pins the drag moved or toggled, in every viewport
        return result


class WELMAN_IK_OT_drag(ModalDrag, ArmatureOperator, bpy.types.Operator):
    """Drag the active bone with the mouse, every pin, lock and joint range in force. Click to keep the pose, right-click or Esc to put it back"""

    bl_idname = "welman_ik.drag"
    bl_label = "Drag"

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        # The sidebar's button drags the active bone; a script names its bone, the shortcut
        # takes the one under the mouse.
        if context.object.data.bones.active is None:
            return ("Click the bone to drag first (in Pose Mode), or press the drag shortcut (Ctrl+Shift+D) with "
                    "the mouse over a bone")
        return ""

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        bone = self._bone(context)
        if bone is None:
            return {"CANCELLED"}
        report_lost(self, obj)
        try:
            figures = solver.drag(context, obj, bone, tuple(self.target), self.anchor)
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        except Exception as error:  # noqa: BLE001 - a solver failure is reported, not raised
            self.report({"ERROR"}, f"The solve failed ({type(error).__name__}: {error}); the pose is unchanged")
            return {"CANCELLED"}
        scene = context.scene
        text = (f"{session.SOLVER_NAMES.get(obj.welman_ik.solver)}: {figures.result.iterations} iterations, "
                f"drag error {length_text(scene, figures.drag_error)}, largest pin error "
                f"{length_text(scene, figures.max_pin_error)} (evaluated), {time_text(figures.milliseconds)}")
        if figures.converged:
            self.report({"INFO"}, text)
        else:
            self.report({"WARNING"}, f"Not converged: {figures.message or text}")
        return {"FINISHED"}

    def _start(self, context, obj, bone: str, anchor: float):
        return session.DragSession(obj, bone, anchor, event_budget=DRAG_STATE.event_budget(context))

    def _confirm(self, context, drag) -> set:
        drag.confirm(context)
        return {"FINISHED"}

CLASSES = (WELMAN_IK_OT_drag,)
