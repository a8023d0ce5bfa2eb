"""Pins on the world: a pin that follows an object, or a bone of another armature
(``target_object``, ``target_bone``).

A pin's ``location``, ``rotation`` and ``direction`` are stored in its space: the world, or
its target's (the object's evaluated world matrix, times the bone's pose matrix for a bone).
Setting or changing the target records them in the new space as they stand in the world at
that moment (``record_in_target``, the properties' update callback); from then on the
goal in the world is the target's matrix on that frame times the record (``world_fields``).
The space the fields are in is remembered (``space_object``, ``space_bone``, ``space_name``),
so a target changed twice (the object, then its bone) is recorded once more, from the last.

A target that is gone (deleted, or its bone renamed) is found by ``lost_reason``; a pin
following its own follower (a cycle) by ``cycle_reason``.
"""

from __future__ import annotations

import contextlib

import numpy as np
from mathutils import Matrix, Quaternion, Vector

UP = (0.0, 0.0, 1.0)
_STORING = [False]  # fields put back as they were stored: nothing to record again


@contextlib.contextmanager
def as_stored():
    """Set a pin's fields, its target's among them, exactly as they were stored (an undone
    change): the target's update does not record them again."""
    _STORING[0] = True
    try:
        yield
    finally:
        _STORING[0] = False


def follows(pin) -> bool:
    """The pin's fields are in a target's space (set now, or set and since lost)."""
    return pin.target_object is not None or bool(pin.space_name)


def own_armature(pin) -> bool:
    """The target is the armature the pin is on (its object space; a together pin's own bone)."""
    return pin.target_object is not None and pin.target_object == pin.id_data


def other_bone(pin) -> bool:
    """The pin meets a bone of another armature (a together pin with ``target_object``)."""
    return pin.kind == "TOGETHER" and pin.target_object is not None and not own_armature(pin)


def space_of(pin) -> tuple:
    """(object, bone name) of the space the pin's fields belong in as its target is set now:
    (None, '') the world; a bone only of another armature, and only one that exists."""
    target = pin.target_object
    if target is None:
        return None, ""
    if own_armature(pin) or target.type != "ARMATURE" or pin.target_bone not in target.pose.bones:
        return target, ""
    return target, pin.target_bone


def space_matrix(target, bone: str = "") -> Matrix:
    """The world matrix of a target's space as Blender evaluated it on the current frame."""
    if target is None:
        return Matrix.Identity(4)
    matrix = target.matrix_world.copy()
    return matrix @ target.pose.bones[bone].matrix if bone else matrix


def space_matrices(target, bones) -> np.ndarray:
    """(k, 4, 4) the world matrices of an armature's ``bones`` (or the object's alone for '')
    on the current frame."""
    world = np.array(target.matrix_world, dtype=float)
    out = np.repeat(world[None], len(bones), axis=0)
    for i, bone in enumerate(bones):
        if bone:
            out[i] = world @ np.array(target.pose.bones[bone].matrix, dtype=float)
    return out


def carried(matrix, location, rotation, direction) -> dict:
    """The fields a space's ``matrix`` carries a record to: the point by the whole matrix, the
    orientation and the direction by its rotation (a scaled target scales the offset, never
    the orientation)."""
    matrix = matrix if isinstance(matrix, Matrix) else Matrix(np.asarray(matrix).tolist())
    turn = matrix.to_quaternion().normalized()
    return {"location": np.array(matrix @ Vector(location), dtype=float),
            "rotation": turn @ Quaternion(rotation).normalized(),
            "direction": np.array(turn @ Vector(direction), dtype=float)}


def world_fields(pin, matrix=None) -> dict:
    """The pin's location (array), rotation (Quaternion) and direction (array) in the world:
    its target's space ``matrix`` (None: as evaluated now) times its record."""
    if matrix is None:
        matrix = space_matrix(pin.space_object, pin.space_bone) if follows(pin) else Matrix.Identity(4)
    return carried(matrix, pin.location, pin.rotation, pin.direction)


def other_point(pin, matrix=None) -> np.ndarray:
    """Where a together pin meets another armature's bone: that bone's point at
    ``target_anchor`` (``matrix``: the bone's world matrix; None: as evaluated now)."""
    target = pin.target_object
    bone = target.pose.bones[pin.target_bone]
    matrix = space_matrix(target, bone.name) if matrix is None else Matrix(np.asarray(matrix).tolist())
    return np.array(matrix @ Vector((0.0, pin.target_anchor * bone.bone.length, 0.0)), dtype=float)


def set_world(pin, location=None, rotation=None) -> None:
    """Put a world place and orientation into the pin's record (in its target's space)."""
    inverse = space_matrix(pin.space_object, pin.space_bone).inverted_safe() if follows(pin) else None
    if location is not None:
        pin.location = tuple(inverse @ Vector(location)) if inverse is not None else tuple(location)
    if rotation is not None:
        turn = Quaternion(rotation).normalized()
        if inverse is not None:
            turn = inverse.to_quaternion().normalized() @ turn
        pin.rotation = tuple(turn)


def record_in_target(pin, _context=None) -> None:
    """The update callback of ``target_object`` and ``target_bone``: the fields as they stand
    in the world, recorded in the new target's space. A floor pin given a target lies on the
    target's XY plane (a table top, a slope). A pin whose old space is gone keeps its numbers."""
    if _STORING[0]:
        return
    target, bone = space_of(pin)
    if (target, bone) == (pin.space_object, pin.space_bone) and (target is not None) == bool(pin.space_name):
        return
    if lost_reason(pin, target_only=False, old=True):
        world = None
    else:
        world = world_fields(pin)
    if world is not None:
        if pin.kind == "FLOOR" and not pin.space_name and target is not None:
            record = {"location": np.zeros(3), "rotation": Quaternion(), "direction": np.array(UP)}
        else:
            inverse = space_matrix(target, bone).inverted_safe()
            record = carried(inverse, world["location"], world["rotation"], world["direction"])
            record["direction"] = record["direction"] / max(float(np.linalg.norm(record["direction"])), 1e-12)
        pin.location, pin.rotation, pin.direction = (tuple(record[k]) for k in ("location", "rotation", "direction"))
    pin.space_object, pin.space_bone = target, bone
    pin.space_name = target.name if target is not None else ""


def lost_reason(pin, target_only: bool = True, old: bool = False) -> str:
    """Why a pin's target cannot be followed ('' when it can): the object deleted or in no
    scene, or its bone gone (renamed or deleted). ``old``: of the space the fields are
    recorded in, not of the target set now."""
    if old:
        if not pin.space_name:
            return ""
        target, bone = pin.space_object, pin.space_bone
    else:
        if not follows(pin):
            return ""
        target, bone = pin.target_object, pin.space_bone
    if target is None:
        return f"its target '{pin.space_name}' was deleted"
    if not target.users_scene:
        return f"its target '{target.name}' is in no scene (deleted)"
    wanted = [bone] + ([pin.target_bone] if target_only and not own_armature(pin) and pin.target_bone else [])
    for name in filter(None, wanted):
        if target.type != "ARMATURE" or name not in target.pose.bones:
            return f"bone '{name}' of its target '{target.name}' is gone (renamed or deleted)"
    return ""


def cycle_reason(obj, pin) -> str:
    """Why following ``pin``'s target would make a cycle ('' when it does not): the target
    moves with this armature's pose (its parent or a constraint is on it) or follows it back
    through pins of its own."""
    target = pin.target_object
    if target is None:
        return ""
    if own_armature(pin):
        if pin.kind != "TOGETHER" and pin.target_bone:
            return ("it follows a bone of its own armature; to hold two of its bones together use a together pin, "
                    "or pin to another object")
        return ""
    parent = target
    while parent is not None:
        if parent == obj:
            return f"its target '{target.name}' is parented to '{obj.name}', so it moves with the pose that follows it"
        parent = parent.parent
    owners = [target] + (list(target.pose.bones) if target.type == "ARMATURE" and target.pose else [])
    if any(getattr(c, "target", None) == obj for owner in owners for c in owner.constraints):
        return f"its target '{target.name}' has a constraint on '{obj.name}', so it moves with the pose that follows it"
    settings = getattr(target, "welman_ik", None)
    if settings is not None and any(p.enabled and p.target_object == obj for p in settings.pins):
        return f"'{target.name}' has a pin that follows '{obj.name}' in turn; one of the two must lead"
    return ""
