"""Human joint-range presets: ``bpy.ops.welman_ik.joint_ranges(preset='AUTO'|'HUMAN'|'CLEAR')``
and ``recognised(obj)``, the naming the panel offers them for. The anatomy and its mapping
onto the rig's bone axes are in ``core/anatomy/motion.py``."""

from __future__ import annotations

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty

from ...core import anatomy
from .polls import ArmatureOperator, selected_pose_bones

PRESETS = (
    ("AUTO", "Auto", "Recognise the rig's naming (Rigify, metarig, Mixamo, BVH) and set human joint ranges"),
    ("HUMAN", "Human", "Human joint ranges, matching the bones by their names' fragments when the naming is unknown"),
    ("CLEAR", "Clear", "Take the joint ranges out of force"),
)
RANGE_FIELDS = ("swing_x_min", "swing_x_max", "swing_z_min", "swing_z_max", "twist_min", "twist_max", "roll")

# armature data pointer -> (bone names, naming, bones with a range): the panel asks on every redraw.
_recognised_cache: dict[int, tuple[tuple[str, ...], str, int]] = {}


def _names_and_parents(armature) -> tuple[list[str], dict[str, str | None]]:
    bones = armature.bones
    return [b.name for b in bones], {b.name: (b.parent.name if b.parent else None) for b in bones}


def recognised(obj) -> str:
    """The naming of armature object ``obj``: 'RIGIFY', 'METARIG', 'MIXAMO', 'BVH', or '' (none,
    or not an armature). Cached per armature data until its bones' names change."""
    return recognised_ranges(obj)[0]


def recognised_ranges(obj) -> tuple[str, int]:
    """(naming, how many of its bones the 'AUTO' preset sets a range on, the whole rig) of
    armature object ``obj``; ('', 0) for none. Cached per armature data until its bones'
    names change."""
    if obj is None or obj.type != "ARMATURE":
        return "", 0
    armature = obj.data
    names = tuple(b.name for b in armature.bones)
    key = armature.as_pointer()
    cached = _recognised_cache.get(key)
    if cached is not None and cached[0] == names:
        return cached[1], cached[2]
    parents = {b.name: (b.parent.name if b.parent else None) for b in armature.bones}
    naming, _ = anatomy.recognise(names, parents)
    count = len(rig_ranges(obj)[1]) if naming else 0
    if len(_recognised_cache) > 64:
        _recognised_cache.clear()
    _recognised_cache[key] = (names, naming, count)
    return naming, count


def rig_ranges(obj, best_guess: bool = False) -> tuple[str, dict[str, dict]]:
    """(naming, {bone: range}) for armature object ``obj`` from its rest pose."""
    names, parents = _names_and_parents(obj.data)
    rest = {b.name: np.array(b.matrix_local, dtype=float) for b in obj.data.bones}
    return anatomy.human_ranges(names, rest, parents, best_guess=best_guess)


class WELMAN_IK_OT_joint_ranges(ArmatureOperator, bpy.types.Operator):
    """Set natural human joint ranges on the selected bones (every bone when none is selected), or clear them"""

    bl_idname = "welman_ik.joint_ranges"
    bl_label = "Joint Ranges"

    preset: EnumProperty(name="Preset", items=PRESETS, default="AUTO", options={"SKIP_SAVE"})
    every_bone: BoolProperty(name="Every Bone", default=False, options={"SKIP_SAVE"},
                             description="Every bone of the rig, whatever is selected")

    def execute(self, context):
        obj = context.object
        if obj is None or obj.type != "ARMATURE":
            self.report({"ERROR"}, "The active object is not an armature")
            return {"CANCELLED"}
        if self.refused(context):
            return {"CANCELLED"}
        if obj.mode == "EDIT":
            self.report({"ERROR"}, "Leave edit mode: Welman IK works on the pose")
            return {"CANCELLED"}
        selected = [] if self.every_bone else selected_pose_bones(obj)
        bones = selected or list(obj.pose.bones)
        where = f"{len(selected)} selected bone(s)" if selected else "the armature"
        if self.preset == "CLEAR":
            cleared = 0
            for pb in bones:
                if pb.welman_ik_range.use:
                    pb.welman_ik_range.use = False
                    cleared += 1
            self.report({"INFO"}, f"Joint ranges cleared on {cleared} bone(s) of {where}")
            return {"FINISHED"}
        naming, ranges = rig_ranges(obj, best_guess=self.preset == "HUMAN")
        if not naming:
            self.report({"WARNING"}, "No known naming recognised (Rigify, metarig, Mixamo, BVH): use the Human preset "
                        "to match by best guess" if self.preset == "AUTO" else
                        "No bone's name looks like a human joint; nothing was changed")
            return {"CANCELLED"}
        targets = [pb for pb in bones if pb.name in ranges]
        if not targets:
            self.report({"WARNING"}, f"None of {where} is a human joint the {anatomy.NAMING_LABELS[naming]} naming "
                        "knows; nothing was changed")
            return {"CANCELLED"}
        for pb in targets:
            values = ranges[pb.name]
            settings = pb.welman_ik_range
            for field in RANGE_FIELDS:
                setattr(settings, field, float(values[field]))
            settings.use = True
        obj.welman_ik.ranges_offered = True  # the panel's offer is taken: not made again
        self.report({"INFO"}, f"Human ranges ({anatomy.NAMING_LABELS[naming]} naming) set on {len(targets)} bones")
        return {"FINISHED"}


CLASSES = (WELMAN_IK_OT_joint_ranges,)
