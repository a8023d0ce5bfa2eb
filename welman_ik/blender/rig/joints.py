"""What one pose bone is in the hinge tree (its hinges, slides and fixed channels) and
what carries it (its parent, or the bone a constraint re-parents it to rigidly)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import driven


def as_array(m) -> np.ndarray:
    """A mathutils matrix or vector as a float array."""
    return np.array(m, dtype=float)


@dataclass
class BoneJoints:
    """Where one pose bone lives in the hinge tree."""

    name: str
    hinges: dict  # axis letter -> joint index
    slides: dict  # axis letter -> joint index (root location), may be empty
    frame_joint: int  # the joint whose frame carries the bone (its innermost hinge)
    scale: np.ndarray  # (3,) pose scale applied after the rotation
    length: float
    order: str
    shape: tuple  # the channels built into the fixed transforms (see ``fixed_channels``)


def fixed_channels(pose_bone, translating: bool = False) -> tuple:
    """The pose channels a bone's hinges take as fixed: its scale and, for a bone neither
    root, nor connected, nor translating, its location."""
    moves_head = pose_bone.parent is not None and not pose_bone.bone.use_connect and not translating
    return tuple(pose_bone.scale), tuple(pose_bone.location) if moves_head else None


def inherited_scale(mode: str, frame_scale: np.ndarray, parent_scale: np.ndarray) -> np.ndarray:
    """The scale (3,) a child's orientation applies to its parent's frame (which carries
    ``frame_scale`` from above, but not the parent's own pose scale ``parent_scale``), per
    Blender's ``inherit_scale``: 'FULL', 'ALIGNED', 'AVERAGE' and 'FIX_SHEAR' take the
    parent's scale (for uniform scales they agree); 'NONE' and 'NONE_LEGACY' drop every
    scale from above. Non-uniform scales under rotation shear, which only the evaluated
    pose knows: the evaluate-and-correct loop takes those."""
    if mode in {"NONE", "NONE_LEGACY"}:
        return 1.0 / frame_scale
    return np.asarray(parent_scale, dtype=float)


def rel_linear_before(slides: dict, before_location: np.ndarray) -> np.ndarray:
    """The linear part (3, 3) that the joints before a bone's first hinge already apply
    relative to its parent's frame: the slides' frame, or none."""
    return before_location[:3, :3] if slides else np.eye(3)


class Carriers:
    """Each bone's parent in the hinge tree: its own parent, or for a parentless bone the
    bone a constraint re-parents it to rigidly (``driven.rigid_parent``)."""

    def __init__(self, obj):
        self.pose_bones = obj.pose.bones
        self.rigid = driven.rigid_parents(obj, [pb.name for pb in self.pose_bones if pb.parent is None])
        self._chains: dict[str, list[str]] = {}

    def parent(self, name: str) -> str | None:
        pb = self.pose_bones[name]
        if pb.parent is not None:
            return pb.parent.name
        found = self.rigid.get(name)
        return found[0] if found is not None else None

    def chain(self, name: str) -> list[str]:
        """The bone and its carriers up to the root (a cycle ends the chain). The walk stops
        at a bone whose chain is known, and every bone it passed learns its own, so a whole
        tree costs one walk per bone, not one per bone and level."""
        if name in self._chains:
            return self._chains[name]
        walk, seen = [], set()
        while name is not None and name not in seen and name not in self._chains:
            walk.append(name)
            seen.add(name)
            name = self.parent(name)
        if name is not None and name in seen:  # a cycle: only the first bone's chain is certain
            self._chains[walk[0]] = walk
            return walk
        chain = walk + (self._chains[name] if name is not None else [])
        for i, bone in enumerate(walk):
            self._chains[bone] = chain[i:]
        return chain

    def offset(self, name: str) -> np.ndarray:
        """The bone's rest transform in its carrier's rest frame (4, 4): Blender's
        ``offs_bone`` for a real parent; for an Armature constraint the same (it deforms by
        the target's pose relative to its rest); for a Child Of, its inverse matrix."""
        pb = self.pose_bones[name]
        carrier = self.parent(name)
        rest = pb.bone.matrix_local
        if pb.parent is None and self.rigid[name][1] == "CHILD_OF":
            constraint = next(c for c in reversed(pb.constraints) if c.type == "CHILD_OF" and c.subtarget == carrier)
            return as_array(constraint.inverse_matrix @ rest)
        return as_array(self.pose_bones[carrier].bone.matrix_local.inverted() @ rest)
