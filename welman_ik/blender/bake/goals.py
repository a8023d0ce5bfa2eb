"""A bake frame's goals: where each pin in force holds on the frame (its own place, or the
animation's for a follow pin, eased toward the animation near an open range end), and the
roots' path as goals below everything else ('FOLLOW')."""

from __future__ import annotations

import weakref

import numpy as np
from mathutils import Matrix, Quaternion

from ...core import PositionGoal
from ...core.contacts import ease
from ..drag.solver import check_goal_point, rig_reach
from ..pins.goals import SHAPED_KINDS, describe
from ..rig import keyframes
from ..rig.model import RigModel
from .frames import pin_share

ROOT_RETURN = 0.002  # share of the rig's size the hips may move back toward their path per frame ('FOLLOW')


class FrameGoals:
    """The goals of each frame of ``baker``'s bake (its pins, edit, frames and current tree)."""

    def __init__(self, baker):
        self.baker = weakref.proxy(baker)  # the baker owns this step: no reference cycle

    def fixed_goals(self) -> dict:
        """Where each fixed pin holds: its ``location`` (Detect Contacts puts a plant's there:
        the average of its frames)."""
        reach = rig_reach(self.baker.obj)
        return {i: check_goal_point(f"The location of {describe(pin)}", pin.location, reach)
                for i, pin in enumerate(self.baker.settings.pins)
                if pin.enabled and ((not pin.follow and pin.bone in self.baker.names) or pin.kind == "BALANCE")}

    def open_ends(self, frame_start: int, frame_end: int) -> tuple[bool, bool]:
        """Whether the action goes on before and after the baked range (a bake in a longer
        action eases its corrections in and out inside the range, so its ends do not jump)."""
        if self.baker.edit is not None:
            return False, False
        return keyframes.keyed_past(self.baker.obj, frame_start, frame_end)

    def range_weight(self, frame: int) -> float:
        """The share of the corrections applied on ``frame``: 1, falling as half a cosine to
        nothing over the ``motion_falloff`` frames at a range end the action goes on past."""
        falloff = max(self.baker.settings.motion_falloff, 0)
        weight = 1.0
        if self.baker.open_ends[0]:
            weight *= 1.0 - float(ease(frame - self.baker.frames[0] + 1, falloff))
        if self.baker.open_ends[1]:
            weight *= 1.0 - float(ease(self.baker.frames[-1] + 1 - frame, falloff))
        return weight

    def pin_targets(self, frame: int, model: RigModel, animated, share: float = 1.0) -> list[tuple]:
        """(pin, target) of each pin in force on ``frame``. A position pin's target is a world
        point: a follow pin's where the animation (``animated``: the model's forward
        kinematics there) puts it. The other kinds' is the fields their goal is built with
        (``_shaped_fields``). ``share`` < 1 (near a range end the action goes on past): each
        goal eased that share of the way from the animated pose."""
        out = []
        for pin in self.baker.pins_in_force(frame):
            eased = pin_share(pin, share)
            if pin.kind in SHAPED_KINDS:
                out.append((pin, self.shaped_fields(model, animated, pin, eased)))
                continue
            if not pin.follow and eased >= 1.0:
                out.append((pin, self.baker.fixed_goals[self.baker.pin_index[pin.as_pointer()]]))
                continue
            origin = self.baker.point(model, animated, pin.bone, pin.anchor)
            target = origin if pin.follow else self.baker.fixed_goals[self.baker.pin_index[pin.as_pointer()]]
            out.append((pin, origin + eased * (target - origin) if eased < 1.0 else target))
        return out

    def shaped_fields(self, model: RigModel, animated, pin, share: float = 1.0) -> dict:
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

    def path_goals(self, animated, path: dict, goals: list, share: float) -> list:
        """The roots' animated ``path`` as goals below everything else in ``goals``: left only
        where and as far as a pin needs (the solver's own goals, not reported as pins). Where
        the last frame left the path, the way back is at most ``ROOT_RETURN`` of the rig's
        size per frame: the hips glide back instead of snapping."""
        below = max(g.priority for g in goals) + 1
        step = ROOT_RETURN * animated.size_scale() if self.baker.root_off else 0.0
        out = []
        for (name, anchor), on_path in path.items():
            off = self.baker.root_off.get((name, anchor))
            if off is not None:
                distance = float(np.linalg.norm(off))
                off = off * max(0.0, 1.0 - step / distance) if distance > 0.0 else off
            target = on_path if off is None else on_path + share * off
            out.append(PositionGoal(*self.baker.anchor(name, anchor), target, priority=below))
        return out

    def position_goal(self, pin, target: np.ndarray, priority: int, share: float) -> PositionGoal:
        """A position pin's goal; a fixed pin's in full is the same on every frame, made once."""
        if pin.follow or share < 1.0:
            return PositionGoal(*self.baker.anchor(pin.bone, pin.anchor), target, weight=pin.weight, priority=priority)
        key = ("goal", pin.as_pointer(), priority)
        goal = self.baker.cache.get(key)
        if goal is None:
            goal = self.baker.cache[key] = PositionGoal(*self.baker.anchor(pin.bone, pin.anchor), target, weight=pin.weight,
                                                    priority=priority)
        return goal

    def steering(self, points) -> np.ndarray:
        """The joints that move any of ``points`` ((bone, anchor) pairs): a bone's own hinges
        turn about its head, so they do not move a point held there."""
        key = ("steering", tuple(points))
        steering = self.baker.cache.get(key)
        if steering is None:
            model = self.baker.model
            steering = np.zeros(model.skeleton.size, dtype=bool)
            for bone, anchor in points:
                moves = model.skeleton.ancestors[self.baker.anchor(bone, anchor)[0]].copy()
                if anchor == 0.0:
                    moves[list(model.bones[bone].hinges.values())] = False
                steering |= moves
            self.baker.cache[key] = steering
        return steering

    def off_path(self, q: np.ndarray, path: dict) -> dict:
        """How far the solution ``q`` leaves each point of the roots' ``path`` (none where the
        roots did not move from their animated values: their points are on it)."""
        roots = self.root_joints()
        if not path or np.array_equal(q[roots], self.baker.model.q0[roots]):
            return {}
        solved = self.baker.model.skeleton.forward(q)
        return {key: self.baker.point(self.baker.model, solved, *key) - on_path for key, on_path in path.items()}

    def root_joints(self) -> np.ndarray:
        """The joints of the current tree's roots (their hinges and slides), once."""
        roots = self.baker.cache.get("root joints")
        if roots is None:
            bones = self.baker.model.bones
            roots = self.baker.cache["root joints"] = np.array(
                [j for name in self.roots() for j in (*bones[name].hinges.values(), *bones[name].slides.values())],
                dtype=np.intp)
        return roots

    def roots(self) -> list[str]:
        """``model.roots()`` of the current tree, once."""
        found = self.baker.cache.get("roots")
        if found is None:
            found = self.baker.cache["roots"] = self.baker.model.roots()
        return found
