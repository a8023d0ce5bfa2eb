"""Where a retarget holds the target's ends from: each hand from its own shoulder and each foot
whose control the hips do not carry from its own hip, as far as the target's limb reaches
with its elbow or knee bent as the source's (``reach``, ``leg``), never past it
(``within_reach``), and how much longer the target's trunk is from the hips to each end
(``anchors``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...core.anatomy import alignment
from ..rig.body import rest_ends, world_scale
from ..rig.retarget_map import bone_tree
from .retarget_feet import unit

if TYPE_CHECKING:
    from .retarget import Line, Retarget


ARM, LEG = ("upper_arm", "forearm", "hand"), ("thigh", "shin", "foot")


def role_bone(roles: dict, role: str) -> str | None:
    """The first bone of ``roles`` (bone -> role) with ``role``; None when it has none."""
    return next((name for name, r in roles.items() if r == role), None)


def reach(heads: np.ndarray, column: dict, source_roles: dict, target_roles: dict, target_heads: dict, side: str,
           parts: tuple) -> np.ndarray | None:
    """(frames, 3) from the top of a target limb (``parts``: its upper bone, its lower one and
    its end, on ``side``) to its end: along the source's, as far as the target's two bones
    reach when the joint between them (the knee, the elbow) bends as the source's. None when
    either side lacks one of the three. The same bend whatever the two limbs' proportions."""
    names_s = [role_bone(source_roles, f"{part}.{side}") for part in parts]
    names_t = [role_bone(target_roles, f"{part}.{side}") for part in parts]
    if None in names_s or None in names_t or not all(name in column for name in names_s):
        return None
    upper, lower, end = (heads[:, column[name]] for name in names_s)
    a, b = alignment.normalized(lower - upper), alignment.normalized(end - lower)
    la, lb = (float(np.linalg.norm(target_heads[names_t[n + 1]] - target_heads[names_t[n]])) for n in (0, 1))
    cos = np.clip(np.einsum("fi,fi->f", a, b), -1.0, 1.0)
    far = np.sqrt(np.maximum(la * la + lb * lb + 2.0 * la * lb * cos, 0.0))
    return alignment.normalized(end - upper) * far[:, None]


def leg(retarget: Retarget, line: Line, heads: np.ndarray, column: dict, hips_place: np.ndarray,
         target_heads: dict, target_roles: dict) -> np.ndarray | None:
    """(frames, 3) where a foot whose control the hips do not carry (a generated Rigify rig's IK
    foot) is in the lined-up pose: its hip where the hips' lined-up turn puts it, the leg
    reaching from there as the source's (``_reach``). The hip is kept in ``retarget.heads``
    (the feet's ease stays within its reach). None where the hips do not turn or a leg bone is
    missing."""
    hips = retarget.hips()
    side = retarget.source_roles.get(line.source, "").rpartition(".")[2]
    thigh = role_bone(target_roles, f"thigh.{side}")
    if hips is None or not retarget.lines[hips].turn or thigh is None:
        return None
    way = reach(heads, column, retarget.source_roles, target_roles, target_heads, side, LEG)
    if way is None:
        return None
    name = retarget.lines[hips].target
    rest = unit(retarget.rest[name][:3, :3])
    hip = hips_place + retarget.turns[hips] @ (rest.T @ (target_heads[thigh] - target_heads[name]))
    retarget.heads.setdefault(thigh, hip)
    return hip + way


def within_reach(retarget: Retarget, target_roles: dict) -> None:
    """Each hand held from its shoulder no further than the target's arm reaches (its upper
    arm's and forearm's lengths, less a hair): a hand asked past it would stretch a rig whose
    IK stretches, or lock the elbow straight."""
    scale = world_scale(retarget.target)
    bones = retarget.target.data.bones
    for i, line in enumerate(retarget.lines):
        side = retarget.source_roles.get(line.source, "").rpartition(".")[2]
        if i not in retarget.offsets or line.group != "hands" or side not in ("L", "R"):
            continue
        arm = [role_bone(target_roles, f"{part}.{side}") for part in ("upper_arm", "forearm")]
        if None in arm:
            continue
        reach = 0.995 * scale * sum(bones[n].length for n in arm)
        offset = retarget.offsets[i]
        far = np.linalg.norm(offset, axis=1)
        retarget.offsets[i] = offset * np.minimum(1.0, reach / np.maximum(far, 1e-12))[:, None]


def within_legs(retarget: Retarget, target_roles: dict, frames: int) -> None:
    """The whole body lowered where a planted foot would be out of its leg's reach from the
    lined-up hip (``leg``: a rig whose IK foot the hips do not carry): the hip comes down just
    far enough over the plant, the change spread over ``frames`` either side (a windowed
    largest, then a windowed mean: never less than a frame needs). A plant holds its point
    where the lined-up pose puts it on average while the hip walks over it, so near its ends
    the foot would be asked past the leg's length, and a rig whose IK stretches (a generated
    Rigify rig's) would stretch the leg to reach it. The planted feet stay where they are."""
    from .retarget_feet import foot_lines

    feet = foot_lines(retarget)
    count = len(retarget.frames)
    need = np.zeros(count)
    planted = {bone: np.zeros(count, dtype=bool) for bone in feet}
    bones = retarget.target.data.bones
    scale = world_scale(retarget.target)
    for plant in retarget.plants:
        i = feet.get(plant.bone)
        side = retarget.source_roles.get(retarget.lines[i].source, "").rpartition(".")[2] if i is not None else ""
        names = [role_bone(target_roles, f"{part}.{side}") for part in LEG]
        if i is None or None in names or names[0] not in retarget.heads:
            continue
        span = slice(plant.first, plant.last + 1)
        planted[plant.bone][span] = True
        length = 0.999 * scale * (bones[names[0]].length + bones[names[1]].length)
        ankle = plant.point - retarget.turns[i][span] @ plant.local
        way = retarget.heads[names[0]][span] - ankle
        across = np.minimum(np.linalg.norm(way[:, :2], axis=1), length)
        need[span] = np.maximum(need[span], way[:, 2] - np.sqrt(length * length - across * across))
    if not (need > 1e-6).any():
        return
    k = max(int(frames), 0)
    padded = np.pad(np.maximum(need, 0.0), k, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * k + 1)
    largest = np.pad(windows.max(axis=1), k, mode="edge")
    down = np.lib.stride_tricks.sliding_window_view(largest, 2 * k + 1).mean(axis=1)
    for i, place in retarget.places.items():
        bone = retarget.lines[i].target
        lowered = ~planted[bone] if bone in planted else np.ones(count, dtype=bool)
        place[lowered, 2] -= down[lowered]
    for place in retarget.heads.values():
        place[:, 2] -= down


def _chain_length(ends: dict, parents: dict, bone: str, top: str) -> float:
    """The length of the chain of joints from ``bone``'s head up to ``top``'s (the sum of each
    joint's distance from its parent's, the same in any rest); 0 when ``top`` is not above."""
    length, name = 0.0, bone
    while name != top:
        parent = parents.get(name)
        if parent is None:
            return 0.0
        length += float(np.linalg.norm(ends[name] - ends[parent]))
        name = parent
    return length


def anchors(target, source, lines: list[Line], source_roles: dict, target_roles: dict
             ) -> dict[str, tuple[str | None, float, str]]:
    """Per placed end of the source (a hand, the head): the source bone its limb starts at (the
    upper arm for a hand; None for the head) and how many times longer the target's trunk is
    from the hips to there (to the head itself for the head), along its joints; and the target
    bone the limb starts at ('' for the head)."""
    hips = next((line for line in lines if line.group == "hips"), None)
    if hips is None:
        return {}
    sides = {}
    for obj in (target, source):
        names, parents = bone_tree(obj)
        sides[obj.name] = (dict(zip(names, rest_ends(obj, world=True)[:, 0])), parents)

    out = {}
    for line in lines:
        if not line.place or line.group not in {"hands", "head"}:
            continue
        role = source_roles.get(line.source, "")
        start_s = start_t = None
        if line.group == "hands":
            side = role.rpartition(".")[2]
            start_s, start_t = role_bone(source_roles, f"upper_arm.{side}"), role_bone(target_roles, f"upper_arm.{side}")
        if line.group == "hands" and (start_s is None or start_t is None):
            continue
        reach_s = _chain_length(*sides[source.name], start_s or line.source, hips.source)
        reach_t = _chain_length(*sides[target.name], start_t or line.target, hips.target)
        if reach_s <= 0.0 or reach_t <= 0.0:  # not on one chain (a Rigify control): straight across
            reach_s = float(np.linalg.norm(sides[source.name][0][start_s or line.source]
                                           - sides[source.name][0][hips.source]))
            reach_t = float(np.linalg.norm(sides[target.name][0][start_t or line.target]
                                           - sides[target.name][0][hips.target]))
        out[line.source] = (start_s, reach_t / max(reach_s, 1e-9), start_t or "")
    return out
