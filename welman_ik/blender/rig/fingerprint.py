"""What a hinge tree is built from, read again cheaply: two reads of an armature give the same
fingerprint only when every input of ``RigModel`` but the pose channels is the same (the pose
channels are ``RigModel.refresh``'s, which also sees a changed scale, an unconnected bone's
location, the armature's transform and the orientations the rig drives).

It is a superset of what the model reads, so a change that does not matter may rebuild the
tree, and a change that matters always does: the bones' rest data and hierarchy, every
setting of the bones and pose bones but their pose channels and selection, their custom
properties (drivers read them) and joint ranges, the bone collections or layers and their visibility, every
constraint of the armature and its bones as set and as evaluated (an influence a driver sets),
the actions Action constraints play, the drivers and the animated channels of the armature
and its data, and the scene's frame. Numeric and enum settings are read in bulk
(``foreach_get``), the rest property by property."""

from __future__ import annotations

import bpy
import numpy as np

from .channels import ENUMS_IN_BULK
from .overrides import all_fcurves

# Pose channels and what follows them (``refresh`` reads them), and selection: not inputs.
POSE_CHANNELS = frozenset({
    "location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale", "matrix_basis", "matrix",
    "matrix_channel", "head", "tail", "select", "select_head", "select_tail", "length",
})
POSE_ONLY = frozenset({"bbone_curveinx", "bbone_curveinz", "bbone_curveoutx", "bbone_curveoutz", "bbone_rollin",
                       "bbone_rollout", "bbone_easein", "bbone_easeout", "bbone_scalein", "bbone_scaleout",
                       "bbone_translation", "bbone_rotation", "bbone_scale"})
_NUMERIC = {"FLOAT": np.float64, "INT": np.int64, "BOOLEAN": bool}
RANGE = "welman_ik_range"  # a pose bone's joint range, an input of the tree
# Before Blender 5.0 the properties add-ons register are stored with the custom properties, so
# a pose bone's joint range is read with them at no cost; from 5.0 on they are apart, read field
# by field.
RANGE_IN_CUSTOM = bpy.app.version < (5, 0, 0)


def _plan(rna, skip) -> tuple[list, list]:
    """(numeric properties to read in bulk as (name, dtype, width), other properties by name)
    of an RNA type, once per type."""
    key = (rna.identifier, skip)
    found = _PLANS.get(key)
    if found is None:
        bulk, single = [], []
        for prop in rna.properties:
            name = prop.identifier
            if name == "rna_type" or name in skip or prop.type == "COLLECTION":
                continue
            if prop.type in _NUMERIC:
                bulk.append((name, _NUMERIC[prop.type], max(getattr(prop, "array_length", 0), 1)))
                continue
            if prop.type == "ENUM":  # (names and parents are read apart; other pointers and strings do not matter)
                if prop.is_enum_flag or not ENUMS_IN_BULK:
                    single.append(name)
                else:  # read in bulk as the items' values
                    bulk.append((name, np.int32, 1))  # (32-bit ints, whatever the buffer says)
        found = _PLANS[key] = (bulk, single)
    return found


_PLANS: dict = {}


def _value(value):
    """A property's value as something hashable and comparable."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "as_pointer"):  # an ID or another struct: which one it is
        return ("struct", value.as_pointer(), getattr(value, "name", None))
    if hasattr(value, "to_dict"):  # a group of custom properties: the values set in it, written out in C
        found = value.to_dict()
        return ("group", repr(found)) if found else ()
    if isinstance(value, dict):
        return tuple(sorted((key, _value(item)) for key, item in value.items()))
    try:
        return tuple(_value(v) for v in value)
    except TypeError:
        return repr(value)


def _bulk(collection, rna, skip=frozenset()) -> list:
    """Every numeric property of every item of ``collection`` (of RNA type ``rna``), in bulk,
    and the others item by item."""
    n = len(collection)
    bulk, single = _plan(rna, skip)
    out = []
    for name, dtype, width in bulk:
        values = np.empty(n * width, dtype=dtype)
        try:
            collection.foreach_get(name, values)
        except (TypeError, RuntimeError, AttributeError):
            out.append((name, tuple(_value(getattr(item, name, None)) for item in collection)))
            continue
        out.append((name, values.tobytes()))
    for item in collection:
        out.append(tuple(_value(getattr(item, name, None)) for name in single))
    return out


def _fields(struct) -> tuple[tuple[str, bool], ...]:
    """(name, whether a collection) of each property of an RNA struct's type, once per type
    and count of properties (an add-on may register more on it): walking ``bl_rna.properties``
    is most of the cost of reading a constraint or a driver."""
    properties = struct.bl_rna.properties
    key = (type(struct), len(properties))
    found = _FIELDS.get(key)
    if found is None:
        found = _FIELDS[key] = tuple((prop.identifier, prop.type == "COLLECTION") for prop in properties
                                     if prop.identifier != "rna_type")
    return found


_FIELDS: dict = {}


def _struct(struct, depth: int = 2) -> tuple:
    """Every property of one RNA struct; its collections item by item, ``depth`` deep (a
    constraint's targets, a driver's variables and their targets)."""
    values = []
    for name, collection in _fields(struct):
        if collection:
            if depth > 0:
                values.append((name, tuple(_struct(item, depth - 1) for item in getattr(struct, name))))
        else:
            values.append((name, _value(getattr(struct, name, None))))
    return tuple(values)


def _constraints(constraints) -> tuple:
    out = []
    for c in constraints:
        entry = [_struct(c)]
        action = getattr(c, "action", None)
        if c.type == "ACTION" and action is not None:
            entry.append(_curves(action))
        out.append(tuple(entry))
    return tuple(out)


def _curves(action) -> tuple:
    return tuple((fc.data_path, fc.array_index, fc.mute, len(fc.keyframe_points), len(fc.modifiers))
                 for fc in all_fcurves(action))


def _animation(id_data) -> tuple:
    animation = getattr(id_data, "animation_data", None)
    if animation is None:
        return ()
    # (a driver's struct holds its variables and their targets)
    drivers = tuple((_struct(fc.driver), fc.data_path, fc.array_index, fc.mute) for fc in animation.drivers)
    action = animation.action
    return (drivers, None if action is None else (action.as_pointer(), _curves(action)), animation.use_nla,
            len(animation.nla_tracks))


def _custom(item) -> tuple:
    """An item's custom (ID) properties, with a pose bone's joint range (stored as one: the
    values set in it) among them."""
    try:
        # (the add-on's other settings are not inputs of the tree: its pins and figures change at every drag)
        found = [(key, _value(item[key])) for key in item.keys()  # noqa: SIM118 - an ID property group
                 if key == RANGE or not key.startswith("welman_ik")]
    except TypeError:
        return ()
    # (a range nothing was set in reads as none: reading it the first time makes it, empty)
    return tuple((key, value) for key, value in found if value != () or key != RANGE)


def fingerprint(obj) -> list:
    """A hash of every input of the hinge tree but the pose channels (see the module)."""
    data, pose_bones = obj.data, obj.pose.bones
    skip = POSE_CHANNELS | POSE_ONLY
    parts = [obj.as_pointer(), data.as_pointer(), bpy.context.scene.frame_current,
             tuple(pose_bones.keys()), tuple(b.parent.name if b.parent else "" for b in data.bones),
             _bulk(data.bones, bpy.types.Bone.bl_rna, frozenset({"select", "select_head", "select_tail"})),
             _bulk(pose_bones, bpy.types.PoseBone.bl_rna, skip),
             tuple(_custom(pb) for pb in pose_bones),
             tuple(tuple(c.name for c in getattr(b, "collections", ())) for b in data.bones),
             tuple((c.name, c.is_visible, getattr(c, "is_visible_effectively", None), getattr(c, "is_solo", None),
                    c.parent.name if getattr(c, "parent", None) else "")
                   for c in getattr(data, "collections_all", getattr(data, "collections", ()))),
             tuple(getattr(data, "layers", ())), _constraints(obj.constraints),
             tuple(_constraints(pb.constraints) for pb in pose_bones),
             _animation(obj), _animation(data), _custom(obj), _custom(data)]
    if not RANGE_IN_CUSTOM and len(pose_bones) and getattr(pose_bones[0], RANGE, None) is not None:
        fields = [p.identifier for p in getattr(pose_bones[0], RANGE).bl_rna.properties if p.identifier != "rna_type"]
        parts.append(tuple(tuple(getattr(getattr(pb, RANGE), f) for f in fields) for pb in pose_bones))
    try:
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).pose.bones
        parts.append(tuple(tuple((c.influence, c.mute, getattr(c, "is_valid", True)) for c in pb.constraints)
                           for pb in evaluated))
    except (AttributeError, RuntimeError, ReferenceError):
        parts.append(None)
    return parts
