"""Step 4 of the bake, the log: what the bake keeps of each solved frame for the steps after
the solve, the goals it was
solved for (to measure the written action against, and to solve again where the evaluated
pose misses), what eased goals asked for on their own, and the solution itself (for the
plants' ease-in)."""

from __future__ import annotations

import numpy as np

from ...core import PositionGoal
from ..pins.goals import SHAPED_KINDS
from .frames import is_eased
from .goals import FrameGoals
from .solve import Solved


class BakeLog:
    """Per frame: ``positions`` (bones, anchors, targets, weights, iterations) of the position
    pins' goals and the edit's, their ``priorities``, ``shaped`` ([(pin, fields, priority)],
    support) of the other kinds, ``eased`` (each position goal's own target, the other
    kinds' own entries) where the goals were eased toward the animation, and ``solved``."""

    def __init__(self, plan):
        self.plan = plan
        self.positions: dict[int, tuple] = {}
        self.priorities: dict[int, tuple] = {}
        self.shaped: dict[int, tuple] = {}
        self.eased: dict[int, tuple[np.ndarray, list]] = {}
        self.solved: dict[int, Solved] = {}
        self.bones: set[str] = set()  # every bone a solve has written

    def position_goals(self, model, frame: int) -> list:
        """``frame``'s position goals (the pins' and the edit's) as logged, on ``model``."""
        bones, anchors, targets, weights, _ = self.positions[frame]
        return [PositionGoal(*model.anchor_local(bone, anchor), target, weight=weight, priority=priority)
                for bone, anchor, target, weight, priority in zip(bones, anchors, targets, weights,
                                                                  self.priorities[frame])]

    def shaped_goals(self, tree, frame: int, entries: list | None = None) -> list:
        """``frame``'s goals of the other kinds (``entries``: those instead of the logged ones),
        on ``tree`` (``Tree.shaped_goal``: one the same on every frame made once)."""
        logged, support = self.shaped.get(frame, ([], None))
        entries = logged if entries is None else entries
        return [tree.shaped_goal(self.plan.obj, None, pin, priority, support, fields) for pin, fields, priority in entries]

    def add(self, goals: FrameGoals, solved: Solved, bones) -> None:
        frame, plan = goals.frame, self.plan
        self.solved[frame] = solved
        self.bones.update(bones)
        if not (goals.log or goals.shaped):
            return
        pin_priority = plan.priorities[0]
        log = goals.log
        names, anchors, targets, weights, priorities = zip(*log) if log else ((), (), (), (), ())
        self.positions[frame] = (list(names), anchors, np.array(targets).reshape(-1, 3), weights,
                             solved.result.iterations)
        self.priorities[frame] = priorities
        self.shaped[frame] = ([(pin, fields, pin_priority) for pin, fields in goals.shaped], goals.support)
        eased = {pin.as_pointer() for pin, _ in goals.in_force if is_eased(pin, goals.share)}
        if eased:
            # What each pin asks for on its own, to measure the eased frame against too.
            own = [plan.own_target(pin, frame) if pin.as_pointer() in eased else target
                   for pin, target in goals.in_force if pin.kind not in SHAPED_KINDS]
            own += [log[-1][2]] if plan.edit is not None else []
            self.eased[frame] = (np.array(own, dtype=float).reshape(-1, 3),
                                 [(pin, plan.own_target(pin, frame) if pin.as_pointer() in eased else fields,
                                   pin_priority)
                                  for pin, fields in goals.shaped])
