"""The pin operators: pin, pin_to, unpin, clear_pins, remove_pin, lock, unlock."""

from __future__ import annotations

import types

import bpy
import numpy as np
from bpy.props import BoolProperty, BoolVectorProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..rig.model import RigError
from ..rig.polls import (
    ArmatureOperator,
    SelectionOperator,
    degenerate_transform,
    selected_pose_bones,
)
from ..rig.properties import AIM_AXIS_ITEMS, PIN_KINDS
from ..rig.targets import cycle_reason
from .records import add_pin, pin_records

KIND_TEXT = {item[0]: item[2] for item in PIN_KINDS}  # a kind's description, for the pin button's tooltip

PLANE_NORMAL_ITEMS = [
    ("UP", "Up", "The plane is level: its normal is the world's Z axis"),
    ("VIEW", "View", "The plane faces the view: its normal points along the view direction"),
]


class WELMAN_IK_OT_pin(ArmatureOperator, bpy.types.Operator):
    """Pin each selected bone as it is now (a balance pin needs no bone; a together pin joins the selected bone \
to the active one)"""

    bl_idname = "welman_ik.pin"
    bl_label = "Pin"

    kind: EnumProperty(name="Kind", items=PIN_KINDS, default="POSITION", options={"SKIP_SAVE"})
    anchor: FloatProperty(name="Anchor", min=0.0, max=1.0, default=1.0, subtype="FACTOR", options={"SKIP_SAVE"},
                          description="The held point along the bone: 0 head, 1 tail")
    weight: FloatProperty(name="Weight", min=0.0, default=1.0, soft_max=10.0, options={"SKIP_SAVE"})
    axes: BoolVectorProperty(name="Axes", size=3, default=(True, True, True), subtype="XYZ", options={"SKIP_SAVE"},
                             description="Orientation, pose: which of the bone's own axes are held")
    plane_normal: EnumProperty(name="Plane", items=PLANE_NORMAL_ITEMS, default="UP", options={"SKIP_SAVE"},
                               description="Plane: which way the plane through the point faces")
    aim_axis: EnumProperty(name="Aim Axis", items=AIM_AXIS_ITEMS, default="Y", options={"SKIP_SAVE"},
                           description="Aim: the bone axis that keeps pointing at the target")
    radius: FloatProperty(name="Radius", min=0.0, default=0.05, unit="LENGTH", options={"SKIP_SAVE"},
                          description="Region: the sphere's radius")
    use_support: BoolProperty(name="Support Polygon", default=False, options={"SKIP_SAVE"},
                              description="Balance: over the support polygon of the position and pose pins")

    @classmethod
    def description(cls, context, properties):
        """The tooltip says what this button pins: the sidebar's Pin holds the whole bone, each
        item of Pin As its own kind."""
        kind = getattr(properties, "kind", "POSITION")
        if kind == "POSE":
            return ("Pin each selected bone as it is now: its tail stays where it is and the bone keeps its turn "
                    "(a foot stays flat on its spot)")
        if kind == "BALANCE":
            return "Pin the body's balance: " + KIND_TEXT[kind][0].lower() + KIND_TEXT[kind][1:]
        return f"Pin each selected bone: {KIND_TEXT.get(kind, kind)[0].lower()}{KIND_TEXT.get(kind, kind)[1:]}"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "kind")
        if self.kind != "BALANCE":
            layout.prop(self, "anchor")
        layout.prop(self, "weight")
        if self.kind in {"ORIENTATION", "POSE"}:
            layout.prop(self, "axes")
        elif self.kind == "PLANE":
            layout.prop(self, "plane_normal")
        elif self.kind == "AIM":
            layout.prop(self, "aim_axis")
        elif self.kind == "REGION":
            layout.prop(self, "radius")
        elif self.kind == "BALANCE":
            layout.prop(self, "use_support")

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        bones = selected_pose_bones(obj) if self.kind != "BALANCE" else []
        if self.kind != "BALANCE" and not bones:
            self.report({"ERROR"}, "Select one or more pose bones first")
            return {"CANCELLED"}
        context.view_layer.update()
        if degenerate_transform(obj):
            self.report({"ERROR"}, f"Armature '{obj.name}' has a degenerate transform (zero scale?); "
                        "nothing was pinned")
            return {"CANCELLED"}
        # A floor holds both ends of each bone (a foot's heel and toe) unless one point is asked for.
        both = self.kind == "FLOOR" and not self.properties.is_property_set("anchor")
        try:
            records = [(bone, fields, anchor) for anchor in ((0.0, 1.0) if both else (self.anchor,))
                       for bone, fields in self._records(context, obj, bones, anchor)]
        except RigError as error:
            self.report({"ERROR"}, f"{error}; nothing was pinned")
            return {"CANCELLED"}
        pins = obj.welman_ik.pins
        for bone, fields, anchor in records:
            add_pin(pins, bone, self.kind, fields, anchor, self.weight)
        obj.welman_ik.active_pin_index = len(pins) - 1
        what = "the centre of mass" if self.kind == "BALANCE" else f"{len(records)} bone(s)"
        self.report({"INFO"}, f"Pinned {what} ({self.kind.lower()})")
        return {"FINISHED"}

    def _records(self, context, obj, bones, anchor: float) -> list[tuple[str, dict]]:
        return pin_records(context, obj, self.kind, bones, anchor, axes=tuple(self.axes),
                           plane_normal=self.plane_normal, aim_axis=self.aim_axis, radius=self.radius,
                           use_support=self.use_support)


NO_TARGET = ("Select the object to pin to as well (Shift+click it in Object Mode, then back to Pose Mode; or "
             "Ctrl+click it in the Outliner), or name it")


def other_selected(context, obj) -> list:
    """The selected objects but the armature being posed: the one to pin to, if one."""
    return [o for o in getattr(context, "selected_objects", None) or () if o != obj]


class WELMAN_IK_OT_pin_to(ArmatureOperator, bpy.types.Operator):
    """Pin each selected bone as it is now to follow the other selected object, or the active bone of another armature: its goal moves with it from then on"""

    bl_idname = "welman_ik.pin_to"
    bl_label = "Pin To"

    kind: EnumProperty(name="Kind", items=PIN_KINDS, default="POSE", options={"SKIP_SAVE"})
    target: StringProperty(name="Target", options={"SKIP_SAVE"},
                           description="The object to follow (empty: the other selected object)")
    target_bone: StringProperty(name="Target Bone", options={"SKIP_SAVE"},
                                description="The bone of the target armature to follow (empty: its active bone "
                                "in Pose Mode, or the armature itself)")
    anchor: FloatProperty(name="Anchor", min=0.0, max=1.0, default=1.0, subtype="FACTOR", options={"SKIP_SAVE"},
                          description="The held point along the bone: 0 head, 1 tail")

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        obj = context.object
        if not selected_pose_bones(obj):
            return "Select one or more pose bones first"
        return "" if other_selected(context, obj) else NO_TARGET

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "kind")
        layout.prop_search(self, "target", context.scene, "objects")
        target = context.scene.objects.get(self.target)
        if target is not None and target.type == "ARMATURE":
            layout.prop_search(self, "target_bone", target.pose, "bones", text="Bone")
        layout.prop(self, "anchor")

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        try:
            bones, target, bone = self._chosen(context, obj)
            context.view_layer.update()
            if degenerate_transform(obj):
                raise RigError(f"Armature '{obj.name}' has a degenerate transform (zero scale?)")
            kind = "POSITION" if self.kind == "TOGETHER" else self.kind  # (its point, then the other bone's)
            records = pin_records(context, obj, kind, bones, self.anchor)
        except RigError as error:
            self.report({"ERROR"}, f"{error}; nothing was pinned")
            return {"CANCELLED"}
        pins = obj.welman_ik.pins
        for name, fields in records:
            if self.kind == "TOGETHER":
                fields["target_anchor"] = nearest_anchor(target, bone, fields["location"])
            pin = add_pin(pins, name, self.kind, fields, self.anchor)  # (a pin replaced is back in the world)
            pin.target_bone = bone  # (no target yet: nothing recorded)
            pin.target_object = target  # recorded in the target's space
        obj.welman_ik.active_pin_index = len(pins) - 1
        self.target, self.target_bone = target.name, bone  # (the redo panel says what was followed)
        self.report({"INFO"}, f"Pinned {len(records)} bone(s) to '{' '.join(filter(None, (target.name, bone)))}' "
                    f"({self.kind.lower()})")
        return {"FINISHED"}

    def _chosen(self, context, obj) -> tuple:
        """(pose bones, target object, target bone or '') to pin, or RigError saying why not."""
        bones = selected_pose_bones(obj)
        if not bones:
            raise RigError("Select one or more pose bones first")
        if self.kind == "BALANCE":
            raise RigError("A balance pin holds the centre of mass, no place a target could carry; pick another "
                           "kind")
        if self.target:
            target = bpy.data.objects.get(self.target)
            if target is None:
                raise RigError(f"There is no object '{self.target}' to pin to")
        else:
            others = other_selected(context, obj)
            if len(others) > 1:
                raise RigError(f"{len(others)} other objects are selected ({', '.join(o.name for o in others)}); "
                               "select only the one to pin to, or name it")
            if not others:
                raise RigError(NO_TARGET)
            target = others[0]
        if not target.users_scene:
            raise RigError(f"Object '{target.name}' is in no scene")
        bone = self.target_bone
        active = target.data.bones.active if target.type == "ARMATURE" and target != obj else None
        if not bone and active is not None and target.mode == "POSE":
            bone = active.name
        if bone and (target.type != "ARMATURE" or bone not in target.pose.bones):
            raise RigError(f"Object '{target.name}' has no bone '{bone}'" + (
                "" if target.type == "ARMATURE" else " (it is no armature)"))
        if target == obj and (bone or self.kind == "TOGETHER"):
            raise RigError("To hold two bones of this armature together use Pin As > Together; Pin To follows "
                           "another object or another armature's bone")
        if self.kind == "TOGETHER" and target.type != "ARMATURE":
            raise RigError(f"A together pin meets a bone of another armature; '{target.name}' is no armature")
        if self.kind == "TOGETHER" and not bone:
            raise RigError(f"A together pin meets a bone: make one of '{target.name}' active in its Pose Mode, or "
                           "name it")
        reason = cycle_reason(obj, types.SimpleNamespace(target_object=target, target_bone=bone, kind=self.kind,
                                                         id_data=obj))
        if reason:
            raise RigError(f"Cannot pin to '{target.name}': {reason}")
        return bones, target, bone


def nearest_anchor(target, bone: str, point) -> float:
    """The point along ``target``'s pose bone ``bone`` (0 head, 1 tail) nearest world ``point``."""
    pose_bone = target.pose.bones[bone]
    head, tail = (np.array(target.matrix_world @ v, dtype=float) for v in (pose_bone.head, pose_bone.tail))
    along = tail - head
    return float(np.clip((np.asarray(point, dtype=float) - head) @ along / max(float(along @ along), 1e-12), 0, 1))


def pins_refusal(obj) -> str:
    """Why there is no pin of ``obj`` to remove, or ''."""
    return "" if len(obj.welman_ik.pins) else "The armature has no pins"


def remove_pins(obj, indices) -> tuple[int, int]:
    """Remove the pins at ``indices``; returns (removed, disabled).

    On a library override, the pins that come from the library cannot be removed: Blender
    keeps every item of the reference in an override's collection (only items added in the
    override can go). Those are disabled instead, which the override does keep."""
    settings = obj.welman_ik
    pins = settings.pins
    removed = disabled = 0
    for i in sorted(set(indices), reverse=True):
        try:
            pins.remove(i)
            removed += 1
        except TypeError:  # "not supported for this collection": the library's own pin
            if obj.override_library is None:
                raise
            pins[i].enabled = False
            disabled += 1
    settings.active_pin_index = min(settings.active_pin_index, max(len(pins) - 1, 0))
    return removed, disabled


def report_removed(operator, obj, removed: int, disabled: int) -> None:
    if disabled:
        library = obj.override_library.reference.library
        operator.report({"WARNING"}, (f"Removed {removed} pin(s); " if removed else "")
                        + f"{disabled} pin(s) come from library '{library.name if library else '?'}' and cannot "
                        "be removed from the override, so they are disabled instead")
    else:
        operator.report({"INFO"}, f"Removed {removed} pin(s)")


class WELMAN_IK_OT_unpin(SelectionOperator, bpy.types.Operator):
    """Remove the pins of the selected bones (on a library override, the library's own pins are disabled)"""

    bl_idname = "welman_ik.unpin"
    bl_label = "Unpin"

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        bones = self.selection(context)
        if not bones:
            return {"CANCELLED"}
        names = {pb.name for pb in bones}
        obj = context.object
        held = [i for i, p in enumerate(obj.welman_ik.pins)
                if p.bone in names or (p.kind == "TOGETHER" and p.target_bone in names)]
        report_removed(self, obj, *remove_pins(obj, held))
        return {"FINISHED"}


class WELMAN_IK_OT_clear_pins(ArmatureOperator, bpy.types.Operator):
    """Remove every pin of the armature (on a library override, the library's own pins are disabled)"""

    bl_idname = "welman_ik.clear_pins"
    bl_label = "Clear Pins"

    @classmethod
    def sidebar_refusal(cls, context) -> str:
        # (a script may clear an empty list: it removes nothing and says so)
        return pins_refusal(context.object)

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        report_removed(self, obj, *remove_pins(obj, range(len(obj.welman_ik.pins))))
        obj.welman_ik.active_pin_index = 0
        return {"FINISHED"}


class WELMAN_IK_OT_remove_pin(ArmatureOperator, bpy.types.Operator):
    """Remove the active pin of the list, whether or not its bone still exists (on a library override, a pin from \
the library is disabled instead)"""

    @classmethod
    def poll(cls, context):  # from a script too: there is no pin to remove
        if not super().poll(context):
            return False
        refusal = pins_refusal(context.object)
        if refusal:
            cls.poll_message_set(refusal)
        return not refusal

    bl_idname = "welman_ik.remove_pin"
    bl_label = "Remove Pin"

    # No min: a negative index from a script is refused, not clamped onto pin 0.
    index: IntProperty(name="Index", default=0, options={"SKIP_SAVE"},
                       description="The pin's index in the armature's pins (unset: the active pin)")

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        obj = context.object
        pins = obj.welman_ik.pins
        index = self.index if self.properties.is_property_set("index") else obj.welman_ik.active_pin_index
        if not 0 <= index < len(pins):
            self.report({"ERROR"}, f"Pin index {index} is out of range: armature '{obj.name}' has "
                        f"{len(pins)} pin(s)")
            return {"CANCELLED"}
        bone = pins[index].bone
        removed, disabled = remove_pins(obj, [index])
        if disabled:
            report_removed(self, obj, removed, disabled)
        else:
            self.report({"INFO"}, f"Removed the pin on '{bone}'")
        return {"FINISHED"}


class LockOperator(SelectionOperator):
    value = True

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        bones = self.selection(context)
        if not bones:
            return {"CANCELLED"}
        for pb in bones:
            pb.lock_ik_x = pb.lock_ik_y = pb.lock_ik_z = self.value
        return {"FINISHED"}


class WELMAN_IK_OT_lock(LockOperator, bpy.types.Operator):
    """Freeze the selected bones for the solver (sets Blender's IK locks)"""

    bl_idname = "welman_ik.lock"
    bl_label = "Lock"
    value = True


class WELMAN_IK_OT_unlock(LockOperator, bpy.types.Operator):
    """Free the selected bones for the solver (clears Blender's IK locks)"""

    bl_idname = "welman_ik.unlock"
    bl_label = "Unlock"
    value = False


CLASSES = (
    WELMAN_IK_OT_pin,
    WELMAN_IK_OT_pin_to,
    WELMAN_IK_OT_unpin,
    WELMAN_IK_OT_clear_pins,
    WELMAN_IK_OT_remove_pin,
    WELMAN_IK_OT_lock,
    WELMAN_IK_OT_unlock,
)
