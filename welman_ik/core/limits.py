"""Per-joint min/max limits [radians or metres]."""

from __future__ import annotations

import numpy as np

from .skeleton import Skeleton


def clamp_step(skeleton: Skeleton, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """The step from ``q`` to ``q + dq`` clipped to the limits (clip ``q + step`` again to
    stay exactly within them: the sum can round one unit past a bound)."""
    return np.clip(q + dq, skeleton.lower, skeleton.upper) - q


def violating(skeleton: Skeleton, q: np.ndarray, dq: np.ndarray, among: np.ndarray) -> np.ndarray:
    """(n,) bool: joints of ``among`` that the step would carry past a limit."""
    q_new = q + dq
    return among & ((q_new < skeleton.lower) | (q_new > skeleton.upper))

