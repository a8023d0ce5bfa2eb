"""Add-on preferences: defaults for the interactive drag."""

from __future__ import annotations

import bpy
from bpy.props import FloatProperty

from ..drag.session import EVENT_BUDGET

ADDON = __package__.rsplit(".", 2)[0]  # "welman_ik", or "bl_ext.<repository>.welman_ik" (less ".blender.ui")


class WELMAN_IK_Preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON

    event_milliseconds: FloatProperty(
        name="Time per Mouse Event", min=1.0, soft_max=200.0, default=1000.0 * EVENT_BUDGET, unit="TIME_ABSOLUTE",
        description="Solving stops after this many milliseconds per mouse event, so the cursor never stalls",
    )

    def draw(self, context):
        self.layout.prop(self, "event_milliseconds")


def event_budget(context) -> float:
    """Seconds of solving per mouse event (the preference, or the default when the add-on
    runs from a checkout without an entry in the preferences)."""
    addon = context.preferences.addons.get(ADDON)
    prefs = getattr(addon, "preferences", None) if addon is not None else None
    return (prefs.event_milliseconds if prefs is not None else 1000.0 * EVENT_BUDGET) / 1000.0


CLASSES = (WELMAN_IK_Preferences,)
