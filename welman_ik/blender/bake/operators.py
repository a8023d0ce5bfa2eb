"""The bake operators: bake, edit_motion (a drag at one frame, blended into its neighbours),
detect_contacts, jump_to_frame, and ``report_baked``, what a bake or an edit says it did."""

from __future__ import annotations

import math
import time

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ...core import SolveResult
from ..drag import session, solver
from ..drag.operator import ModalDrag
from ..drag.state import DRAG_STATE
from ..pins.figures import Figures, record
from ..rig import keyframes, views
from ..rig.model import RigError
from ..rig.polls import ArmatureOperator, SelectionOperator, animation_refusal
from ..rig.retarget_map import fill as fill_map
from ..rig.retarget_map import retarget_scale, source_armature
from ..rig.units import length_text
from . import baker as bake
from . import contacts as foot_contacts
from . import retarget_measure
from .edit import MotionEdit
from .retarget import check_lines


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


BAKE_SLICE = 0.1  # seconds of baking between redraws of the progress


class Slices:
    """A modal operator that works in slices on a timer, with Blender's progress bar and a
    status text (``_begin``, ``_end``)."""

    def _begin(self, context, total: int) -> set:
        wm = context.window_manager
        wm.progress_begin(0, total)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _end(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)
        views.redraw()  # the new action, Last Solve and the missed frames


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
        return self._begin(context, len(self._baker.frames))

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
                f"pin error {length_text(context.scene, error)}  |  Esc cancels")
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

class WELMAN_IK_OT_retarget(Slices, ArmatureOperator, bpy.types.Operator):
    """Bake the motion of another armature onto this one by the retarget map, with its foot contacts planted, into \
a new action (every existing action is kept)"""

    bl_idname = "welman_ik.retarget"
    bl_label = "Retarget"

    source: StringProperty(name="Source", description="The armature that carries the motion (empty: the panel's "
                                                        "Source)")
    frame_start: IntProperty(name="Start", default=0, min=0, description="First frame (0: the source action's first)")
    frame_end: IntProperty(name="End", default=0, min=0, description="Last frame (0: the source action's last)")
    scale: FloatProperty(name="Scale", default=0.0, min=0.0,
                         description="How many times larger this armature is than the source (0: the ratio of "
                                     "their leg lengths, hip to ankle)")
    plants: BoolProperty(name="Plants", default=True,
                         description="Hold this armature's feet where the source's feet are planted")

    def _inputs(self, context):
        """(source, frames, scale, body parts not mapped), or None once the refusal is reported."""
        if self.refused(context):
            return None
        target = context.object
        chosen = target.welman_ik.retarget_source
        name = self.source or (chosen.name if chosen is not None else "")
        try:
            return retarget_inputs(target, name, self.frame_start, self.frame_end, self.scale)
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return None

    def _failed(self, error: Exception) -> set:
        self.report({"ERROR"}, str(error) if isinstance(error, RigError) else
                    f"The retarget failed ({type(error).__name__}: {error}); nothing was changed")
        return {"CANCELLED"}

    def _done(self, context, run, misses, source, scale: float, missing, started: float) -> set:
        target = context.object
        record_retarget(context, target, run.baker, misses, started)
        note = f"; not mapped: {'; '.join(missing)}" if missing else ""
        text = (f"Retargeted {len(run.frames)} frames from '{source.name}' (scale {scale:.3g}) into "
                f"'{run.action.name}'; {target.welman_ik.last_solve.message}{note}")
        self.report({"INFO"} if target.welman_ik.last_solve.converged else {"WARNING"}, text)
        return {"FINISHED"}

    def execute(self, context):
        started = time.perf_counter()
        found = self._inputs(context)
        if found is None:
            return {"CANCELLED"}
        source, frames, scale, missing = found
        wm = context.window_manager
        wm.progress_begin(0, len(frames))
        try:
            run = bake.RetargetRun(context, context.object, source, frames, scale, self.plants)
            try:
                while not run.done:
                    run.next()
                    wm.progress_update(run.index)
                misses = run.finish()
            except Exception:
                run.abort()
                raise
        except Exception as error:  # noqa: BLE001 - leave nothing behind, say why
            return self._failed(error)
        finally:
            wm.progress_end()
        return self._done(context, run, misses, source, scale, missing, started)

    # Interactive: a few frames per timer tick, with the progress bar and a status text; Esc
    # cancels and leaves nothing behind.
    def invoke(self, context, event):
        self._started = time.perf_counter()
        found = self._inputs(context)
        if found is None:
            return {"CANCELLED"}
        self._found = found
        source, frames, scale, _ = found
        try:
            self._run = bake.RetargetRun(context, context.object, source, frames, scale, self.plants)
        except Exception as error:  # noqa: BLE001 - leave nothing behind, say why
            return self._failed(error)
        return self._begin(context, len(frames))

    def modal(self, context, event):
        run = self._run
        if event.type == "ESC" and event.value == "PRESS":
            run.abort()
            self._end(context)
            self.report({"INFO"}, "Retarget cancelled; nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        try:
            started = time.perf_counter()
            while not run.done and time.perf_counter() - started < BAKE_SLICE:
                run.next()
            context.window_manager.progress_update(run.index)
            context.workspace.status_text_set(
                f"Welman IK retarget: frame {run.frames[run.index - 1]} ({run.index}/{len(run.frames)})  |  "
                "Esc cancels")
            if not run.done:
                return {"RUNNING_MODAL"}
            misses = run.finish()
        except Exception as error:  # noqa: BLE001 - leave nothing behind, say why
            run.abort()
            self._end(context)
            return self._failed(error)
        self._end(context)
        source, _, scale, missing = self._found
        return self._done(context, run, misses, source, scale, missing, self._started)


def retarget_inputs(target, name: str, frame_start: int, frame_end: int, scale: float):
    """(source, frames, scale, body parts not mapped) of a retarget onto ``target``, or RigError
    saying why it cannot be (nothing changed). An empty map is filled from both rigs' names."""
    source = source_armature(target, name)
    ad = source.animation_data
    if ad is None or ad.action is None:
        raise RigError(f"The source '{source.name}' has no action to retarget")
    if not math.isfinite(scale) or scale < 0.0:
        raise RigError(f"The scale must be a finite number, 0 or more (got {scale})")
    if scale > 1e4 or (0.0 < scale < 1e-4):
        raise RigError(f"A scale of {scale:g} is absurd: give the ratio of the two rigs' sizes, or 0 for automatic")
    first, last = (round(f) for f in ad.action.frame_range)
    frames = list(range(frame_start or first, (frame_end or last) + 1))
    if not frames:
        raise RigError(f"The frame range ends ({frame_end or last}) before it starts ({frame_start or first})")
    missing = []
    if not len(target.welman_ik.retarget_map):
        missing = fill_map(target, source)
    check_lines(target, source)
    scale = scale or retarget_scale(target, source)
    return source, frames, scale, missing


def record_retarget(context, target, baker, misses, started: float) -> None:
    """A retarget's figures in ``last_solve``: the plants' largest miss as the pin error, each
    goal group's largest miss in ``groups`` and in the message, all evaluated."""
    settings = target.welman_ik
    last = settings.last_solve
    tolerance = settings.tolerance
    by_group = {m.group: m for m in misses}
    plants = by_group.get("plants")
    worst_place = max((m.error for m in misses if m.group not in retarget_measure.ANGLE_GROUPS), default=0.0)
    solved = baker.log.solved
    iterations = max((s.result.iterations for s in solved.values()), default=0)
    message = "largest misses, evaluated, against the scaled source: " + retarget_measure.describe(
        context.scene, misses, length_text)
    record(last, Figures(SolveResult(np.zeros(0), iterations, np.zeros(0), True), 0.0,
                         plants.error if plants is not None else 0.0, 1000.0 * (time.perf_counter() - started),
                         converged=worst_place <= tolerance, message=message))
    last.groups.clear()
    for miss in misses:
        item = last.groups.add()
        item.group, item.error, item.frame, item.bone = miss.group, miss.error, miss.frame, miss.bone


CLASSES = (
    WELMAN_IK_OT_retarget,
    WELMAN_IK_OT_jump_to_frame,
    WELMAN_IK_OT_bake,
    WELMAN_IK_OT_detect_contacts,
    WELMAN_IK_OT_edit_motion,
)
