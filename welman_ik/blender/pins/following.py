"""Pins that follow a target (an object, or another armature's bone) as the solves take them:
where each holds on the current frame or in a target's space on a given frame (``placed``,
``placed_at``), each frame's target spaces sampled before a bake (``space_tracks``), lost
targets disabled and reported (``release_lost``) and cycles refused (``check_cycles``)."""

from __future__ import annotations

import numpy as np

from ..rig.model import RigError
from ..rig.targets import cycle_reason, follows, lost_reason, other_bone, other_point, space_matrix, world_fields
from .goals import POINT_KINDS, describe, rotation_matrix_of


def placed(pin):
    """The pin's target as a solve takes it (a drag's (pin, target) pairs): a position pin's
    world point, another kind's fields (``goals.build``'s overrides); a pin that follows
    nothing: its own location, or no fields."""
    if not follows(pin):
        return np.array(pin.location, dtype=float) if pin.kind in POINT_KINDS else {}
    reason = lost_reason(pin)
    if reason:
        raise RigError(f"{describe(pin)[0].upper() + describe(pin)[1:]} cannot follow: {reason}; "
                       "set its Target again or clear it")
    return placed_at(pin, np.array(space_matrix(pin.space_object, pin.space_bone), dtype=float))


def placed_at(pin, matrix: np.ndarray):
    """The pin's target where its space's world matrix is ``matrix`` (a frame's)."""
    if other_bone(pin):
        point = other_point(pin, matrix)
        return point if pin.kind in POINT_KINDS else {"location": point}
    world = world_fields(pin, matrix)
    if pin.kind in POINT_KINDS:
        return world["location"]
    return {"location": world["location"], "rotation_matrix": rotation_matrix_of(world["rotation"]),
            "direction": world["direction"]}


def release_lost(obj) -> list[str]:
    """Disable each enabled pin whose target is gone (deleted, or its bone renamed): the pin
    is kept and the solve goes on without it. Returns what to report of each."""
    said = []
    for pin in obj.welman_ik.pins:
        reason = lost_reason(pin) if pin.enabled and follows(pin) else ""
        if reason:
            pin.enabled = False
            said.append(f"{describe(pin)[0].upper() + describe(pin)[1:]} is disabled: {reason}. Set its Target "
                        "again and enable it")
    return said


def check_cycles(obj, pins=None) -> None:
    """Refuse pins whose target moves with this armature's pose or follows it back."""
    for pin in obj.welman_ik.pins if pins is None else pins:
        reason = cycle_reason(obj, pin) if pin.enabled else ""
        if reason:
            raise RigError(f"{describe(pin)[0].upper() + describe(pin)[1:]} cannot follow its target: {reason}")


def space_tracks(scene, pins, frames: list[int]) -> dict[int, np.ndarray]:
    """pin pointer -> (len(frames), 4, 4) its target space's world matrix on each frame, as
    Blender evaluates the leaders there (their animation, constraints and drivers), for the
    pins that follow a target. The scene is back on its frame after."""
    following = [p for p in pins if follows(p)]
    if not following:
        return {}
    for pin in following:
        reason = lost_reason(pin)
        if reason:
            raise RigError(f"{describe(pin)[0].upper() + describe(pin)[1:]} cannot follow: {reason}")
    spaces = {(p.space_object.as_pointer(), p.space_bone): (p.space_object, p.space_bone) for p in following}
    keys = list(spaces)
    track = np.empty((len(keys), len(frames), 4, 4))
    before = scene.frame_current, scene.frame_subframe
    try:
        for i, frame in enumerate(frames):
            scene.frame_set(frame)
            for k, key in enumerate(keys):
                track[k, i] = np.array(space_matrix(*spaces[key]), dtype=float)
    finally:
        scene.frame_set(before[0], subframe=before[1])
    if not np.all(np.isfinite(track)):
        raise RigError("A pin's target has no finite place on some frame (NaN or infinite transforms)")
    return {p.as_pointer(): track[keys.index((p.space_object.as_pointer(), p.space_bone))] for p in following}
