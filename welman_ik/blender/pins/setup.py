"""What a solve of the pins is set up from: the pins it holds, the bones it may move, the
pose it keeps the free joints near, and whether a dragged bone translates."""

from __future__ import annotations

import numpy as np

from ..rig.model import chain_to_root
from .goals import SOLVABLE_PIN_KINDS

MOVED_WITH_DRAG = frozenset({"POSITION", "POSE"})  # the dragged bone's pins that move to where it ends


def active_pins(settings, exclude: str = ""):
    """Enabled pins the solver can hold, except the position and pose pins on bone
    ``exclude`` (the dragged bone: they would hold it where the drag moves it from). Its
    other pins stay: a dragged hand keeps its orientation, slides along its line or plane,
    keeps within its region, or brings the bone it is held together with along."""
    return [p for p in settings.pins
            if p.enabled and p.kind in SOLVABLE_PIN_KINDS and not (p.bone == exclude and p.kind in MOVED_WITH_DRAG)]


def movable_bones(obj, bone: str, chain_length: int, keep_root: bool = False):
    """Names the solver may move: None for the whole body, else the dragged bone and its
    ``chain_length - 1`` nearest ancestors; ``keep_root``: never a root bone."""
    if chain_length <= 0:
        names = None if not keep_root else [pb.name for pb in obj.pose.bones]
    else:
        names = [pb.name for pb in chain_to_root(obj.pose.bones[bone])[:chain_length]]
    return names if not keep_root else [n for n in names if obj.pose.bones[n].parent is not None]


def translating_bones(obj, bone: str) -> set[str]:
    """The dragged bone translates, as Blender's grab does, when it is not connected to its
    parent and its location is not locked (the root bone always has its slides)."""
    pb = obj.pose.bones[bone]
    if pb.parent is not None and not pb.bone.use_connect and not all(pb.lock_location):
        return {bone}
    return set()


def free_controls(obj, names) -> set[str]:
    """Of the pinned bones ``names``, the controls that float free: not deforming, nor is any
    bone above them, not connected and with their location free (a generated Rigify rig's IK
    hands and feet, its torso). A pin moves them by their location, as the drag moves the
    dragged bone: a hand control pinned to a moving cup goes with the cup, whatever the torso
    does. A rig whose pinned bones deform (a metarig, a mocap skeleton) has none."""
    found = set()
    for name in names:
        pb = obj.pose.bones.get(name)
        if (pb is None or pb.parent is None or pb.bone.use_connect or all(pb.lock_location) or pb.bone.use_deform
                or any(p.bone.use_deform for p in pb.parent_recursive)):
            continue
        found.add(name)
    return found


def preferred_pose(reference: str, start: np.ndarray) -> np.ndarray | None:
    """The joint values the solver keeps the free joints near: the start pose, the rest
    pose (every joint at 0: each hinge measures its angle from rest, each slide its
    location), or none."""
    if reference == "START":
        return start.copy()
    if reference == "REST":
        return np.zeros_like(start)
    return None
