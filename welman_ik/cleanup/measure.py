"""A clip measured on the pose Blender evaluates, one evaluation per frame: points' world
paths, the skeleton's size along each axis, each plant's drift and distance from its held
place, and how far the feet go below the clip's floor (the clean-up's figures, for the clip
in memory and for the file read back)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..blender.rig.body import pose_matrices


class Evaluated(NamedTuple):
    """A clip's evaluated pose on each frame: the pose bones' names, their matrices (frames,
    bones, 4, 4) in armature space, the object's world matrices (frames, 4, 4) and the bones'
    lengths (bones,)."""

    names: list[str]
    pose: np.ndarray
    world: np.ndarray
    lengths: np.ndarray


def sample(obj, points: Sequence[tuple[str, float]], frames: range) -> np.ndarray:
    """World positions (frames, k, 3) of ``points`` (bone, anchor: 0 head, 1 tail) on the
    evaluated pose of every frame (one evaluation per frame); the scene's frame is put back."""
    return walk(obj, points, frames)[0]


def evaluate(obj, frames: range) -> Evaluated:
    """One evaluation per frame of ``frames``: every pose bone's matrix and the object's world
    matrix (``body.pose_matrices``), what the clip's figures and the BVH writer both read; the
    scene's frame is put back."""
    names = obj.pose.bones.keys()
    pose, world = pose_matrices(obj, names, frames)
    lengths = np.empty(len(names), dtype=np.float32)
    obj.pose.bones.foreach_get("length", lengths)
    return Evaluated(names, pose, world, lengths.astype(float))


def walk(obj, points: Sequence[tuple[str, float]], frames: range,
         evaluated: Evaluated | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The world positions (frames, k, 3) of ``points`` and the skeleton's size (frames, 3)
    along world X, Y and Z (every bone's head and tail) on each frame, from ``evaluated``
    (``evaluate``: one evaluation per frame, made here when not given)."""
    e = evaluate(obj, frames) if evaluated is None else evaluated
    index = {name: i for i, name in enumerate(e.names)}
    rows = np.array([index[bone] for bone, _ in points], dtype=int)
    anchors = np.array([anchor for _, anchor in points], dtype=float)[None, :, None]
    # A pose bone's tail is its matrix's Y axis its length on from its head, as Blender places it.
    head = e.pose[..., :3, 3]
    ends = np.concatenate([head, head + e.pose[..., :3, 1] * e.lengths[None, :, None]], axis=1)
    ends = np.einsum("fij,fkj->fki", e.world[:, :3, :3], ends) + e.world[:, None, :3, 3]
    count = len(e.names)
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


def plant_figures(obj, found: list, frames: range, floor: tuple[list, float] | None = None,
                  evaluated: Evaluated | None = None) -> tuple[list[float], list[float], np.ndarray, float | None]:
    """Each plant's drift [m] over its frames, its point's largest distance [m] from its held
    place there, the skeleton's size on each frame (``walk``) and, with a ``floor`` (points
    as (bone, anchor), the floor's height), how far [m] the lowest of those points goes below
    it on any frame (0 when none does; None without a floor), on the evaluated pose of the
    assigned action (``evaluated``: its evaluation, ``evaluate``, when made already)."""
    feet = list(floor[0]) if floor is not None else []
    points = list(dict.fromkeys([*((bone, anchor) for bone, anchor, *_ in found), *feet]))
    paths, sizes = walk(obj, points, frames, evaluated)
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
