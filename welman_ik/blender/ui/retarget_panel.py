"""The sidebar's Retarget section: the source armature, the retarget map as a list with the
active line's fields, the Retarget button, and each goal group's largest miss."""

from __future__ import annotations

import math

import bpy

from ..rig.units import length_text
from .panel import SidebarPanel, property_split


class WELMAN_IK_UL_retarget(bpy.types.UIList):
    """The retarget map: this armature's bone, the source's bone it follows, and what of it."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.prop(item, "target_bone", text="", emboss=False)
        row.prop(item, "source_bone", text="", emboss=False)
        row.prop(item, "kind", text="")


class WELMAN_IK_PT_retarget(SidebarPanel, bpy.types.Panel):
    bl_label = "Retarget"
    bl_parent_id = "WELMAN_IK_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        settings = context.object.welman_ik
        source = settings.retarget_source
        property_split(layout).prop(settings, "retarget_source")
        name = source.name if source is not None else ""
        row = layout.row()
        row.enabled = source is not None
        row.operator("welman_ik.retarget_map_fill", text="Fill Map").source = name
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
        row = layout.row()
        row.enabled = source is not None
        row.operator("welman_ik.retarget", icon="ARMATURE_DATA").source = name
        for group in settings.last_solve.groups:
            value = (f"{math.degrees(group.error):.1f}\u00b0" if group.group in {"orientations", "bends", "facing"}
                     else f"{100.0 * group.error:.1f}%" if group.group == "stretch"
                     else length_text(context.scene, group.error))
            layout.label(text=f"{group.group.capitalize()}: {value} ({group.bone}, frame {group.frame})")


CLASSES = (WELMAN_IK_UL_retarget, WELMAN_IK_PT_retarget)
