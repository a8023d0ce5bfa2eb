"""Pins that follow a target (an object, or another armature's bone), as the overlay draws
them. Their recorded fields are in the target's space, so their rows of the ``PinScene`` are
replaced by where the target has them now, in the world (a together pin that meets another
armature's bone: that bone's point); a pin whose target is lost is left out (nothing drawn,
nothing raised). Each one in force gets a tether: a thin line from the bone's point to its
moving goal, and a faint one from the goal to what it follows (the object's origin, the
bone's head)."""

from __future__ import annotations

import numpy as np

from ...rig.targets import follows, lost_reason, other_bone, other_point, space_matrix, world_fields
from .parts import TETHER, TETHER_TARGET, Shapes

UNREADABLE = (LookupError, AttributeError, TypeError, ValueError, ReferenceError)  # a target half gone


def follower_rows(pins) -> list[int]:
    """The indices of the pins whose fields are in a target's space (``rig.targets.follows``):
    one quick look at each pin (none in the common case)."""
    return [i for i, p in enumerate(pins) if follows(p)]


class Followers:
    """The following pins of one draw: ``origins`` {index: the world origin of the space it
    follows}, ``lost`` the indices of those whose target is gone, ``met`` those of the together
    pins that meet another armature's bone (drawn at its point, not at a bone of this one)."""

    def __init__(self):
        self.origins: dict[int, np.ndarray] = {}
        self.lost: set[int] = set()
        self.met: set[int] = set()

    def signature(self) -> bytes:
        """What the drawing depends on beyond the rows: the origins and the lost pins."""
        if not self.origins and not self.lost:
            return b""
        return repr((sorted(self.lost), sorted(self.met))).encode() + b"".join(
            np.asarray(self.origins[i], dtype=float).tobytes() for i in sorted(self.origins))


def place_followers(scene) -> Followers:
    """Put each following pin's world place, orientation and direction into ``scene``'s rows
    (``locations``, ``rotations``, ``directions``), as its target is evaluated now."""
    followers = Followers()
    for i in follower_rows(scene.pins):
        pin = scene.pins[i]
        try:
            if lost_reason(pin):
                raise LookupError(i)
            matrix = space_matrix(pin.space_object, pin.space_bone)
            world = world_fields(pin, matrix)
            if other_bone(pin):
                world["location"] = other_point(pin, matrix)
                followers.met.add(i)
            values = [np.asarray(world[k], dtype=float) for k in ("location", "rotation", "direction")]
            if not all(np.all(np.isfinite(v)) for v in values):
                raise ValueError(i)
        except UNREADABLE:
            followers.lost.add(i)
            continue
        scene.locations[i], scene.rotations[i], scene.directions[i] = values
        followers.origins[i] = np.array(matrix.translation, dtype=float)
    return followers


def tether(scene, pin, i: int, shapes: Shapes) -> None:
    """The lines that show what pin ``i`` follows: from the bone's point to its goal (thin),
    and from the goal to the target's origin (faint). An orientation's goal is the triad at the
    bone's head; a together pin's line to its other point is its own shape already."""
    origin = scene.followers.origins.get(i)
    if origin is None:
        return
    kind = pin.kind
    if kind == "TOGETHER" and i not in scene.followers.met:
        return  # it meets a bone of its own armature: it follows nothing outside
    goal = scene.locations[i]
    if kind == "ORIENTATION":
        goal = scene.bone(pin.bone)[0]
    elif kind not in {"TOGETHER", "BALANCE"}:
        start = scene.bone(pin.bone)[0] if kind == "AIM" else scene.point(pin.bone, scene.anchors[i])
        if float(np.linalg.norm(goal - start)) > 1e-9:
            shapes.add("THIN", TETHER, [start, goal])
    if float(np.linalg.norm(origin - goal)) > 1e-9:
        shapes.add("THIN", TETHER_TARGET, [goal, origin])
