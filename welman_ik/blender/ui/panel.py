"""The "Welman IK" tab of the 3D view sidebar."""

from __future__ import annotations

import functools
import textwrap

import bpy

from ..rig.polls import ArmatureOperator, linked_refusal
from ..rig.targets import cycle_reason, follows, lost_reason, other_bone
from ..rig.units import length_text, time_text
from .pin_list import WELMAN_IK_UL_pins, pin_frames, pin_name

NAMINGS = {"RIGIFY": "Rigify", "METARIG": "Rigify metarig", "MIXAMO": "Mixamo", "BVH": "BVH"}
JOINT_RANGES = "welman_ik.joint_ranges"
OPERATION_NAMES = {"DRAG": "Drag", "EDIT": "Motion edit", "BAKE": "Bake", "RETARGET": "Retarget"}
OPERATION_ICONS = {"DRAG": "RESTRICT_SELECT_OFF", "EDIT": "ACTION", "BAKE": "ACTION", "RETARGET": "ARMATURE_DATA"}


class SidebarPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Welman IK"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        draw = cls.__dict__.get("draw")
        if draw is not None:
            cls.draw = _in_sidebar(draw)

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.type == "ARMATURE"


def _in_sidebar(draw):
    """The panel's operator buttons run in the sidebar's own region. Blender lays a panel's
    buttons out to run in the area's main region (INVOKE_REGION_WIN), so their poll never saw
    the sidebar: a button that cannot work was not greyed out with its reason
    (``rig.polls.from_sidebar``) but clickable, to pop up an error; and the Drag button's drag
    started as the shortcut's does, from the bone under the pointer if the viewport behind the
    sidebar (which overlaps it) has one there, rather than from the active bone."""

    @functools.wraps(draw)
    def wrapper(self, context):
        self.layout.operator_context = "INVOKE_DEFAULT"
        return draw(self, context)

    return wrapper


# The fields each kind of pin uses, in the order the panel shows them.
# ``target_object``: what the pin follows (its fields below it are then in the target's space).
PIN_FIELDS = {
    "POSITION": ("anchor", "target_object", "location"),
    "ORIENTATION": ("target_object", "rotation", "axes"),
    "POSE": ("anchor", "target_object", "location", "rotation", "axes"),
    "LINE": ("anchor", "target_object", "location", "direction"),
    "PLANE": ("anchor", "target_object", "location", "direction"),
    "AIM": ("aim_axis", "target_object", "location"),
    "REGION": ("anchor", "target_object", "location", "radius"),
    "FLOOR": ("anchor", "target_object", "location", "direction"),
    "TOGETHER": ("anchor", "target_object", "target_bone", "target_anchor"),
    "BALANCE": ("use_support", "location", "direction"),
}
SPACE_FIELDS = ("location", "rotation", "direction")  # recorded in the target's space when the pin follows one
FIELD_LABELS = {("LINE", "direction"): "Direction", ("PLANE", "direction"): "Normal",
                ("TOGETHER", "target_anchor"): "Its Anchor", ("BALANCE", "use_support"): "Over Support",
                ("LINE", "location"): "Through", ("PLANE", "location"): "Through", ("AIM", "location"): "Aim At",
                ("REGION", "location"): "Centre", ("FLOOR", "location"): "Through",
                ("FLOOR", "direction"): "Up", ("BALANCE", "location"): "Over", ("BALANCE", "direction"): "Up"}


def draw_pin_fields(layout, pin, obj, context=None) -> None:
    """The fields of one pin that its kind uses, each editable."""
    layout.prop(pin, "kind")
    for field in PIN_FIELDS.get(pin.kind, ("anchor", "location")):
        label = FIELD_LABELS.get((pin.kind, field))
        if field == "target_object":
            draw_target(layout, pin, obj, context or bpy.context)
        elif field == "target_bone":  # a together pin's other bone: this armature's, or its target's
            target = pin.target_object
            pose = (target.pose if target.type == "ARMATURE" else None) if other_bone(pin) else obj.pose
            if pose is not None:
                layout.prop_search(pin, field, pose, "bones", text="Other Bone")
            else:
                layout.prop(pin, field, text="Other Bone")
        elif field == "location" and pin.kind == "BALANCE" and pin.use_support:
            continue  # the support polygon replaces the point
        elif label is None:
            layout.prop(pin, field)
        else:
            layout.prop(pin, field, text=label)
    if pin.kind == "BALANCE":
        bone = active_pose_bone(obj)
        if bone is not None:  # the masses the centre of mass is made of, bone by bone
            layout.label(text=bone.name, icon="BONE_DATA")
            layout.prop(bone, "welman_ik_mass", text="Mass")
    else:
        layout.prop(pin, "weight")
    if pin.frame_start or pin.frame_end:
        col = layout.column(align=True)  # (each its own label: in a row, End had none)
        col.prop(pin, "frame_start")
        col.prop(pin, "frame_end")


def draw_target(layout, pin, obj, context) -> None:
    """What the pin follows (``target_object``; another armature's bone too), why it cannot
    (a lost target, a cycle: an alert, with what to do), and the space its fields are in."""
    layout.prop(pin, "target_object", text="Target")
    target = pin.target_object
    if pin.kind != "TOGETHER" and target is not None and target.type == "ARMATURE" and target != obj:
        layout.prop_search(pin, "target_bone", target.pose, "bones", text="Bone")
    lost = lost_reason(pin)
    cycle = "" if lost else cycle_reason(obj, pin)
    problem = (f"Cannot follow: {lost}. Set its Target again, or clear it" if lost else
               f"Cannot follow: {cycle}. Pick another Target, or clear it" if cycle else "")
    if problem:
        col = layout.column(align=True)
        col.alert = True
        for i, line in enumerate(wrapped_lines(context, problem)):
            col.label(text=line, icon="ERROR" if i == 0 else "BLANK1")
    elif follows(pin) and pin.kind != "TOGETHER":
        fields = [FIELD_LABELS.get((pin.kind, f)) or pin.bl_rna.properties[f].name
                  for f in PIN_FIELDS.get(pin.kind, ()) if f in SPACE_FIELDS]
        where = " ".join(filter(None, (pin.space_name, pin.space_bone)))
        col = layout.column(align=True)
        for i, line in enumerate(wrapped_lines(context, f"{', '.join(fields)}: in {where}'s space")):
            col.label(text=line, icon="ORIENTATION_LOCAL" if i == 0 else "BLANK1")


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


def recognised_ranges(obj) -> tuple[str, int]:
    """(naming, bones the human ranges preset sets on the whole rig) of armature ``obj`` as the
    presets recognise it, or ('', 0) (also when the presets module is missing or fails: the
    panel must draw)."""
    try:
        from ..rig import presets
    except ImportError:
        return "", 0
    recognised = getattr(presets, "recognised_ranges", None)
    if recognised is None:
        return "", 0
    try:
        naming, count = recognised(obj)
    except Exception:  # noqa: BLE001 - a rig the presets choke on is simply not offered
        return "", 0
    return (str(naming or ""), int(count)) if count else ("", 0)


def ranges_offer(obj) -> tuple[str, int]:
    """(naming, bones) to offer natural joint ranges for, on the whole rig (once per rig), or
    ('', 0): the rig has a pin, no bone with a range in use, has not been offered them (a
    dismissal is saved in the .blend), and its naming is recognised."""
    settings = obj.welman_ik
    if settings.ranges_offered or not len(settings.pins) or linked_refusal(obj):
        return "", 0
    if any(pb.welman_ik_range.use for pb in obj.pose.bones):
        return "", 0
    return recognised_ranges(obj)


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
        refusal = linked_refusal(context.object)
        if refusal:
            col = layout.column(align=True)
            for i, line in enumerate(wrapped_lines(context, refusal)):
                col.label(text=line, icon="LIBRARY_DATA_DIRECT" if i == 0 else "BLANK1")
        row = layout.row()
        row.scale_y = 1.4
        row.operator("welman_ik.drag", text="Drag Active Bone", icon="CON_KINEMATIC")


def property_split(layout):
    """A column laid out as Blender's own property editors are: label left, field right, and
    no keyframe dot (none of the add-on's settings is animated)."""
    col = layout.column()
    col.use_property_split = True
    col.use_property_decorate = False
    return col


class WELMAN_IK_PT_solver(SidebarPanel, bpy.types.Panel):
    bl_label = "Solver"
    bl_parent_id = "WELMAN_IK_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        settings = context.object.welman_ik
        layout = property_split(self.layout)
        layout.prop(settings, "solver", text="Method")
        col = layout.column(align=True)
        col.prop(settings, "max_iterations", text="Iterations")
        col.prop(settings, "tolerance")
        if settings.solver == "SR_INVERSE":
            col.prop(settings, "damping")
        col = layout.column(align=True)
        col.prop(settings, "reference", text="Preferred")
        if settings.reference != "NONE":
            col.prop(settings, "reference_weight", text="Strength")
        col = layout.column(align=True, heading="Head")
        col.prop(settings, "gaze", text="Keep Gaze")
        if settings.gaze:
            col.prop_search(settings, "gaze_bone", context.object.data, "bones", text="Bone")
        layout.column(heading="Standing").prop(settings, "keep_balance", text="Keep Balance")
        col = layout.column(heading="Conflicts")
        col.prop(settings, "pins_first", text="Pins Win")
        layout.prop(settings, "chain_length", text="Chain")
        layout.prop(settings, "keyframes", text="Keys")


class WELMAN_IK_MT_pin_as(bpy.types.Menu):
    """Pin the selected bones by one part of what they are: a point, a turn, a line, a plane, an aim, a region, two bones together, or the body's balance"""

    bl_idname = "WELMAN_IK_MT_pin_as"
    bl_label = "Pin As"

    def draw(self, context):
        self.layout.operator_enum("welman_ik.pin", "kind")


class WELMAN_IK_PT_pins(SidebarPanel, bpy.types.Panel):
    bl_label = "Pins"
    bl_parent_id = "WELMAN_IK_PT_main"

    def draw(self, context):
        layout = self.layout
        settings = context.object.welman_ik
        naming, count = ranges_offer(context.object)
        if naming:
            self.draw_offer(context, naming, count)
        # The list with its buttons beside it, as Blender's own lists have them.
        row = layout.row()
        row.template_list("WELMAN_IK_UL_pins", "", settings, "pins", settings, "active_pin_index", rows=4)
        col = row.column(align=True)
        # Pin holds the whole bone as it is (a foot stays flat on its spot, a hand keeps its
        # turn); Pin As offers the other kinds.
        col.operator("welman_ik.pin", icon="ADD", text="").kind = "POSE"
        col.operator("welman_ik.remove_pin", icon="REMOVE", text="")
        col.separator()
        col.menu(WELMAN_IK_MT_pin_as.bl_idname, icon="DOWNARROW_HLT", text="")
        col.operator("welman_ik.pin_to", icon="CON_CHILDOF", text="")  # (its kind and target: its redo panel)
        col.separator()
        col.operator("welman_ik.unpin", icon="UNPINNED", text="")
        col.operator("welman_ik.clear_pins", icon="X", text="")
        row = layout.row(align=True)
        row.operator("welman_ik.lock", icon="LOCKED")
        row.operator("welman_ik.unlock", icon="UNLOCKED")
        if 0 <= settings.active_pin_index < len(settings.pins):
            pin = settings.pins[settings.active_pin_index]
            draw_pin_fields(property_split(layout), pin, context.object, context)

    def draw_offer(self, context, naming: str, count: int) -> None:
        box = self.layout.box()
        col = box.column(align=True)
        text = (f"Human rig recognised ({NAMINGS.get(naming, naming)} naming). Set natural joint ranges on its "
                f"{count} human joints, the whole rig?")
        for i, line in enumerate(wrapped_lines(context, text)):
            col.label(text=line, icon="ARMATURE_DATA" if i == 0 else "BLANK1")
        row = box.row(align=True)
        if operator_available(JOINT_RANGES):
            button = row.operator(JOINT_RANGES, text="Set Ranges")
            button.preset, button.every_bone = "AUTO", True
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
            row.operator(JOINT_RANGES, text="Natural Ranges").preset = "AUTO"
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
        scene = getattr(context, "scene", None)
        operation = getattr(last, "operation", "DRAG")
        # Only what applies to the operation: a bake has no drag, a retarget neither a drag nor
        # pins of its own (its plants' miss; each group's and gate's in the Retarget panel).
        col.label(text=OPERATION_NAMES.get(operation, operation), icon=OPERATION_ICONS.get(operation, "NONE"))
        if operation in {"DRAG", "EDIT"}:
            col.label(text=f"Iterations: {last.iterations}")
            col.label(text=f"Drag error: {length_text(scene, last.drag_error)}")
        if operation == "RETARGET":
            col.label(text=f"Plants' largest miss: {length_text(scene, last.max_pin_error)}")
        else:
            col.label(text=f"Largest pin error: {length_text(scene, last.max_pin_error)}")
        if getattr(last, "eased_frames", 0):  # a bake whose goals were eased near an open range end
            col.label(text=f"Eased goals: {length_text(scene, last.eased_pin_error)}")
            col.label(text=f"Eased frames: {last.eased_frames}")
        col.label(text=f"Time: {time_text(last.milliseconds)}")
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
        scene = getattr(context, "scene", None)
        row.label(text=length_text(scene, item.error) + (f" ({item.goals})" if item.goals > 1 else "")
                  + (f", eased {length_text(scene, item.eased_error)}" if item.eased else ""))
        row.operator("welman_ik.jump_to_frame", text="", icon="FORWARD", emboss=False).frame = item.frame


class WELMAN_IK_PT_bake(SidebarPanel, bpy.types.Panel):
    bl_label = "Bake"
    bl_parent_id = "WELMAN_IK_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.object.welman_ik
        property_split(layout).prop(settings, "root_motion")
        # The feet's contacts, found in the animation and made into pins with frame ranges.
        layout.label(text="Contacts", icon="SNAP_ON")
        col = property_split(layout).column(align=True)
        for name, text in (("contact_height", "Height"), ("contact_speed", "Speed"), ("contact_min_frames", "Frames"),
                           ("contact_drift", "Drift"), ("contact_knee_bend", "Knee Bend"), ("contact_floor", "Floor")):
            col.prop(settings, name, text=text)
        layout.operator("welman_ik.detect_contacts")
        if 0 <= settings.active_pin_index < len(settings.pins):
            pin = settings.pins[settings.active_pin_index]
            # Start and End 0 mean "always": said in words, not left to the tooltip.
            layout.label(text=f"Pin on {pin_name(pin)}: {pin_frames(pin)}", icon="PINNED")
            col = property_split(layout).column(align=True)
            col.prop(pin, "frame_start", text="Start")
            col.prop(pin, "frame_end", text="End")
            col.prop(pin, "follow")
        layout.separator()
        layout.operator("welman_ik.bake", icon="ACTION")
        if len(settings.bake_misses):
            layout.label(text=f"Missed on {len(settings.bake_misses)} frame(s):", icon="ERROR")
            layout.template_list("WELMAN_IK_UL_misses", "", settings, "bake_misses", settings, "active_miss_index",
                                 rows=3)
        # Motion editing: drag the active bone at this frame; the edit blends into the
        # neighbouring frames of the assigned action.
        layout.label(text="Motion Editing", icon="IPO_EASE_IN_OUT")
        property_split(layout).prop(settings, "motion_falloff")
        layout.operator("welman_ik.edit_motion")


CLASSES = (WELMAN_IK_OT_dismiss_ranges_offer, WELMAN_IK_UL_pins, WELMAN_IK_UL_misses, WELMAN_IK_PT_main,
           WELMAN_IK_PT_solver, WELMAN_IK_MT_pin_as, WELMAN_IK_PT_pins, WELMAN_IK_PT_range, WELMAN_IK_PT_last_solve,
           WELMAN_IK_PT_bake)
