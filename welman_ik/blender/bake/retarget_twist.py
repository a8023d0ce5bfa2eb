"""The bend plane of a limb the rig's own IK bends: a generated Rigify rig's IK arm or leg
bends its elbow or knee as its IK chain's first control is twisted about its length
(``upper_arm_ik``, ``thigh_ik``), not toward anything the retarget places. ``limbs`` finds
those controls; ``twist`` keys each so that, in the pose Blender evaluates, the limb bends in
the source's plane (an elbow that points back as the source's, not forward as the chain's
rest bend swung onto the hand would have it)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..rig import keyframes
from ..rig.body import pose_matrices
from .retarget_limbs import role_bone
from .retarget_pose import measured_bone

# A generated Rigify rig's IK limb: its end control -> the chain's first control, which twists it.
TWIST_CONTROLS = {"hand_ik": "upper_arm_ik", "foot_ik": "thigh_ik"}
PARTS = {"hand_ik": ("upper_arm", "forearm", "hand"), "foot_ik": ("thigh", "shin", "foot")}
BENT = np.radians(10.0)  # a limb straighter than this has no plane to follow
PASSES = 1  # measured on the evaluated pose, the twist corrected by what it misses (it turns the plane as much)


class Limb(NamedTuple):
    """``control``: the target bone twisted about its Y axis; ``target``: the (upper, lower,
    end) bones whose evaluated heads show the target's limb; ``source``: the source's."""

    control: str
    target: tuple[str, str, str]
    source: tuple[str, str, str]


def limbs(target, lines, source_roles: dict, target_roles: dict) -> list[Limb]:
    """The limbs of ``target`` its own IK bends, for the map's ``lines`` that place their ends."""
    out = []
    for line in lines:
        base, dot, side = line.target.partition(".")
        control = f"{TWIST_CONTROLS.get(base, '')}{dot}{side}"
        pose_bone = target.pose.bones.get(control)
        if not line.place or base not in TWIST_CONTROLS or pose_bone is None or pose_bone.lock_rotation[1]:
            continue
        upper, lower, end = (f"{part}.{side}" for part in PARTS[base])
        source = tuple(role_bone(source_roles, role) for role in (upper, lower, end))
        lower_t = role_bone(target_roles, lower)
        if None in source or lower_t is None:
            continue
        out.append(Limb(control, (measured_bone(target, control), measured_bone(target, lower_t),
                                  measured_bone(target, line.target)), source))
    return out


def shortened(target, limbs: list[Limb]) -> list[str]:
    """The deforming bones of ``limbs`` whose length the rig's own IK changes: Blender's IK
    shortens the bones of a chain that may stretch (``ik_stretch`` above 0, as a generated
    Rigify rig's are) as it bends them, by a few percent at a deep knee, whatever places its
    end; posed by hand, the same pose shortens them alike."""
    out = []
    for limb in limbs:
        control = target.pose.bones[limb.control]
        if control.ik_stretch <= 0.0:
            continue
        base, dot, side = limb.control.partition(".")
        end = next(e for e, c in TWIST_CONTROLS.items() if c == base)
        for part in PARTS[end][:2]:
            out.append(measured_bone(target, f"{part}{dot}{side}"))
    return out


def _elbow(heads: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(axis, direction, bend) of limbs whose (upper, lower, end) heads are ``heads`` (frames, 3,
    3): the unit line from the top to the end, the unit direction the middle joint stands off
    it, and the bend [rad]."""
    top, middle, end = heads[:, 0], heads[:, 1], heads[:, 2]
    axis = end - top
    axis /= np.maximum(np.linalg.norm(axis, axis=1, keepdims=True), 1e-12)
    off = middle - top
    off -= np.einsum("fi,fi->f", off, axis)[:, None] * axis
    direction = off / np.maximum(np.linalg.norm(off, axis=1, keepdims=True), 1e-12)
    a, b = middle - top, end - middle
    cos = np.einsum("fi,fi->f", a, b) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return axis, direction, np.arccos(np.clip(cos, -1.0, 1.0))


def _missed(heads_t: np.ndarray, heads_s: np.ndarray) -> np.ndarray:
    """(frames,) [rad] how far the target's limb must turn about its line to bend in the
    source's plane; where either is too straight to have a plane, from the frames around."""
    axis, mine, bend_t = _elbow(heads_t)
    _, theirs, bend_s = _elbow(heads_s)
    theirs = theirs - np.einsum("fi,fi->f", theirs, axis)[:, None] * axis
    angle = np.arctan2(np.einsum("fi,fi->f", axis, np.cross(mine, theirs)), np.einsum("fi,fi->f", mine, theirs))
    known = (bend_t > BENT) & (bend_s > BENT) & (np.linalg.norm(theirs, axis=1) > 1e-6)
    if not known.any():
        return np.zeros(len(angle))
    at = np.arange(len(angle))
    return np.interp(at, at[known], np.unwrap(angle[known]))


def twist(obj, retarget, frames: list[int]) -> None:
    """Each of ``retarget.twists``' controls keyed on ``frames``, turned about its Y axis so that its limb, as Blender evaluates it with the keys already
    written, bends in the source's plane (measured and corrected ``PASSES`` times)."""
    from .keys import write_keys

    if not retarget.twists:
        return
    angles = {limb.control: np.zeros(len(frames)) for limb in retarget.twists}
    bones = [name for limb in retarget.twists for name in limb.target]
    for _ in range(PASSES):
        pose, world = pose_matrices(obj, bones, frames)
        heads = (world[:, None] @ pose)[..., :3, 3]
        for n, limb in enumerate(retarget.twists):
            source = np.stack([retarget.source_heads[name] for name in limb.source], axis=1)
            angles[limb.control] = angles[limb.control] + _missed(heads[:, 3 * n:3 * n + 3], source)
        results = {frame: {} for frame in frames}
        for control, angle in angles.items():
            path = keyframes.rotation_path(obj.pose.bones[control])
            values = _about_y(path, angle)
            for k, frame in enumerate(frames):
                results[frame][control] = (path, tuple(values[k]), None)
        write_keys(obj, results)


def _about_y(path: str, angle: np.ndarray) -> np.ndarray:
    """(frames, n) the channel values of a turn by ``angle`` (frames,) about the bone's Y axis."""
    zero = np.zeros_like(angle)
    if path == "rotation_quaternion":
        return np.column_stack([np.cos(angle / 2), zero, np.sin(angle / 2), zero])
    if path == "rotation_axis_angle":
        return np.column_stack([angle, zero, zero + 1.0, zero])
    return np.column_stack([zero, angle, zero])
