"""The "Welman IK" tab of the 3D view sidebar."""

from __future__ import annotations

import textwrap

import bpy

from ..rig.polls import ArmatureOperator, linked_refusal

NAMINGS = {"RIGIFY": "Rigify", "METARIG": "Rigify metarig", "MIXAMO": "Mixamo", "BVH": "BVH"}
JOINT_RANGES = "welman_ik.joint_ranges"


class SidebarPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Welman IK"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.type == "ARMATURE"


class WELMAN_IK_UL_pins(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        pose = data.id_data.pose
        body = row.row(align=True)
        missing = None if item.kind == "BALANCE" or (pose is not None and item.bone in pose.bones) else item.bone
        if missing is None and item.kind == "TOGETHER" and (pose is None or item.target_bone not in pose.bones):
            missing = item.target_bone
        if missing is None:
            body.prop(item, "enabled", text="")
            name = "centre of mass" if item.kind == "BALANCE" else item.bone
            if item.kind == "TOGETHER":
                name = f"{item.bone} + {item.target_bone}"
            body.label(text=name, icon="PINNED" if item.enabled else "UNPINNED")
            body.prop(item, "kind", text="", emboss=False)
            body.prop(item, "weight", text="", emboss=False)
        else:
            # Renamed or deleted: kept (the solver refuses it), greyed, with the reason.
            body.active = False
            body.label(text=f"bone '{missing}' missing", icon="ERROR")
        row.operator("welman_ik.remove_pin", text="", icon="X", emboss=False).index = index


# The fields each kind of pin uses, in the order the panel shows them.
PIN_FIELDS = {
    "POSITION": ("anchor", "location"),
    "ORIENTATION": ("rotation", "axes"),
    "POSE": ("anchor", "location", "rotation", "axes"),
    "LINE": ("anchor", "location", "direction"),
    "PLANE": ("anchor", "location", "direction"),
    "AIM": ("aim_axis", "location"),
    "REGION": ("anchor", "location", "radius"),
    "TOGETHER": ("anchor", "target_bone", "target_anchor"),
    "BALANCE": ("use_support", "location", "direction"),
}
FIELD_LABELS = {("LINE", "direction"): "Line Direction", ("PLANE", "direction"): "Plane Normal",
                ("LINE", "location"): "Through", ("PLANE", "location"): "Through", ("AIM", "location"): "Target",
                ("REGION", "location"): "Centre", ("BALANCE", "location"): "Over", ("BALANCE", "direction"): "Up"}


def draw_pin_fields(layout, pin, obj) -> None:
    """The fields of one pin that its kind uses, each editable."""
    layout.prop(pin, "kind")
    for field in PIN_FIELDS.get(pin.kind, ("anchor", "location")):
        label = FIELD_LABELS.get((pin.kind, field))
        if field == "target_bone" and obj.pose is not None:
            layout.prop_search(pin, field, obj.pose, "bones", text="Other Bone")
        elif field == "location" and pin.kind == "BALANCE" and pin.use_support:
            continue  # the support polygon replaces the point
        elif label is None:
            layout.prop(pin, field)
        else:
            layout.prop(pin, field, text=label)
    if pin.kind == "BALANCE":
        bone = active_pose_bone(obj)
        if bone is not None:  # the masses the centre of mass is made of, bone by bone
            layout.prop(bone, "welman_ik_mass", text=f"Mass of {bone.name}")
    else:
        layout.prop(pin, "weight")
    if pin.frame_start or pin.frame_end:
        row = layout.row(align=True)
        row.prop(pin, "frame_start")
        row.prop(pin, "frame_end")


def wrapped_lines(context, text: str) -> list[str]:
    """``text`` cut into lines that fit the sidebar's width (Blender 3.4 labels do not wrap)."""
    region = getattr(context, "region", None)
    preferences = getattr(context, "preferences", None)
    scale = (preferences.system.ui_scale if preferences is not None else 0.0) or 1.0  # 0 without a window
    width = region.width if region is not None else 300
    scale = max(scale, 0.5)
    # About 7.5 px a character at scale 1, less the box's margins and the line's icon.
    return textwrap.wrap(text, width=max(16, int((width - 44.0 * scale) / (7.5 * scale)))) or [text]


def active_pose_bone(obj):
    """The active pose bone of armature ``obj``, or None (from the armature's active bone: the
    context's ``active_pose_bone`` is missing without a window)."""
    bone = obj.data.bones.active
    return obj.pose.bones.get(bone.name) if bone is not None and obj.pose is not None else None


def operator_available(idname: str) -> bool:
    """Operator ``idname`` is registered (the presets operator may not be, in a partial install)."""
    module, name = idname.split(".")
    try:
        getattr(getattr(bpy.ops, module), name).get_rna_type()
    except (AttributeError, KeyError):
        return False
    return True


def recognised_naming(obj) -> str:
    """The human naming of armature ``obj`` ('RIGIFY', 'METARIG', 'MIXAMO', 'BVH') as the presets
    recognise it, or '' (also when the presets module is missing or fails: the panel must draw)."""
    try:
        from ..rig import presets
    except ImportError:
        return ""
    recognised = getattr(presets, "recognised", None)
    if recognised is None:
        return ""
    try:
        return str(recognised(obj) or "")
    except Exception:  # noqa: BLE001 - a rig the presets choke on is simply not offered
        return ""


def ranges_offer(obj) -> str:
    """The naming to offer human joint ranges for (once per rig), or '': the rig has a pin, no
    bone with a range in use, has not been offered them, and its naming is recognised."""
    settings = obj.welman_ik
    if settings.ranges_offered or not len(settings.pins) or linked_refusal(obj):
        return ""
    if any(pb.welman_ik_range.use for pb in obj.pose.bones):
        return ""
    return recognised_naming(obj)


class WELMAN_IK_OT_dismiss_ranges_offer(ArmatureOperator, bpy.types.Operator):
    """Do not offer natural joint ranges for this rig again"""

    bl_idname = "welman_ik.dismiss_ranges_offer"
    bl_label = "Dismiss"

    def execute(self, context):
        if self.refused(context):
            return {"CANCELLED"}
        context.object.welman_ik.ranges_offered = True
        return {"FINISHED"}


class WELMAN_IK_PT_main(SidebarPanel, bpy.types.Panel):
    bl_label = "Welman IK"

    def draw(self, context):
        layout = self.layout
        settings = context.object.welman_ik
        refusal = linked_refusal(context.object)
        if refusal:
            col = layout.column(align=True)
            for i, line in enumerate(wrapped_lines(context, refusal)):
                col.label(text=line, icon="LIBRARY_DATA_DIRECT" if i == 0 else "BLANK1")
        layout.use_property_split = True
        layout.prop(settings, "solver")
        col = layout.column(align=True)
        col.prop(settings, "max_iterations")
        col.prop(settings, "tolerance")
        if settings.solver == "SR_INVERSE":
            col.prop(settings, "damping")
        col = layout.column(align=True)
        col.prop(settings, "reference")
        if settings.reference != "NONE":
            col.prop(settings, "reference_weight")
        col = layout.column(align=True)
        col.prop(settings, "gaze")
        if settings.gaze:
            col.prop_search(settings, "gaze_bone", context.object.data, "bones", text="Gaze Bone")
        layout.prop(settings, "pins_first")
        layout.prop(settings, "chain_length")
        layout.prop(settings, "keyframes")
        layout.operator("welman_ik.drag", text="Drag Active Bone", icon="CON_KINEMATIC")


class WELMAN_IK_PT_pins(SidebarPanel, bpy.types.Panel):
    bl_label = "Pins"
    bl_parent_id = "WELMAN_IK_PT_main"

    def draw(self, context):
        layout = self.layout
        settings = context.object.welman_ik
        row = layout.row(align=True)
        row.operator("welman_ik.pin", icon="PINNED")
        row.operator_menu_enum("welman_ik.pin", "kind", text="Pin As")
        row.operator("welman_ik.unpin", icon="UNPINNED")
        row.operator("welman_ik.clear_pins", icon="X", text="Clear")
        row = layout.row(align=True)
        row.operator("welman_ik.lock", icon="LOCKED")
        row.operator("welman_ik.unlock", icon="UNLOCKED")
        naming = ranges_offer(context.object)
        if naming:
            self.draw_offer(context, naming)
        layout.template_list("WELMAN_IK_UL_pins", "", settings, "pins", settings, "active_pin_index", rows=3)
        if 0 <= settings.active_pin_index < len(settings.pins):
            pin = settings.pins[settings.active_pin_index]
            col = layout.column()
            col.use_property_split = True
            draw_pin_fields(col, pin, context.object)

    def draw_offer(self, context, naming: str) -> None:
        box = self.layout.box()
        col = box.column(align=True)
        text = f"Human rig recognised ({NAMINGS.get(naming, naming)}): set natural joint ranges?"
        for i, line in enumerate(wrapped_lines(context, text)):
            col.label(text=line, icon="ARMATURE_DATA" if i == 0 else "BLANK1")
        row = box.row(align=True)
        if operator_available(JOINT_RANGES):
            row.operator(JOINT_RANGES, text="Set Ranges").preset = "AUTO"
        row.operator("welman_ik.dismiss_ranges_offer", text="Dismiss")


class WELMAN_IK_PT_range(SidebarPanel, bpy.types.Panel):
    """The active bone's spherical joint range (``pose_bone.welman_ik_range``)."""

    bl_label = "Joint Range"
    bl_parent_id = "WELMAN_IK_PT_main"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return (obj is not None and obj.type == "ARMATURE" and obj.mode == "POSE"
                and active_pose_bone(obj) is not None)

    def draw_header(self, context):
        self.layout.prop(active_pose_bone(context.object).welman_ik_range, "use", text="")

    def draw(self, context):
        layout = self.layout
        pose_bone = active_pose_bone(context.object)
        rng = pose_bone.welman_ik_range
        layout.label(text=pose_bone.name, icon="BONE_DATA")
        col = layout.column(align=True)
        col.active = rng.use
        # Label, min, max on one row: the sidebar is too narrow for "Swing X Min" beside a field.
        for label, low, high in (("", "", ""), ("Swing X", "swing_x_min", "swing_x_max"),
                                 ("Swing Z", "swing_z_min", "swing_z_max"), ("Twist", "twist_min", "twist_max")):
            split = col.split(factor=0.32, align=True)
            split.label(text=label)
            row = split.row(align=True)
            if low:
                row.prop(rng, low, text="")
                row.prop(rng, high, text="")
            else:
                row.label(text="Min")
                row.label(text="Max")
        split = col.split(factor=0.32, align=True)
        split.label(text="Roll")
        split.prop(rng, "roll", text="")
        if operator_available(JOINT_RANGES):
            row = layout.split(factor=0.65, align=True)
            row.operator(JOINT_RANGES, text="Human Ranges").preset = "AUTO"
            row.operator(JOINT_RANGES, text="Clear").preset = "CLEAR"
        else:
            layout.label(text="Presets not available", icon="INFO")


class WELMAN_IK_PT_last_solve(SidebarPanel, bpy.types.Panel):
    bl_label = "Last Solve"
    bl_parent_id = "WELMAN_IK_PT_main"

    def draw(self, context):
        last = context.object.welman_ik.last_solve
        col = self.layout.column(align=True)
        if last.iterations == 0 and last.milliseconds == 0.0:
            col.label(text="No solve yet")
            return
        col.label(text=f"Iterations: {last.iterations}")
        col.label(text=f"Drag error: {last.drag_error * 1000:.3f} mm")
        col.label(text=f"Largest pin error: {last.max_pin_error * 1000:.3f} mm")
        if getattr(last, "eased_frames", 0):  # a bake whose goals were eased near an open range end
            col.label(text=f"Eased goals: {last.eased_pin_error * 1000:.3f} mm")
            col.label(text=f"Eased frames: {last.eased_frames}")
        col.label(text=f"Time: {last.milliseconds:.2f} ms")
        col.label(text="Converged" if last.converged else "Not converged",
                  icon="CHECKMARK" if last.converged else "ERROR")
        message = getattr(last, "message", "")
        if message:
            box = self.layout.box().column(align=True)
            for i, line in enumerate(wrapped_lines(context, message)):
                box.label(text=line, icon=("INFO" if last.converged else "ERROR") if i == 0 else "BLANK1")


class WELMAN_IK_UL_misses(bpy.types.UIList):
    """The frames the last bake or edit missed a goal on; the arrow goes to the frame."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        # An eased frame (its goal eased toward the animation) has its own icon, and its miss
        # against the eased goal after the miss from the pin's own location.
        row.label(text=f"{item.frame}", icon="IPO_EASE_IN_OUT" if item.eased else "ERROR")
        row.label(text=item.bone)
        row.label(text=f"{item.error * 1000.0:.2f} mm" + (f" ({item.goals})" if item.goals > 1 else "")
                  + (f", eased {item.eased_error * 1000.0:.2f}" if item.eased else ""))
        row.operator("welman_ik.jump_to_frame", text="", icon="FORWARD", emboss=False).frame = item.frame


class WELMAN_IK_PT_bake(SidebarPanel, bpy.types.Panel):
    bl_label = "Bake"
    bl_parent_id = "WELMAN_IK_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.object.welman_ik
        col = layout.column(align=True)
        col.use_property_split = True
        col.prop(settings, "root_motion")
        col.prop(settings, "contact_height")
        col.prop(settings, "contact_speed")
        col.prop(settings, "contact_min_frames")
        col.prop(settings, "contact_drift")
        col.prop(settings, "contact_knee_bend")
        layout.operator("welman_ik.detect_contacts", icon="SNAP_ON")
        if 0 <= settings.active_pin_index < len(settings.pins):
            pin = settings.pins[settings.active_pin_index]
            row = layout.row(align=True)
            row.prop(pin, "frame_start")
            row.prop(pin, "frame_end")
            row.prop(pin, "follow", toggle=True)
        layout.operator("welman_ik.bake", icon="ACTION")
        if len(settings.bake_misses):
            layout.label(text=f"Missed on {len(settings.bake_misses)} frame(s):", icon="ERROR")
            layout.template_list("WELMAN_IK_UL_misses", "", settings, "bake_misses", settings, "active_miss_index",
                                 rows=3)
        # Motion editing: drag the active bone at this frame; the edit blends into the
        # neighbouring frames of the assigned action.
        col = layout.column(align=True)
        col.use_property_split = True
        col.prop(settings, "motion_falloff")
        layout.operator("welman_ik.edit_motion", icon="IPO_EASE_IN_OUT")


CLASSES = (WELMAN_IK_OT_dismiss_ranges_offer, WELMAN_IK_UL_pins, WELMAN_IK_UL_misses, WELMAN_IK_PT_main,
           WELMAN_IK_PT_pins, WELMAN_IK_PT_range, WELMAN_IK_PT_last_solve, WELMAN_IK_PT_bake)
