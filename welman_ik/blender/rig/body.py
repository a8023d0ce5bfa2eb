"""The body of an armature: its trunk, neck and the bone that keeps the gaze (``core.body``),
read once per armature and kept while its bones stay the same."""

from __future__ import annotations

import numpy as np

from ...core.body import body_parts

_FOUND: dict = {}  # armature data pointer -> (bone names, (trunk, neck, head))


def parts(obj) -> tuple[frozenset, frozenset, str]:
    """(trunk bones, neck bones, head bone or '') of armature object ``obj``."""
    bones = obj.data.bones
    names = tuple(bones.keys())
    key = obj.data.as_pointer()
    found = _FOUND.get(key)
    if found is None or found[0] != names:
        lengths = np.zeros(len(bones))
        bones.foreach_get("length", lengths)
        parents = {b.name: (b.parent.name if b.parent else None) for b in bones}
        trunk, _girdle, neck, head = body_parts(names, parents, dict(zip(names, lengths.tolist())))
        found = _FOUND[key] = (names, (frozenset(trunk), frozenset(neck), head))
    return found[1]


def tiers(obj, model) -> np.ndarray | None:
    """(n,) each joint of ``model`` (a ``RigModel`` of ``obj``): 0 a limb's (the shoulder
    girdle moves with its arm, as a reach lifts the shoulder), 1 the trunk's and those above
    it (``core.solvers.limbs_first``); None when the rig has no trunk."""
    tier = np.zeros(model.skeleton.size, dtype=np.intp)
    for name in parts(obj)[0] & model.bones.keys():
        joints = model.bones[name]
        tier[[*joints.hinges.values(), *joints.slides.values()]] = 1
    # What carries the trunk (a rig's root bone, a parent-switch bone) is trunk too.
    tier[model.skeleton.ancestors[tier == 1].any(axis=0)] = 1
    return tier if tier.any() else None


def gaze_bone(obj, settings) -> str:
    """The bone whose world orientation the neck keeps: ``settings.gaze_bone`` when it names a
    bone, else the head the rig's naming finds; '' with the gaze off or no head found."""
    if not settings.gaze:
        return ""
    if settings.gaze_bone:
        return settings.gaze_bone if settings.gaze_bone in obj.pose.bones else ""
    return parts(obj)[2]


def world_scale(obj) -> float:
    """How many times its own units ``obj``'s world lengths are: the cube root of its world
    matrix's determinant (the uniform scale a rig in centimetres has, 0.01)."""
    return float(np.cbrt(abs(np.linalg.det(np.array(obj.matrix_world, dtype=float)[:3, :3]))))


def rest_ends(obj, world: bool = False) -> np.ndarray:
    """(bones, 2, 3): each bone's head and tail in the rest pose, in armature space (``world``:
    the object's transform applied), read in bulk."""
    bones = obj.data.bones
    heads, tails = np.zeros(3 * len(bones)), np.zeros(3 * len(bones))
    if len(bones):
        bones.foreach_get("head_local", heads)
        bones.foreach_get("tail_local", tails)
    ends = np.stack([heads.reshape(-1, 3), tails.reshape(-1, 3)], axis=1)
    if world:
        matrix = np.array(obj.matrix_world, dtype=float)
        ends = ends @ matrix[:3, :3].T + matrix[:3, 3]
    return ends


def rest_matrices(obj, bones) -> np.ndarray:
    """(bones, 4, 4) the rest matrices of ``bones`` (names) in armature space, read in bulk."""
    data = obj.data.bones
    flat = np.empty(len(data) * 16, np.float32)
    data.foreach_get("matrix_local", flat)  # flattened column by column
    index = {name: i for i, name in enumerate(data.keys())}
    return flat.reshape(-1, 4, 4).transpose(0, 2, 1)[[index[b] for b in bones]].astype(float)


def pose_matrices(obj, bones, frames) -> tuple[np.ndarray, np.ndarray]:
    """(frames, bones, 4, 4) the evaluated pose matrices of ``bones`` (names) in armature space
    on each of ``frames``, and (frames, 4, 4) the object's world matrix there, read in bulk, a
    scene frame change per frame (constraints, drivers and NLA as Blender evaluates them). The
    scene's frame is put back."""
    import bpy

    index = {name: i for i, name in enumerate(obj.pose.bones.keys())}
    pose = np.empty((len(frames), len(index) * 16), np.float32)
    world = np.empty((len(frames), 4, 4))
    scene = bpy.context.scene
    current = scene.frame_current, scene.frame_subframe
    try:
        for i, frame in enumerate(frames):
            scene.frame_set(frame)
            evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
            evaluated.pose.bones.foreach_get("matrix", pose[i])  # column by column
            world[i] = np.array(evaluated.matrix_world, dtype=float)
    finally:
        scene.frame_set(current[0], subframe=current[1])
    pose = pose.reshape(len(frames), -1, 4, 4).transpose(0, 1, 3, 2)[:, [index[b] for b in bones]]
    return pose.astype(float), world
