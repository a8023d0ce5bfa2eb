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
from mathutils import Matrix, Quaternion

from ...core import SOLVERS, PositionGoal, Problem, SolveResult
from ...core.contacts import ease
from ...core.problem import goal_errors
from ..drag.solver import (
    Figures,
    check_goal_bones,
    check_goal_point,
    check_pin_bones,
    movable_bones,
    preferred_pose,
    record,
    rig_reach,
)
from ..pins import goals as shaped_goals
from ..pins.goals import (
    SHAPED_KINDS,
    SUPPORT_KINDS,
    check_numbers,
    check_pin,
    describe,
    held_bones,
    pin_bones,
    support_points,
)
from ..rig import keyframes
from ..rig.channels import PoseSnapshot
from ..rig.evaluated import GoalSet, Measured, anchor_points, measure
from ..rig.evaluated import slack as evaluated_slack
from ..rig.model import RigError, RigModel, chain_to_root
from .channels import Solutions
from .edit import MotionEdit, surrounding_keys
from .frames import is_eased, pin_share, pins_on
from .keys import channels_of, write_keys
from .report import frame_ranges, list_misses
from .sampling import Sampler, direct_sampling

SUFFIX = ".welman_bake"
CORRECTION_PASSES = 4  # re-solves of the frames the evaluated pose misses (constrained rigs)
# The solvers whose solve starts where the corrections of the last frames lead (``Baker._carry``):
# they take the goals' share of a step exactly and keep the rest to the preferred pose. CCD
# and the Jacobian transpose settle wherever their start leads them, so they start from the
# carried correction itself.
EXTRAPOLATED = {"SR_INVERSE", "QUASI_NEWTON"}
ROOT_RETURN = 0.002  # share of the rig's size the hips may move back toward their path per frame ('FOLLOW')
ACTIVE, RELEASED = -1, 1 << 30  # a joint's frames since its last goal: moving one now, long ago


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
        self._pins_by_frame = {f: self._pins(f) for f in self.frames}
        # Each pin's place in the settings' list, by its pointer (the fixed goals are keyed by it).
        self._pin_index = {p.as_pointer(): i for i, p in enumerate(self.settings.pins)}
        in_force = {p.as_pointer(): p for f in self.frames for p in self._pins(f)}.values()
        pinned = set(held_bones(in_force))
        carried = {n for p in in_force if p.kind == "BALANCE" for n in pin_bones(obj, p)}
        self.names = sorted(pinned | carried | ({edit.bone} if edit is not None else set()))
        bare = [f for f in self.frames
                if any(p.kind == "BALANCE" and p.use_support for p in self._pins(f))
                and not any(p.kind in SUPPORT_KINDS for p in self._pins(f))]
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
        self.max_pin_error = 0.0  # [m] measured on the evaluated pose once the action is written
        self.goal_log: dict[int, tuple] = {}  # frame -> (bones, anchors, targets, weights, iterations)
        self.shaped_log: dict[int, list] = {}  # frame -> [(pin, fields it was built with)] of the other kinds
        self.priorities: dict[int, tuple] = {}  # frame -> each goal's priority
        self.worst: tuple[int, Measured] | None = None  # the worst frame, evaluated
        # Every frame on which a goal missed its own place: (frame, goal, miss, goals missed,
        # miss against the goal asked for, whether that goal was eased).
        self.misses: list[tuple] = []
        # Frames whose goals were eased toward the animation (open range ends): frame -> (each
        # position goal's own target, the other kinds' pins as their own fields build them).
        self.eased_log: dict[int, tuple[np.ndarray, list]] = {}
        self.own: dict[int, Measured] = {}  # the eased frames measured against the pins' own places
        self.eased_pin_error = 0.0  # [m] the largest pin error against the goals asked for (eased)
        self.bones: set[str] = set()  # every bone a solve has written
        self.index = 0
        self._previous = None  # (model layout, animated q, solved q, release state) of the last frame
        self._previous_state = None  # (corrections held, frames since released) of this frame
        self._corrections: list[tuple[np.ndarray, np.ndarray]] = []  # (correction, joints moving) of earlier frames
        self._range_weight_before = 1.0
        self._root_off: dict[tuple[str, float], np.ndarray] = {}  # how far the last frame left the roots' path
        self._held = True  # whether the last frame's solve held every goal
        self.solved: dict[int, tuple] = {}  # frame -> (layout, animated q, solved q, joints steering a goal)
        try:
            self.fixed_goals = self._fixed_goals()
            self.open_ends = self._open_ends(frame_start, frame_end)
        except Exception:
            self.abort()
            raise

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

    def _pins(self, frame: int) -> list:
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
        self._moving: dict = {}  # the joints that move a set of goals or points, the roots

    def _anchor(self, bone: str, anchor: float) -> tuple[int, np.ndarray]:
        """``model.anchor_local`` of the current tree, once per point."""
        found = self._anchors.get((bone, anchor))
        if found is None:
            found = self._anchors[bone, anchor] = self.model.anchor_local(bone, anchor)
        return found

    def _point(self, model: RigModel, kin, bone: str, anchor: float) -> np.ndarray:
        joint, local = self._anchor(bone, anchor) if model is self.model else model.anchor_local(bone, anchor)
        frame = kin.frames[joint]
        return frame[:3, :3] @ local + frame[:3, 3]

    def _fixed_goals(self) -> dict:
        """Where each fixed pin holds: its ``location`` (Detect Contacts puts a plant's there:
        the average of its frames)."""
        reach = rig_reach(self.obj)
        return {i: check_goal_point(f"The location of {describe(pin)}", pin.location, reach)
                for i, pin in enumerate(self.settings.pins)
                if pin.enabled and ((not pin.follow and pin.bone in self.names) or pin.kind == "BALANCE")}

    def _open_ends(self, frame_start: int, frame_end: int) -> tuple[bool, bool]:
        """Whether the action goes on before and after the baked range (a bake in a longer
        action eases its corrections in and out inside the range, so its ends do not jump)."""
        if self.edit is not None:
            return False, False
        return keyframes.keyed_past(self.obj, frame_start, frame_end)

    def range_weight(self, frame: int) -> float:
        """The share of the corrections applied on ``frame``: 1, falling as half a cosine to
        nothing over the ``motion_falloff`` frames at a range end the action goes on past."""
        falloff = max(self.settings.motion_falloff, 0)
        weight = 1.0
        if self.open_ends[0]:
            weight *= 1.0 - float(ease(frame - self.frames[0] + 1, falloff))
        if self.open_ends[1]:
            weight *= 1.0 - float(ease(self.frames[-1] + 1 - frame, falloff))
        return weight

    def ease_onto_plants(self) -> None:
        """Before each fixed pin with a frame range (a plant) takes hold, its bone's chain eases
        onto the correction the plant's first frame needed, over ``motion_falloff`` frames
        (half a cosine), in joint space, as it eases off after the plant's end: the foot
        comes down onto its held place instead of jumping there. Joints that move a goal in
        force on a frame are left as solved there, so every pin holds as it did."""
        falloff = max(self.settings.motion_falloff, 0)
        if self.edit is not None or falloff == 0:
            return
        changed: dict[int, np.ndarray] = {}
        for i in sorted(self.fixed_goals, key=lambda k: self.settings.pins[k].frame_start):
            pin = self.settings.pins[i]
            if pin.kind not in {"POSITION", "POSE"}:
                continue  # (the other kinds hold in full from their first frame)
            start = pin.frame_start
            if (pin.frame_start == 0 and pin.frame_end == 0) or start not in self.solved or start == self.frames[0]:
                continue
            layout, animated, solved, _ = self.solved[start]
            joint = self._anchor(pin.bone, pin.anchor)[0] if self.layout == layout else None
            if joint is None:
                continue
            chain = self.model.skeleton.ancestors[joint]
            # After another plant of the bone, the ease spans the frames between the two.
            ended = [p.frame_end for k, p in enumerate(self.settings.pins)
                     if k in self.fixed_goals and p.bone == pin.bone and p.frame_start != 0 and p.frame_end < start]
            window = min(falloff, start - max(ended) - 1) if ended else falloff
            for frame in range(start - window, start):
                if frame not in self.solved or self.solved[frame][0] != layout:
                    continue
                _, q0, q, steering = self.solved[frame]
                q = changed.get(frame, q)
                mask = chain & ~steering
                weight = float(ease(start - frame, window))
                changed[frame] = np.where(mask, q + weight * (q0 + (solved - animated) - q), q)
        for frame, q in sorted(changed.items()):
            model = self.pose(frame)
            self.results[frame] = model.channels(q)

    def _on_path(self, model: RigModel, problem: Problem, start: np.ndarray, path: dict):
        """Under 'FOLLOW': the frame solved with the roots held exactly on their path, when
        that holds every pin (the path's goals are then met exactly, and the solve has fewer
        joints and goals); None when it does not. The SR inverse, which holds the path in the
        pins' null space itself, tries it only where the last frame held every goal with the
        roots on the path: where the last frame left the path the roots glide back to it,
        and a goal out of reach stays so with the roots held."""
        if not path or not problem.goals:
            return None
        if self.settings.solver == "SR_INVERSE" and (not self._held or any(
                float(np.linalg.norm(off)) > problem.tolerance for off in self._root_off.values())):
            return None
        roots = self._root_joints()
        active = np.ones(model.skeleton.size, dtype=bool)
        active[roots] = False
        start = start.copy()
        start[roots] = model.q0[roots]
        result = SOLVERS[self.settings.solver](dataclasses.replace(problem, active=active), start)
        return result if result.converged else None

    def _steering(self, points) -> np.ndarray:
        """The joints that move any of ``points`` ((bone, anchor) pairs): a bone's own hinges
        turn about its head, so they do not move a point held there."""
        key = ("steering", tuple(points))
        steering = self._moving.get(key)
        if steering is None:
            model = self.model
            steering = np.zeros(model.skeleton.size, dtype=bool)
            for bone, anchor in points:
                moves = model.skeleton.ancestors[self._anchor(bone, anchor)[0]].copy()
                if anchor == 0.0:
                    moves[list(model.bones[bone].hinges.values())] = False
                steering |= moves
            self._moving[key] = steering
        return steering

    @property
    def done(self) -> bool:
        return self.index >= len(self.frames)

    def pin_targets(self, frame: int, model: RigModel, animated, share: float = 1.0) -> list[tuple]:
        """(pin, target) of each pin in force on ``frame``. A position pin's target is a world
        point: a follow pin's where the animation (``animated``: the model's forward
        kinematics there) puts it. The other kinds' is the fields their goal is built with
        (``_shaped_fields``). ``share`` < 1 (near a range end the action goes on past): each
        goal eased that share of the way from the animated pose."""
        out = []
        for pin in self._pins(frame):
            eased = pin_share(pin, share)
            if pin.kind in SHAPED_KINDS:
                out.append((pin, self._shaped_fields(model, animated, pin, eased)))
                continue
            if not pin.follow and eased >= 1.0:
                out.append((pin, self.fixed_goals[self._pin_index[pin.as_pointer()]]))
                continue
            origin = self._point(model, animated, pin.bone, pin.anchor)
            target = origin if pin.follow else self.fixed_goals[self._pin_index[pin.as_pointer()]]
            out.append((pin, origin + eased * (target - origin) if eased < 1.0 else target))
        return out

    def _shaped_fields(self, model: RigModel, animated, pin, share: float = 1.0) -> dict:
        """The fields a pin of another kind than POSITION is built with on a frame: a follow
        pin's place and orientation are where the animation puts its bone; with ``share`` < 1
        a place and an orientation are eased that share of the way from the animated ones
        (an aim, a together and a balance pin hold in full)."""
        if pin.kind in {"TOGETHER", "BALANCE", "AIM"} or (not pin.follow and share >= 1.0):
            return {}
        joint, local = model.anchor_local(pin.bone, pin.anchor)
        origin = animated.points(np.array([joint]), local[None])[0]
        frame = animated.frames[joint]
        axes = frame[:3, :3] / np.linalg.norm(frame[:3, :3], axis=0)
        location = origin if pin.follow else np.array(pin.location, dtype=float)
        fields = {"location": origin + share * (location - origin)}
        if pin.kind in {"ORIENTATION", "POSE"}:
            if not pin.follow:
                animated_turn = Matrix([list(row) for row in axes]).to_quaternion()
                held = Quaternion(pin.rotation).normalized()
                axes = np.array(animated_turn.slerp(held, share).to_matrix(), dtype=float)
            fields["rotation_matrix"] = axes
        return fields

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
        share = self.range_weight(frame)
        # Near an end of the range, where the action goes on, each goal is eased in or out.
        in_force = self.pin_targets(frame, model, animated, share)
        shaped = [(pin, fields) for pin, fields in in_force if pin.kind in SHAPED_KINDS]
        for pin, target in in_force:
            if pin.kind in SHAPED_KINDS:
                continue
            bone, anchor, weight = pin.bone, pin.anchor, pin.weight
            goals.append(self._position_goal(pin, target, pin_priority, pin_share(pin, share)))
            log.append((bone, anchor, target, weight, pin_priority))
        support = support_points(in_force)
        goals += [shaped_goals.build(self.obj, model, animated, pin, pin_priority, support, **fields)
                  for pin, fields in shaped]
        if edit is not None:
            target = self._point(model, animated, edit.bone, edit.anchor) + edit.weight(frame) * edit.displacement
            goals.append(PositionGoal(*self._anchor(edit.bone, edit.anchor), target, priority=edit_priority))
            log.append((edit.bone, edit.anchor, target, 1.0, edit_priority))
        reported = len(goals)
        # The roots' head and tail on their animated path ('FOLLOW'): the path and the way the root points.
        path = {(name, anchor): self._point(model, animated, name, anchor)
                for name in self._roots() for anchor in (0.0, 1.0)} if self.root_motion == "FOLLOW" else {}
        moving = self._moving_joints(frame, goals)
        q_start, start = self._carry(moving, share)
        s = self.settings
        # The preferred pose of a bake is each frame's own animated pose, with the correction
        # carried over from the last frame (or easing off after a pin's end). The solve starts
        # there, or where the corrections of the last frames lead (``_carry``).
        problem = Problem(model.skeleton, goals, tolerance=s.tolerance, max_iterations=s.max_iterations,
                          damping=s.damping, reference=preferred_pose(s.reference, q_start),
                          reference_weight=s.reference_weight, ranges=model.ranges)
        result = self._met(problem, start, animated)
        if result is None:
            result = self._on_path(model, problem, start, path)
        if result is None:
            if path and goals:
                problem = dataclasses.replace(problem, goals=goals + self._path_goals(animated, path, goals, share))
            result = SOLVERS[s.solver](problem, start)
        if not np.all(np.isfinite(result.q)):
            raise RigError(f"The solver failed on frame {frame} (non-finite result)")
        self._held = result.converged
        q0, q = model.q0.copy(), result.q.copy()
        self._previous = (self.layout, q0, q, self._previous_state)
        steered = [(bone, anchor) for bone, anchor, *_ in log] + (list(path) if goals else [])
        steered += [(name, pin.anchor if name == pin.bone else pin.target_anchor)
                    for pin, _ in shaped for name in pin_bones(self.obj, pin) if pin.kind != "BALANCE"]
        self._root_off = self._off_path(q, path)
        self.solved[frame] = (self.layout, q0, q, self._steering(steered))
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
                own = [self.fixed_goals[self._pin_index[pin.as_pointer()]] if pin.as_pointer() in eased else target
                       for pin, target in in_force if pin.kind not in SHAPED_KINDS]
                own += [log[-1][2]] if edit is not None else []
                self.eased_log[frame] = (np.array(own, dtype=float).reshape(-1, 3),
                                         [(pin, {} if pin.as_pointer() in eased else fields, pin_priority)
                                          for pin, fields in shaped])
        return float(result.errors[:reported].max(initial=0.0))

    def _path_goals(self, animated, path: dict, goals: list, share: float) -> list:
        """The roots' animated ``path`` as goals below everything else in ``goals``: left only
        where and as far as a pin needs (the solver's own goals, not reported as pins). Where
        the last frame left the path, the way back is at most ``ROOT_RETURN`` of the rig's
        size per frame: the hips glide back instead of snapping."""
        below = max(g.priority for g in goals) + 1
        step = ROOT_RETURN * animated.size_scale() if self._root_off else 0.0
        out = []
        for (name, anchor), on_path in path.items():
            off = self._root_off.get((name, anchor))
            if off is not None:
                distance = float(np.linalg.norm(off))
                off = off * max(0.0, 1.0 - step / distance) if distance > 0.0 else off
            target = on_path if off is None else on_path + share * off
            out.append(PositionGoal(*self._anchor(name, anchor), target, priority=below))
        return out

    def _position_goal(self, pin, target: np.ndarray, priority: int, share: float) -> PositionGoal:
        """A position pin's goal; a fixed pin's in full is the same on every frame, made once."""
        if pin.follow or share < 1.0:
            return PositionGoal(*self._anchor(pin.bone, pin.anchor), target, weight=pin.weight, priority=priority)
        key = ("goal", pin.as_pointer(), priority)
        goal = self._moving.get(key)
        if goal is None:
            goal = self._moving[key] = PositionGoal(*self._anchor(pin.bone, pin.anchor), target, weight=pin.weight,
                                                    priority=priority)
        return goal

    def _off_path(self, q: np.ndarray, path: dict) -> dict:
        """How far the solution ``q`` leaves each point of the roots' ``path`` (none where the
        roots did not move from their animated values: their points are on it)."""
        roots = self._root_joints()
        if not path or np.array_equal(q[roots], self.model.q0[roots]):
            return {}
        solved = self.model.skeleton.forward(q)
        return {key: self._point(self.model, solved, *key) - on_path for key, on_path in path.items()}

    def _root_joints(self) -> np.ndarray:
        """The joints of the current tree's roots (their hinges and slides), once."""
        roots = self._moving.get("root joints")
        if roots is None:
            bones = self.model.bones
            roots = self._moving["root joints"] = np.array(
                [j for name in self._roots() for j in (*bones[name].hinges.values(), *bones[name].slides.values())],
                dtype=np.intp)
        return roots

    def _roots(self) -> list[str]:
        """``model.roots()`` of the current tree, once."""
        found = self._moving.get("roots")
        if found is None:
            found = self._moving["roots"] = self.model.roots()
        return found

    def _moving_joints(self, frame: int, goals: list) -> np.ndarray:
        """(n,) bool: the joints that move any of ``goals`` (the goals in force on ``frame``)."""
        key = (tuple(p.as_pointer() for p in self._pins(frame)), self.edit is not None)
        moving = self._moving.get(key)
        if moving is None:
            sk = self.model.skeleton
            moving = np.zeros(sk.size, dtype=bool)
            if goals:
                moving = sk.ancestors[np.concatenate([shaped_goals.goal_joints(g) for g in goals])].any(axis=0)
            self._moving[key] = moving
        return moving

    def _carry(self, moving: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
        """(preferred pose, start) of this frame's solve.

        Continuity: each joint that moves a goal keeps the last frame's correction (its
        solution less its animated value), carried onto this frame's animated pose: that is
        the preferred pose. A joint that moves no goal any more (its pin ended) lets its
        correction go over ``motion_falloff`` frames, easing back onto the animation instead
        of jumping. The solve starts where the corrections of the last frames lead: a goal
        held while the animation moves needs a correction that changes smoothly from frame to
        frame, so its change is carried on too (to second order where three frames are known),
        which leaves the solve little to do (for the solvers in ``EXTRAPOLATED``). That start
        changes where the solve begins, not what it keeps to."""
        model = self.model
        size = model.skeleton.size
        held, age = np.zeros(size), np.full(size, RELEASED)
        q_start = start = model.q0
        if self._previous is not None and self._previous[0] == self.layout:
            _, animated_before, solved_before, (held_before, age_before) = self._previous
            correction = solved_before - animated_before
            released = age_before == ACTIVE
            held = np.where(released, correction, held_before)
            age = np.where(released, 1, np.minimum(age_before + 1, RELEASED))
            easing = np.zeros(size)
            idle = ~moving & (held != 0.0)  # joints easing off a correction
            if idle.any():
                easing[idle] = ease(age[idle], max(self.settings.motion_falloff, 0)) * held[idle]
            # Easing out at the range's end: the carried correction shrinks with the goals.
            scale = min(1.0, share / self._range_weight_before) if self._range_weight_before > 1e-9 else share
            q_start = model.q0 + scale * np.where(moving, correction, easing)
            # The corrections of the frames before the last, of joints that have moved a goal
            # on each of those frames and on this one.
            trend = np.zeros(size)
            history = self._corrections
            if history:
                steady = moving & released & history[-1][1]
                trend = np.where(steady, correction - history[-1][0], 0.0)
                if len(history) > 1:
                    curving = steady & history[-2][1]
                    trend += np.where(curving, (correction - history[-1][0]) - (history[-1][0] - history[-2][0]), 0.0)
            start = q_start + scale * trend if history and self.settings.solver in EXTRAPOLATED else q_start
            # (a frame that missed a goal is no trend to follow)
            self._corrections = [*history[-1:], (correction, released)] if self._held else []
        else:
            self._corrections = []
        self._range_weight_before = share
        self._previous_state = (held, np.where(moving, ACTIVE, age))
        return q_start, start

    def _met(self, problem: Problem, start: np.ndarray, animated) -> SolveResult | None:
        """Where nothing is carried over and the animated pose already meets every goal (the
        pins, and the roots' path: the roots are on it), the frame as it is: a solve that
        keeps to where it starts would end there."""
        q0 = self.model.q0
        if self._root_off or not np.array_equal(start, q0) or (
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
        self.ease_onto_plants()
        write_keys(obj, self.results)
        # Constraints, drivers or NLA: the model may not be the pose, so close the loop.
        self.verify(self.close_loop() if not self.sampler.direct else None)
        self.context.scene.frame_set(self.frame_before)
        return baked

    def measure_frames(self) -> dict[int, Measured]:
        """Each baked frame's goals measured on the pose Blender evaluates from the written
        action (constraints and drivers included): one evaluation per frame, the points read
        there, the distances of the frames with the same goals worked out together."""
        scene, tolerance = self.context.scene, self.settings.tolerance
        frames = sorted(self.goal_log)
        evaluated, shaped, shaped_own = {}, {}, {}
        for frame in frames:
            bones, anchors = self.goal_log[frame][:2]
            scene.frame_set(frame)  # the action as written
            evaluated[frame] = anchor_points(self.obj, bones, anchors)
            entries = self.shaped_log.get(frame, ([], None))[0]
            if entries:
                shaped[frame] = self._shaped_measure(frame, entries, tolerance)
            own_entries = self.eased_log[frame][1] if frame in self.eased_log else []
            if own_entries:
                shaped_own[frame] = self._shaped_measure(frame, own_entries, tolerance)
        groups: dict[tuple, list[int]] = {}
        for frame in frames:
            bones, anchors, _, weights, _ = self.goal_log[frame]
            groups.setdefault((tuple(bones), tuple(anchors), tuple(weights)), []).append(frame)
        out = {}
        for (bones, anchors, weights), members in groups.items():
            goals = GoalSet(list(bones) * len(members), np.tile(anchors, len(members)),
                            np.vstack([self.goal_log[f][2] for f in members]), np.tile(weights, len(members)))
            measured = measure(goals, np.vstack([evaluated[f] for f in members]), tolerance)
            for i, frame in enumerate(members):
                part = slice(i * len(bones), (i + 1) * len(bones))
                out[frame] = Measured(measured.errors[part], measured.met[part], measured.counted[part])
        for frame, part in shaped.items():
            out[frame] = self._with_shaped(out[frame], part)
        # The eased frames again, against each pin's own place: what a user reads as the pin.
        self.own = {}
        for frame, (targets, _) in self.eased_log.items():
            if frame not in out:
                continue
            bones, anchors, _, weights, _ = self.goal_log[frame]
            own = measure(GoalSet(list(bones), np.asarray(anchors, dtype=float), targets,
                                  np.asarray(weights, dtype=float)), evaluated[frame], tolerance)
            self.own[frame] = self._with_shaped(own, shaped_own[frame]) if frame in shaped_own else own
        return out

    def _shaped_goals(self, model: RigModel, frame: int, entries: list | None = None) -> list:
        logged, support = self.shaped_log.get(frame, ([], None))
        entries = logged if entries is None else entries
        kin = model.skeleton.forward(model.q0) if entries else None
        return [shaped_goals.build(self.obj, model, kin, pin, priority, support, **fields)
                for pin, fields, priority in entries]

    def _shaped_measure(self, frame: int, entries: list, tolerance: float) -> Measured:
        """The other kinds' pins of ``frame`` (``entries``) measured on the evaluated pose."""
        model = self.model
        built = self._shaped_goals(model, frame, entries)
        names = sorted({n for pin, *_ in entries for n in pin_bones(self.obj, pin) if n in model.bones})
        kin = shaped_goals.evaluated_kinematics(self.obj, model, model.q0, names)
        errors = shaped_goals.goal_errors(built, kin)
        places = np.array([pin.location for pin, *_ in entries]).reshape(-1, 3)
        met = errors <= tolerance + evaluated_slack(places)
        counted = np.array([pin.weight > 0.0 for pin, *_ in entries], dtype=bool)
        return Measured(errors, met, counted)

    def _with_shaped(self, measured: Measured, shaped: Measured) -> Measured:
        """``measured`` (the position pins, then the edit) with the other kinds' pins
        (``shaped``) in the order of ``goal_names``: before the edit."""
        cut = len(measured.errors) - (1 if self.edit is not None else 0)

        def insert(a, b):
            return np.concatenate([a[:cut], b, a[cut:]])

        return Measured(insert(measured.errors, shaped.errors), insert(measured.met, shaped.met),
                        insert(measured.counted, shaped.counted))

    def goal_names(self, frame: int) -> list[str]:
        """How the figures name each goal of a frame, in the order ``measure_frames`` gives."""
        bones = list(self.goal_log[frame][0])
        cut = len(bones) - (1 if self.edit is not None else 0)
        shaped = [describe(pin) for pin, *_ in self.shaped_log.get(frame, ([], None))[0]]
        return bones[:cut] + shaped + bones[cut:]

    def close_loop(self) -> dict[int, Measured]:
        """Where constraints or drivers move a goal's bone off its goal in the evaluated pose,
        solve those frames again from the baked pose, with the tree built there (so it holds
        the driven orientations as Blender evaluated them), and write them again: at most
        ``CORRECTION_PASSES`` times, while frames still miss. Returns the last measurements."""
        s = self.settings
        for _ in range(CORRECTION_PASSES):
            measured = self.measure_frames()
            missed = [frame for frame, m in measured.items() if not m.converged]
            if not missed:
                return measured
            for frame in missed:
                model = self.pose(frame)  # the baked pose: the scene samples the written action
                bones, anchors, targets, weights, _ = self.goal_log[frame]
                goals = [PositionGoal(*model.anchor_local(bone, anchor), target, weight=weight, priority=priority)
                         for bone, anchor, target, weight, priority
                         in zip(bones, anchors, targets, weights, self.priorities[frame])]
                goals += self._shaped_goals(model, frame)
                problem = Problem(model.skeleton, goals, tolerance=s.tolerance, max_iterations=s.max_iterations,
                                  damping=s.damping, reference=preferred_pose(s.reference, model.q0),
                                  reference_weight=s.reference_weight, ranges=model.ranges)
                result = SOLVERS[s.solver](problem, model.q0)
                if np.all(np.isfinite(result.q)):
                    self.results[frame] = model.channels(result.q)
            write_keys(self.obj, self.results)
        return self.measure_frames()

    def verify(self, measured: dict[int, Measured] | None = None) -> None:
        """Record the worst frame's figures, measured on the evaluated pose (``measured``: the
        measurements already taken of the action as written)."""
        measured = self.measure_frames() if measured is None else measured
        pins = slice(None, -1 if self.edit is not None else None)  # the pins' entries, not the edit's
        self.worst, self.max_pin_error, self.eased_pin_error = None, 0.0, 0.0
        for frame, asked in measured.items():
            m = self.own.get(frame, asked)  # each pin against its own place
            worst = float(m.errors[pins][m.counted[pins]].max(initial=0.0))
            self.eased_pin_error = max(self.eased_pin_error, float(asked.errors[pins][asked.counted[pins]]
                                                                  .max(initial=0.0)))
            if self.worst is None or worst > self.max_pin_error:
                self.worst, self.max_pin_error = (frame, m), worst
        self.misses = self._misses(measured)
        list_misses(self.settings, self.misses)
        if self.misses:  # the figures' frame: the largest miss of any goal (an edit's too)
            frame = max(self.misses, key=lambda miss: miss[2])[0]
            self.worst = (frame, self.own.get(frame, measured[frame]))
        if self.worst is not None:
            # An edit's own figure is its error where it holds in full: on the edited frame
            # (elsewhere its target is the blend the edit asks for).
            edited = measured.get(self.edit.frame) if self.edit is not None else None
            self._record(float(edited.errors[-1]) if edited is not None else None)

    def _misses(self, measured: dict[int, Measured]) -> list[tuple]:
        """(frame, worst goal's name, its miss from its own place [m], goals missed, its miss
        against the goal asked for [m], whether that goal was eased) of every frame on which a
        goal missed its own place."""
        out = []
        for frame, asked in sorted(measured.items()):
            m = self.own.get(frame, asked)
            missed = np.flatnonzero(m.counted & ~m.met)
            if missed.size:
                i = int(missed[np.argmax(m.errors[missed])])
                eased = bool(m is not asked and m.errors[i] != asked.errors[i])
                out.append((frame, self.goal_names(frame)[i], float(m.errors[i]), int(missed.size),
                            float(asked.errors[i]), eased))
        return out

    def eased_note(self) -> str:
        """Where the goals were eased toward the animation, in words: '... over 10 frames at the
        range start (frames 101-110) ...'; empty when nothing was."""
        if not self.eased_log:
            return ""
        first, last = self.frames[0], self.frames[-1]
        middle = (first + last) / 2.0
        ends = []
        for name, part in (("start", [f for f in self.eased_log if f <= middle]),
                           ("end", [f for f in self.eased_log if f > middle])):
            if part:
                ends.append(f"{len(part)} frame(s) at the range {name} ({frame_ranges(part)})")
        return "goals eased toward the animation, which goes on past the range, over " + " and ".join(ends)

    def _record(self, edit_error: float | None = None) -> None:
        frame, measured = self.worst
        iterations = self.goal_log[frame][4]
        bones = self.goal_names(frame)
        missed = [i for i in range(len(bones)) if measured.counted[i] and not measured.met[i]]
        message = ""
        if missed:
            i = max(missed, key=lambda k: measured.errors[k])
            what = bones[i] if bones[i].startswith("the ") else f"'{bones[i]}'"
            message = (f"{what} is {measured.errors[i] * 1000:.2f} mm off on frame {frame} in the evaluated "
                       f"pose ({len(missed)} goal(s) missed on that frame); missed on "
                       f"{len(self.misses)} frame(s): {frame_ranges([f for f, *_ in self.misses])}")
            eased = [f for f, *_, was_eased in self.misses if was_eased]
            if eased:
                message = (f"{what} is {measured.errors[i] * 1000:.2f} mm from its own location on frame {frame} "
                           f"(evaluated); {self.eased_note()}: against the eased goals "
                           f"{self.eased_pin_error * 1000:.2f} mm. Off its location on {len(self.misses)} frame(s): "
                           f"{frame_ranges([f for f, *_ in self.misses])}")
        edit = self.edit is not None
        record(self.settings.last_solve, Figures(
            SolveResult(np.zeros(0), iterations, measured.errors, measured.converged),
            drag_error=(float(measured.errors[-1]) if edit_error is None else edit_error) if edit else 0.0,
            max_pin_error=self.max_pin_error,
            milliseconds=1000.0 * (time.perf_counter() - self.started), converged=measured.converged,
            message=message, eased_pin_error=self.eased_pin_error if self.eased_log else None,
            eased_frames=len(self.eased_log)))

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
        return baker.pin_targets(frame, model, model.skeleton.forward(model.q0))
    finally:
        baker.abort()


__all__ = ["SUFFIX", "Baker", "MotionEdit", "check", "direct_sampling", "edit_motion", "pins_for_edit", "pins_on"]
