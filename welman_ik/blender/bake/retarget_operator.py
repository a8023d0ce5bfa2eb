"""The retarget operator, ``welman_ik.retarget``: another armature's motion baked onto the active
one by its retarget map (``baker.RetargetRun``), from a script at once or from the window in
slices, and what it reports."""

from __future__ import annotations

import math
import time

import bpy
import numpy as np
from bpy.props import BoolProperty, FloatProperty, IntProperty, StringProperty

from ...core import SolveResult
from ..pins.figures import Figures, record
from ..rig.model import RigError
from ..rig.polls import ArmatureOperator
from ..rig.retarget_map import fill as fill_map
from ..rig.retarget_map import retarget_scale, source_armature, source_refusal
from ..rig.units import length_text
from . import baker as bake
from . import retarget_gates, retarget_measure
from .retarget import check_lines
from .slices import Slices


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
                                     "their leg lengths, hip to knee to ankle)")
    plants: BoolProperty(name="Plants", default=True,
                         description="Hold this armature's feet where the source's feet are planted")

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        return source_refusal(context.object, animated=True)

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
        record_retarget(context, target, run.baker, misses, started, run.gates)
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
            run = bake.RetargetRun(context, context.object, source, frames, scale, self.plants)
        except Exception as error:  # noqa: BLE001 - leave nothing behind, say why
            return self._failed(error)
        return self._begin(context, run)

    noun = "Retarget"

    def _status(self, context, run, _last) -> str:
        return f"Welman IK retarget: frame {run.frames[run.index - 1]} ({run.index}/{len(run.frames)})  |  Esc cancels"

    def _finished(self, context, run, misses) -> set:
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


def record_retarget(context, target, baker, misses, started: float, gates=()) -> None:
    """A retarget's figures in ``last_solve``: the plants' largest miss as the pin error, each
    goal group's largest miss and each gate in ``groups``, all evaluated. It counts as
    converged when every gate holds (the plants, the floor, the bends, the facing, the
    stretch: ``retarget_gates``); the other groups' misses are best effort, and the message
    says so."""
    settings = target.welman_ik
    last = settings.last_solve
    by_group = {m.group: m for m in misses}
    plants = by_group.get("plants")
    solved = baker.log.solved
    iterations = max((s.result.iterations for s in solved.values()), default=0)
    message = retarget_gates.describe(context.scene, list(gates), length_text) + (
        "; best-effort goals, largest misses against the scaled source: "
        + retarget_measure.describe(context.scene, [m for m in misses if m.group != "plants"], length_text))
    record(last, Figures(SolveResult(np.zeros(0), iterations, np.zeros(0), True), 0.0,
                         plants.error if plants is not None else 0.0, 1000.0 * (time.perf_counter() - started),
                         converged=all(g.held for g in gates), message=message, operation="RETARGET"))
    last.groups.clear()
    for miss in misses:
        item = last.groups.add()
        item.group, item.error, item.frame, item.bone = miss.group, miss.error, miss.frame, miss.bone
    for gate in gates:
        if gate.name != "plants":
            item = last.groups.add()
            item.group, item.error, item.frame, item.bone = gate.name, gate.value, gate.frame, gate.bone


CLASSES = (WELMAN_IK_OT_retarget,)
