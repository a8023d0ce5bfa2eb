"""The bake operators: bake, edit_motion (a drag at one frame, blended into its neighbours),
detect_contacts, jump_to_frame, and ``report_baked``, what a bake or an edit says it did."""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from ..drag import session, solver
from ..drag.operator import ModalDrag, report_lost
from ..drag.state import DRAG_STATE
from ..rig import keyframes
from ..rig.model import RigError
from ..rig.polls import ArmatureOperator, SelectionOperator, animation_refusal
from ..rig.units import length_text
from . import baker as bake
from . import contacts as foot_contacts
from .edit import MotionEdit
from .slices import Slices


class WELMAN_IK_OT_detect_contacts(SelectionOperator, bpy.types.Operator):
    """Pin each selected foot where it is planted: its heel (head) and toe (tail), each in the frame ranges where it \
is near its lowest height, slow and still, held at its average place there (with Floor: and on or above the \
clip's floor on every frame)"""

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
    floor: BoolProperty(name="Floor", options={"SKIP_SAVE"},
                        description="Also pin each point on or above the clip's floor (found from its contacts), on "
                                    "every frame (unset: the armature's Floor setting)")

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
        fps, open_ends = scene.render.fps / scene.render.fps_base, keyframes.keyed_past(obj, frames[0], frames[-1])
        held = foot_contacts.held_plants(settings, points, paths, fps, open_ends)
        found = foot_contacts.paired_plants(settings, points, paths, held)
        self.floor = self.floor if self.properties.is_property_set("floor") else settings.contact_floor
        height = foot_contacts.floor_of(paths, found) if self.floor else None
        if height is not None:  # no plant held below the floor its floor pins hold
            found = foot_contacts.paired_plants(settings, points, paths, held, floor=height)
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
        floor = ""
        if height is not None:
            added, replaced = foot_contacts.floor_pins(settings.pins, points, paths, height)
            floor = (f"; {added} floor pin(s) added" + (f", {replaced} replaced" if replaced else "")
                     + f", the clip's floor at height {length_text(scene, height)}")
        elif self.floor:
            floor = "; no floor pins: no contact to find the floor from"
        self.report({"INFO"}, f"Found {count} contact(s) on {len(bones)} bone(s) ({where}){floor}")
        return {"FINISHED"}


class WELMAN_IK_OT_edit_motion(ModalDrag, ArmatureOperator, bpy.types.Operator):
    """Drag a bone at this frame with the pins in force; the edit blends into the neighbouring frames of the \
animation (the Falloff setting)"""

    bl_idname = "welman_ik.edit_motion"
    bl_label = "Edit Motion"

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        obj = context.object
        return animation_refusal(obj, edit=True) or (
            "Click the bone to edit first (in Pose Mode)" if obj.data.bones.active is None else "")

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
        start = solver.anchor_world(obj, obj.pose.bones[bone], self.anchor)
        scene.frame_set(current)
        edit = MotionEdit(bone, self.anchor, frame, np.array(self.target) - start, falloff)
        report_lost(self, obj)
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
        return session.DragSession(obj, bone, anchor, event_budget=DRAG_STATE.event_budget(context), pins=pins,
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
    text = f"{done}; largest pin error {length_text(baker.context.scene, baker.max_pin_error)} (evaluated)"
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


class WELMAN_IK_OT_bake(Slices, ArmatureOperator, bpy.types.Operator):
    """Enforce the pins through every frame of the animation, into a new action (the original is kept)"""

    bl_idname = "welman_ik.bake"
    bl_label = "Bake Pins"

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        obj = context.object
        return animation_refusal(obj) or ("" if any(p.enabled for p in obj.welman_ik.pins)
                                          else "Pin the bones to hold first")

    frame_start: IntProperty(name="Start", default=1, description="First frame to bake")
    frame_end: IntProperty(name="End", default=250, description="Last frame to bake")
    step: IntProperty(name="Step", default=1, min=1, description="Bake every Nth frame")
    move_root: BoolProperty(name="Move Root", default=False, options={"SKIP_SAVE"},
                            description="Let the root bone move like any joint (as Root Motion Free); off: "
                            "the Root Motion setting decides")

    def root_override(self) -> bool | None:
        """``move_root`` on: the root moves freely; off: the ``root_motion`` setting decides."""
        return True if self.move_root else None

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        report_lost(self, obj)
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
        report_lost(self, context.object)
        try:
            baker = bake.Baker(context, context.object, self.frame_start, self.frame_end, self.step,
                               self.root_override())
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        return self._begin(context, baker)

    noun = "Bake"

    def _status(self, context, baker, error) -> str:
        return (f"Welman IK bake: frame {baker.frames[baker.index - 1]} ({baker.index}/{len(baker.frames)}), "
                f"pin error {length_text(context.scene, error)}  |  Esc cancels")

    def _between(self, baker) -> None:
        baker.show_start()

    def _failed(self, error: Exception) -> set:
        self.report({"ERROR"}, f"The bake failed ({type(error).__name__}: {error}); nothing was changed")
        return {"CANCELLED"}

    def _finished(self, context, baker, action) -> set:
        self._report_done(baker, action)
        return {"FINISHED"}

CLASSES = (
    WELMAN_IK_OT_jump_to_frame,
    WELMAN_IK_OT_bake,
    WELMAN_IK_OT_detect_contacts,
    WELMAN_IK_OT_edit_motion,
)
