"""The sidebar's Retarget section: the source armature, the retarget map as a list with the
active line's fields, the Retarget button, and each goal group's largest miss."""

from __future__ import annotations

import math

import bpy

from ..rig.units import length_text
from .panel import SidebarPanel, property_split, wrapped_lines


class WELMAN_IK_UL_retarget(bpy.types.UIList):
    """The retarget map: what each line follows (its icon; the name in its tooltip), this
    armature's bone and the source's bone it follows, the row's whole width for the names."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.prop(item, "kind", text="", icon_only=True, emboss=False)
        row.label(text=f"{item.target_bone or '?'}  \u2190  {item.source_bone or '?'}")


class WELMAN_IK_PT_retarget(SidebarPanel, bpy.types.Panel):
    bl_label = "Retarget"
    bl_parent_id = "WELMAN_IK_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.object.welman_ik
        source = settings.retarget_source
        # The source's name has the whole width (beside a label it showed a few characters).
        col = layout.column(align=True)
        col.label(text="Source:")
        col.prop(settings, "retarget_source", text="", icon="ARMATURE_DATA")
        name = source.name if source is not None else ""
        # Greyed out by their poll, which says why in the tooltip (no source, not animated).
        layout.operator("welman_ik.retarget_map_fill", text="Fill Map").source = name
        layout.template_list("WELMAN_IK_UL_retarget", "", settings, "retarget_map", settings, "active_retarget_index",
                             rows=4)
        if 0 <= settings.active_retarget_index < len(settings.retarget_map):
            line = settings.retarget_map[settings.active_retarget_index]
            col = property_split(layout).column(align=True)
            col.prop_search(line, "target_bone", context.object.data, "bones", text="Bone")
            if source is not None:
                col.prop_search(line, "source_bone", source.data, "bones", text="Follows")
            else:
                col.prop(line, "source_bone", text="Follows")
            col.prop(line, "kind")
            col.prop(line, "weight")
        property_split(layout).prop(settings, "retarget_floor")
        layout.operator("welman_ik.retarget", icon="ARMATURE_DATA").source = name
        groups = settings.last_solve.groups
        if len(groups) and settings.last_solve.operation == "RETARGET":
            box = layout.box().column(align=True)
            for group in groups:
                # Each figure whole: the value on the group's line, where and when on the next.
                box.label(text=f"{group.group.capitalize()}: {figure(context.scene, group)}")
                for line in wrapped_lines(context, f"{group.bone}, frame {group.frame}"):
                    box.label(text=line, icon="BLANK1")


def figure(scene, group) -> str:
    """A goal group's or a gate's largest miss as a person reads it: degrees, a share, a length."""
    if group.group in {"orientations", "bends", "facing"}:
        return f"{math.degrees(group.error):.1f}\u00b0"
    if group.group == "stretch":
        return f"{100.0 * group.error:.1f}%"
    return length_text(scene, group.error)


CLASSES = (WELMAN_IK_UL_retarget, WELMAN_IK_PT_retarget)
