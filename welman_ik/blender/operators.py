"""The scripting surface: pin, unpin, clear_pins, remove_pin, lock, unlock, drag, bake,
detect_contacts, edit_motion."""

from __future__ import annotations

import contextlib
import time

import bpy
import numpy as np
from bpy.props import (
    BoolProperty,
    BoolVectorProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    StringProperty,
)

from . import bake, keyframes, overlay, preferences, selection, session, solve, viewport
from . import contacts as foot_contacts
from .pinning import add_pin, pin_records
from .properties import AIM_AXIS_ITEMS, PIN_KINDS
from .rig import RigError


def linked_refusal(obj) -> str:
    """Why armature ``obj`` cannot be edited because it is linked from a library ('' when it
    can). A library override is posed like a local armature: its pose, pins and settings are
    its own (its armature data usually stays linked; nothing here writes to it)."""
    library = obj.library
    if library is None:
        return ""
    # ID.is_editable (not in Blender 3.4): linked data-blocks are not, except editable assets.
    if getattr(obj, "is_editable", False):
        return ""
    return (f"Armature '{obj.name}' is linked from library '{library.name}' and cannot be edited; "
            "make a library override first")


def degenerate_transform(obj) -> bool:
    """The armature's world matrix is not finite or not invertible (zero scale); the same
    test the solver's rig model makes."""
    world = np.array(obj.matrix_world, dtype=float)
    return not np.all(np.isfinite(world)) or abs(np.linalg.det(world[:3, :3])) < 1e-12


def armature_poll(cls, context) -> bool:
    obj = context.object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("The active object is not an armature")
        return False
    refusal = linked_refusal(obj)
    if refusal:
        cls.poll_message_set(refusal)
        return False
    if obj.mode == "EDIT":
        cls.poll_message_set("Leave edit mode: Welman IK works on the pose")
        return False
    return True


def selected_pose_bones(obj) -> list:
    return [pb for pb in obj.pose.bones if selection.is_selected(pb) and not selection.is_hidden(pb)]


class ArmatureOperator:
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return armature_poll(cls, context)

    def refused(self, context) -> bool:
        """Execute-time guard (poll already refuses; this keeps any other way in honest):
        report why the active armature cannot be edited, if it cannot."""
        obj = context.object
        refusal = linked_refusal(obj) if obj is not None and obj.type == "ARMATURE" else ""
        if refusal:
            self.report({"ERROR"}, refusal)
        return bool(refusal)


class SelectionOperator(ArmatureOperator):
    """An operator on the selected pose bones."""

    @classmethod
    def poll(cls, context):
        if not armature_poll(cls, context):
            return False
        if not selected_pose_bones(context.object):
            cls.poll_message_set("Select one or more pose bones first")
            return False
        return True

    def selection(self, context):
        bones = selected_pose_bones(context.object)
        if not bones:
            self.report({"ERROR"}, "Select one or more pose bones first")
        return bones


PLANE_NORMAL_ITEMS = [
    ("UP", "Up", "The plane is level: its normal is the world's Z axis"),
    ("VIEW", "View", "The plane faces the view: its normal points along the view direction"),
]


class WELMAN_IK_OT_pin(ArmatureOperator, bpy.types.Operator):
    """Pin each selected bone as it is now (a balance pin needs no bone; a together pin joins
    the selected bone to the active one)"""

    bl_idname = "welman_ik.pin"
    bl_label = "Pin"

    kind: EnumProperty(name="Kind", items=PIN_KINDS, default="POSITION", options={"SKIP_SAVE"})
    anchor: FloatProperty(name="Anchor", min=0.0, max=1.0, default=1.0, subtype="FACTOR", options={"SKIP_SAVE"},
                          description="The held point along the bone: 0 head, 1 tail")
    weight: FloatProperty(name="Weight", min=0.0, default=1.0, soft_max=10.0, options={"SKIP_SAVE"})
    axes: BoolVectorProperty(name="Axes", size=3, default=(True, True, True), subtype="XYZ", options={"SKIP_SAVE"},
                             description="Orientation, pose: which of the bone's own axes are held")
    plane_normal: EnumProperty(name="Plane", items=PLANE_NORMAL_ITEMS, default="UP", options={"SKIP_SAVE"},
                               description="Plane: which way the plane through the point faces")
    aim_axis: EnumProperty(name="Aim Axis", items=AIM_AXIS_ITEMS, default="Y", options={"SKIP_SAVE"},
                           description="Aim: the bone axis that keeps pointing at the target")
    radius: FloatProperty(name="Radius", min=0.0, default=0.05, unit="LENGTH", options={"SKIP_SAVE"},
                          description="Region: the sphere's radius")
    use_support: BoolProperty(name="Support Polygon", default=False, options={"SKIP_SAVE"},
                              description="Balance: over the support polygon of the position and pose pins")

    @classmethod
    def poll(cls, context):
        return armature_poll(cls, context)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "kind")
        if self.kind != "BALANCE":
            layout.prop(self, "anchor")
        layout.prop(self, "weight")
        if self.kind in {"ORIENTATION", "POSE"}:
            layout.prop(self, "axes")
        elif self.kind == "PLANE":
            layout.prop(self, "plane_normal")
        elif self.kind == "AIM":
            layout.prop(self, "aim_axis")
        elif self.kind == "REGION":
            layout.prop(self, "radius")
        elif self.kind == "BALANCE":
            layout.prop(self, "use_support")

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        bones = selected_pose_bones(obj) if self.kind != "BALANCE" else []
        if self.kind != "BALANCE" and not bones:
            self.report({"ERROR"}, "Select one or more pose bones first")
            return {"CANCELLED"}
        context.view_layer.update()
        if degenerate_transform(obj):
            self.report({"ERROR"}, f"Armature '{obj.name}' has a degenerate transform (zero scale?); "
                        "nothing was pinned")
            return {"CANCELLED"}
        try:
            records = self._records(context, obj, bones)
        except RigError as error:
            self.report({"ERROR"}, f"{error}; nothing was pinned")
            return {"CANCELLED"}
        pins = obj.welman_ik.pins
        for bone, fields in records:
            add_pin(pins, bone, self.kind, fields, self.anchor, self.weight)
        obj.welman_ik.active_pin_index = len(pins) - 1
        what = "the centre of mass" if self.kind == "BALANCE" else f"{len(records)} bone(s)"
        self.report({"INFO"}, f"Pinned {what} ({self.kind.lower()})")
        return {"FINISHED"}

    def _records(self, context, obj, bones) -> list[tuple[str, dict]]:
        return pin_records(context, obj, self.kind, bones, self.anchor, axes=tuple(self.axes),
                           plane_normal=self.plane_normal, aim_axis=self.aim_axis, radius=self.radius,
                           use_support=self.use_support)


def remove_pins(obj, indices) -> tuple[int, int]:
    """Remove the pins at ``indices``; returns (removed, disabled).

    On a library override, the pins that come from the library cannot be removed: Blender
    keeps every item of the reference in an override's collection (only items added in the
    override can go). Those are disabled instead, which the override does keep."""
    settings = obj.welman_ik
    pins = settings.pins
    removed = disabled = 0
    for i in sorted(set(indices), reverse=True):
        try:
            pins.remove(i)
            removed += 1
        except TypeError:  # "not supported for this collection": the library's own pin
            if obj.override_library is None:
                raise
            pins[i].enabled = False
            disabled += 1
    settings.active_pin_index = min(settings.active_pin_index, max(len(pins) - 1, 0))
    return removed, disabled


def report_removed(operator, obj, removed: int, disabled: int) -> None:
    if disabled:
        library = obj.override_library.reference.library
        operator.report({"WARNING"}, (f"Removed {removed} pin(s); " if removed else "")
                        + f"{disabled} pin(s) come from library '{library.name if library else '?'}' and cannot "
                        "be removed from the override, so they are disabled instead")
    else:
        operator.report({"INFO"}, f"Removed {removed} pin(s)")


class WELMAN_IK_OT_unpin(SelectionOperator, bpy.types.Operator):
    """Remove the pins of the selected bones (on a library override, the library's own pins are disabled)"""

    bl_idname = "welman_ik.unpin"
    bl_label = "Unpin"

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        bones = self.selection(context)
        if not bones:
            return {"CANCELLED"}
        names = {pb.name for pb in bones}
        obj = context.object
        held = [i for i, p in enumerate(obj.welman_ik.pins)
                if p.bone in names or (p.kind == "TOGETHER" and p.target_bone in names)]
        report_removed(self, obj, *remove_pins(obj, held))
        return {"FINISHED"}


class WELMAN_IK_OT_clear_pins(ArmatureOperator, bpy.types.Operator):
    """Remove every pin of the armature (on a library override, the library's own pins are disabled)"""

    bl_idname = "welman_ik.clear_pins"
    bl_label = "Clear Pins"

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        report_removed(self, obj, *remove_pins(obj, range(len(obj.welman_ik.pins))))
        obj.welman_ik.active_pin_index = 0
        return {"FINISHED"}


class WELMAN_IK_OT_remove_pin(ArmatureOperator, bpy.types.Operator):
    """Remove this pin, whether or not its bone still exists (on a library override, a pin from the library is
disabled instead)"""

    bl_idname = "welman_ik.remove_pin"
    bl_label = "Remove Pin"

    # No min: a negative index from a script is refused, not clamped onto pin 0.
    index: IntProperty(name="Index", default=0, options={"SKIP_SAVE"},
                       description="The pin's index in the armature's pins (unset: the active pin)")

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        pins = obj.welman_ik.pins
        index = self.index if self.properties.is_property_set("index") else obj.welman_ik.active_pin_index
        if not 0 <= index < len(pins):
            self.report({"ERROR"}, f"Pin index {index} is out of range: armature '{obj.name}' has "
                        f"{len(pins)} pin(s)")
            return {"CANCELLED"}
        bone = pins[index].bone
        removed, disabled = remove_pins(obj, [index])
        if disabled:
            report_removed(self, obj, removed, disabled)
        else:
            self.report({"INFO"}, f"Removed the pin on '{bone}'")
        return {"FINISHED"}


class LockOperator(SelectionOperator):
    value = True

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        bones = self.selection(context)
        if not bones:
            return {"CANCELLED"}
        for pb in bones:
            pb.lock_ik_x = pb.lock_ik_y = pb.lock_ik_z = self.value
        return {"FINISHED"}


class WELMAN_IK_OT_lock(LockOperator, bpy.types.Operator):
    """Freeze the selected bones for the solver (sets Blender's IK locks)"""

    bl_idname = "welman_ik.lock"
    bl_label = "Lock"
    value = True


class WELMAN_IK_OT_unlock(LockOperator, bpy.types.Operator):
    """Free the selected bones for the solver (clears Blender's IK locks)"""

    bl_idname = "welman_ik.unlock"
    bl_label = "Unlock"
    value = False


# While dragging, a key toggles a pin of its kind on the bone under the mouse.
PIN_SHORTCUTS = {"P": "POSITION", "O": "ORIENTATION", "L": "LINE", "N": "PLANE", "A": "AIM", "R": "REGION",
                 "T": "TOGETHER", "B": "BALANCE"}


def pin_shortcut(event) -> str | None:
    """The pin kind an event's key toggles while dragging (Shift+P: pose), or None."""
    if event.type == "P" and event.shift:
        return "POSE"
    return PIN_SHORTCUTS.get(event.type) if not event.shift else None


def redraw_pose_editors(context) -> None:
    """Redraw the editors that show pose channels: the pose is written in bulk
    (``foreach_set``), which sends no notifier, so the Properties editor's bone transform
    would otherwise show the old values until the mouse passes over it."""
    screen = context.screen
    for area in screen.areas if screen is not None else ():
        if area.type == "PROPERTIES":
            area.tag_redraw()


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
        overlay.DRAG_STATE.session = self._session
        context.window_manager.modal_handler_add(self)
        context.area.header_text_set(self._session.header())
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
            origin, direction = viewport.mouse_ray(region, rv3d, viewport.region_mouse(region, event))
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
            context.area.header_text_set(drag.header())
            context.area.tag_redraw()
        redraw_pose_editors(context)
        return {"RUNNING_MODAL"}

    def _finish(self, context, result):
        overlay.DRAG_STATE.latencies = list(self._session.milliseconds)
        overlay.DRAG_STATE.session = None
        if context.area is not None:
            context.area.header_text_set(None)
            context.area.tag_redraw()
        redraw_pose_editors(context)
        return result


class WELMAN_IK_OT_drag(ModalDrag, ArmatureOperator, bpy.types.Operator):
    """Drag a bone with every pin, lock and limit in force (from a script: move its anchor point to a target)"""

    bl_idname = "welman_ik.drag"
    bl_label = "Drag"

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        bone = self._bone(context)
        if bone is None:
            return {"CANCELLED"}
        try:
            figures = solve.drag(context, obj, bone, tuple(self.target), self.anchor)
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        except Exception as error:  # noqa: BLE001 - a solver failure is reported, not raised
            self.report({"ERROR"}, f"The solve failed ({type(error).__name__}: {error}); the pose is unchanged")
            return {"CANCELLED"}
        text = (f"{obj.welman_ik.solver}: {figures.result.iterations} iterations, drag error "
                f"{figures.drag_error:.2e} m, largest pin error {figures.max_pin_error:.2e} m (evaluated), "
                f"{figures.milliseconds:.1f} ms")
        if figures.converged:
            self.report({"INFO"}, text)
        else:
            self.report({"WARNING"}, f"Not converged: {figures.message or text}")
        return {"FINISHED"}

    def _start(self, context, obj, bone: str, anchor: float):
        return session.DragSession(obj, bone, anchor, event_budget=preferences.event_budget(context))

    def _confirm(self, context, drag) -> set:
        drag.confirm(context)
        return {"FINISHED"}


class WELMAN_IK_OT_detect_contacts(SelectionOperator, bpy.types.Operator):
    """Pin each selected foot where it is planted: its heel (head) and toe (tail), each in the frame ranges where it \
is near its lowest height, slow and still, held at its average place there"""

    bl_idname = "welman_ik.detect_contacts"
    bl_label = "Detect Contacts"

    points: EnumProperty(
        name="Points", default="HEEL_TOE", options={"SKIP_SAVE"},
        items=[("HEEL_TOE", "Heel and Toe", "The bone's head (heel strike) and tail (toe push-off), each a plant"),
               ("ANCHOR", "Anchor", "The point at Anchor along the bone only")],
    )
    anchor: FloatProperty(name="Anchor", min=0.0, max=1.0, default=0.0, subtype="FACTOR", options={"SKIP_SAVE"},
                          description="With Points 'Anchor': the point along the bone that touches down: 0 head, "
                                      "1 tail")

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        bones = self.selection(context)
        if not bones:
            return {"CANCELLED"}
        scene, settings = context.scene, obj.welman_ik
        # A script that names an anchor and no points asks for that point alone.
        heel_toe = self.points == "HEEL_TOE" and not (self.properties.is_property_set("anchor")
                                                      and not self.properties.is_property_set("points"))
        frames = list(range(scene.frame_start, scene.frame_end + 1))
        points = foot_contacts.points_of(obj, bones, heel_toe, self.anchor)
        paths = foot_contacts.sample(scene, obj, points, frames)
        found = foot_contacts.plants(settings, points, paths, scene.render.fps / scene.render.fps_base,
                                     keyframes.keyed_past(obj, frames[0], frames[-1]))
        count = 0
        for point, plants in found.items():
            for plant in plants:
                pin = settings.pins.add()
                pin.bone, pin.kind, pin.anchor = point.bone, "POSITION", point.anchor
                pin.frame_start, pin.frame_end = frames[plant.first], frames[plant.last]
                pin.location = plant.point
                count += 1
        where = ", ".join(f"{p.bone} {'heel' if heel_toe and p.anchor == 0 else 'toe' if heel_toe else p.anchor}: "
                          f"{len(v)}" for p, v in found.items())
        self.report({"INFO"}, f"Found {count} contact(s) on {len(bones)} bone(s) ({where})")
        return {"FINISHED"}


class WELMAN_IK_OT_edit_motion(ModalDrag, ArmatureOperator, bpy.types.Operator):
    """Move a bone at this frame and blend the edit into the neighbouring frames, with the pins in force
(from a script: give bone, target and frame)"""

    bl_idname = "welman_ik.edit_motion"
    bl_label = "Edit Motion"

    frame: IntProperty(name="Frame", options={"SKIP_SAVE"}, description="The edited frame (unset: the current one)")
    falloff: IntProperty(name="Falloff", min=0, options={"SKIP_SAVE"},
                         description="Frames on either side the edit blends into (unset: the armature's setting)")

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj, scene = context.object, context.scene
        bone = self._bone(context)
        if bone is None:
            return {"CANCELLED"}
        if bone not in obj.pose.bones:
            self.report({"ERROR"}, f"Bone '{bone}' does not exist in armature '{obj.name}'")
            return {"CANCELLED"}
        frame = self.frame if self.properties.is_property_set("frame") else scene.frame_current
        falloff = self.falloff if self.properties.is_property_set("falloff") else obj.welman_ik.motion_falloff
        current = scene.frame_current
        scene.frame_set(frame)
        start = solve.anchor_world(obj, obj.pose.bones[bone], self.anchor)
        scene.frame_set(current)
        edit = bake.MotionEdit(bone, self.anchor, frame, np.array(self.target) - start, falloff)
        try:
            baker = bake.edit_motion(context, obj, edit)
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        report_baked(self, baker, f"Edited frames {edit.frames[0]}-{edit.frames[1]}")
        return {"FINISHED"}

    # Interactive: the drag at this frame, with the pins as the edit holds them; confirming
    # blends the edit into the neighbouring frames.
    def _start(self, context, obj, bone: str, anchor: float):
        frame, falloff = context.scene.frame_current, obj.welman_ik.motion_falloff
        pins = bake.pins_for_edit(context, obj, bone, frame)
        return session.DragSession(obj, bone, anchor, event_budget=preferences.event_budget(context), pins=pins,
                                   keep_root=True, title=f"Welman IK edit motion, frame {frame} \u00b1 {falloff}")

    def _confirm(self, context, drag) -> set:
        drag.snapshot.restore(drag.obj)  # the edit starts from the animated pose
        self.frame = context.scene.frame_current
        self.falloff = context.object.welman_ik.motion_falloff
        return self.execute(context)


def report_baked(operator, baker, done: str) -> None:
    """What a bake or an edit did, with the largest pin error measured on the evaluated
    pose; a warning with the worst frame's miss and the missed frames when any goal missed
    by more than the tolerance (the panel lists those frames)."""
    last = baker.settings.last_solve
    text = f"{done}; largest pin error {baker.max_pin_error:.2e} m (evaluated)"
    if not baker.misses:
        operator.report({"INFO"}, text)
    else:
        operator.report({"WARNING"}, f"{text}: {last.message}")


class WELMAN_IK_OT_jump_to_frame(bpy.types.Operator):
    """Go to a frame the last bake or edit missed a goal on"""

    bl_idname = "welman_ik.jump_to_frame"
    bl_label = "Jump to Missed Frame"
    bl_options = {"REGISTER"}

    frame: IntProperty(name="Frame", default=1, description="The frame to go to")

    def execute(self, context):
        context.scene.frame_set(self.frame)
        return {"FINISHED"}


BAKE_SLICE = 0.1  # seconds of baking between redraws of the progress


class WELMAN_IK_OT_bake(ArmatureOperator, bpy.types.Operator):
    """Enforce the pins through every frame of the animation, into a new action (the original is kept)"""

    bl_idname = "welman_ik.bake"
    bl_label = "Bake Pins"

    frame_start: IntProperty(name="Start", default=1, description="First frame to bake")
    frame_end: IntProperty(name="End", default=250, description="Last frame to bake")
    step: IntProperty(name="Step", default=1, min=1, description="Bake every Nth frame")
    move_root: BoolProperty(name="Move Root", default=False, options={"SKIP_SAVE"},
                            description="Let the root bone move like any joint (root_motion 'FREE'); off: "
                            "the root_motion setting decides")

    def root_override(self) -> bool | None:
        """``move_root`` on: the root moves freely; off: the ``root_motion`` setting decides."""
        return True if self.move_root else None

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        try:
            baker = bake.Baker(context, obj, self.frame_start, self.frame_end, self.step, self.root_override())
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, len(baker.frames))
        try:
            while not baker.done:
                baker.next()
                wm.progress_update(baker.index)
            action = baker.finish()
        except Exception as error:  # noqa: BLE001 - leave nothing behind, say why
            baker.abort()
            self.report({"ERROR"}, f"The bake failed ({type(error).__name__}: {error}); nothing was changed")
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        self._report_done(baker, action)
        return {"FINISHED"}

    def _report_done(self, baker, action) -> None:
        report_baked(self, baker, f"Baked {len(baker.frames)} frames into '{action.name}'")

    # Interactive: a few frames per timer tick, with the progress bar and a status text;
    # Esc cancels and leaves nothing behind.
    def invoke(self, context, event):
        if self.refused(context):
            return {"CANCELLED"}
        scene = context.scene
        if not self.properties.is_property_set("frame_start"):
            self.frame_start = scene.frame_start
        if not self.properties.is_property_set("frame_end"):
            self.frame_end = scene.frame_end
        try:
            self._baker = bake.Baker(context, context.object, self.frame_start, self.frame_end, self.step,
                                     self.root_override())
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, len(self._baker.frames))
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        baker = self._baker
        if event.type == "ESC" and event.value == "PRESS":
            baker.abort()
            self._end(context)
            self.report({"INFO"}, "Bake cancelled; nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        try:
            started = time.perf_counter()
            while not baker.done and time.perf_counter() - started < BAKE_SLICE:
                error = baker.next()
            baker.show_start()
            context.window_manager.progress_update(baker.index)
            context.workspace.status_text_set(
                f"Welman IK bake: frame {baker.frames[baker.index - 1]} ({baker.index}/{len(baker.frames)}), "
                f"pin error {error * 1000:.3f} mm  |  Esc cancels")
            if not baker.done:
                return {"RUNNING_MODAL"}
            action = baker.finish()
        except Exception as error:  # noqa: BLE001 - leave nothing behind, say why
            baker.abort()
            self._end(context)
            self.report({"ERROR"}, f"The bake failed ({type(error).__name__}: {error}); nothing was changed")
            return {"CANCELLED"}
        self._end(context)
        self._report_done(baker, action)
        return {"FINISHED"}

    def _end(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)


CLASSES = (
    WELMAN_IK_OT_jump_to_frame,
    WELMAN_IK_OT_pin,
    WELMAN_IK_OT_unpin,
    WELMAN_IK_OT_clear_pins,
    WELMAN_IK_OT_remove_pin,
    WELMAN_IK_OT_lock,
    WELMAN_IK_OT_unlock,
    WELMAN_IK_OT_drag,
    WELMAN_IK_OT_bake,
    WELMAN_IK_OT_detect_contacts,
    WELMAN_IK_OT_edit_motion,
)
