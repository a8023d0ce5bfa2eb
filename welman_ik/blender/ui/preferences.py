"""Add-on preferences (defaults for the interactive drag) and the drag's shortcut.

``register`` adds the shortcut to the Pose keymap and tells the drag where to read its time
per mouse event (``drag.state``); ``unregister`` takes both back."""

from __future__ import annotations

import bpy
from bpy.props import FloatProperty

from ..drag.operator import WELMAN_IK_OT_drag
from ..drag.state import DRAG_STATE, EVENT_BUDGET

ADDON = __package__.rsplit(".", 2)[0]  # "welman_ik", or "bl_ext.<repository>.welman_ik" (less ".blender.ui")
# The interactive drag starts on the bone under the mouse (or the active bone).
DRAG_SHORTCUT = {"type": "D", "value": "PRESS", "ctrl": True, "shift": True}
_keymaps: list = []


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


def register() -> None:
    DRAG_STATE.budget_source = event_budget
    keyconfig = bpy.context.window_manager.keyconfigs.addon
    if keyconfig is not None:
        keymap = keyconfig.keymaps.new(name="Pose", space_type="EMPTY")
        item = keymap.keymap_items.new(WELMAN_IK_OT_drag.bl_idname, **DRAG_SHORTCUT)
        _keymaps.append((keymap, item))


def unregister(at_exit: bool = False) -> None:
    """``at_exit``: the process is ending and Blender may already have freed its keymaps."""
    if not at_exit:
        for keymap, item in _keymaps:
            keymap.keymap_items.remove(item)
    _keymaps.clear()
    DRAG_STATE.budget_source = None


CLASSES = (WELMAN_IK_Preferences,)
