"""Welman IK: pin bones, drag others, solved by real inverse kinematics.

The ``core`` package is pure numpy; ``blender`` translates armatures to it and back.
Importing this package does not import bpy, so the core can be tested without Blender.
"""

import atexit
import contextlib

bl_info = {
    "name": "Welman IK",
    "author": "Welman IK developers",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "3D Viewport > Sidebar > Welman IK",
    "description": "Pin bones and drag others, solved by inverse kinematics",
    "category": "Animation",
}

_registered = False


def register() -> None:
    """Register the add-on's classes and properties; registering again re-registers."""
    global _registered
    from . import blender

    if _registered:
        unregister()
    blender.register()
    _registered = True
    # A process that imports bpy as a module hangs at exit while Python-defined classes
    # are still registered, so leave registered state behind at exit (Blender itself
    # unregisters add-ons it enabled; then this does nothing).
    atexit.unregister(_unregister_at_exit)
    atexit.register(_unregister_at_exit)


def unregister(at_exit: bool = False) -> None:
    global _registered
    from . import blender

    if not _registered:
        return
    blender.unregister(at_exit)
    _registered = False


def _unregister_at_exit() -> None:
    with contextlib.suppress(Exception):  # Blender may already have torn down its types
        unregister(at_exit=True)
