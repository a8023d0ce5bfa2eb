"""Bake: enforce the pins through every frame of an action, into a new action.

Keyframe interpolation moves joint angles independently, so between keys where the feet
were planted they slide or sink (Welman 1993, Fig 6.5). The bake evaluates the armature's
animation on each frame, solves with the pins in force on that frame, and writes the
result into a copy of the action; the original is left as it was.
"""

from __future__ import annotations

import dataclasses
import time

import bpy
import numpy as np

from ...core import SOLVERS, PositionGoal, Problem, SolveResult
from ...core.problem import goal_errors
from ..drag.solver import (
    check_goal_bones,
    check_pin_bones,
    movable_bones,
    preferred_pose,
)
from ..pins import goals as shaped_goals
from ..pins.goals import (
    SHAPED_KINDS,
    SUPPORT_KINDS,
    check_numbers,
    check_pin,
    held_bones,
    pin_bones,
    support_points,
)
from ..rig import keyframes
from ..rig.channels import PoseSnapshot
from ..rig.evaluated import Measured
from ..rig.model import RigError, RigModel, chain_to_root
from .carry import Continuity, ease_onto_plants
from .channels import Solutions
from .edit import MotionEdit, surrounding_keys
from .frames import is_eased, pin_share, pins_on
from .goals import FrameGoals
from .keys import channels_of, write_keys
from .measure import BakeMeasure
from .report import frame_ranges
from .sampling import Sampler, direct_sampling

SUFFIX = ".welman_bake"
CORRECTION_PASSES = 4  # re-solves of the frames the evaluated pose misses (constrained rigs)


def check(obj, frame_start: int, frame_end: int, step: int, edit: MotionEdit | None = None) -> None:
    """Refuse what cannot be baked, with a message (nothing changed)."""
    if obj is None or obj.type != "ARMATURE":
        raise RigError("The active object is not an armature")
    if frame_end < frame_start:
        raise RigError(f"The frame range ends ({frame_end}) before it starts ({frame_start})")
    if step < 1:
        raise RigError("The step must be at least 1 frame")
    ad = obj.animation_data
    strips = ad is not None and ad.use_nla and any(not track.mute for track in ad.nla_tracks)
    if ad is None or (ad.action is None and (edit is not None or not strips)):
        raise RigError(f"Armature '{obj.name}' has no action to " + ("edit" if edit is not None else "bake"))
    if ad.use_tweak_mode:
        raise RigError("Leave NLA tweak mode first: the bake works on the armature's own action")
    if ad.action is not None and ad.action.library is not None:
        raise RigError(f"Action '{ad.action.name}' is linked from a library and cannot be baked into; "
                       "make it local first")
    check_pin_bones(obj, [p for p in obj.welman_ik.pins if p.enabled])
    for pin in obj.welman_ik.pins:
        if pin.enabled:
            check_numbers(pin)
        if pin.enabled and pin.kind in SHAPED_KINDS:
            check_pin(obj, pin, obj.welman_ik.solver)
    if edit is not None:
        if edit.bone not in obj.pose.bones:
            raise RigError(f"Bone '{edit.bone}' does not exist in armature '{obj.name}'")
        if not np.all(np.isfinite(edit.displacement)):
            raise RigError("The edit's target is not a number (NaN or infinite)")
        return
    if not any(pins_on(obj.welman_ik, f) for f in range(frame_start, frame_end + 1, step)):
        raise RigError("No enabled pin is in force in the frame range")


class Baker:
    """Frame by frame: ``next()`` solves one frame, ``finish()`` writes the new action.

    One hinge tree serves the whole bake: it holds every bone pinned somewhere in the
    range, and each frame only takes the animated pose as its new start (``pose``: the
    action's F-curves put on the bones, or a scene frame change where more than F-curves
    move them). What depends on the tree alone (goal points, the joints a set of goals
    moves) is worked out once per tree. Each frame's solution is kept as joint values and
    turned into channels for all frames at once (``results``); ``finish`` writes the keys in
    bulk and measures every frame on the pose Blender evaluates, one evaluation per frame.
    """

    def __init__(self, context, obj, frame_start: int, frame_end: int, step: int = 1, move_root: bool | None = None,
                 edit: MotionEdit | None = None, direct: bool | None = None):
        """``move_root``: True as ``root_motion = 'FREE'``, False as 'KEEP'; None: the setting."""
        check(obj, frame_start, frame_end, step, edit)
        self.edit = edit
        self.context, self.obj, self.settings = context, obj, obj.welman_ik
        self.started = time.perf_counter()
        self.frames = list(range(frame_start, frame_end + 1, step))
        self.frame_before = context.scene.frame_current
        self.pose_before = PoseSnapshot(obj)  # unkeyed edits included
        self._pins_by_frame: dict[int, list] = {}  # the pins in force on each frame, found once:
        self._pins_by_frame = {f: self.pins_in_force(f) for f in self.frames}
        # Each pin's place in the settings' list, by its pointer (the fixed goals are keyed by it).
        self.pin_index = {p.as_pointer(): i for i, p in enumerate(self.settings.pins)}
        in_force = {p.as_pointer(): p for f in self.frames for p in self.pins_in_force(f)}.values()
        pinned = set(held_bones(in_force))
        carried = {n for p in in_force if p.kind == "BALANCE" for n in pin_bones(obj, p)}
        self.names = sorted(pinned | carried | ({edit.bone} if edit is not None else set()))
        bare = [f for f in self.frames
                if any(p.kind == "BALANCE" and p.use_support for p in self.pins_in_force(f))
                and not any(p.kind in SUPPORT_KINDS for p in self.pins_in_force(f))]
        if bare:
            raise RigError("The balance pin holds over the support polygon, but no position or pose pin is in force "
                           f"on frame(s) {frame_ranges(bare)}: give the balance pin the frames of the plants, or "
                           "untick Support Polygon")
        check_goal_bones(obj, edit.bone if edit is not None else None, sorted(pinned))
        chains = {pb.name for name in self.names for pb in chain_to_root(obj.pose.bones[name])}
        self.sampler = Sampler(context.scene, obj, chains, direct)
        # A motion edit moves the edited bone's chain (the chain_length setting), as its drag does.
        chain_length = self.settings.chain_length if edit is not None else 0
        root_motion = self.settings.root_motion if move_root is None else ("FREE" if move_root else "KEEP")
        # A motion edit keeps the root on its path, as its drag does.
        self.root_motion = "KEEP" if edit is not None and move_root is None else root_motion
        self.movable = movable_bones(obj, edit.bone if edit else "", chain_length,
                                     keep_root=self.root_motion == "KEEP")
        self.model: RigModel | None = None
        self._results: dict[int, dict] = {}  # frame -> bone -> (rotation values, location or None)
        self._solutions: list[Solutions] = []  # the frames solved, not yet in ``results``
        self.goal_log: dict[int, tuple] = {}  # frame -> (bones, anchors, targets, weights, iterations)
        self.shaped_log: dict[int, list] = {}  # frame -> [(pin, fields it was built with)] of the other kinds
        self.priorities: dict[int, tuple] = {}  # frame -> each goal's priority
        # Frames whose goals were eased toward the animation (open range ends): frame -> (each
        # position goal's own target, the other kinds' pins as their own fields build them).
        self.eased_log: dict[int, tuple[np.ndarray, list]] = {}
        self.bones: set[str] = set()  # every bone a solve has written
        self.index = 0
        self.continuity = Continuity()
        self.root_off: dict[tuple[str, float], np.ndarray] = {}  # how far the last frame left the roots' path
        self.solved: dict[int, tuple] = {}  # frame -> (layout, animated q, solved q, joints steering a goal)
        self.goals, self.measure = FrameGoals(self), BakeMeasure(self)
        try:
            self.fixed_goals = self.goals.fixed_goals()
            self.open_ends = self.goals.open_ends(frame_start, frame_end)
        except Exception:
            self.abort()
            raise

    @property
    def max_pin_error(self) -> float:
        """[m] The largest pin error of the bake, measured on the evaluated pose."""
        return self.measure.max_pin_error

    @property
    def misses(self) -> list[tuple]:
        """Every frame on which a goal missed its own place (``BakeMeasure.misses``)."""
        return self.measure.misses

    @property
    def results(self) -> dict[int, dict]:
        """frame -> bone -> (rotation data path, rotation values, location or None): what
        each baked frame puts on the bones' channels (the solutions turned into channels all
        at once, as they are first asked for)."""
        for solutions in self._solutions:
            if solutions.frames:
                self._results.update(solutions.channels())
                solutions.clear()
        del self._solutions[:-1]
        return self._results

    def pins_in_force(self, frame: int) -> list:
        """The pins in force on ``frame``; an edited bone's own pins give way to the edit."""
        pins = self._pins_by_frame.get(frame)
        if pins is None:
            pins = [p for p in pins_on(self.settings, frame) if self.edit is None or p.bone != self.edit.bone]
        return pins

    def pose(self, frame: int) -> RigModel:
        """The hinge tree, started from the animated pose on ``frame``."""
        self.sampler.apply(frame)
        if self.model is None or not self.model.refresh():
            self.model = RigModel(self.obj, self.names, self.movable)
            self._built()
        return self.model

    def _built(self) -> None:
        """A new tree: what is worked out once per tree (its layout, each goal point's joint,
        the joints each set of goals moves) is worked out again as it is asked for."""
        self.layout = self.model.layout
        self._solutions.append(Solutions(self.model))
        self._anchors: dict[tuple[str, float], tuple[int, np.ndarray]] = {}
        self.cache: dict = {}  # the joints that move a set of goals or points, the roots

    def anchor(self, bone: str, anchor: float) -> tuple[int, np.ndarray]:
        """``model.anchor_local`` of the current tree, once per point."""
        found = self._anchors.get((bone, anchor))
        if found is None:
            found = self._anchors[bone, anchor] = self.model.anchor_local(bone, anchor)
        return found

    def point(self, model: RigModel, kin, bone: str, anchor: float) -> np.ndarray:
        joint, local = self.anchor(bone, anchor) if model is self.model else model.anchor_local(bone, anchor)
        frame = kin.frames[joint]
        return frame[:3, :3] @ local + frame[:3, 3]

    def _on_path(self, model: RigModel, problem: Problem, start: np.ndarray, path: dict):
        """Under 'FOLLOW': the frame solved with the roots held exactly on their path, when
        that holds every pin (the path's goals are then met exactly, and the solve has fewer
        joints and goals); None when it does not. The SR inverse, which holds the path in the
        pins' null space itself, tries it only where the last frame held every goal with the
        roots on the path: where the last frame left the path the roots glide back to it,
        and a goal out of reach stays so with the roots held."""
        if not path or not problem.goals:
            return None
        if self.settings.solver == "SR_INVERSE" and (not self.continuity.held or any(
                float(np.linalg.norm(off)) > problem.tolerance for off in self.root_off.values())):
            return None
        roots = self.goals.root_joints()
        active = np.ones(model.skeleton.size, dtype=bool)
        active[roots] = False
        start = start.copy()
        start[roots] = model.q0[roots]
        result = SOLVERS[self.settings.solver](dataclasses.replace(problem, active=active), start)
        return result if result.converged else None

    @property
    def done(self) -> bool:
        return self.index >= len(self.frames)

    def next(self) -> float:
        """Solve the next frame; returns its largest pin error [m]."""
        frame = self.frames[self.index]
        self.index += 1
        model = self.pose(frame)
        animated = model.skeleton.forward(model.q0)
        goals, log = [], []
        edit = self.edit
        # An edit is prioritised as its drag is: below the pins (they hold, it takes what is
        # left), or with pins_first off, above them.
        pin_priority, edit_priority = (0, 1) if edit is None or self.settings.pins_first else (1, 0)
        share = self.goals.range_weight(frame)
        # Near an end of the range, where the action goes on, each goal is eased in or out.
        in_force = self.goals.pin_targets(frame, model, animated, share)
        shaped = [(pin, fields) for pin, fields in in_force if pin.kind in SHAPED_KINDS]
        for pin, target in in_force:
            if pin.kind in SHAPED_KINDS:
                continue
            bone, anchor, weight = pin.bone, pin.anchor, pin.weight
            goals.append(self.goals.position_goal(pin, target, pin_priority, pin_share(pin, share)))
            log.append((bone, anchor, target, weight, pin_priority))
        support = support_points(in_force)
        goals += [shaped_goals.build(self.obj, model, animated, pin, pin_priority, support, **fields)
                  for pin, fields in shaped]
        if edit is not None:
            target = self.point(model, animated, edit.bone, edit.anchor) + edit.weight(frame) * edit.displacement
            goals.append(PositionGoal(*self.anchor(edit.bone, edit.anchor), target, priority=edit_priority))
            log.append((edit.bone, edit.anchor, target, 1.0, edit_priority))
        reported = len(goals)
        # The roots' head and tail on their animated path ('FOLLOW'): the path and the way the root points.
        path = {(name, anchor): self.point(model, animated, name, anchor)
                for name in self.goals.roots() for anchor in (0.0, 1.0)} if self.root_motion == "FOLLOW" else {}
        moving = self._moving_joints(frame, goals)
        q_start, start = self.continuity.carry(model, self.layout, moving, share, self.settings.motion_falloff,
                                               self.settings.solver)
        s = self.settings
        # The preferred pose of a bake is each frame's own animated pose, with the correction
        # carried over from the last frame (or easing off after a pin's end). The solve starts
        # there, or where the corrections of the last frames lead (``Continuity.carry``).
        problem = Problem(model.skeleton, goals, tolerance=s.tolerance, max_iterations=s.max_iterations,
                          damping=s.damping, reference=preferred_pose(s.reference, q_start),
                          reference_weight=s.reference_weight, ranges=model.ranges)
        result = self._met(problem, start, animated)
        if result is None:
            result = self._on_path(model, problem, start, path)
        if result is None:
            if path and goals:
                problem = dataclasses.replace(problem, goals=goals + self.goals.path_goals(animated, path, goals, share))
            result = SOLVERS[s.solver](problem, start)
        if not np.all(np.isfinite(result.q)):
            raise RigError(f"The solver failed on frame {frame} (non-finite result)")
        q0, q = model.q0.copy(), result.q.copy()
        self.continuity.solved(self.layout, q0, q, result.converged)
        steered = [(bone, anchor) for bone, anchor, *_ in log] + (list(path) if goals else [])
        steered += [(name, pin.anchor if name == pin.bone else pin.target_anchor)
                    for pin, _ in shaped for name in pin_bones(self.obj, pin) if pin.kind != "BALANCE"]
        self.root_off = self.goals.off_path(q, path)
        self.solved[frame] = (self.layout, q0, q, self.goals.steering(steered))
        self._solutions[-1].add(frame, q, q0, model.originals)
        self.bones.update(model.bones)
        if log or shaped:
            bones, anchors, targets, weights, priorities = zip(*log) if log else ((), (), (), (), ())
            self.goal_log[frame] = (list(bones), anchors, np.array(targets).reshape(-1, 3), weights,
                                    result.iterations)
            self.priorities[frame] = priorities
            self.shaped_log[frame] = ([(pin, fields, pin_priority) for pin, fields in shaped], support)
            eased = {pin.as_pointer() for pin, _ in in_force if is_eased(pin, share)}
            if eased:
                # What each pin asks for on its own, to measure the eased frame against too.
                own = [self.fixed_goals[self.pin_index[pin.as_pointer()]] if pin.as_pointer() in eased else target
                       for pin, target in in_force if pin.kind not in SHAPED_KINDS]
                own += [log[-1][2]] if edit is not None else []
                self.eased_log[frame] = (np.array(own, dtype=float).reshape(-1, 3),
                                         [(pin, {} if pin.as_pointer() in eased else fields, pin_priority)
                                          for pin, fields in shaped])
        return float(result.errors[:reported].max(initial=0.0))

    def _moving_joints(self, frame: int, goals: list) -> np.ndarray:
        """(n,) bool: the joints that move any of ``goals`` (the goals in force on ``frame``)."""
        key = (tuple(p.as_pointer() for p in self.pins_in_force(frame)), self.edit is not None)
        moving = self.cache.get(key)
        if moving is None:
            sk = self.model.skeleton
            moving = np.zeros(sk.size, dtype=bool)
            if goals:
                moving = sk.ancestors[np.concatenate([shaped_goals.goal_joints(g) for g in goals])].any(axis=0)
            self.cache[key] = moving
        return moving

    def _met(self, problem: Problem, start: np.ndarray, animated) -> SolveResult | None:
        """Where nothing is carried over and the animated pose already meets every goal (the
        pins, and the roots' path: the roots are on it), the frame as it is: a solve that
        keeps to where it starts would end there."""
        q0 = self.model.q0
        if self.root_off or not np.array_equal(start, q0) or (
                problem.reference is not None and not np.array_equal(problem.reference, q0)):
            return None
        errors = goal_errors(problem.goals, animated)
        if not np.all(errors <= problem.tolerance):
            return None
        return SolveResult(q=q0.copy(), iterations=0, errors=errors, converged=True)

    def finish(self, in_place: bool = False):
        """Copy the action, write every baked frame into the copy, assign it (``in_place``:
        write into the assigned action itself, as a motion edit does)."""
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
        ease_onto_plants(self)
        write_keys(obj, self.results)
        # Constraints, drivers or NLA: the model may not be the pose, so close the loop.
        self.measure.verify(self.close_loop() if not self.sampler.direct else None)
        self.context.scene.frame_set(self.frame_before)
        return baked

    def close_loop(self) -> dict[int, Measured]:
        """Where constraints or drivers move a goal's bone off its goal in the evaluated pose,
        solve those frames again from the baked pose, with the tree built there (so it holds
        the driven orientations as Blender evaluated them), and write them again: at most
        ``CORRECTION_PASSES`` times, while frames still miss. Returns the last measurements."""
        s = self.settings
        for _ in range(CORRECTION_PASSES):
            measured = self.measure.frames()
            missed = [frame for frame, m in measured.items() if not m.converged]
            if not missed:
                return measured
            for frame in missed:
                model = self.pose(frame)  # the baked pose: the scene samples the written action
                bones, anchors, targets, weights, _ = self.goal_log[frame]
                goals = [PositionGoal(*model.anchor_local(bone, anchor), target, weight=weight, priority=priority)
                         for bone, anchor, target, weight, priority
                         in zip(bones, anchors, targets, weights, self.priorities[frame])]
                goals += self.measure.shaped_goals(model, frame)
                problem = Problem(model.skeleton, goals, tolerance=s.tolerance, max_iterations=s.max_iterations,
                                  damping=s.damping, reference=preferred_pose(s.reference, model.q0),
                                  reference_weight=s.reference_weight, ranges=model.ranges)
                result = SOLVERS[s.solver](problem, model.q0)
                if np.all(np.isfinite(result.q)):
                    self.results[frame] = model.channels(result.q)
            write_keys(self.obj, self.results)
        return self.measure.frames()

    def keep(self, frames) -> None:
        """Record the animation as it is on ``frames`` (for the solved bones), so that keys
        written around an edit leave those frames' motion exactly as it was."""
        for frame in frames:
            self.sampler.apply(frame)
            self.results[frame] = {name: channels_of(self.obj.pose.bones[name]) for name in self.bones}

    def show_start(self) -> None:
        """Between slices of a modal bake: the pose as it was, rather than the last frame
        sampled (a scene-sampled bake shows the frames it bakes, as Blender's own does)."""
        if self.sampler.direct:
            self.pose_before.restore(self.obj)

    def abort(self) -> None:
        """Leave nothing behind: the frame and every pose channel as they were."""
        self.context.scene.frame_set(self.frame_before)
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


def pins_for_edit(context, obj, bone: str, frame: int) -> list[tuple]:
    """(pin, world target) of the pins an edit of ``bone`` on ``frame`` holds, as the edit
    itself will: for an interactive edit's preview. The pose is left as it was."""
    baker = Baker(context, obj, frame, frame, 1, False, MotionEdit(bone, 1.0, frame, np.zeros(3), 0))
    try:
        model = baker.pose(frame)
        return baker.goals.pin_targets(frame, model, model.skeleton.forward(model.q0))
    finally:
        baker.abort()


__all__ = ["SUFFIX", "Baker", "MotionEdit", "check", "direct_sampling", "edit_motion", "pins_for_edit", "pins_on"]
