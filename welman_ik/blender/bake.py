"""Bake: enforce the pins through every frame of an action, into a new action.

Keyframe interpolation moves joint angles independently, so between keys where the feet
were planted they slide or sink (Welman 1993, Fig 6.5). The bake evaluates the armature's
animation on each frame, solves with the pins in force on that frame, and writes the
result into a copy of the action; the original is left as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core import SOLVERS, PositionGoal, Problem
from . import keyframes
from .rig import RigError, RigModel
from .solve import SOLVABLE_PIN_KINDS, anchor_world, check_pin_bones

SUFFIX = ".welman_bake"


def pins_on(settings, frame: int) -> list:
    """Enabled position pins in force on ``frame``."""
    return [
        p for p in settings.pins
        if p.enabled and p.kind in SOLVABLE_PIN_KINDS
        and ((p.frame_start == 0 and p.frame_end == 0) or p.frame_start <= frame <= p.frame_end)
    ]


@dataclass
class MotionEdit:
    """Motion editing in motion (Yamane & Nakamura 2003, section 4): the point ``anchor`` of
    ``bone`` is displaced by ``displacement`` [m, world] at ``frame``, and by a share of it
    that falls off smoothly to nothing over ``falloff`` frames on either side."""

    bone: str
    anchor: float
    frame: int
    displacement: np.ndarray
    falloff: int

    def weight(self, frame: int) -> float:
        distance = abs(frame - self.frame)
        if distance > self.falloff:
            return 0.0
        return 0.5 * (1.0 + math.cos(math.pi * distance / (self.falloff + 1)))

    @property
    def frames(self) -> tuple[int, int]:
        return self.frame - self.falloff, self.frame + self.falloff


def check(obj, frame_start: int, frame_end: int, step: int, edit: MotionEdit | None = None) -> None:
    """Refuse what cannot be baked, with a message (nothing changed)."""
    if obj is None or obj.type != "ARMATURE":
        raise RigError("The active object is not an armature")
    if frame_end < frame_start:
        raise RigError(f"The frame range ends ({frame_end}) before it starts ({frame_start})")
    if step < 1:
        raise RigError("The step must be at least 1 frame")
    ad = obj.animation_data
    if ad is None or ad.action is None:
        raise RigError(f"Armature '{obj.name}' has no action to bake")
    if ad.action.library is not None:
        raise RigError(f"Action '{ad.action.name}' is linked from a library and cannot be baked into; "
                       "make it local first")
    check_pin_bones(obj, [p for p in obj.welman_ik.pins if p.enabled])
    if edit is not None:
        if edit.bone not in obj.pose.bones:
            raise RigError(f"Bone '{edit.bone}' does not exist in armature '{obj.name}'")
        if not np.all(np.isfinite(edit.displacement)):
            raise RigError("The edit's target is not a number (NaN or infinite)")
        return
    if not any(pins_on(obj.welman_ik, f) for f in range(frame_start, frame_end + 1, step)):
        raise RigError("No enabled pin is in force in the frame range")


class Baker:
    """Frame by frame: ``next()`` solves one frame, ``finish()`` writes the new action."""

    def __init__(self, context, obj, frame_start: int, frame_end: int, step: int = 1, move_root: bool = False,
                 edit: MotionEdit | None = None):
        check(obj, frame_start, frame_end, step, edit)
        self.edit = edit
        self.context, self.obj, self.settings = context, obj, obj.welman_ik
        self.frames = list(range(frame_start, frame_end + 1, step))
        self.move_root = move_root
        self.frame_before = context.scene.frame_current
        self.fixed_goals = self._fixed_goals()
        self.results: dict[int, dict] = {}  # frame -> bone -> (rotation values, location or None)
        self.max_pin_error = 0.0
        self.bones: set[str] = set()  # every bone a solve has written
        self.index = 0
        self._previous = None  # (model, animated q, solved q) of the last frame

    def _fixed_goals(self) -> dict:
        """Where each fixed pin holds: its own location, or (with a frame range) where its
        bone was on the first frame of the range."""
        goals = {}
        scene = self.context.scene
        for i, pin in enumerate(self.settings.pins):
            if pin.follow or not pin.enabled:
                continue
            if pin.frame_start == 0 and pin.frame_end == 0:
                goals[i] = np.array(pin.location, dtype=float)
            else:
                scene.frame_set(pin.frame_start)
                goals[i] = anchor_world(self.obj, self.obj.pose.bones[pin.bone], pin.anchor)
        return goals

    @property
    def done(self) -> bool:
        return self.index >= len(self.frames)

    def next(self) -> float:
        """Solve the next frame; returns its largest pin error [m]."""
        frame = self.frames[self.index]
        self.index += 1
        scene, obj = self.context.scene, self.obj
        scene.frame_set(frame)
        pins = pins_on(self.settings, frame)
        edit = self.edit
        names = sorted({p.bone for p in pins} | ({edit.bone} if edit is not None else set()))
        roots = {pb.name for pb in obj.pose.bones if pb.parent is None}
        movable = None if self.move_root else [pb.name for pb in obj.pose.bones if pb.name not in roots]
        model = RigModel(obj, names, movable)
        goals = []
        for pin in pins:
            joint, local = model.anchor_local(pin.bone, pin.anchor)
            index = list(self.settings.pins).index(pin)
            target = (anchor_world(obj, obj.pose.bones[pin.bone], pin.anchor) if pin.follow
                      else self.fixed_goals[index])
            goals.append(PositionGoal(joint, local, target, weight=pin.weight))
        if edit is not None:  # the edit, below the pins: they hold, it takes what is left
            joint, local = model.anchor_local(edit.bone, edit.anchor)
            animated = anchor_world(obj, obj.pose.bones[edit.bone], edit.anchor)
            goals.append(PositionGoal(joint, local, animated + edit.weight(frame) * edit.displacement,
                                      priority=1 if pins else 0))
        # Continuity: start from the last frame's solution moved by the animation's own change.
        q_start = model.q0
        if self._previous is not None and self._previous[0].skeleton.size == model.skeleton.size \
                and list(self._previous[0].bones) == list(model.bones):
            _, animated_before, solved_before = self._previous
            q_start = solved_before + (model.q0 - animated_before)
        s = self.settings
        problem = Problem(model.skeleton, goals, tolerance=s.tolerance, max_iterations=s.max_iterations,
                          damping=s.damping)
        result = SOLVERS[s.solver](problem, q_start)
        self._previous = (model, model.q0.copy(), result.q.copy())
        model.write(result.q)
        self.results[frame] = {name: _channels(obj.pose.bones[name]) for name in model.bones}
        self.bones.update(model.bones)
        error = float(result.errors.max(initial=0.0))
        self.max_pin_error = max(self.max_pin_error, error)
        return error

    def finish(self, in_place: bool = False):
        """Copy the action, write every baked frame into the copy, assign it (``in_place``:
        write into the assigned action itself, as a motion edit does)."""
        obj = self.obj
        baked = obj.animation_data.action
        if not in_place:
            original = baked
            baked = original.copy()
            baked.name = original.name + SUFFIX
            keyframes.assign_action(obj, baked)
        self.context.scene.frame_set(self.frame_before)
        _write_keys(obj, self.results)
        self.context.scene.frame_set(self.frame_before)
        return baked

    def keep(self, frames) -> None:
        """Record the animation as it is on ``frames`` (for the solved bones), so that keys
        written around an edit leave those frames' motion exactly as it was."""
        for frame in frames:
            self.context.scene.frame_set(frame)
            self.results[frame] = {name: _channels(self.obj.pose.bones[name]) for name in self.bones}

    def abort(self) -> None:
        """Leave nothing behind: the pose as the (unchanged) action gives it."""
        self.context.scene.frame_set(self.frame_before)


def surrounding_keys(obj, first: int, last: int) -> tuple[int, int]:
    """The nearest keyed frames of the object's action at or before ``first`` and at or
    after ``last`` (``first`` / ``last`` themselves when there are none)."""
    frames = {round(k.co[0]) for curve in keyframes.action_fcurves(obj) for k in curve.keyframe_points}
    return max((f for f in frames if f <= first), default=first), min((f for f in frames if f >= last), default=last)


def _channels(pose_bone) -> tuple:
    path = keyframes.rotation_path(pose_bone)
    return path, tuple(getattr(pose_bone, path)), tuple(pose_bone.location) if pose_bone.parent is None else None


def _write_keys(obj, results: dict) -> None:
    """Baked values on every baked frame, in bulk: existing keys of a baked channel inside
    the range are replaced, keys outside it are kept."""
    frames = sorted(results)
    first, last = frames[0], frames[-1]
    columns: dict[tuple[str, int], list] = {}
    for frame in frames:
        for name, (path, rotation, location) in results[frame].items():
            for index, value in enumerate(rotation):
                columns.setdefault((f'pose.bones["{name}"].{path}', index), []).append((frame, value))
            if location is not None:
                for index, value in enumerate(location):
                    columns.setdefault((f'pose.bones["{name}"].location', index), []).append((frame, value))
    for (data_path, index), points in columns.items():
        name = data_path.split('"')[1]
        curve = keyframes.ensure_fcurve(obj, data_path, index, group=name)
        kept = [(k.co[0], k.co[1]) for k in curve.keyframe_points if not first <= k.co[0] <= last]
        merged = sorted(kept + points)
        curve.keyframe_points.clear()
        curve.keyframe_points.add(len(merged))
        curve.keyframe_points.foreach_set("co", [c for point in merged for c in point])
        curve.keyframe_points.foreach_set("interpolation", [keyframes.LINEAR] * len(merged))
        curve.update()
