"""Pose-bone selection and visibility, whichever Blender is running.

Blender 5.0 moved pose-mode selection and hiding from ``Bone`` to ``PoseBone``.
"""

from __future__ import annotations

import bpy

_ON_POSE_BONE = "select" in bpy.types.PoseBone.bl_rna.properties


def is_selected(pose_bone) -> bool:
    return bool(pose_bone.select if _ON_POSE_BONE else pose_bone.bone.select)


def set_selected(pose_bone, value: bool) -> None:
    if _ON_POSE_BONE:
        pose_bone.select = value
    else:
        pose_bone.bone.select = value


def is_hidden(pose_bone) -> bool:
    return bool(pose_bone.hide if _ON_POSE_BONE else pose_bone.bone.hide)
