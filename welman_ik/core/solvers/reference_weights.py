"""The reference level's weights (Yamane & Nakamura 2003, section 3.3, as the SR inverse and
the quasi-Newton solver weigh the preferred pose, and capped at 1 the pull of the solvers
without a null space): each joint by the length of bone it carries, so that the trunk keeps
to its preferred value hardest and the limbs do the reaching.
"""

from __future__ import annotations

import functools

import numpy as np

from ..problem import Problem

REFERENCE_INERTIA = 2.0  # the reference level weighs each joint by the bone length it carries to this power


def reference_weights(problem: Problem) -> np.ndarray:
    """``carried_weights`` of the problem's skeleton, counting only the joints in play
    (``Problem.in_play``)."""
    mask = problem.in_play()
    return carried_weights(problem.skeleton, None if mask is None else mask.tobytes())


@functools.lru_cache(maxsize=16)  # per skeleton (compared by identity): a drag solves one model many times
def carried_weights(sk, in_play: bytes | None = None) -> np.ndarray:
    """(n,) each joint's weight in the reference level: the length of bone it carries (the
    sum of the offsets of every joint below it, so that short finger bones count little),
    relative to the median, to the power ``REFERENCE_INERTIA``, and at least 1 (the limbs
    keep their plain weight; only what carries more is held harder). A joint that carries the
    whole upper body keeps to its preferred value far harder than an elbow does, as a
    person reaching moves the arm, not the trunk."""
    offsets = np.linalg.norm(sk.rest[:, :3, 3], axis=1)
    if in_play is not None:
        offsets = offsets * np.frombuffer(in_play, dtype=bool)
    carried = sk.ancestors.T @ offsets
    positive = carried[carried > 0]
    typical = float(np.median(positive)) if positive.size else 1.0
    weights = np.maximum(carried / max(typical, 1e-12), 1.0) ** REFERENCE_INERTIA
    weights.flags.writeable = False
    return weights
