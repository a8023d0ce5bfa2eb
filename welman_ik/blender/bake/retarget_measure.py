"""A retarget's figures, measured where the user sees them: each goal on the pose Blender
evaluates from the written action (``errors``), each goal group's largest miss (``measure``),
the frames a plant, the hips or a placed end misses (``missed_frames``, for the loop that
solves them again), and the words for them (``describe``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..rig.body import pose_matrices
from .retarget import GROUPS, Retarget, unit

ANGLE_GROUPS = frozenset({"orientations"})


@dataclass
class GroupMiss:
    """A goal group's largest miss over the range: [m], or [rad] for 'orientations'; the
    frame and bone where it is."""

    group: str
    error: float
    frame: int
    bone: str


def errors(retarget: Retarget, frames: list[int] | None = None,
           evaluated: tuple[dict, np.ndarray] | None = None) -> list[tuple[str, str, np.ndarray]]:
    """(group, bone, errors (frames,)) of every goal on the pose Blender evaluates from the
    written action on ``frames`` (None: the whole range): the plants' points from their held
    places (0 off their frames), the hips', hands', feet's and head's heads from their goal
    places [m], every turned bone's orientation from its goal [rad]. ``evaluated``: (bone ->
    column, (frames, bones, 4, 4) world matrices) already read on those frames (``evaluate``),
    holding at least ``retarget.keyed``; read here when None."""
    every = retarget.frames
    frames = every if frames is None else frames
    at = np.array([retarget.index(f) for f in frames], dtype=np.intp)
    column, posed = evaluated if evaluated is not None else evaluate(retarget.target, retarget.keyed, frames)
    out = []
    for plant in retarget.plants:
        held = (at >= plant.first) & (at <= plant.last)
        m = posed[:, column[plant.bone]]
        points = m[:, :3, 3] + unit(m[:, :3, :3]) @ plant.local
        out.append(("plants", plant.bone, np.where(held, np.linalg.norm(points - plant.point, axis=1), 0.0)))
    for i, line in enumerate(retarget.lines):
        if line.weight <= 0.0:
            continue
        m = posed[:, column[line.target]]
        if line.place and line.base:  # from its base, as it was asked for
            offset = m[:, :3, 3] - posed[:, column[line.base], :3, 3]
            out.append((line.group, line.target, np.linalg.norm(offset - retarget.offsets[i][at], axis=1)))
        elif line.place:
            out.append((line.group or "hips", line.target,
                        np.linalg.norm(m[:, :3, 3] - retarget.places[i][at], axis=1)))
        if line.turn:
            relative = np.swapaxes(retarget.turns[i][at], -1, -2) @ unit(m[:, :3, :3])
            cos = np.clip((np.trace(relative, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
            out.append(("orientations", line.target, np.arccos(cos)))
    return out


def evaluate(target, bones, frames: list[int]) -> tuple[dict, np.ndarray]:
    """(bone -> column, (frames, bones, 4, 4)) the world matrices of ``bones`` as Blender
    evaluates them on ``frames``, read in one pass over the frames."""
    pose, world = pose_matrices(target, bones, frames)
    return {name: k for k, name in enumerate(bones)}, world[:, None] @ pose


def measure(retarget: Retarget) -> list[GroupMiss]:
    """Each goal group's largest miss on the pose Blender evaluates from the written action
    (``errors``), with its frame and bone."""
    return worst(retarget, errors(retarget))


def worst(retarget: Retarget, found_errors: list) -> list[GroupMiss]:
    """Each goal group's largest miss in ``errors``' list."""
    largest: dict[str, GroupMiss] = {}
    for group, bone, found in found_errors:
        if not found.size:
            continue
        j = int(np.argmax(found))
        if group not in largest or found[j] > largest[group].error:
            largest[group] = GroupMiss(group, float(found[j]), retarget.frames[j], bone)
    return [largest[g] for g in GROUPS if g in largest]


def missed_frames(retarget: Retarget, tolerance: float, frames: list[int] | None = None) -> dict[int, float]:
    """frame -> its largest miss [m], for the frames on which a plant, the hips or a placed end
    misses by more than ``tolerance`` on the evaluated pose (the orientations below them are
    not counted)."""
    frames = retarget.frames if frames is None else frames
    worst = np.zeros(len(frames))
    for group, _, found in errors(retarget, frames):
        if group not in ANGLE_GROUPS:
            worst = np.maximum(worst, found)
    return {f: float(w) for f, w in zip(frames, worst) if w > tolerance}


def describe(scene, misses: list[GroupMiss], length_text) -> str:
    """'plants 0.2 mm, hips 0 m, hands 3.1 cm (hand.L, frame 40), ...' in the scene's units."""
    parts = []
    for miss in misses:
        value = f"{math.degrees(miss.error):.1f}\u00b0" if miss.group in ANGLE_GROUPS else length_text(scene,
                                                                                                      miss.error)
        parts.append(f"{miss.group} {value} ({miss.bone}, frame {miss.frame})")
    return ", ".join(parts)
