"""Which bone of a source skeleton each bone of a target rig follows when a clip is baked
from one onto the other (``retarget_map``), and how much longer the target's legs are
(``leg_scale``). The bones' roles come from ``naming.recognise``. Pure numpy; never imports bpy.

A pair says that the target bone follows the source bone in position ('POSITION'), in
orientation ('ORIENTATION') or in both ('POSE'), with a weight:

- the body's root (the hips) follows the source's root in pose;
- the spine and the neck follow the source's spine and neck in orientation, the longer or
  shorter chain resampled so that the first bone follows the first and the last the last (a
  generated Rigify target's trunk by its hips and chest controls, its FK spine left alone);
- the head, the hands and the feet follow in pose; the clavicles, upper arms, forearms,
  thighs, shins and toes in orientation; a target's hand whose source has none follows the
  source's forearm in pose (the Blender layer holds it at the forearm's end);
- each finger's and thumb's segments follow the same finger's, segment by segment, in
  orientation, where both sides have them (the finger told by its name: thumb, index,
  middle, ring, pinky or little); palms are not paired.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .naming import NAMING_LABELS, depth, recognise

__all__ = ["RetargetPair", "leg_length", "leg_scale", "retarget_map"]

_ARM = ("clavicle", "upper_arm", "forearm", "hand")
_LEG = ("thigh", "shin", "foot", "toe")
_POSE_LIMBS = {"hand", "foot"}
_SIDE_WORDS = {"L": "left", "R": "right"}
_FINGERS = {"index": ("index",), "middle": ("middle",), "ring": ("ring",), "pinky": ("pinky", "little")}
# A generated Rigify rig's pelvis control: its FK spine starts with it, pointing down from the
# waist to the hips (the metarig's 'spine' bone).
_RIGIFY_PELVIS = "spine_fk"
_RIGIFY_HIPS = "hips"  # a generated Rigify rig's hips control: turns the pelvis under the torso


class RetargetPair(NamedTuple):
    """Target bone ``target_bone`` follows source bone ``source_bone``: in 'POSITION',
    'ORIENTATION' or 'POSE' (both), with ``weight``."""

    target_bone: str
    source_bone: str
    kind: str
    weight: float


def retarget_roles(names: Sequence[str], parents: Mapping[str, str | None] | None) -> tuple[str, dict[str, str]]:
    """(naming, roles) of a skeleton as a retarget reads it: ``recognise``, by a best guess from
    name fragments when it follows no known naming."""
    naming, roles = recognise(names, parents)
    return (naming, roles) if naming else recognise(names, parents, best_guess=True)


class _Side:
    """One skeleton's naming and the bones that play each part of the body."""

    def __init__(self, which: str, names: Sequence[str], parents: Mapping[str, str | None] | None):
        self.which = which
        self.parents: Mapping[str, str | None] = parents or {}
        self.naming, self.roles = retarget_roles(names, self.parents)
        self.order = {name: i for i, name in enumerate(names)}
        self.hips = self._hips()
        self.pelvis = ""  # a generated Rigify rig's pelvis control
        self.chest = ""
        self.hips_control = ""  # a generated Rigify rig's hips control (below its torso)
        spine = [n for n, r in self.roles.items() if r == "spine" and n != self.hips]
        if self.naming == "RIGIFY":
            if self.hips and _RIGIFY_PELVIS in spine:
                self.pelvis = _RIGIFY_PELVIS
            # Rigify's FK spine is split into a branch hanging from the hips and one carried by
            # the chest, so the bones' depth does not give their order: their number does.
            spine = sorted((n for n in spine if n != _RIGIFY_PELVIS), key=_number)
            self.chest = next((n for n, r in self.roles.items() if r == "chest"), "")
            self.hips_control = _RIGIFY_HIPS if _RIGIFY_HIPS in self.order and _RIGIFY_HIPS != self.hips else ""
        else:
            spine = self._by_depth(spine)
        self.spine = spine
        self.neck = self._by_depth([n for n, r in self.roles.items() if r == "neck"])
        self.parts = {"head": self._first("head")}
        for side in ("L", "R"):
            for part in _ARM + _LEG:
                self.parts[f"{part}.{side}"] = self._first(f"{part}.{side}")

    def fingers(self) -> dict[str, str]:
        """'index2.L' (the finger, its segment from the hand, its side) -> the bone nearest the
        root playing it; the finger told by the bone's name."""
        out: dict[str, str] = {}
        for name in self._by_depth(list(self.roles)):
            found = re.fullmatch(r"(finger|thumb)([123])\.([LR])", self.roles[name])
            if found is None:
                continue
            lower = name.lower()
            finger = "thumb" if found.group(1) == "thumb" else next(
                (f for f, words in _FINGERS.items() if any(w in lower for w in words)), "")
            if finger:
                out.setdefault(f"{finger}{found.group(2)}.{found.group(3)}", name)
        return out

    @property
    def label(self) -> str:
        return f"the {self.which} (naming {NAMING_LABELS.get(self.naming, self.naming)})"

    def _by_depth(self, bones: list[str]) -> list[str]:
        return sorted(bones, key=lambda n: (depth(n, self.parents), self.order.get(n, 0)))

    def _first(self, role: str) -> str:
        """The bone nearest the root with ``role``; '' when none has it."""
        bones = self._by_depth([n for n, r in self.roles.items() if r == role])
        return bones[0] if bones else ""

    def _ancestry(self, name: str) -> list[str]:
        chain = [name]
        while (parent := self.parents.get(chain[-1])) is not None and len(chain) < 1000:
            chain.append(parent)
        return chain

    def _hips(self) -> str:
        """The body's root: a generated Rigify rig's 'torso' control; else the bone named as
        the hips (the deepest, if several are); else the bone where the spine and the legs
        meet when it has no role of its own (Mixamo's and BVH's 'Hips'); else the lowest
        spine bone (the metarig's 'spine'); '' when there is none."""
        if self.naming == "RIGIFY":
            torso = [n for n, r in self.roles.items() if r == "torso"]
            if torso:
                return torso[0]
        hips = [n for n, r in self.roles.items() if r in ("hips", "pelvis")]
        if hips:
            return max(hips, key=lambda n: (depth(n, self.parents), -self.order.get(n, 0)))
        spine = self._by_depth([n for n, r in self.roles.items() if r == "spine"])
        thighs = [n for n in (self._first("thigh.L"), self._first("thigh.R")) if n]
        anchors = spine[:1] + thighs
        if len(anchors) >= 2:
            others = [set(self._ancestry(n)) for n in anchors[1:]]
            meet = next((a for a in self._ancestry(anchors[0]) if all(a in o for o in others)), "")
            if meet and (meet not in self.roles or (spine and meet == spine[0])):
                return meet
        return spine[0] if spine else ""


def _number(name: str) -> int:
    """3 from 'spine_fk.003'; 0 without a number."""
    match = re.search(r"\.(\d+)$", name)
    return int(match.group(1)) if match else 0


def _resample(n: int, m: int) -> list[int]:
    """For each of ``n`` target chain bones, the index of the source chain bone it follows
    (``m`` of them): round(i (m - 1) / (n - 1)), halves rounded up; the top one when n is 1."""
    if n == 1:
        return [m - 1]
    return [(2 * i * (m - 1) + (n - 1)) // (2 * (n - 1)) for i in range(n)]


def _part_words(part: str) -> str:
    role, _, side = part.partition(".")
    words = role.replace("_", " ")
    return f"{_SIDE_WORDS[side]} {words}" if side else words


def _not_found(part: str, target: _Side, source: _Side, in_target: bool, in_source: bool) -> str:
    if not in_target and not in_source:
        return f"{_part_words(part)}: not found in {target.label} nor in {source.label}"
    return f"{_part_words(part)}: not found in {source.label if in_target else target.label}"


def retarget_map(target_names: Sequence[str], target_parents: Mapping[str, str | None] | None,
                 source_names: Sequence[str], source_parents: Mapping[str, str | None] | None,
                 ) -> tuple[list[RetargetPair], list[str]]:
    """The pairs by which a target rig follows a source skeleton, and a readable line for
    each body part found on one side only or on neither ("left hand: not found in the source
    (naming Mixamo)"). ``*_parents``: each bone's parent name or None.

    Each skeleton's naming is recognised, by a best guess from name fragments when it follows
    no known naming; when even that finds nothing, no pairs and a line saying which side.
    Pairs come hips first, then spine, neck and head, then the left and right arms and the
    left and right legs, each from the shoulder or hip outward. The hips are each side's body
    root: a generated Rigify rig's 'torso' control, a bone named as the hips, the bone where
    the spine and legs meet (Mixamo's and BVH's 'Hips', which have no role of their own), or
    the lowest spine bone (the metarig's 'spine'). The spine and neck chains are ordered from
    the root up and resampled when their lengths differ. A generated Rigify target's trunk
    follows by its controls an animator keys: the 'hips' control the source's hips in
    orientation, the 'chest' control the top of the source's spine; its FK spine is left alone."""
    target = _Side("target", target_names, target_parents)
    source = _Side("source", source_names, source_parents)
    unknown = [f"{side.which}: its bone names follow no naming known here (Rigify, metarig, Mixamo, BVH) and "
               f"none suggests a body part" for side in (target, source) if not side.naming]
    if unknown:
        return [], unknown
    pairs: list[RetargetPair] = []
    missing: list[str] = []

    def pair(part: str, target_bone: str, source_bone: str, kind: str) -> None:
        if target_bone and source_bone:
            pairs.append(RetargetPair(target_bone, source_bone, kind, 1.0))
        else:
            missing.append(_not_found(part, target, source, bool(target_bone), bool(source_bone)))

    pair("hips", target.hips, source.hips, "POSE")
    # A generated Rigify target's spine is carried by its torso, hips and chest controls, as an
    # animator keys it; its FK spine controls are offsets on them and stay at rest (turned too,
    # the rig's half-way blends between them flip once the body turns far).
    rigify_trunk = bool(target.naming == "RIGIFY" and target.chest)
    if rigify_trunk and target.hips_control and source.hips:
        pairs.append(RetargetPair(target.hips_control, source.hips, "ORIENTATION", 1.0))
    elif target.pelvis and source.hips:
        pairs.append(RetargetPair(target.pelvis, source.hips, "ORIENTATION", 1.0))
    for part, chain_t, chain_s in (("spine", target.spine, source.spine), ("neck", target.neck, source.neck)):
        if part == "spine" and rigify_trunk and chain_s:
            pairs.append(RetargetPair(target.chest, chain_s[-1], "ORIENTATION", 1.0))
        elif chain_t and chain_s:
            for bone, index in zip(chain_t, _resample(len(chain_t), len(chain_s)), strict=True):
                pairs.append(RetargetPair(bone, chain_s[index], "ORIENTATION", 1.0))
            if part == "spine" and target.chest:
                pairs.append(RetargetPair(target.chest, chain_s[-1], "ORIENTATION", 1.0))
        else:
            missing.append(_not_found(part, target, source, bool(chain_t), bool(chain_s)))
    pair("head", target.parts["head"], source.parts["head"], "POSE")
    for limb in (_ARM, _LEG):
        for side in ("L", "R"):
            for role in limb:
                part = f"{role}.{side}"
                if role == "hand" and target.parts[part] and not source.parts[part] and source.parts[f"forearm.{side}"]:
                    # No hand in the source: the target's follows the end of its forearm, turned as it.
                    pairs.append(RetargetPair(target.parts[part], source.parts[f"forearm.{side}"], "POSE", 1.0))
                    continue
                pair(part, target.parts[part], source.parts[part], "POSE" if role in _POSE_LIMBS else "ORIENTATION")
    fingers_t, fingers_s = target.fingers(), source.fingers()
    for side in ("L", "R"):
        for finger in ("thumb", *_FINGERS):
            for segment in (1, 2, 3):
                key = f"{finger}{segment}.{side}"
                if key in fingers_t and key in fingers_s:
                    pairs.append(RetargetPair(fingers_t[key], fingers_s[key], "ORIENTATION", 1.0))
    return pairs, missing


def leg_length(points: Mapping[str, tuple], roles: Mapping[str, str]) -> float:
    """The mean, over the sides that have both a thigh and a foot, of the leg's length from the
    thigh's head (the hip joint) to the foot's head (the ankle) along its joints: hip to knee
    (the shin's head) plus knee to ankle, the same whether the rest pose stands straight or
    mid-stride (straight across from hip to ankle when there is no shin). ``points``: each
    bone's (head, tail) in the rest pose, world space; ``roles`` as from ``recognise``.
    ValueError when no side has a thigh and a foot with their points."""
    lengths = []
    for side in ("L", "R"):
        def first(part, side=side):
            return next((n for n, r in roles.items() if r == f"{part}.{side}" and n in points), None)
        thigh, shin, foot = first("thigh"), first("shin"), first("foot")
        if thigh is not None and foot is not None:
            joints = [np.asarray(points[n][0], dtype=float) for n in (thigh, shin, foot) if n is not None]
            lengths.append(float(sum(np.linalg.norm(b - a) for a, b in itertools.pairwise(joints))))
    if not lengths:
        raise ValueError("leg length: no side has both a thigh and a foot (with their rest points) "
                         "to measure from hip to ankle")
    return sum(lengths) / len(lengths)


def leg_scale(target_points: Mapping[str, tuple], target_roles: Mapping[str, str],
              source_points: Mapping[str, tuple], source_roles: Mapping[str, str]) -> float:
    """How many times longer the target's legs are than the source's (hip to ankle, see
    ``leg_length``). ValueError when either side has no leg to measure or the ratio is not
    a finite positive number."""
    target = leg_length(target_points, target_roles)
    source = leg_length(source_points, source_roles)
    if not (math.isfinite(target) and math.isfinite(source) and target > 0.0 and source > 0.0):
        raise ValueError(f"leg scale: the target's leg length ({target:g}) and the source's ({source:g}) must be "
                         f"finite and positive")
    scale = target / source
    if not (math.isfinite(scale) and scale > 0.0):
        raise ValueError(f"leg scale: {scale:g} is not a finite positive number")
    return scale
