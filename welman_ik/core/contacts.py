"""Contacts: the frames in which a point is planted (near its lowest height and slow)."""

from __future__ import annotations

import numpy as np


def planted_ranges(positions: np.ndarray, height: float, speed: float, min_frames: int,
                   up: int = 2) -> list[tuple[int, int]]:
    """Index ranges (first, last), inclusive, where a point of a sampled path (k, 3) [m] is
    within ``height`` of its lowest height along axis ``up`` and moves at most ``speed``
    per sample, for at least ``min_frames`` samples in a row."""
    positions = np.asarray(positions, dtype=float)
    if len(positions) == 0:
        return []
    heights = positions[:, up]
    steps = np.linalg.norm(np.diff(positions, axis=0), axis=1)
    # A sample's speed: the larger of its steps in and out, so a range stops before a lift.
    speeds = np.maximum(np.concatenate([[0.0], steps]), np.concatenate([steps, [0.0]]))
    planted = (heights - heights.min() <= height) & (speeds <= speed)
    ranges, start = [], None
    for i, flag in enumerate(np.append(planted, False)):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if i - start >= min_frames:
                ranges.append((start, i - 1))
            start = None
    return ranges
