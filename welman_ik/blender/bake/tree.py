"""The hinge tree a bake solves with, and what depends on the tree alone, worked out once per
tree: each goal point's joint and local place, the roots and their joints, the joints a set
of goals moves, the fixed pins' goals. One tree serves every frame whose animated pose it
fits (``RigModel.refresh``); the frames solved with it are kept as ``solutions``."""

from __future__ import annotations

import numpy as np

from ...core import PositionGoal
from ..pins import goals as shaped_goals
from ..rig.model import RigModel
from ..rig.targets import follows
from .channels import Solutions

FIXED_KINDS = {"FLOOR", "LINE", "PLANE", "REGION"}  # a goal of these made from the pin's own fields alone


class Tree:
    """``model`` with its per-tree answers, each worked out the first time it is asked."""

    def __init__(self, model: RigModel):
        self.model = model
        self.layout = model.layout
        self.solutions = Solutions(model)  # the frames solved with this tree
        self._anchors: dict[tuple[str, float], tuple[int, np.ndarray]] = {}
        self._cache: dict = {}

    def anchor(self, bone: str, anchor: float) -> tuple[int, np.ndarray]:
        """``model.anchor_local``, once per point."""
        found = self._anchors.get((bone, anchor))
        if found is None:
            found = self._anchors[bone, anchor] = self.model.anchor_local(bone, anchor)
        return found

    def point(self, kin, bone: str, anchor: float) -> np.ndarray:
        """The world place of ``bone``'s point at ``anchor`` in the kinematics ``kin``."""
        joint, local = self.anchor(bone, anchor)
        frame = kin.frames[joint]
        return frame[:3, :3] @ local + frame[:3, 3]

    def once(self, key, make):
        """``make()``, worked out once per tree for ``key``."""
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = make()
        return found

    def rest(self):
        """The kinematics of the rest pose (every joint at 0), once."""
        found = self._cache.get("rest")
        if found is None:
            skeleton = self.model.skeleton
            found = self._cache["rest"] = skeleton.forward(np.zeros(skeleton.size))
        return found

    def roots(self) -> list[str]:
        """``model.roots()``, once."""
        found = self._cache.get("roots")
        if found is None:
            found = self._cache["roots"] = self.model.roots()
        return found

    def root_joints(self) -> np.ndarray:
        """The joints of the roots (their hinges and slides), once."""
        roots = self._cache.get("root joints")
        if roots is None:
            bones = self.model.bones
            roots = self._cache["root joints"] = np.array(
                [j for name in self.roots() for j in (*bones[name].hinges.values(), *bones[name].slides.values())],
                dtype=np.intp)
        return roots

    def moving(self, key, goals: list) -> np.ndarray:
        """(n,) bool: the joints that move any of ``goals``, once per ``key`` (the pins in force)."""
        moving = self._cache.get(("moving", key))
        if moving is None:
            sk = self.model.skeleton
            moving = np.zeros(sk.size, dtype=bool)
            if goals:
                moving = sk.ancestors[np.concatenate([shaped_goals.goal_joints(g) for g in goals])].any(axis=0)
            self._cache["moving", key] = moving
        return moving

    def steering(self, points) -> np.ndarray:
        """The joints that move any of ``points`` ((bone, anchor) pairs): a bone's own hinges
        turn about its head, so they do not move a point held there."""
        key = ("steering", tuple(points))
        steering = self._cache.get(key)
        if steering is None:
            steering = np.zeros(self.model.skeleton.size, dtype=bool)
            for bone, anchor in points:
                moves = self.model.skeleton.ancestors[self.anchor(bone, anchor)[0]].copy()
                if anchor == 0.0:
                    moves[list(self.model.bones[bone].hinges.values())] = False
                steering |= moves
            self._cache[key] = steering
        return steering

    def shaped_goal(self, obj, kin, pin, priority: int, support, fields: dict):
        """A pin of another kind's goal (``pins.goals.build``); one that holds where the pin
        itself says on every frame (a floor, a line, a plane, a region: ``fields`` empty) is
        made once."""
        if fields or pin.kind not in FIXED_KINDS:
            return shaped_goals.build(obj, self.model, kin, pin, priority, support, **fields)
        key = ("shaped", pin.as_pointer(), priority)
        goal = self._cache.get(key)
        if goal is None:
            goal = self._cache[key] = shaped_goals.build(obj, self.model, kin, pin, priority, support)
        return goal

    def position_goal(self, pin, target: np.ndarray, priority: int, share: float) -> PositionGoal:
        """A position pin's goal; a fixed pin's in full is the same on every frame, made once
        (not one that follows the animation or a target)."""
        if pin.follow or share < 1.0 or follows(pin):
            return PositionGoal(*self.anchor(pin.bone, pin.anchor), target, weight=pin.weight, priority=priority)
        key = ("goal", pin.as_pointer(), priority)
        goal = self._cache.get(key)
        if goal is None:
            goal = self._cache[key] = PositionGoal(*self.anchor(pin.bone, pin.anchor), target, weight=pin.weight,
                                                   priority=priority)
        return goal
