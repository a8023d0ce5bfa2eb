"""A clip measured on the pose Blender evaluates, one evaluation per frame: points' world
paths, the skeleton's size along each axis, each plant's drift and distance from its held
place, and how far the feet go below the clip's floor (the clean-up's figures, for the clip
in memory and for the file read back)."""

from __future__ import annotations

from collections.abc import Sequence

import bpy
import numpy as np


def sample(obj, points: Sequence[tuple[str, float]], frames: range) -> np.ndarray:
    """World positions (frames, k, 3) of ``points`` (bone, anchor: 0 head, 1 tail) on the
    evaluated pose of every frame; the scene is left on its first frame."""
    return walk(obj, points, frames)[0]


def walk(obj, points: Sequence[tuple[str, float]], frames: range) -> tuple[np.ndarray, np.ndarray]:
    """One evaluation per frame: the world positions (frames, k, 3) of ``points`` and the
    skeleton's size (frames, 3) along world X, Y and Z (every bone's head and tail); the
    scene is left on its first frame."""
    scene = bpy.context.scene
    index = {name: i for i, name in enumerate(obj.pose.bones.keys())}
    rows = np.array([index[bone] for bone, _ in points], dtype=int)
    anchors = np.array([anchor for _, anchor in points], dtype=float)[None, :, None]
    count = len(index)
    # Read raw on each frame (the frame's evaluation is what costs), worked out for all at once.
    heads, tails = np.empty((len(frames), count * 3), dtype=np.float32), np.empty((len(frames), count * 3),
                                                                                  dtype=np.float32)
    worlds = np.empty((len(frames), 4, 4))
    for i, frame in enumerate(frames):
        scene.frame_set(frame)
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        evaluated.pose.bones.foreach_get("head", heads[i])
        evaluated.pose.bones.foreach_get("tail", tails[i])
        worlds[i] = [row[:] for row in evaluated.matrix_world]
    scene.frame_set(frames[0])
    ends = np.concatenate([heads.reshape(len(frames), count, 3), tails.reshape(len(frames), count, 3)], axis=1)
    ends = np.einsum("fij,fkj->fki", worlds[:, :3, :3], ends.astype(float)) + worlds[:, None, :3, 3]
    head, tail = ends[:, :count][:, rows], ends[:, count:][:, rows]
    return head + anchors * (tail - head), np.ptp(ends, axis=1)


def extent(path: np.ndarray) -> float:
    """The largest distance [m] between any two of the positions ``path`` (n, 3): how far a
    planted point drifts over its plant."""
    if not len(path):
        return 0.0
    # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b about the points' mean (no cancellation): (n, n), not (n, n, 3)
    centred = path - path.mean(axis=0)
    square = np.einsum("ij,ij->i", centred, centred)
    gaps = square[:, None] + square[None, :] - 2.0 * (centred @ centred.T)
    return float(np.sqrt(max(float(gaps.max()), 0.0)))


def plant_figures(obj, found: list, frames: range, floor: tuple[list, float] | None = None
                  ) -> tuple[list[float], list[float], np.ndarray, float | None]:
    """Each plant's drift [m] over its frames, its point's largest distance [m] from its held
    place there, the skeleton's size on each frame (``walk``) and, with a ``floor`` (points
    as (bone, anchor), the floor's height), how far [m] the lowest of those points goes below
    it on any frame (0 when none does; None without a floor), on the evaluated pose of the
    assigned action."""
    feet = list(floor[0]) if floor is not None else []
    points = list(dict.fromkeys([*((bone, anchor) for bone, anchor, *_ in found), *feet]))
    paths, sizes = walk(obj, points, frames)
    column = {point: k for k, point in enumerate(points)}
    drifts, misses = [], []
    for bone, anchor, first, last, place in found:
        path = paths[first - frames[0]:last - frames[0] + 1, column[bone, anchor]]
        drifts.append(extent(path))
        misses.append(float(np.linalg.norm(path - place, axis=1).max(initial=0.0)))
    below = None
    if floor is not None:
        lowest = paths[:, [column[point] for point in feet], 2].min(initial=np.inf)
        below = max(0.0, floor[1] - float(lowest))
    return drifts, misses, sizes, below
