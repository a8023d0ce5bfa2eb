"""Continuity between a bake's frames (in step 3, the solve): each joint that moves a goal keeps the last frame's
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

    def carry(self, q0: np.ndarray, layout, moving: np.ndarray, share: float, falloff: int,
              solver: str) -> tuple[np.ndarray, np.ndarray]:
        """(preferred pose, start) of this frame's solve, from its animated joint values ``q0``
        (numbered as ``layout``).

        Continuity: each joint that moves a goal keeps the last frame's correction (its
        solution less its animated value), carried onto this frame's animated pose: that is
        the preferred pose. A joint that moves no goal any more (its pin ended) lets its
        correction go over ``motion_falloff`` frames, easing back onto the animation instead
        of jumping. The solve starts where the corrections of the last frames lead: a goal
        held while the animation moves needs a correction that changes smoothly from frame to
        frame, so its change is carried on too (to second order where three frames are known),
        which leaves the solve little to do (for the solvers in ``EXTRAPOLATED``). That start
        changes where the solve begins, not what it keeps to."""
        size = q0.size
        q_start = start = q0
        if self.previous is not None and self.previous[0] == layout:
            _, animated_before, solved_before, (held_before, age_before) = self.previous
            correction = solved_before - animated_before
            released = age_before == ACTIVE
            held = np.where(released, correction, held_before)
            age = np.where(released, 1, np.minimum(age_before + 1, RELEASED))
            carried = np.where(moving, correction, 0.0)
            idle = ~moving & (held != 0.0)  # joints easing off a correction
            if idle.any():
                carried[idle] = ease(age[idle], max(falloff, 0)) * held[idle]
            # Easing out at the range's end: the carried correction shrinks with the goals.
            scale = min(1.0, share / self.weight_before) if self.weight_before > 1e-9 else share
            q_start = q0 + scale * carried
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
            held, age = np.zeros(size), np.full(size, RELEASED)
            self.corrections = []
        self.weight_before = share
        self.state = (held, np.where(moving, ACTIVE, age))
        return q_start, start
