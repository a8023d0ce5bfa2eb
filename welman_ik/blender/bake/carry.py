"""Continuity between a bake's frames: each joint that moves a goal keeps the last frame's
correction (its solution less its animated value), carried onto this frame's animated pose;
a joint whose pin ended lets its correction go over ``motion_falloff`` frames; the change of
the corrections is carried on as the solve's start (to second order where three frames are
known)."""

from __future__ import annotations

import numpy as np

from ...core.contacts import ease

ACTIVE, RELEASED = -1, 1 << 30  # a joint's frames since its last goal: moving one now, long ago
# Solvers that take the corrections' trend as their start (their steps keep to where they start).
EXTRAPOLATED = {"SR_INVERSE", "QUASI_NEWTON"}


class Continuity:
    """What one frame of a bake hands the next: the last frame's (layout, animated q, solved
    q, release state), the corrections of the frames before it, and whether it held every
    goal."""

    def __init__(self):
        self.previous = None  # (model layout, animated q, solved q, release state) of the last frame
        self.state = None  # (corrections held, frames since released) of this frame
        self.corrections: list[tuple[np.ndarray, np.ndarray]] = []  # (correction, joints moving) of earlier frames
        self.weight_before = 1.0  # the last frame's range weight
        self.held = True  # whether the last frame's solve held every goal

    def solved(self, layout, animated: np.ndarray, solved: np.ndarray, held: bool) -> None:
        """This frame's outcome, for the next."""
        self.held = held
        self.previous = (layout, animated, solved, self.state)

    def carry(self, model, layout, moving: np.ndarray, share: float, falloff: int, solver: str) -> tuple[np.ndarray, np.ndarray]:
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
        size = model.skeleton.size
        held, age = np.zeros(size), np.full(size, RELEASED)
        q_start = start = model.q0
        if self.previous is not None and self.previous[0] == layout:
            _, animated_before, solved_before, (held_before, age_before) = self.previous
            correction = solved_before - animated_before
            released = age_before == ACTIVE
            held = np.where(released, correction, held_before)
            age = np.where(released, 1, np.minimum(age_before + 1, RELEASED))
            easing = np.zeros(size)
            idle = ~moving & (held != 0.0)  # joints easing off a correction
            if idle.any():
                easing[idle] = ease(age[idle], max(falloff, 0)) * held[idle]
            # Easing out at the range's end: the carried correction shrinks with the goals.
            scale = min(1.0, share / self.weight_before) if self.weight_before > 1e-9 else share
            q_start = model.q0 + scale * np.where(moving, correction, easing)
            # The corrections of the frames before the last, of joints that have moved a goal
            # on each of those frames and on this one.
            trend = np.zeros(size)
            history = self.corrections
            if history:
                steady = moving & released & history[-1][1]
                trend = np.where(steady, correction - history[-1][0], 0.0)
                if len(history) > 1:
                    curving = steady & history[-2][1]
                    trend += np.where(curving, (correction - history[-1][0]) - (history[-1][0] - history[-2][0]), 0.0)
            start = q_start + scale * trend if history and solver in EXTRAPOLATED else q_start
            # (a frame that missed a goal is no trend to follow)
            self.corrections = [*history[-1:], (correction, released)] if self.held else []
        else:
            self.corrections = []
        self.weight_before = share
        self.state = (held, np.where(moving, ACTIVE, age))
        return q_start, start


def ease_onto_plants(plan, log, samples, results: dict) -> None:
    """Before each fixed pin with a frame range (a plant) takes hold, its bone's chain eases
    onto the correction the plant's first frame needed, over ``motion_falloff`` frames
    (half a cosine), in joint space, as it eases off after the plant's end: the foot
    comes down onto its held place instead of jumping there. Joints that move a goal in
    force on a frame are left as solved there, so every pin holds as it did. The frames
    changed are put into ``results`` (frame -> channels)."""
    settings, solved = plan.settings, log.solved
    falloff = max(settings.motion_falloff, 0)
    if plan.edit is not None or falloff == 0:
        return
    tree = samples.tree
    changed: dict[int, np.ndarray] = {}
    for i in sorted(plan.fixed_goals, key=lambda k: settings.pins[k].frame_start):
        pin = settings.pins[i]
        if pin.kind not in {"POSITION", "POSE"}:
            continue  # (the other kinds hold in full from their first frame)
        start = pin.frame_start
        if (pin.frame_start == 0 and pin.frame_end == 0) or start not in solved or start == plan.frames[0]:
            continue
        first = solved[start]
        if tree.layout != first.layout:
            continue
        chain = tree.model.skeleton.ancestors[tree.anchor(pin.bone, pin.anchor)[0]]
        # After another plant of the bone, the ease spans the frames between the two.
        ended = [p.frame_end for k, p in enumerate(settings.pins)
                 if k in plan.fixed_goals and p.bone == pin.bone and p.frame_start != 0 and p.frame_end < start]
        window = min(falloff, start - max(ended) - 1) if ended else falloff
        for frame in range(start - window, start):
            if frame not in solved or solved[frame].layout != first.layout:
                continue
            q0, steering = solved[frame].q0, solved[frame].steering
            q = changed.get(frame, solved[frame].q)
            mask = chain & ~steering
            weight = float(ease(start - frame, window))
            changed[frame] = np.where(mask, q + weight * (q0 + (first.q - first.q0) - q), q)
    for frame, q in sorted(changed.items()):
        results[frame] = samples.at(frame).tree.model.channels(q)
