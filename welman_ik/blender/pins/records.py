"""A new pin of any kind, recorded from the pose as it is now (the pin operator and the
drag's shortcuts)."""

from __future__ import annotations

import math

import numpy as np
from mathutils import Vector

from ...core.goals.aim import AXES as AIM_AXES
from ..rig.evaluated import anchor_points
from ..rig.model import RigError
from ..rig.targets import as_stored
from .goals import SUPPORT_KINDS, centre_of_mass

AIM_DISTANCE = 10.0  # an aim pin's target: this many bone lengths out along the aimed axis
PIN_FIELDS = ("bone", "kind", "anchor", "location", "rotation", "axes", "direction", "radius", "aim_axis",
              "target_bone", "target_anchor", "use_support", "weight", "enabled", "frame_start", "frame_end", "follow",
              "target_object", "space_object", "space_bone", "space_name")


def pin_records(context, obj, kind: str, bones, anchor: float, axes=(True, True, True), plane_normal: str = "UP",
                aim_axis: str = "Y", radius: float = 0.05, use_support: bool = False,
                other=None) -> list[tuple[str, dict]]:
    """(bone, pin fields) of each pin of ``kind`` to make on pose bones ``bones``, every one
    recorded from the current pose first, so that a bad one changes nothing: the bone's
    orientation, a line along the bone, a plane through the point facing up or the view, an
    aim target ahead of the aimed axis, a region of ``radius``, the other bone of a together
    pin (``other``, else the active bone), the centre of mass of a balance pin."""
    if kind == "BALANCE":
        if use_support and not any(p.enabled and p.kind in SUPPORT_KINDS for p in obj.welman_ik.pins):
            raise RigError("Balance over the support polygon needs position or pose pins (the planted feet)")
        com = centre_of_mass(obj)
        return [("", {"location": com, "direction": (0.0, 0.0, 1.0), "use_support": use_support})]
    if kind == "TOGETHER":
        if other is None:
            active = obj.data.bones.active  # (the context's active_pose_bone is missing without a window)
            other = obj.pose.bones.get(active.name) if active is not None else None
            chosen = [pb for pb in bones if other is None or pb.name != other.name]
            if other is None or len(bones) != 2 or len(chosen) != 1:
                raise RigError("Together joins two bones: select two, the one to hold the other last (active)")
            bones = chosen
        elif any(pb.name == other.name for pb in bones):
            raise RigError(f"Bone '{other.name}' cannot be held together with itself")
    records = []
    for pb in bones:
        world = obj.matrix_world @ pb.matrix
        location = anchor_points(obj, [pb.name], [anchor])[0]
        rotation = world.to_quaternion().normalized()
        if not (np.all(np.isfinite(location)) and all(math.isfinite(v) for v in rotation)):
            raise RigError(f"Bone '{pb.name}' has no finite position (NaN or infinite pose values)")
        fields = {"location": location, "rotation": rotation}
        basis = np.array(world.to_3x3(), dtype=float)
        if kind in {"ORIENTATION", "POSE"}:
            fields["axes"] = tuple(axes)
        elif kind == "LINE":
            fields["direction"] = basis[:, 1] / max(np.linalg.norm(basis[:, 1]), 1e-12)
        elif kind == "PLANE":
            fields["direction"] = plane_facing(context, plane_normal)
        elif kind == "AIM":
            index, sign = AIM_AXES[aim_axis]
            axis = sign * basis[:, index]
            head = np.array(obj.matrix_world @ pb.head, dtype=float)
            length = float(np.linalg.norm(np.array(obj.matrix_world @ pb.tail) - head))
            fields["location"] = head + AIM_DISTANCE * length * axis / max(np.linalg.norm(axis), 1e-12)
            fields["aim_axis"] = aim_axis
        elif kind == "REGION":
            fields["radius"] = radius
        elif kind == "FLOOR":  # the world's floor: through the origin, facing up
            fields.update(location=np.zeros(3), direction=(0.0, 0.0, 1.0))
        elif kind == "TOGETHER":
            target = obj.pose.bones[other.name]
            fields.update(target_bone=target.name, target_anchor=anchor,
                          location=0.5 * (location + anchor_points(obj, [target.name], [anchor])[0]))
        records.append((pb.name, fields))
    return records


def plane_facing(context, plane_normal: str) -> tuple:
    """A new plane pin's normal: the world's up, or toward the viewer of the 3D view."""
    if plane_normal == "UP":
        return (0.0, 0.0, 1.0)
    view = getattr(context, "region_data", None)
    if view is None:
        raise RigError("A plane facing the view needs a 3D view; use Up from a script")
    return tuple((view.view_rotation @ Vector((0.0, 0.0, 1.0))).normalized())


def fields_of(pin) -> dict:
    """Every field of a pin, to put it back exactly."""
    return {name: (tuple(v) if hasattr(v := getattr(pin, name), "__len__") and not isinstance(v, str) else v)
            for name in PIN_FIELDS}


def add_pin(pins, bone: str, kind: str, fields: dict, anchor: float = 1.0, weight: float = 1.0):
    """Add or replace ``bone``'s pin of ``kind`` (a floor: at ``anchor``, so that a foot's heel
    and toe have one each) with ``fields`` (world fields: a replaced pin no longer follows its
    target; or every field as ``fields_of`` read them); returns it."""
    pin = next((p for p in pins if p.bone == bone and p.kind == kind
                and (kind != "FLOOR" or math.isclose(p.anchor, anchor, abs_tol=1e-6))), None)
    if pin is None:
        pin = pins.add()
        pin.bone, pin.kind = bone, kind
    put_fields(pin, {"anchor": anchor, "weight": weight, "enabled": True, **fields})
    return pin


def put_fields(pin, fields: dict) -> None:
    """Set a pin's ``fields``: every field as ``fields_of`` read them, exactly; else world
    fields, the pin first taken off its target."""
    if "space_name" in fields:
        with as_stored():
            for name, value in fields.items():
                setattr(pin, name, value)
        return
    pin.target_object = None
    for name, value in fields.items():
        setattr(pin, name, value)
