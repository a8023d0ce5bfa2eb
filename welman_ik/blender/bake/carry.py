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
        # What this frame's ``carry`` worked from, for the frames after it with the same goals
        # (``ahead``): (correction, held, frames since released, moving, falloff), or None.
        self._carrying = None
        self._weight_first = 1.0  # the range weight of the frame before this one

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
            self._carrying = (correction, held, age, moving, max(falloff, 0))
            carried = _carried(*self._carrying, 1)[0]
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
            self._carrying = None
        self._weight_first = self.weight_before
        self.weight_before = share
        self.state = (held, np.where(moving, ACTIVE, age))
        return q_start, start

    def ahead(self, shares: np.ndarray) -> np.ndarray:
        """(k, n) the corrections ``carry`` would carry onto this frame (the first) and the
        k - 1 frames after it with the same goals in force (``shares``: their k range weights),
        each frame's solution leaving the carried joints where they are carried: a joint that
        moves a goal keeps the last frame's correction (scaled on as the range weights ask),
        a joint whose pin ended eases it off frame by frame."""
        shares = np.asarray(shares, dtype=float)
        if self._carrying is None:
            return np.zeros((len(shares), self.state[0].size))
        moving = self._carrying[3]
        before = np.concatenate([[self._weight_first], shares[:-1]])
        steps = np.where(before > 1e-9, np.minimum(1.0, shares / np.maximum(before, 1e-300)), shares)
        # (a moving joint's correction is the frame before's, scaled again; an easing one's, eased)
        scales = np.where(moving[None, :], np.cumprod(steps)[:, None], steps[:, None])
        return scales * _carried(*self._carrying, len(shares))


def _carried(correction: np.ndarray, held: np.ndarray, age: np.ndarray, moving: np.ndarray, falloff: int,
             count: int) -> np.ndarray:
    """(count, n) the corrections carried onto a frame and the ``count`` - 1 after it with the
    same joints ``moving``, before the range weights scale them: a moving joint keeps the last
    frame's ``correction``, a joint whose pin ended (``held`` its correction then, ``age``
    frames ago on the first) eases it off over ``falloff`` frames."""
    out = np.repeat(np.where(moving, correction, 0.0)[None], count, axis=0)
    idle = ~moving & (held != 0.0)  # joints easing off a correction
    if idle.any():
        ages = np.minimum(age[idle][None, :] + np.arange(count)[:, None], RELEASED)
        out[:, idle] = ease(ages, falloff) * held[idle]
    return out
