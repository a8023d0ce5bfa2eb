"""Welman IK: pin bones, drag others, solved by real inverse kinematics.

The ``core`` package is pure numpy; ``blender`` translates armatures to it and back.
Importing this package does not import bpy, so the core can be tested without Blender.
"""

bl_info = {
    "name": "Welman IK",
    "author": "Welman IK developers",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "3D Viewport > Sidebar > Welman IK",
    "description": "Pin bones and drag others, solved by inverse kinematics",
    "category": "Animation",
}


def register() -> None:
    from . import blender

    blender.register()


def unregister() -> None:
    from . import blender

    blender.unregister()
