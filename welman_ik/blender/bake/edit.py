"""Motion editing in motion (Yamane & Nakamura 2003, section 4): a displacement at one
frame that fades over the frames around it, and the keys that bound its window."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..rig import keyframes


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


def surrounding_keys(obj, first: int, last: int) -> tuple[int, int]:
    """The nearest keyed frames of the object's action before ``first`` and after ``last``
    (``first`` / ``last`` themselves when there are none)."""
    frames = {round(k.co[0]) for curve in keyframes.action_fcurves(obj) for k in curve.keyframe_points}
    return max((f for f in frames if f < first), default=first), min((f for f in frames if f > last), default=last)
