"""The retarget map: which bone of a source armature each bone of the active one follows when
a clip is retargeted onto it (``armature.welman_ik.retarget_map``), filled from both rigs'
naming by ``bpy.ops.welman_ik.retarget_map_fill(source='')``. The pairing itself is the
core's (``core/anatomy/retarget.py``)."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from ...core import anatomy
from ...core.anatomy.retarget import retarget_roles
from .body import rest_ends
from .model import RigError
from .polls import ArmatureOperator


def bone_tree(obj) -> tuple[list[str], dict[str, str | None]]:
    """(bone names, each bone's parent name or None) of armature object ``obj``."""
    bones = obj.data.bones
    return [b.name for b in bones], {b.name: (b.parent.name if b.parent else None) for b in bones}


def source_armature(target, name: str):
    """The armature object named ``name`` that a clip is retargeted from onto ``target``, or
    RigError saying why it cannot be."""
    if not name:
        raise RigError("Name the source armature (the one that carries the motion)")
    source = bpy.data.objects.get(name)
    if source is None:
        raise RigError(f"No object named '{name}'")
    if source.type != "ARMATURE":
        raise RigError(f"'{name}' is not an armature (it is a {source.type.lower()})")
    if source == target or source.data == target.data:
        raise RigError(f"'{name}' is the armature being retargeted onto; choose the one that carries the motion")
    return source


def source_refusal(target, animated: bool = False) -> str:
    """Why the sidebar's Fill Map (and, with ``animated``, Retarget) cannot work with the
    panel's Source now, or ''."""
    source = target.welman_ik.retarget_source
    if source is None:
        return "Choose the Source above first: the armature whose motion this one takes on"
    if source.type != "ARMATURE" or source == target:
        return f"The Source '{source.name}' is not another armature; choose the armature that carries the motion"
    action = source.animation_data.action if source.animation_data is not None else None
    if animated and action is None:
        return f"The Source '{source.name}' has no action: import or key its motion first"
    return ""


def rest_points(obj) -> dict[str, tuple]:
    """Each bone's (head, tail) in the rest pose, in the world (the object's transform applied)."""
    return {name: (ends[0], ends[1]) for name, ends in zip(obj.data.bones.keys(), rest_ends(obj, world=True))}


def retarget_scale(target, source) -> float:
    """How many times longer ``target``'s legs are than ``source``'s, hip to knee to ankle in the world
    (a retarget's automatic scale); RigError saying which rig has no legs to measure."""
    roles = [retarget_roles(*bone_tree(obj))[1] for obj in (target, source)]
    try:
        return anatomy.leg_scale(rest_points(target), roles[0], rest_points(source), roles[1])
    except ValueError as error:
        raise RigError(f"The automatic scale needs both rigs' legs ('{target.name}', '{source.name}'): {error}; "
                       "give the scale instead") from error


HUMAN_LEG = 0.9  # [m] hip to ankle of a grown person: the body lengths given for a human are for


def body_unit(obj) -> float:
    """How many times a ``HUMAN_LEG`` leg ``obj``'s leg is, hip to knee to ankle in the world
    (1 when it has none to measure): what a length given for a grown person in metres is
    multiplied by for this character (a rig in centimetres, a child, a giant)."""
    try:
        return anatomy.leg_length(rest_points(obj), retarget_roles(*bone_tree(obj))[1]) / HUMAN_LEG
    except ValueError:
        return 1.0


# A generated Rigify rig's limbs: the bone holding the IK/FK switch, the FK controls, and the IK
# control an animator keys instead when the switch says IK (the limb's end; the rig's IK
# chain bends the limb, its knee or elbow pointing as the rig's own setting has it).
RIGIFY_LIMBS = (("upper_arm_parent", ("upper_arm_fk", "forearm_fk", "hand_fk"), {"hand_fk": "hand_ik"}),
                ("thigh_parent", ("thigh_fk", "shin_fk", "foot_fk"), {"foot_fk": "foot_ik", "toe_fk": "toe_ik"}))


def by_switches(target, pairs: list) -> list:
    """``pairs`` for a generated Rigify rig's limbs as its IK/FK switches stand: on a limb in IK
    (``IK_FK`` below 0.5), its IK end control follows in pose in place of the FK one, and the
    FK controls above it are left alone."""
    pose_bones = target.pose.bones
    out = list(pairs)
    for switch, fk, ik in RIGIFY_LIMBS:
        for side in ("L", "R"):
            holder = pose_bones.get(f"{switch}.{side}")
            if holder is None or "IK_FK" not in holder or float(holder["IK_FK"]) >= 0.5:
                continue
            renamed = {f"{a}.{side}": f"{b}.{side}" for a, b in ik.items() if f"{b}.{side}" in pose_bones}
            dropped = {f"{name}.{side}" for name in fk} - set(renamed)
            out = [pair._replace(target_bone=renamed[pair.target_bone]) if pair.target_bone in renamed else pair
                   for pair in out if pair.target_bone not in dropped]
    return out


def fill(target, source) -> list[str]:
    """Fill ``target``'s retarget map from both rigs' naming (what was there is replaced);
    returns the body parts found on one side only. RigError, and the map left as it was, when
    nothing pairs (a naming unknown even by a best guess)."""
    pairs, missing = anatomy.retarget_map(*bone_tree(target), *bone_tree(source))
    if not pairs:
        raise RigError("Nothing to map: " + "; ".join(missing) + ". Fill the map by hand (target bone, source bone)")
    pairs = by_switches(target, pairs)
    settings = target.welman_ik
    lines = settings.retarget_map
    lines.clear()
    for pair in pairs:
        line = lines.add()
        line.target_bone, line.source_bone, line.kind, line.weight = pair
    settings.active_retarget_index = 0
    return missing


class WELMAN_IK_OT_retarget_map_fill(ArmatureOperator, bpy.types.Operator):
    """Fill the retarget map from both rigs' bone names: hips, spine, chest, neck and head, shoulders, arms and \
legs, hands and feet (what was in the map is replaced)"""

    bl_idname = "welman_ik.retarget_map_fill"
    bl_label = "Fill Retarget Map"

    source: StringProperty(name="Source", description="The armature that carries the motion")

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        return source_refusal(context.object)

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        target = context.object
        try:
            missing = fill(target, source_armature(target, self.source))
        except RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        count = len(target.welman_ik.retarget_map)
        if missing:
            self.report({"WARNING"}, f"Mapped {count} bones from '{self.source}'; not mapped: " + "; ".join(missing))
        else:
            self.report({"INFO"}, f"Mapped {count} bones from '{self.source}'")
        return {"FINISHED"}


CLASSES = (WELMAN_IK_OT_retarget_map_fill,)
