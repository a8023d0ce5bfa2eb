"""What drives a bone, and what to drag instead.

The solver poses the plain bone hierarchy from each bone's own rotation and location
channels. On real rigs constraints, IK chains and drivers decide where many bones are, so
that their own channels do not: moving those channels changes nothing, or not what the
model expects. This module says which bones those are and why (``drive``), which bones the
solver must hold still (``frozen_bones``), which bones a constraint merely re-parents
(``rigid_parent``), and which control the user can drag instead, following Rigify's naming
(``ORG-``/``DEF-``/``MCH-`` bones; ``<name>_ik``, ``<name>_fk``, ``<name>_tweak`` controls)
where the rig has it (``controls``). What counts as driving a bone's channels is
``overrides``'s list.

Constraint flags, influences and Armature weights are read from the evaluated object, so
values set by drivers count (Rigify switches IK/FK, pole and parents with drivers).
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy

from .controls import Controls
from .overrides import (
    AIMING,
    CONSTRAINT_NAMES,
    FULL,
    LOCATION,
    NOTHING,
    POSE,
    ROTATION,
    ROTATION_ONLY,
    TRANSFORM_PROPS,
    VERBS,
    animated_channels,
    bone_path,
    constraint_channels,
    is_acting,
    overrides_all,
    type_name,
)
from .selection import is_hidden

__all__ = [
    "FULL", "LOCATION", "MAX_ALTERNATIVES", "POSE", "ROTATION", "Drive", "constraint_channels", "drive", "drives",
    "frozen_bones", "is_hidden_from_user", "rigid_parent", "rigid_parents",
]

MAX_ALTERNATIVES = 3


@dataclass(frozen=True)
class Drive:
    """Why a bone's own channels do not decide its pose, and what to drag instead."""

    bone: str  # the bone asked about
    cause: str  # "its Copy Transforms constraint follows 'hand_tweak.L'", ...
    control: str | None  # a bone the user can drag instead, if one can be found
    channels: frozenset = POSE  # what is driven: 'rotation' and/or 'location'
    alternatives: tuple = ()  # further controls, best first

    @property
    def rotation(self) -> bool:
        return ROTATION in self.channels

    @property
    def location(self) -> bool:
        return LOCATION in self.channels

    def message(self, verb: str = "drag") -> str:
        """For the user, e.g. "Bone 'DEF-hand.L' cannot be dragged: its Copy Transforms
        constraint follows 'hand_tweak.L'. Drag 'hand_ik.L' instead (or 'hand_fk.L',
        'hand_tweak.L')." For a pin, ``verb="pin"``."""
        done = {"drag": "dragged", "pin": "pinned"}.get(verb, f"{verb}ed")
        text = f"Bone '{self.bone}' cannot be {done}: {self.cause}."
        if self.control is None:
            return text + " Pose what drives it instead."
        text += f" {verb[:1].upper()}{verb[1:]} '{self.control}' instead"
        if self.alternatives:
            text += " (or " + ", ".join(f"'{name}'" for name in self.alternatives) + ")"
        return text + "."


def drive(obj, bone_name: str) -> Drive | None:
    """None when the bone's own channels decide its pose (constraints that only move it
    rigidly, such as Child Of or Armature, or a Limit constraint, do not count as driving
    it); else why not, what is driven, and the control to drag instead."""
    return _Rig(obj).drive(bone_name)


def drives(obj, names) -> dict[str, Drive]:
    """``drive`` for many bones at once (the rig read once): name -> Drive, for those of
    ``names`` that are driven."""
    rig = _Rig(obj)
    return {name: found for name in names if (found := rig.drive(name)) is not None}


def frozen_bones(obj, names) -> set[str]:
    """Of ``names``, the bones whose own rotation the solver must not use: bones whose
    rotation is driven (as ``drive`` says; a bone driven only in location keeps its
    rotation) and bones hidden from the user (hidden bones, bones whose every bone
    collection is hidden, or on Blender 3.x every armature layer they are on hidden). The
    bones stay in the tree, unmoved."""
    rig = _Rig(obj)
    out = set()
    for name in names:
        if name not in rig.pose_bones:
            continue
        found = rig.classify(name)
        if (found is not None and ROTATION in found.channels) or rig.hidden(name):
            out.add(name)
    return out


def rigid_parent(obj, pose_bone) -> tuple[str, str] | None:
    """If the bone is re-parented rigidly by an enabled, influence-1 Armature constraint
    whose targets, after drivers are evaluated, give weight 1 to a single bone of the same
    armature (and 0 to the others), or by an enabled influence-1 Child Of constraint on the
    same armature with location, rotation and scale all on: (target bone name, constraint
    type). Else None. With several, the last one in the stack."""
    return _Rig(obj).rigid_parent(pose_bone.name)


def rigid_parents(obj, names) -> dict[str, tuple[str, str]]:
    """``rigid_parent`` for many bones at once (the rig read once): name -> (target bone,
    constraint type), for those of ``names`` that are re-parented rigidly."""
    rig = _Rig(obj)
    return {name: found for name in names if (found := rig.rigid_parent(name)) is not None}


def is_hidden_from_user(obj, pose_bone) -> bool:
    """The bone is hidden, or every bone collection it is in (Blender 3.x: every armature
    layer it is on) is hidden."""
    return _bone_hidden(obj, pose_bone)


# -- reading the rig ---------------------------------------------------------------


def _evaluated(obj):
    """The evaluated armature object (driver-set values in force), else ``obj``."""
    try:
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    except (AttributeError, RuntimeError, TypeError):
        return obj
    if evaluated.pose is None or len(evaluated.pose.bones) != len(obj.pose.bones):
        return obj
    return evaluated


def _original(id_data):
    return getattr(id_data, "original", id_data) if id_data is not None else None


def _bone_hidden(obj, pose_bone) -> bool:
    if is_hidden(pose_bone):
        return True
    bone = pose_bone.bone
    collections = getattr(bone, "collections", None)
    if collections is not None:  # Blender 4.0+: visible when any of its collections is
        if len(collections) == 0:
            return False
        return not any(_collection_visible(c) for c in collections)
    layers = getattr(bone, "layers", None)  # Blender 3.x
    if layers is not None:
        return not any(on and shown for on, shown in zip(layers, obj.data.layers))
    return False


def _collection_visible(collection) -> bool:
    if hasattr(collection, "is_visible_effectively"):  # 4.2+: ancestors and solo included
        return bool(collection.is_visible_effectively)
    return bool(collection.is_visible and getattr(collection, "is_visible_ancestors", True))


@dataclass
class _Found:
    channels: frozenset
    causes: list  # sentences, most decisive first
    targets: list  # bones of this armature the driving comes from, most decisive first
    ik: bool  # driven through an IK or Spline IK chain


class _Rig(Controls):
    """One armature's driving relations, read once."""

    def __init__(self, obj):
        if obj is None or obj.type != "ARMATURE" or obj.pose is None:
            raise ValueError("Not an armature object")
        self.obj = obj
        self.pose_bones = obj.pose.bones
        self.evaluated = _evaluated(obj).pose.bones
        self._found: dict = {}
        self._hidden: dict = {}
        self.chains = self._chains()
        self.drivers = self._drivers()

    def constraints(self, name: str):
        return self.evaluated[name].constraints

    def is_self(self, id_data) -> bool:
        return id_data is not None and _original(id_data) == _original(self.obj)

    def _chains(self) -> dict:
        """bone name -> [(owner bone, constraint, bones from the chain's tip)], for every IK
        and Spline IK chain Blender solves."""
        chains: dict = {}
        for pb in self.pose_bones:
            for c in self.constraints(pb.name):
                if c.type not in {"IK", "SPLINE_IK"} or not is_acting(c):
                    continue
                if c.type == "IK":
                    # As Blender's IK: no target, or an armature without a bone, is not solved.
                    if c.target is None or (c.target.type == "ARMATURE" and not c.subtarget):
                        continue
                    tip = pb if c.use_tail else pb.parent
                else:
                    if c.target is None:
                        continue
                    tip = pb
                bone, n = tip, 0
                while bone is not None:
                    chains.setdefault(bone.name, []).append((pb.name, c, n))
                    n += 1
                    if (c.chain_count and n >= c.chain_count) or n > 255:
                        break
                    bone = bone.parent
        return chains

    def _drivers(self) -> dict:
        """bone name -> (driven channels, bones the drivers read), of unmuted drivers on
        the bones' own rotation (of their rotation mode) and location."""
        out: dict = {}
        animation = self.obj.animation_data
        if animation is None:
            return out
        for fcurve in animation.drivers:
            if fcurve.mute:
                continue
            found = bone_path(fcurve.data_path)
            if found is None or found[0] not in self.pose_bones:
                continue
            name, prop = found
            channels = animated_channels(self.pose_bones[name], [prop])
            if not channels:
                continue
            reads = []
            for variable in fcurve.driver.variables:
                for target in variable.targets:
                    if not self.is_self(getattr(target, "id", None)):
                        continue
                    bone = getattr(target, "bone_target", "")
                    if variable.type == "SINGLE_PROP":
                        path = bone_path(target.data_path or "")
                        bone = path[0] if path is not None and TRANSFORM_PROPS.match(path[1]) else ""
                    if bone and bone in self.pose_bones and bone != name and bone not in reads:
                        reads.append(bone)
            had, had_reads = out.get(name, (NOTHING, []))
            out[name] = (had | channels, had_reads + [b for b in reads if b not in had_reads])
        return out

    # -- classification ---------------------------------------------------------------

    def classify(self, name: str) -> _Found | None:
        if name not in self._found:
            self._found[name] = self._classify(name)
        return self._found[name]

    def _classify(self, name: str) -> _Found | None:
        pb = self.pose_bones[name]
        channels: frozenset = NOTHING
        causes: list = []
        targets: list = []
        ik = False

        # IK and Spline IK chains: the solved chain overrides the bones' own rotation.
        chains = sorted(self.chains.get(name, ()), key=lambda entry: entry[2])
        for owner, c, _distance in chains:
            ik = True
            channels |= POSE if c.type == "SPLINE_IK" else ROTATION_ONLY
            length = f"chain of {c.chain_count}" if c.chain_count else "chain to the root"
            label = CONSTRAINT_NAMES[c.type]
            aim = self.describe_target(c)
            if owner == name:
                causes.append(f"its {label} constraint ({length}) reaches for {aim}")
            else:
                causes.append(f"it is in the chain of the {label} constraint of '{owner}' ({length}), "
                              f"which reaches for {aim}")
            if c.type == "IK" and self.is_self(c.target) and c.subtarget in self.pose_bones:
                targets.append(c.subtarget)

        # Constraints: those after the last one that replaces the whole transform decide.
        acting = [c for c in self.constraints(name) if is_acting(c) and constraint_channels(c, pb)]
        overridden = False
        for i, c in enumerate(acting):
            if overrides_all(c):
                acting, overridden = acting[i:], True
        for c in acting:
            channels |= constraint_channels(c, pb)
            verb = VERBS.get(c.type, "aims it at" if c.type in AIMING else "follows")
            share = f" (influence {c.influence:.3g})" if c.influence < FULL else ""
            causes.append(f"its {type_name(c.type)} constraint{share} {verb} {self.describe_target(c)}")
            if self.is_self(getattr(c, "target", None)) and getattr(c, "subtarget", "") in self.pose_bones:
                targets.append(c.subtarget)

        # Drivers on its own channels (a constraint replacing the whole transform wins).
        if name in self.drivers:
            driven, reads = self.drivers[name]
            channels |= driven
            if not overridden:
                what = " and ".join(ch for ch in (ROTATION, LOCATION) if ch in driven)
                cause = f"a driver on its {what}"
                if reads:
                    cause += " reads " + ", ".join(f"'{b}'" for b in reads[:2])
                causes.append(cause)
                targets.extend(reads)

        if not channels:
            return None
        unique = []
        for t in targets:
            if t != name and t not in unique:
                unique.append(t)
        return _Found(channels, causes, unique, ik)

    def describe_target(self, c) -> str:
        target = getattr(c, "target", None)
        subtarget = getattr(c, "subtarget", "")
        if target is None:
            return "nothing" if c.type != "TRANSFORM_CACHE" else "a cache file"
        if self.is_self(target) and subtarget:
            return f"'{subtarget}'"
        if target.type == "ARMATURE" and subtarget:
            return f"'{subtarget}' of '{_original(target).name}'"
        kind = {"CURVE": "curve", "MESH": "mesh", "EMPTY": "empty"}.get(target.type, "object")
        return f"{kind} '{_original(target).name}'"

    def hidden(self, name: str) -> bool:
        if name not in self._hidden:
            self._hidden[name] = _bone_hidden(self.obj, self.pose_bones[name])
        return self._hidden[name]

    def is_control(self, name: str) -> bool:
        """A bone the user can see, select and drag: visible, selectable, not driven."""
        return (name in self.pose_bones and not self.hidden(name)
                and not self.pose_bones[name].bone.hide_select and self.classify(name) is None)

    def rigid_parent(self, name: str) -> tuple[str, str] | None:
        found = None
        for c in self.constraints(name):
            if not is_acting(c) or c.influence < FULL:
                continue
            if c.type == "ARMATURE" and not c.use_bone_envelopes:
                carried = [t for t in c.targets if t.weight > 1e-6]
                if len(carried) != 1 or carried[0].weight < FULL:
                    continue
                t = carried[0]
                if (self.is_self(t.target) and t.subtarget in self.pose_bones and t.subtarget != name
                        and self.pose_bones[t.subtarget].bone.bbone_segments <= 1):
                    found = (t.subtarget, "ARMATURE")
            elif c.type == "CHILD_OF":
                if not all(getattr(c, f"use_{kind}_{axis}") for kind in ("location", "rotation", "scale")
                           for axis in "xyz"):
                    continue
                if self.is_self(c.target) and c.subtarget in self.pose_bones and c.subtarget != name:
                    found = (c.subtarget, "CHILD_OF")
        return found

    def drive(self, name: str) -> Drive | None:
        if name not in self.pose_bones:
            raise KeyError(f"Bone '{name}' does not exist in armature '{self.obj.name}'")
        found = self.classify(name)
        if found is None:
            return None
        controls = self.suggest(name, found)
        cause = ", and ".join(found.causes[:2])
        return Drive(name, cause, controls[0] if controls else None, found.channels,
                     tuple(controls[1:1 + MAX_ALTERNATIVES]))

