"""Bake: enforce the pins through every frame of an action, into a new action.

Keyframe interpolation moves joint angles independently, so between keys where the feet
were planted they slide or sink (Welman 1993, Fig 6.5). The bake evaluates the armature's
animation on each frame, solves with the pins in force on that frame, and writes the
result into a copy of the action; the original is left as it was.

The bake is a pipeline of whole steps, each its own module, the data flowing one way:
``plan`` (what holds over the whole bake) -> ``sampling`` (each frame's animated pose, read
into the tree) -> ``goals`` (the frame's goals) -> ``solve`` (the frame solved, carrying on
from the last by ``carry``) -> ``log`` (what later steps need of it) -> ``keys`` (every key
written at once, the plants eased in first by ``plants``) -> ``measure`` (the written action
on the evaluated pose, ``correct`` solving again what it misses) -> ``report``. ``Baker``
runs them.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..rig import driven, keyframes
from ..rig.channels import PoseSnapshot
from . import retarget_gates, retarget_pose
from .batch import FrameBatch
from .correct import close_loop
from .edit import MotionEdit, surrounding_keys
from .frames import pins_on
from .goals import frame_goals, pin_targets
from .keys import channels_of, collect, write_keys
from .log import BakeLog
from .measure import BakeMeasure
from .plan import BakePlan, check
from .plants import ease_onto_plants
from .retarget import Retarget
from .retarget import make as retarget_goals
from .retarget_measure import GroupMiss
from .sampling import ClipSampler, direct_sampling
from .solve import FrameSolver
from .source import GoalSource

SUFFIX = ".welman_bake"
RETARGET_SUFFIX = ".welman_retarget"
REST_ROTATION = {"rotation_quaternion": (1.0, 0.0, 0.0, 0.0), "rotation_euler": (0.0, 0.0, 0.0),
                 "rotation_axis_angle": (0.0, 0.0, 1.0, 0.0)}


class Baker:
    """Frame by frame: ``next()`` samples, builds the goals of and solves one frame,
    ``finish()`` writes the new action and measures it.

    One hinge tree serves the whole bake: it holds every bone pinned somewhere in the
    range, and each frame only takes the animated pose as its new start (the action's
    F-curves put on the bones, or a scene frame change where more than F-curves move them).
    Each frame's solution is kept as joint values and turned into channels for all frames at
    once (``results``); ``finish`` writes the keys in bulk and measures every frame on the
    pose Blender evaluates, one evaluation per frame.
    """

    def __init__(self, context, obj, frame_start: int, frame_end: int, step: int = 1, move_root: bool | None = None,
                 edit: MotionEdit | None = None, direct: bool | None = None, source: GoalSource | None = None):
        """``move_root``: True as ``root_motion = 'FREE'``, False as 'KEEP'; None: the setting;
        ``source``: each frame's goals from it (a retarget), not from the pins."""
        self.plan = BakePlan.make(context, obj, frame_start, frame_end, step, move_root, edit, source)
        self.pose_before = PoseSnapshot(obj)  # unkeyed edits included
        self.sampling = ClipSampler(self.plan, direct)
        self.solver = FrameSolver(self.plan)
        self.batch = FrameBatch(self.plan, self.sampling)
        self.log = BakeLog(self.plan)
        self.measure = BakeMeasure(self.plan, self.log, self.sampling)
        self._results: dict[int, dict] = {}  # frame -> bone -> (rotation data path, rotation values, location)
        self.index = 0

    # What scripts and the operators read of a bake.
    context = property(lambda self: self.plan.context)
    obj = property(lambda self: self.plan.obj)
    settings = property(lambda self: self.plan.settings)
    edit = property(lambda self: self.plan.edit)
    frames = property(lambda self: self.plan.frames)
    sampler = property(lambda self: self.sampling.sampler)
    model = property(lambda self: self.sampling.tree.model if self.sampling.tree is not None else None)
    solved = property(lambda self: self.log.solved)
    goal_log = property(lambda self: self.log.positions)
    max_pin_error = property(lambda self: self.measure.max_pin_error, doc="[m] The largest pin error, evaluated.")
    misses = property(lambda self: self.measure.misses, doc="Every frame on which a goal missed its own place.")

    @property
    def done(self) -> bool:
        return self.index >= len(self.frames)

    @property
    def results(self) -> dict[int, dict]:
        """frame -> bone -> (rotation data path, rotation values, location or None): what
        each baked frame puts on the bones' channels (the solutions turned into channels all
        at once, as they are first asked for)."""
        return collect(self.sampling.trees, self._results)

    def next(self) -> float:
        """Sample, build the goals of and solve the next frame; returns its largest pin error [m]."""
        frame = self.frames[self.index]
        self.index += 1
        taken = self.batch.take(frame)
        if taken is None:
            sample = self.sampling.at(frame)
            goals, batched = frame_goals(self.plan, sample), None
        else:
            sample, goals, batched = taken
        solved = self.solver.solve(sample, goals, batched, lambda *carried: self.batch.again(frame, *carried))
        sample.tree.solutions.add(sample.frame, solved.q, solved.q0, sample.originals)
        self.log.add(goals, solved, sample.tree.model.bones)
        return float(solved.result.errors[:len(goals.goals)].max(initial=0.0))

    def finish(self, in_place: bool = False):
        """Copy the action, write every baked frame into the copy, assign it (``in_place``:
        write into the assigned action itself, as a motion edit does), measure it."""
        obj = self.obj
        baked = obj.animation_data.action
        if not in_place:
            original = baked
            if original is not None:
                baked = original.copy()
                baked.name = original.name + SUFFIX
                original.use_fake_user = True  # kept in the file, though no longer assigned
            else:  # animated by NLA strips alone: the baked frames go into a new action on top,
                # which leaves the strips to show outside the baked range
                baked = bpy.data.actions.new(obj.name + SUFFIX)
                obj.animation_data.action_extrapolation = "NOTHING"
            keyframes.assign_action(obj, baked)
        eased = ease_onto_plants(self.plan, self.log, self.sampling)  # (before the solutions are collected)
        self.results.update(eased)
        source = self.plan.source
        if source is not None and not source.keys_mechanism:  # the rig's driven and hidden bones left unkeyed
            names = {name for channels in self.results.values() for name in channels}
            frozen = driven.frozen_bones(obj, names)
            for channels in self.results.values():
                for name in frozen & channels.keys():
                    del channels[name]
        write_keys(obj, self.results)
        # Constraints, drivers or NLA: the model may not be the pose, so close the loop.
        direct = self.sampling.sampler.direct
        if source is not None and not direct:  # its own goals on the evaluated pose, again where missed
            source.close_loop(self.plan, self.sampling, self.results)
        self.measure.verify(None if direct else close_loop(self.plan, self.log, self.sampling, self.measure,
                                                           self.results))
        collect(self.sampling.trees, self._results)  # (the trees the last steps built let go)
        self.context.scene.frame_set(self.plan.frame_before)
        return baked

    def keep(self, frames) -> None:
        """Record the animation as it is on ``frames`` (for the solved bones), so that keys
        written around an edit leave those frames' motion exactly as it was."""
        for frame in frames:
            self.sampling.sampler.apply(frame)
            self.results[frame] = {name: channels_of(self.obj.pose.bones[name]) for name in self.log.bones}

    def show_start(self) -> None:
        """Between slices of a modal bake: the pose as it was, rather than the last frame
        sampled (a scene-sampled bake shows the frames it bakes, as Blender's own does)."""
        if self.sampling.sampler.direct:
            self.pose_before.restore(self.obj)

    def abort(self) -> None:
        """Leave nothing behind: the frame and every pose channel as they were."""
        self.context.scene.frame_set(self.plan.frame_before)
        self.pose_before.restore(self.obj)


def edit_motion(context, obj, edit: MotionEdit) -> Baker:
    """Motion editing in motion: solve the edit's window with the pins in force, and write
    it into the assigned action. Between the window and the keys around it the curves would
    change shape, so those frames are keyed as they are."""
    baker = Baker(context, obj, *edit.frames, 1, False, edit)
    try:
        while not baker.done:
            baker.next()
    except Exception:
        baker.abort()
        raise
    before, after = surrounding_keys(obj, *edit.frames)
    # The keys at ``before`` and ``after`` stay as they are (their outer handles shape the
    # motion beyond them); the frames between them and the window are keyed as they were.
    baker.keep([*range(before + 1, edit.frames[0]), *range(edit.frames[1] + 1, after)])
    baker.finish(in_place=True)
    return baker


class RetargetRun:
    """A retarget frame by frame, as ``Baker`` is a bake: ``next()`` solves the next frame,
    ``finish()`` writes, closes the loop and measures, ``abort()`` leaves the target as it was
    (its action, its pose) and removes the new action. Made, it has assigned the new action
    ``<target>.welman_retarget`` with the mapped bones keyed at rest on the first frame."""

    def __init__(self, context, target, source, frames: list[int], scale: float, plants: bool = True):
        self.retarget = retarget_goals(context, target, source, frames, scale, plants)
        self.target, self.baker = target, None
        self.gates: list = []  # each gate of the written action (``retarget_gates``), once finished
        self.created = target.animation_data is None
        self.before = (target.animation_data or target.animation_data_create()).action
        self.snapshot = PoseSnapshot(target)
        self.action = bpy.data.actions.new(target.name + RETARGET_SUFFIX)
        try:
            keyframes.assign_action(target, self.action)
            _key_lined_up(target, self.retarget, frames)
            self.baker = Baker(context, target, frames[0], frames[-1], source=self.retarget)
        except Exception:
            self.abort()
            raise

    done = property(lambda self: self.baker.done)
    index = property(lambda self: self.baker.index)
    frames = property(lambda self: self.baker.frames)

    def next(self) -> float:
        return self.baker.next()

    def finish(self) -> list[GroupMiss]:
        """Write the keys, solve again what the evaluated pose misses, and return each goal
        group's largest miss, evaluated."""
        self.baker.finish(in_place=True)
        misses, self.gates = retarget_gates.evaluate(self.retarget)
        return misses

    def abort(self) -> None:
        target = self.target
        if self.baker is not None:
            self.baker.abort()
        if self.created:
            target.animation_data_clear()
        elif self.before is not None:
            keyframes.assign_action(target, self.before)
        else:
            target.animation_data.action = None
        if self.action.name in bpy.data.actions:
            bpy.data.actions.remove(self.action)
        self.snapshot.restore(target)


def retarget_motion(context, target, source, frames: list[int], scale: float, plants: bool = True,
                    progress=None) -> tuple[Baker, object, list[GroupMiss]]:
    """Bake the motion of ``source`` on ``frames`` onto ``target`` by its retarget map, scaled by
    ``scale``, into a new action ``<target>.welman_retarget`` (assigned; every other action as
    it was). Each frame starts from the last one's solution, the first from the rest pose.
    Returns the bake, the action and each goal group's largest miss, evaluated. On any error
    the target is left as it was (its action, its pose) and the new action removed.
    ``progress``: called with the number of frames solved."""
    run = RetargetRun(context, target, source, frames, scale, plants)
    try:
        while not run.done:
            run.next()
            if progress is not None:
                progress(run.index)
        misses = run.finish()
    except Exception:
        run.abort()
        raise
    return run.baker, run.action, misses


def _key_lined_up(obj, retarget: Retarget, frames: list[int]) -> None:
    """The start of a retarget: the bones it moves keyed on every frame in the pose lined up
    with the source (``retarget_pose.channels``), the others at rest, so that each frame's
    solve starts from it and keeps near it (its preferred pose) and only corrects what the
    plants and the ends ask for."""
    translating = retarget.translating()
    lined = retarget_pose.channels(retarget, len(frames))
    results = {frame: {} for frame in frames}
    for name in retarget.keyed:
        pb = obj.pose.bones[name]
        path = keyframes.rotation_path(pb)
        moves = pb.parent is None or name in translating
        if name in lined and lined[name][0] == path:
            _, rotations, location = lined[name]
            if location is None and moves:
                location = np.zeros((len(frames), 3))
            for k, frame in enumerate(frames):
                results[frame][name] = (path, tuple(rotations[k]), None if location is None else tuple(location[k]))
            continue
        rotation = REST_ROTATION[path]
        setattr(pb, path, rotation)
        if moves:
            pb.location = (0.0, 0.0, 0.0)
        for frame in frames:
            results[frame][name] = (path, rotation, (0.0, 0.0, 0.0) if moves else None)
    write_keys(obj, results)


def pins_for_edit(context, obj, bone: str, frame: int) -> list[tuple]:
    """(pin, world target) of the pins an edit of ``bone`` on ``frame`` holds, as the edit
    itself will: for an interactive edit's preview. The pose is left as it was."""
    baker = Baker(context, obj, frame, frame, 1, False, MotionEdit(bone, 1.0, frame, np.zeros(3), 0))
    try:
        sample = baker.sampling.at(frame)
        return pin_targets(baker.plan, sample.tree, sample.animated, frame)
    finally:
        baker.abort()


__all__ = ["RETARGET_SUFFIX", "SUFFIX", "Baker", "MotionEdit", "RetargetRun", "check", "direct_sampling", "edit_motion", "pins_for_edit", "pins_on", "retarget_motion"]
