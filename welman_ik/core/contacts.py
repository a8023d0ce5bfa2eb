"""Contacts: the frames in which a point of a foot is planted, and where it is held.

A plant is a run of frames in which the point is near its lowest height, slow, and stays
within a small region (a per-frame speed test alone lets a slow creep through). It is held
at the average of its positions over those frames, so the correction is spread over the
plant instead of being all at one end; frames at its ends where the leg would have to be
straight (or more) to reach that point are left out, so a plant never asks for a locked knee.

The clip's floor is found from its plants too (``floor_height``): the height the lowest-planted
point typically stands at; plants held below it are raised onto it (``raised``, ``paired``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SPLIT_GAP = 5  # frames left between the pieces of a run split by the drift limit, to ease across


@dataclass(frozen=True)
class Plant:
    """Samples ``first``..``last`` (inclusive) of a path, held at ``point`` [m]."""

    first: int
    last: int
    point: np.ndarray


def _runs(flags: np.ndarray, min_frames: int) -> list[tuple[int, int]]:
    """(first, last) of each run of True at least ``min_frames`` long."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(np.int8), [0]])))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2]) if b - a >= min_frames]


def _within_drift(positions: np.ndarray, first: int, last: int, drift: float, min_frames: int) -> list[tuple[int, int]]:
    """Split ``first``..``last`` into pieces whose points all lie within ``drift`` of each
    other (the path's extent), greedily from the start, leaving ``SPLIT_GAP`` frames between
    pieces; pieces shorter than ``min_frames`` are dropped."""
    out, start = [], first
    while start <= last:
        low = high = positions[start].copy()
        end = start
        while end + 1 <= last:
            lo, hi = np.minimum(low, positions[end + 1]), np.maximum(high, positions[end + 1])
            if np.linalg.norm(hi - lo) > drift:  # the bounding box's diagonal: at most sqrt(3) x the extent
                break
            low, high, end = lo, hi, end + 1
        if end - start + 1 >= min_frames:
            out.append((start, end))
        start = end + 1 + (SPLIT_GAP if end < last else 0)
    return out


def planted_ranges(positions: np.ndarray, height: float, speed: float, min_frames: int,
                   up: int = 2, drift: float = math.inf) -> list[tuple[int, int]]:
    """Index ranges (first, last), inclusive, where a point of a sampled path (k, 3) [m] is
    within ``height`` of its lowest height along axis ``up``, moves at most ``speed`` per
    sample, and stays within ``drift`` of the run's other points, for at least
    ``min_frames`` samples in a row."""
    positions = np.asarray(positions, dtype=float)
    if len(positions) == 0:
        return []
    heights = positions[:, up]
    steps = np.linalg.norm(np.diff(positions, axis=0), axis=1)
    # A sample's speed: the larger of its steps in and out, so a range stops before a lift.
    speeds = np.maximum(np.concatenate([[0.0], steps]), np.concatenate([steps, [0.0]]))
    planted = (heights - heights.min() <= height) & (speeds <= speed)
    ranges = _runs(planted, min_frames)
    if math.isfinite(drift):
        ranges = [piece for first, last in ranges for piece in _within_drift(positions, first, last, drift, min_frames)]
    return ranges


def bent_reach(upper: float, lower, bend: float):
    """Distance between the ends of a two-segment limb (``upper``, ``lower`` [m]) whose middle
    joint is bent by ``bend`` [rad] from straight (law of cosines)."""
    lower = np.asarray(lower, dtype=float)
    return np.sqrt(upper * upper + lower * lower + 2.0 * upper * lower * math.cos(bend))


def held(positions: np.ndarray, ranges: list[tuple[int, int]], min_frames: int, *, hips: np.ndarray | None = None,
         upper: float = 0.0, lower: np.ndarray | None = None, bend: float = 0.0) -> list[Plant]:
    """Each range as a plant held at the average of its positions. With ``hips`` (k, 3), the
    limb's top joint on each sample, ``upper`` the upper segment's length and ``lower`` (k,)
    the distance from the middle joint to the point on each sample: samples at which the
    held point is further from the top joint than the limb reaches with its middle joint
    bent by ``bend`` are left out (the plant is split around them, its point averaged again),
    so a plant never asks for a straight limb."""
    positions = np.asarray(positions, dtype=float)
    plants = []
    for first, last in ranges:
        pieces = [(first, last)]
        for _ in range(3):  # leaving samples out moves the average: settle it
            refined = []
            for a, b in pieces:
                point = positions[a:b + 1].mean(axis=0)
                if hips is None:
                    refined.append((a, b))
                    continue
                reach = bent_reach(upper, lower[a:b + 1], bend)
                ok = np.linalg.norm(hips[a:b + 1] - point, axis=1) <= reach
                refined += [(a + c, a + d) for c, d in _runs(ok, min_frames)]
            if refined == pieces:
                break
            pieces = refined
        plants += [Plant(a, b, positions[a:b + 1].mean(axis=0)) for a, b in pieces]
    return plants


def held_at_ends(positions: np.ndarray, plants: list[Plant], open_start: bool, open_end: bool) -> list[Plant]:
    """``plants`` of a sampled path (k, 3) with those cut by an open end of the sampled range
    (the animation goes on past it: ``open_start``, ``open_end``) held where the path is on
    that end sample, so a bake needs no correction there and nothing jumps where the baked
    range meets the animation; a plant cut by both ends half way between the two. The other
    plants keep their place."""
    last = len(positions) - 1
    out = []
    for plant in plants:
        ends = [positions[i] for i, cut in ((0, open_start and plant.first == 0),
                                            (last, open_end and plant.last == last)) if cut]
        out.append(Plant(plant.first, plant.last, np.mean(ends, axis=0)) if ends else plant)
    return out


def paired(heel: list[Plant], toe: list[Plant], length: float, min_frames: int = 1,
           floor: float | None = None, up: int = 2) -> list[Plant]:
    """Toe plants made consistent with the heel plants of the same rigid bone, so that both
    can be held at once: where a toe plant overlaps heel plants, its point is put at
    ``length`` [m] (the distance between the two points on the bone) from the point of the
    heel plant it overlaps most, along the line between them, and its frames that overlap
    any other heel plant are left out (pieces shorter than ``min_frames`` are dropped). A toe
    plant that would start before its heel plant starts with it: the heel's correction could
    not ease in under a planted toe (the foot would pivot about the toe in one frame). With a
    ``floor`` height (along axis ``up``), a toe put below it is turned about its heel's point
    onto it, still ``length`` from it (the heel's own plants raised first: ``raised``)."""
    out = []
    for plant in toe:
        overlaps = [(min(plant.last, h.last) - max(plant.first, h.first), h) for h in heel]
        overlap, partner = max(overlaps, key=lambda o: o[0], default=(-1, None))
        if partner is None or overlap < 0:
            out.append(plant)
            continue
        direction = plant.point - partner.point
        norm = float(np.linalg.norm(direction))
        point = partner.point + length * direction / norm if norm > 1e-9 else plant.point
        if floor is not None and point[up] < floor:
            point = _turned_onto(partner.point, point, length, floor, up)
        free = np.ones(plant.last - plant.first + 1, dtype=bool)
        free[:max(partner.first - plant.first, 0)] = False
        for other in heel:
            if other is not partner:
                free[max(other.first - plant.first, 0):max(other.last - plant.first + 1, 0)] = False
        out += [Plant(plant.first + a, plant.first + b, point) for a, b in _runs(free, min_frames)]
    return out


def floor_height(heights: list[np.ndarray], plants: list[list[Plant]]) -> float | None:
    """The floor [m] under a clip's feet, from their plants: for each point (its ``heights``
    (k,) along the up axis, its ``plants``), the median of its heights over its planted
    samples; the floor is the lowest of these, the height the lowest-planted point (a toe,
    not an ankle standing 8 cm above it) typically stands at while planted. None without
    plants."""
    typical = []
    for path, held in zip(heights, plants):
        samples = [np.asarray(path, dtype=float)[p.first:p.last + 1] for p in held]
        if samples:
            typical.append(float(np.median(np.concatenate(samples))))
    return min(typical) if typical else None


def raised(plants: list[Plant], floor: float, up: int = 2) -> list[Plant]:
    """``plants`` with each point held below ``floor`` along axis ``up`` raised onto it."""
    out = []
    for plant in plants:
        point = np.array(plant.point, dtype=float)
        point[up] = max(point[up], floor)
        out.append(Plant(plant.first, plant.last, point))
    return out


def _turned_onto(pivot: np.ndarray, point: np.ndarray, length: float, floor: float, up: int) -> np.ndarray:
    """``point``, ``length`` from ``pivot``, turned about it in its vertical plane to height
    ``floor``: the same way across, as far across as that height leaves (straight up onto the
    floor where no turn reaches it)."""
    out = np.array(point, dtype=float)
    rise = floor - pivot[up]
    across = out - pivot
    across[up] = 0.0
    norm = float(np.linalg.norm(across))
    if abs(rise) <= length and norm > 1e-12:
        out = pivot + across / norm * math.sqrt(length * length - rise * rise)
    out[up] = floor
    return out


def ease(distance, frames: int):
    """Share of a correction kept ``distance`` frames outside the frames it holds on: 1 at 0,
    falling as half a cosine to nothing after ``frames``."""
    distance = np.asarray(distance, dtype=float)
    weight = 0.5 * (1.0 + np.cos(np.pi * np.minimum(distance, frames + 1) / (frames + 1)))
    return np.where(distance > frames, 0.0, weight)
