"""The Blender layer: the only part of Welman IK that imports bpy."""

from __future__ import annotations

import bpy

from . import operators, panel, properties

_CLASSES = operators.CLASSES + panel.CLASSES


def register() -> None:
    properties.register()
    for cls in _CLASSES:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(_CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
