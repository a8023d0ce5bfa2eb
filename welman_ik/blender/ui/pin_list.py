"""The pins list of the sidebar: each row the enable toggle, the kind as its icon, then one
label: the bone's whole name (and what it follows, "hand.R → Cup"), the pin's point along the
bone and the frames it is in force on (greyed when the scene's frame is outside them), e.g.
"foot.L heel 12–40", "hand_ik.R always"; a warning icon where its target is lost. Filtered and
sorted by the name, as Blender's own lists are."""

from __future__ import annotations

import fnmatch

import bpy

from ..bake.contacts import HEEL, TOE
from ..bake.frames import has_frames, in_force
from ..rig.targets import follows, lost_reason, other_bone, own_armature

POINT_KINDS = frozenset({"POSITION", "POSE", "LINE", "PLANE", "REGION", "FLOOR"})  # a point at the anchor, held
POINT_WORDS = ("head", "")  # anchor 0 and 1 of any pin (the tail, the default, goes without saying)
PLANT_WORDS = ("heel", "toe")  # ... of a plant (Detect Contacts: a position pin with frames at HEEL or TOE of a foot)
FOOT_WORDS = ("foot", "ankle", "heel", "toe")  # in a bone's name (any case): a foot, whose plants have a heel and toe


def pin_name(pin) -> str:
    """What the pins list shows of a pin: its bone, both bones of a together pin, or the
    centre of mass of a balance pin; then what it follows, if anything: "hand.R → Cup",
    "hand.L → Partner upper_arm.R"."""
    if pin.kind == "BALANCE":
        name = "centre of mass"
    elif pin.kind == "TOGETHER" and not other_bone(pin):
        return f"{pin.bone} + {pin.target_bone}"  # (its own armature: it follows nothing outside)
    else:
        name = pin.bone
    target = pin_target(pin)
    return f"{name} → {target}" if target else name


def pin_target(pin) -> str:
    """What ``pin`` follows, short: the object's name, with the bone of an armature ("Partner
    upper_arm.R"); the name it had if it is gone; '' for none."""
    if not follows(pin) or (own_armature(pin) and pin.kind == "TOGETHER"):
        return ""
    target = pin.target_object
    name = target.name if target is not None else pin.space_name
    bone = pin.target_bone if target is not None and target.type == "ARMATURE" and not own_armature(pin) else ""
    return " ".join(filter(None, (name, bone or pin.space_bone)))


def pin_point(pin) -> str:
    """The held point along the bone, short: "heel" or "toe" for a plant of a foot (Detect
    Contacts makes them at the foot bone's head and tail), "head" at 0, nothing at the tail
    (the default), else the anchor ("0.35"); "" for a kind that holds no point of its bone."""
    if pin.kind not in POINT_KINDS:
        return ""
    anchor = float(pin.anchor)
    foot = any(word in pin.bone.lower() for word in FOOT_WORDS)
    words = PLANT_WORDS if pin.kind == "POSITION" and has_frames(pin) and foot else POINT_WORDS
    for word, at in zip(words, (HEEL, TOE)):
        if abs(anchor - at) < 1e-4:
            return word
    return f"{anchor:.2f}"


def pin_frames(pin) -> str:
    """The frames ``pin`` is in force on: "12–40", or "always"."""
    return f"{pin.frame_start}–{pin.frame_end}" if has_frames(pin) else "always"


def pin_detail(pin) -> str:
    """The row's text after the name: the point and the frames, "heel 12–40"."""
    return " ".join(text for text in (pin_point(pin), pin_frames(pin)) if text)


class WELMAN_IK_UL_pins(bpy.types.UIList):
    """The armature's pins: enable toggle, the bone's whole name, the kind, the point and the
    frames; filtered and sorted by bone name as Blender's own lists are."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        pose = data.id_data.pose
        body = row.row(align=True)
        missing = None if item.kind == "BALANCE" or (pose is not None and item.bone in pose.bones) else item.bone
        if missing is None and item.kind == "TOGETHER" and (pose is None or item.target_bone not in pose.bones):
            missing = item.target_bone
        if missing is None:
            body.prop(item, "enabled", text="")
            # The kind as its icon (its name and description in the icon's tooltip): the
            # bone's whole name has the rest of the row.
            body.prop(item, "kind", text="", icon_only=True, emboss=False)
            # One label, so that a narrow sidebar cuts the detail's end, never the name;
            # greyed on a frame the pin is not in force on.
            scene = getattr(context, "scene", None)
            text = body.row(align=True)
            text.active = in_force(item, None if scene is None else scene.frame_current)
            lost = follows(item) and lost_reason(item)  # kept, but the solves leave it out until set again
            text.label(text=f"{pin_name(item)} {pin_detail(item)}", icon="ERROR" if lost else "NONE")
        else:
            # Renamed or deleted: kept (the solver refuses it), greyed, with the reason; the
            # list's Remove button takes it out.
            body.active = False
            body.label(text=f"bone '{missing}' missing", icon="ERROR")

    def filter_items(self, context, data, propname):
        """Filter and sort by the name each row shows (a balance pin's "centre of mass", a
        together pin's two bones), with Blender's own wildcards; sorted, one bone's pins go
        by their frames, then heel before toe."""
        pins = getattr(data, propname)
        names = [pin_name(pin).lower() for pin in pins]
        flags = []
        if self.filter_name:
            pattern = self.filter_name.lower()
            pattern = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
            flags = [self.bitflag_filter_item if fnmatch.fnmatchcase(name, pattern) != self.use_filter_invert else 0
                     for name in names]
        order = []
        if self.use_filter_sort_alpha:
            keys = [(name, pin.frame_start, pin.frame_end, pin.anchor) for name, pin in zip(names, pins)]
            ranks = sorted(range(len(names)), key=keys.__getitem__)
            order = [0] * len(names)
            for rank, i in enumerate(ranks):
                order[i] = rank
        return flags, order

