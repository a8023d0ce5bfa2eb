"""What drives a bone, and what to drag instead.

The solver poses the plain bone hierarchy from each bone's own rotation and location
channels. On real rigs constraints, IK chains and drivers decide where many bones are, so
that their own channels do not: moving those channels changes nothing, or not what the
model expects. This module says which bones those are and why (``drive``), which bones the
solver must hold still (``frozen_bones``), which bones a constraint merely re-parents
(``rigid_parent``), and which control the user can drag instead, following Rigify's naming
(``ORG-``/``DEF-``/``MCH-`` bones; ``<name>_ik``, ``<name>_fk``, ``<name>_tweak`` controls)
where the rig has it.

What counts as driving a channel (an enabled, valid constraint with influence > 0):

- Copy Transforms (mix 'REPLACE'): rotation and location.
- Copy Rotation (mix 'REPLACE', no offset, some axis on): rotation. Copy Location (no
  offset, some axis on): location.
- Track To, Damped Track, Locked Track, Stretch To: rotation.
- Transformation mapping to location or rotation with a 'REPLACE' mix; Action with a
  'REPLACE' mix (the channels its action animates for the bone); Clamp To, Shrinkwrap,
  Follow Path, Geometry Attribute (5.0) and the tracking and cache constraints.
- Being in the chain of an IK or Spline IK constraint, on the bone or a descendant, that
  Blender solves (a target, and for an armature target a bone): rotation (Spline IK:
  rotation and location).
- An unmuted driver on the bone's own rotation (the channel of its rotation mode) or
  location.

What does not: constraints that keep the bone's own channels in force and only move the
result rigidly or clamp it (Child Of, Armature, Pivot, the Limit constraints, Floor), mixes
that add the bone's own channels on top ('ADD', 'BEFORE', 'AFTER', offsets), and whatever
sets only the scale (Copy Scale, Maintain Volume, a driver on scale): the solver never
changes scale, and the bone's rotation and location still decide its pose.

Constraint flags, influences and Armature weights are read from the evaluated object, so
values set by drivers count (Rigify switches IK/FK, pole and parents with drivers).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

import bpy

from .keyframes import rotation_path
from .selection import is_hidden

ROTATION = "rotation"
LOCATION = "location"
POSE = frozenset((ROTATION, LOCATION))
_ROT = frozenset((ROTATION,))
_LOC = frozenset((LOCATION,))
_NOTHING: frozenset = frozenset()

FULL = 1.0 - 1e-6  # an influence or weight at least this is 1
MAX_ALTERNATIVES = 3
TRACE_DEPTH = 8  # levels of "driven by" followed in search of a control


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


def _active(constraint) -> bool:
    return (not constraint.mute and constraint.influence > 0.0 and getattr(constraint, "is_valid", True))


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


_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.?(.*)$')
_TRANSFORM_PROPS = re.compile(r"^(location|rotation_\w+|scale|head|tail|matrix\w*)(\[\d+\])?$")


def _unescape(text: str) -> str:
    if hasattr(bpy.utils, "unescape_identifier"):
        return bpy.utils.unescape_identifier(text)
    return text.replace('\\"', '"').replace("\\\\", "\\")


def _bone_path(data_path: str) -> tuple[str, str] | None:
    """(bone name, rest of the path) of a 'pose.bones["name"].rest' data path."""
    match = _PATH.match(data_path)
    return (_unescape(match.group(1)), match.group(2)) if match else None


def _action_fcurves(action) -> list:
    """Every F-curve of an action, legacy or layered (4.4+; 5.0 has only layered)."""
    fcurves = getattr(action, "fcurves", None)
    if fcurves is not None and len(fcurves):
        return list(fcurves)
    out = []
    for layer in getattr(action, "layers", ()):
        for strip in layer.strips:
            for bag in getattr(strip, "channelbags", ()):
                out.extend(bag.fcurves)
    return out


def _animated_channels(pose_bone, paths) -> frozenset:
    """Of the bone's pose channels, those among data paths ``paths`` (its own rotation
    mode's rotation, its location)."""
    out = set()
    for path in paths:
        if path == "location":
            out.add(LOCATION)
        elif path == rotation_path(pose_bone):
            out.add(ROTATION)
    return frozenset(out)


_CONSTRAINT_NAMES = {"IK": "IK", "SPLINE_IK": "Spline IK"}
_AIMING = {"TRACK_TO", "DAMPED_TRACK", "LOCKED_TRACK", "STRETCH_TO"}
# Constraints that keep the bone's own channels in force (rigid re-parenting, clamps), or
# set only its scale. IK and Spline IK act through their chains.
_KEEPING = {"ARMATURE", "CHILD_OF", "PIVOT", "FLOOR", "LIMIT_DISTANCE", "LIMIT_LOCATION", "LIMIT_ROTATION",
            "LIMIT_SCALE", "MAINTAIN_VOLUME", "COPY_SCALE", "IK", "SPLINE_IK"}
_VERBS = {"TRANSFORM": "maps it from", "ACTION": "poses it from", "CLAMP_TO": "clamps it to",
          "SHRINKWRAP": "wraps it onto", "FOLLOW_PATH": "moves it along", "GEOMETRY_ATTRIBUTE": "reads it from"}


def _type_name(constraint_type: str) -> str:
    if constraint_type in _CONSTRAINT_NAMES:
        return _CONSTRAINT_NAMES[constraint_type]
    items = bpy.types.Constraint.bl_rna.properties["type"].enum_items
    return items[constraint_type].name if constraint_type in items else constraint_type.replace("_", " ").title()


def constraint_channels(constraint, pose_bone) -> frozenset:
    """The pose channels ('rotation', 'location') a constraint overrides on ``pose_bone``
    when it acts (whatever its enabled flag and influence)."""
    c = constraint
    kind = c.type
    if kind in _KEEPING:
        return _NOTHING
    if kind == "COPY_TRANSFORMS":
        return POSE if c.mix_mode == "REPLACE" else _NOTHING
    if kind == "COPY_ROTATION":
        replaces = getattr(c, "mix_mode", "REPLACE") == "REPLACE" and not c.use_offset
        return _ROT if replaces and (c.use_x or c.use_y or c.use_z) else _NOTHING
    if kind == "COPY_LOCATION":
        return _LOC if not c.use_offset and (c.use_x or c.use_y or c.use_z) else _NOTHING
    if kind in _AIMING:
        return _ROT
    if kind == "TRANSFORM":
        if c.map_to == "LOCATION":
            return _LOC if getattr(c, "mix_mode", "REPLACE") == "REPLACE" else _NOTHING
        if c.map_to == "ROTATION":
            return _ROT if getattr(c, "mix_mode_rot", "REPLACE") == "REPLACE" else _NOTHING
        return _NOTHING
    if kind == "ACTION":
        if getattr(c, "mix_mode", "") != "REPLACE":  # the other mixes keep the bone's own channels
            return _NOTHING
        if c.action is None:
            return _NOTHING
        paths = set()
        for fcurve in _action_fcurves(c.action):
            found = _bone_path(fcurve.data_path)
            if found is not None and found[0] == pose_bone.name:
                paths.add(found[1])
        return _animated_channels(pose_bone, paths)
    if kind == "GEOMETRY_ATTRIBUTE":
        if c.mix_mode != "REPLACE":
            return _NOTHING
        return frozenset(([ROTATION] if c.mix_rot else []) + ([LOCATION] if c.mix_loc else []))
    if kind in {"CLAMP_TO", "FOLLOW_TRACK"}:
        return _LOC
    if kind == "SHRINKWRAP":
        return POSE if getattr(c, "use_track_normal", False) else _LOC
    if kind == "FOLLOW_PATH":
        return POSE if c.use_curve_follow else _LOC
    return POSE  # Camera Solver, Object Solver, Transform Cache and any type to come


def _overrides_all(constraint) -> bool:
    """A constraint that replaces the whole transform: whatever came before it is gone."""
    return constraint.type == "COPY_TRANSFORMS" and constraint.mix_mode == "REPLACE" and constraint.influence >= FULL


@dataclass
class _Found:
    channels: frozenset
    causes: list  # sentences, most decisive first
    targets: list  # bones of this armature the driving comes from, most decisive first
    ik: bool  # driven through an IK or Spline IK chain


class _Rig:
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
                if c.type not in {"IK", "SPLINE_IK"} or not _active(c):
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
            found = _bone_path(fcurve.data_path)
            if found is None or found[0] not in self.pose_bones:
                continue
            name, prop = found
            channels = _animated_channels(self.pose_bones[name], [prop])
            if not channels:
                continue
            reads = []
            for variable in fcurve.driver.variables:
                for target in variable.targets:
                    if not self.is_self(getattr(target, "id", None)):
                        continue
                    bone = getattr(target, "bone_target", "")
                    if variable.type == "SINGLE_PROP":
                        path = _bone_path(target.data_path or "")
                        bone = path[0] if path is not None and _TRANSFORM_PROPS.match(path[1]) else ""
                    if bone and bone in self.pose_bones and bone != name and bone not in reads:
                        reads.append(bone)
            had, had_reads = out.get(name, (_NOTHING, []))
            out[name] = (had | channels, had_reads + [b for b in reads if b not in had_reads])
        return out

    # -- classification ---------------------------------------------------------------

    def classify(self, name: str) -> _Found | None:
        if name not in self._found:
            self._found[name] = self._classify(name)
        return self._found[name]

    def _classify(self, name: str) -> _Found | None:
        pb = self.pose_bones[name]
        channels: frozenset = _NOTHING
        causes: list = []
        targets: list = []
        ik = False

        # IK and Spline IK chains: the solved chain overrides the bones' own rotation.
        chains = sorted(self.chains.get(name, ()), key=lambda entry: entry[2])
        for owner, c, _distance in chains:
            ik = True
            channels |= POSE if c.type == "SPLINE_IK" else _ROT
            length = f"chain of {c.chain_count}" if c.chain_count else "chain to the root"
            label = _CONSTRAINT_NAMES[c.type]
            aim = self.describe_target(c)
            if owner == name:
                causes.append(f"its {label} constraint ({length}) reaches for {aim}")
            else:
                causes.append(f"it is in the chain of the {label} constraint of '{owner}' ({length}), "
                              f"which reaches for {aim}")
            if c.type == "IK" and self.is_self(c.target) and c.subtarget in self.pose_bones:
                targets.append(c.subtarget)

        # Constraints: those after the last one that replaces the whole transform decide.
        acting = [c for c in self.constraints(name) if _active(c) and constraint_channels(c, pb)]
        overridden = False
        for i, c in enumerate(acting):
            if _overrides_all(c):
                acting, overridden = acting[i:], True
        for c in acting:
            channels |= constraint_channels(c, pb)
            verb = _VERBS.get(c.type, "aims it at" if c.type in _AIMING else "follows")
            share = f" (influence {c.influence:.3g})" if c.influence < FULL else ""
            causes.append(f"its {_type_name(c.type)} constraint{share} {verb} {self.describe_target(c)}")
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
            if not _active(c) or c.influence < FULL:
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

    # -- what to drag instead ---------------------------------------------------------

    def trace(self, starts, skip: str) -> tuple[list[str], bool]:
        """Controls reached from bones ``starts`` (breadth first) by following what drives
        each bone that is not a control: a driven bone's targets; a hidden bone's carrier
        (its rigid parent, then its parent). Also whether an IK chain was passed."""
        found: list[str] = []
        through_ik = False
        seen = {skip}
        queue = deque((s, 0) for s in starts)
        while queue:
            name, depth = queue.popleft()
            if name in seen or name not in self.pose_bones:
                continue
            seen.add(name)
            if self.is_control(name):
                found.append(name)
                continue
            if depth >= TRACE_DEPTH:
                continue
            driven = self.classify(name)
            if driven is not None:
                through_ik |= driven.ik
                nexts = driven.targets
            else:
                carrier = self.rigid_parent(name)
                parent = self.pose_bones[name].parent
                nexts = ([carrier[0]] if carrier else []) + ([parent.name] if parent is not None else [])
            queue.extend((n, depth + 1) for n in nexts)
        return found, through_ik

    def suggest(self, name: str, found: _Found) -> list[str]:
        """Controls to drag instead of driven bone ``name``, best first."""
        traced, through_ik = self.trace(found.targets, name)
        through_ik |= found.ik
        parts = _name_parts(name)
        rigify_ik, rigify_fk, plain, tweaks = [], [], [], []
        if parts is not None:
            base, side, number = parts
            # Rigify's B-Bone segments ('DEF-upper_arm.L.001') belong to the unnumbered limb bone.
            numbers = (number, "") if number and f"ORG-{base}{side}{number}" not in self.pose_bones else (number,)
            org = next((f"ORG-{base}{side}{n}" for n in numbers if f"ORG-{base}{side}{n}" in self.pose_bones), None)
            if org is not None and org != name:
                more, more_ik = self.trace(self._targets_of(org), org)
                traced += [c for c in more if c not in traced]
                through_ik |= more_ik

            def controls(*patterns):
                return [c for n in numbers for p in patterns
                        if (c := p.format(base=base, side=side, number=n)) != name and self.is_control(c)]

            rigify_ik = controls("{base}_ik{side}{number}")
            if not rigify_ik and through_ik:
                rigify_ik = self._ik_control_below(org)
            rigify_fk = controls("{base}_fk{side}{number}")
            plain = controls("{base}{side}{number}")
            tweaks = controls("{base}_tweak{side}{number}", "tweak_{base}{side}{number}")
        following_ik = through_ik or any(c in traced for c in rigify_ik)
        following_fk = any(c in traced for c in rigify_fk)
        switch = rigify_fk + rigify_ik if following_fk and not following_ik else rigify_ik + rigify_fk
        ordered = switch + plain + [c for c in traced if not _is_tweak(c)] + tweaks + [c for c in traced if _is_tweak(c)]
        out: list[str] = []
        for c in ordered:
            if c != name and c not in out:
                out.append(c)
        return out

    def _targets_of(self, name: str) -> list[str]:
        driven = self.classify(name)
        if driven is not None:
            return driven.targets
        parent = self.pose_bones[name].parent
        return [parent.name] if parent is not None else []

    def _ik_control_below(self, org: str | None) -> list[str]:
        """Rigify's IK control of a limb bone inside an IK chain: that of the first ORG bone
        down the limb that has one (the IK hand for a forearm, the IK foot for a shin)."""
        bone = self.pose_bones[org] if org is not None else None
        for _ in range(3):
            children = [c for c in bone.children if c.name.startswith("ORG-")] if bone is not None else []
            if not children:
                break
            bone = ([c for c in children if c.bone.use_connect] or children)[0]
            parts = _name_parts(bone.name)
            if parts is not None and self.is_control(candidate := f"{parts[0]}_ik{parts[1]}{parts[2]}"):
                return [candidate]
        return []

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


# Rigify's names: 'ORG-forearm.L', 'DEF-upper_arm.L.001', 'MCH-ROT-neck', 'hand_ik.L',
# 'forearm_tweak.L.001', 'spine_fk.002', 'tweak_spine.003'.
_PREFIX = re.compile(r"^(?:DEF|ORG|MCH)-(?:[A-Z]{2,4}-)*")
_NAME = re.compile(r"^(?P<base>.+?)(?P<side>[._-](?:L|R|l|r|Left|Right|left|right))?(?P<number>\.\d+)?$")
_TAG = re.compile(r"(?:_(?:ik|fk|tweak))+$")


def _name_parts(name: str) -> tuple[str, str, str] | None:
    """(base, side, number) of a Rigify-style name without its prefix and its control tag:
    'DEF-forearm.L.001' -> ('forearm', '.L', '.001'), 'MCH-forearm_ik.L' -> ('forearm',
    '.L', ''), 'tweak_spine.003' -> ('spine', '', '.003')."""
    match = _NAME.match(_PREFIX.sub("", name))
    if match is None:
        return None
    base = _TAG.sub("", match.group("base"))
    base = base.removeprefix("tweak_")
    if not base:
        return None
    return base, match.group("side") or "", match.group("number") or ""


def _is_tweak(name: str) -> bool:
    return "tweak" in name.lower()
