"""Which of a pose bone's channels (its rotation, its location) a constraint or a driver
overrides, so that the bone's own channels no longer decide its pose (``constraint_channels``;
``driven`` reads the rig's chains and drivers), the constraint names and verbs that say why,
and the parsing of 'pose.bones["name"].path' data paths.

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
"""

from __future__ import annotations

import re

import bpy

from .keyframes import rotation_path

ROTATION = "rotation"
LOCATION = "location"
POSE = frozenset((ROTATION, LOCATION))
ROTATION_ONLY = frozenset((ROTATION,))
LOCATION_ONLY = frozenset((LOCATION,))
NOTHING: frozenset = frozenset()

FULL = 1.0 - 1e-6  # an influence or weight at least this is 1


def is_acting(constraint) -> bool:
    return (not constraint.mute and constraint.influence > 0.0 and getattr(constraint, "is_valid", True))


_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.?(.*)$')
TRANSFORM_PROPS = re.compile(r"^(location|rotation_\w+|scale|head|tail|matrix\w*)(\[\d+\])?$")


def _unescape(text: str) -> str:
    if hasattr(bpy.utils, "unescape_identifier"):
        return bpy.utils.unescape_identifier(text)
    return text.replace('\\"', '"').replace("\\\\", "\\")


def bone_path(data_path: str) -> tuple[str, str] | None:
    """(bone name, rest of the path) of a 'pose.bones["name"].rest' data path."""
    match = _PATH.match(data_path)
    return (_unescape(match.group(1)), match.group(2)) if match else None


def all_fcurves(action) -> list:
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


def animated_channels(pose_bone, paths) -> frozenset:
    """Of the bone's pose channels, those among data paths ``paths`` (its own rotation
    mode's rotation, its location)."""
    out = set()
    for path in paths:
        if path == "location":
            out.add(LOCATION)
        elif path == rotation_path(pose_bone):
            out.add(ROTATION)
    return frozenset(out)


CONSTRAINT_NAMES = {"IK": "IK", "SPLINE_IK": "Spline IK"}
AIMING = {"TRACK_TO", "DAMPED_TRACK", "LOCKED_TRACK", "STRETCH_TO"}
# Constraints that keep the bone's own channels in force (rigid re-parenting, clamps), or
# set only its scale. IK and Spline IK act through their chains.
_KEEPING = {"ARMATURE", "CHILD_OF", "PIVOT", "FLOOR", "LIMIT_DISTANCE", "LIMIT_LOCATION", "LIMIT_ROTATION",
            "LIMIT_SCALE", "MAINTAIN_VOLUME", "COPY_SCALE", "IK", "SPLINE_IK"}
VERBS = {"TRANSFORM": "maps it from", "ACTION": "poses it from", "CLAMP_TO": "clamps it to",
          "SHRINKWRAP": "wraps it onto", "FOLLOW_PATH": "moves it along", "GEOMETRY_ATTRIBUTE": "reads it from"}


def type_name(constraint_type: str) -> str:
    if constraint_type in CONSTRAINT_NAMES:
        return CONSTRAINT_NAMES[constraint_type]
    items = bpy.types.Constraint.bl_rna.properties["type"].enum_items
    return items[constraint_type].name if constraint_type in items else constraint_type.replace("_", " ").title()


def constraint_channels(constraint, pose_bone) -> frozenset:
    """The pose channels ('rotation', 'location') a constraint overrides on ``pose_bone``
    when it acts (whatever its enabled flag and influence)."""
    c = constraint
    kind = c.type
    if kind in _KEEPING:
        return NOTHING
    if kind == "COPY_TRANSFORMS":
        return POSE if c.mix_mode == "REPLACE" else NOTHING
    if kind == "COPY_ROTATION":
        replaces = getattr(c, "mix_mode", "REPLACE") == "REPLACE" and not c.use_offset
        return ROTATION_ONLY if replaces and (c.use_x or c.use_y or c.use_z) else NOTHING
    if kind == "COPY_LOCATION":
        return LOCATION_ONLY if not c.use_offset and (c.use_x or c.use_y or c.use_z) else NOTHING
    if kind in AIMING:
        return ROTATION_ONLY
    if kind == "TRANSFORM":
        if c.map_to == "LOCATION":
            return LOCATION_ONLY if getattr(c, "mix_mode", "REPLACE") == "REPLACE" else NOTHING
        if c.map_to == "ROTATION":
            return ROTATION_ONLY if getattr(c, "mix_mode_rot", "REPLACE") == "REPLACE" else NOTHING
        return NOTHING
    if kind == "ACTION":
        if getattr(c, "mix_mode", "") != "REPLACE":  # the other mixes keep the bone's own channels
            return NOTHING
        if c.action is None:
            return NOTHING
        paths = set()
        for fcurve in all_fcurves(c.action):
            found = bone_path(fcurve.data_path)
            if found is not None and found[0] == pose_bone.name:
                paths.add(found[1])
        return animated_channels(pose_bone, paths)
    if kind == "GEOMETRY_ATTRIBUTE":
        if c.mix_mode != "REPLACE":
            return NOTHING
        return frozenset(([ROTATION] if c.mix_rot else []) + ([LOCATION] if c.mix_loc else []))
    if kind in {"CLAMP_TO", "FOLLOW_TRACK"}:
        return LOCATION_ONLY
    if kind == "SHRINKWRAP":
        return POSE if getattr(c, "use_track_normal", False) else LOCATION_ONLY
    if kind == "FOLLOW_PATH":
        return POSE if c.use_curve_follow else LOCATION_ONLY
    return POSE  # Camera Solver, Object Solver, Transform Cache and any type to come


def overrides_all(constraint) -> bool:
    """A constraint that replaces the whole transform: whatever came before it is gone."""
    return constraint.type == "COPY_TRANSFORMS" and constraint.mix_mode == "REPLACE" and constraint.influence >= FULL

