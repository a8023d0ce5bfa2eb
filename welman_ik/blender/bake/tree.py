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
        skeleton = self.model.skeleton
        return self.once("rest", lambda: skeleton.forward(np.zeros(skeleton.size)))

    def roots(self) -> list[str]:
        """``model.roots()``, once."""
        return self.once("roots", self.model.roots)

    def root_joints(self) -> np.ndarray:
        """The joints of the roots (their hinges and slides), once."""
        bones = self.model.bones
        return self.once("root joints", lambda: np.array(
            [j for name in self.roots() for j in (*bones[name].hinges.values(), *bones[name].slides.values())],
            dtype=np.intp))

    def moving(self, key, goals: list) -> np.ndarray:
        """(n,) bool: the joints that move any of ``goals``, once per ``key`` (the pins in force)."""
        def make():
            sk = self.model.skeleton
            if not goals:
                return np.zeros(sk.size, dtype=bool)
            return sk.ancestors[np.concatenate([shaped_goals.goal_joints(g) for g in goals])].any(axis=0)
        return self.once(("moving", key), make)

    def steering(self, points) -> np.ndarray:
        """The joints that move any of ``points`` ((bone, anchor) pairs): a bone's own hinges
        turn about its head, so they do not move a point held there."""
        def make():
            steering = np.zeros(self.model.skeleton.size, dtype=bool)
            for bone, anchor in points:
                moves = self.model.skeleton.ancestors[self.anchor(bone, anchor)[0]].copy()
                if anchor == 0.0:
                    moves[list(self.model.bones[bone].hinges.values())] = False
                steering |= moves
            return steering
        return self.once(("steering", tuple(points)), make)

    def shaped_goal(self, obj, kin, pin, priority: int, support, fields: dict):
        """A pin of another kind's goal (``pins.goals.build``), built at the kinematics ``kin``
        (None: the model's start); one that holds where the pin itself says on every frame (a
        floor, a line, a plane, a region: ``fields`` empty) is made once."""
        def make():
            at = kin if kin is not None else self.model.skeleton.forward(self.model.q0)
            return shaped_goals.build(obj, self.model, at, pin, priority, support, **fields)
        if fields or pin.kind not in FIXED_KINDS:
            return make()
        return self.once(("shaped", pin.as_pointer(), priority), make)

    def position_goal(self, pin, target: np.ndarray, priority: int, share: float) -> PositionGoal:
        """A position pin's goal; a fixed pin's in full is the same on every frame, made once
        (not one that follows the animation or a target)."""
        def make():
            return PositionGoal(*self.anchor(pin.bone, pin.anchor), target, weight=pin.weight, priority=priority)
        if pin.follow or share < 1.0 or follows(pin):
            return make()
        return self.once(("goal", pin.as_pointer(), priority), make)
