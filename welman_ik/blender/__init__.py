"""The Blender layer: the only part of Welman IK that imports bpy.

Folders by idea, each importing only those below it: ``ui`` → ``bake`` → ``drag`` → ``pins``
→ ``rig`` → ``welman_ik.core`` (checked by ``lint-imports``, see ``.importlinter``). This module
registers their classes."""

from __future__ import annotations

import bpy

from .bake import operators as bake_operators
from .drag import operator as drag_operator
from .pins import operators as pin_operators
from .rig import presets, properties
from .ui import overlay, panel, preferences

CLASSES = (preferences.CLASSES + pin_operators.CLASSES + drag_operator.CLASSES + bake_operators.CLASSES
           + presets.CLASSES + panel.CLASSES)
_keymaps: list = []

# The interactive drag starts on the bone under the mouse (or the active bone).
DRAG_SHORTCUT = {"type": "D", "value": "PRESS", "ctrl": True, "shift": True}


def register() -> None:
    properties.register()
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    overlay.register()
    keyconfig = bpy.context.window_manager.keyconfigs.addon
    if keyconfig is not None:
        keymap = keyconfig.keymaps.new(name="Pose", space_type="EMPTY")
        item = keymap.keymap_items.new("welman_ik.drag", **DRAG_SHORTCUT)
        _keymaps.append((keymap, item))


def unregister(at_exit: bool = False) -> None:
    """``at_exit``: the process is ending and Blender may already have freed its keymaps."""
    if not at_exit:
        for keymap, item in _keymaps:
            keymap.keymap_items.remove(item)
    _keymaps.clear()
    overlay.unregister()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
