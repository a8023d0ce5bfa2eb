"""Keyframes behind one helper, whatever the animation API of the running Blender.

Blender 4.4 introduced layered actions with slots and channelbags; 5.0 removed
``Action.fcurves``. Everything that reads or writes keys goes through here.
"""

from __future__ import annotations

import numpy as np

from .body import rest_ends

ROTATION_PATHS = {
    "QUATERNION": "rotation_quaternion",
    "AXIS_ANGLE": "rotation_axis_angle",
}


def rotation_path(pose_bone) -> str:
    return ROTATION_PATHS.get(pose_bone.rotation_mode, "rotation_euler")


def should_key(mode: str, scene) -> bool:
    """The ``keyframes`` setting: 'ALWAYS', 'AUTOKEY' (Blender's auto-keying), 'NEVER'."""
    if mode == "ALWAYS":
        return True
    if mode == "AUTOKEY":
        return bool(scene.tool_settings.use_keyframe_insert_auto)
    return False


KEY_SHARE = 0.5  # of the tolerance: how far a bone left unkeyed may move the farthest point it carries


def key_thresholds(obj, tolerance: float) -> tuple[float, float]:
    """(angle [rad], length [armature units]) a bone's channels must change by to be keyed
    after a drag.

    A solve moves the bones it does not need by rounding noise (the legs by 1e-8 rad while
    the feet stay pinned and a hand is dragged); keying them clutters the action with keys
    that change nothing. A bone that turned by less than ``angle`` moves no point of the rig
    (whose size is its rest bones' extent, in the world) by more than ``KEY_SHARE`` of the
    tolerance by itself; the bones left unkeyed along one chain add up, a few times that at
    most."""
    scale = float(np.abs(np.array(obj.matrix_world.to_scale())).max())
    points = rest_ends(obj).reshape(-1, 3) * scale
    size = float(np.linalg.norm(points.max(axis=0) - points.min(axis=0))) if len(points) else 0.0
    length = KEY_SHARE * tolerance
    # (location channels are in the armature's own units: a centimetre rig at scale 0.01 moves
    # a hundredth of a channel's change in the world)
    return length / max(size, 1e-9), length / max(scale, 1e-9)


def key_bones(obj, names, frame: float, with_location=()) -> int:
    """Key the rotation (and, for bones in ``with_location``, location) of pose bones at
    ``frame``, in channel groups named after each bone, as Blender's own keying does.
    Returns the number of channels keyed."""
    count = 0
    for name in names:
        pb = obj.pose.bones[name]
        paths = [rotation_path(pb)] + (["location"] if name in with_location else [])
        for path in paths:
            pb.keyframe_insert(path, frame=frame, group=name)
            count += 1
    return count


LINEAR = 1  # the 'LINEAR' item of Keyframe.interpolation, for foreach_set


def assign_action(obj, action) -> None:
    """Assign an action (and, with slotted actions, the slot it has for this object)."""
    ad = obj.animation_data
    slot = getattr(ad, "action_slot", None)
    identifier = slot.identifier if slot is not None else None
    ad.action = action
    if hasattr(ad, "action_slot") and ad.action_slot is None and len(getattr(action, "slots", ())):
        ad.action_slot = next((s for s in action.slots if s.identifier == identifier), action.slots[0])


def ensure_fcurve(obj, data_path: str, index: int, group: str):
    """The F-curve of the object's action for one channel, created empty (in channel group
    ``group``) if missing."""
    return ensure_fcurves(obj, [(data_path, index, group)])[0]


def ensure_fcurves(obj, channels) -> list:
    """The F-curves of the object's action for ``channels`` ((data path, index, group) each),
    in that order, each created empty (in its channel group) where missing: the action's
    curves looked up once, not once per channel."""
    curves = {(c.data_path, c.array_index): c for c in action_fcurves(obj)}
    missing = [(path, index, group) for path, index, group in channels if (path, index) not in curves]
    for path, index, group in missing:
        obj.keyframe_insert(path, index=index, group=group)
    if missing:
        made = {(c.data_path, c.array_index): c for c in action_fcurves(obj)}
        for path, index, _ in missing:
            curve = curves[path, index] = made[path, index]
            curve.keyframe_points.clear()  # the key keyframe_insert made at the scene's frame
    return [curves[path, index] for path, index, _ in channels]


def action_fcurves(obj) -> list:
    """The F-curves of the object's assigned action (its slot's channelbag in 4.4+)."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return []
    return _slot_fcurves(ad.action, getattr(ad, "action_slot", None))


def _slot_fcurves(action, slot) -> list:
    """The F-curves of ``action`` that animate its ``slot`` (4.4+), or all of them (legacy)."""
    if hasattr(action, "layers"):  # slotted actions: the channelbag of the object's slot
        if slot is None:
            return []
        from bpy_extras import anim_utils

        bag = anim_utils.action_get_channelbag_for_slot(action, slot)
        return list(bag.fcurves) if bag is not None else []
    return list(action.fcurves)


def sample_fcurves(obj, curves: list, first: int, last: int) -> np.ndarray:
    """The values (last - first + 1, len(curves)) float32 of ``curves`` (of the object's
    action) on every frame ``first``..``last``, as ``FCurve.evaluate`` gives them: Blender
    samples each curve of a copy of the action at once (``convert_to_samples``), the copy
    removed after. A curve it leaves unsampled is evaluated frame by frame."""
    import bpy

    frames = range(first, last + 1)
    out = np.empty((len(frames), len(curves)), dtype=np.float32)
    ad = obj.animation_data
    copy = ad.action.copy()
    try:
        copies = {(c.data_path, c.array_index): c for c in _slot_fcurves(copy, getattr(ad, "action_slot", None))}
        buffer = np.empty(2 * len(frames), dtype=np.float32)
        for k, curve in enumerate(curves):
            sampled = copies.get((curve.data_path, curve.array_index))
            if sampled is not None and len(sampled.keyframe_points):
                sampled.convert_to_samples(first, last + 1)  # (the end is not sampled)
                points = sampled.sampled_points
                if len(points) == len(frames):
                    points.foreach_get("co", buffer)
                    if buffer[0] == first and buffer[-2] == last:
                        out[:, k] = buffer[1::2]
                        continue
            out[:, k] = [curve.evaluate(frame) for frame in frames]
    finally:
        bpy.data.actions.remove(copy)
    return out


def bone_fcurves(obj, bone_name: str) -> list:
    """F-curves that animate one pose bone."""
    prefix = f'pose.bones["{bone_name}"].'
    return [fc for fc in action_fcurves(obj) if fc.data_path.startswith(prefix)]


def keyed_past(obj, first: int, last: int) -> tuple[bool, bool]:
    """Whether the object's action has keys before frame ``first`` and after frame ``last``:
    the animation goes on past that range, so a change inside it must meet the animation at
    its ends."""
    # (``FCurve.range``: the frames of a curve's first and last keys)
    keyed = np.array([curve.range()[:] for curve in action_fcurves(obj) if len(curve.keyframe_points)]).reshape(-1, 2)
    return (bool(keyed.size) and keyed[:, 0].min() < first - 0.5), (bool(keyed.size) and keyed[:, 1].max() > last + 0.5)
