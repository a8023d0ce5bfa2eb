"""The Blender layer: the only part of Welman IK that imports bpy.

Folders by idea, each importing only those below it: ``ui`` → ``bake`` → ``drag`` → ``pins``
→ ``rig`` → ``welman_ik.core`` (checked by ``lint-imports``, see ``.importlinter``). This module
registers their classes."""

from __future__ import annotations

import bpy

from .bake import operators as bake_operators
from .bake import retarget_operator
from .drag import operator as drag_operator
from .pins import operators as pin_operators
from .rig import presets, properties, retarget_map, views
from .ui import overlay, panel, preferences, retarget_panel

CLASSES = (preferences.CLASSES + pin_operators.CLASSES + drag_operator.CLASSES + bake_operators.CLASSES
           + retarget_operator.CLASSES
           + presets.CLASSES + retarget_map.CLASSES + panel.CLASSES + retarget_panel.CLASSES)


def register() -> None:
    properties.register()
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    overlay.register()
    preferences.register()
    views.register()


def unregister(at_exit: bool = False) -> None:
    """``at_exit``: the process is ending and Blender may already have freed its keymaps."""
    views.unregister()
    preferences.unregister(at_exit)
    overlay.unregister()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
