"""A pose bone's channels: its rotation read and written in its own rotation mode, and
snapshots that put every channel back bit for bit.

Rotations reach the solver as Euler angles in a bone's hinge order and come back in the
bone's own mode (quaternion, any Euler order, axis-angle), continuous with the value the
bone held, so keys interpolate cleanly.
"""

from __future__ import annotations

import math

import numpy as np
from mathutils import Euler, Quaternion, Vector

HINGE_ORDER = "XYZ"  # Euler order used to split quaternion and axis-angle rotations
AXES = "XYZ"
EULER_ORDERS = {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"}


def bone_order(pose_bone) -> str:
    """The Euler order of a bone's hinges: ``HINGE_ORDER``, or the bone's own Euler order
    when one of its rotation channels is locked or IK-limited."""
    mode = pose_bone.rotation_mode
    if mode in EULER_ORDERS and (
        any(pose_bone.lock_rotation) or any(getattr(pose_bone, f"use_ik_limit_{a}") for a in "xyz")
    ):
        return mode
    return HINGE_ORDER


def bone_quaternion(pose_bone) -> Quaternion:
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        return pose_bone.rotation_quaternion.normalized()
    if mode == "AXIS_ANGLE":
        angle, *axis = pose_bone.rotation_axis_angle
        return Quaternion(Vector(axis).normalized() if Vector(axis).length > 0 else Vector((0, 1, 0)), angle)
    return pose_bone.rotation_euler.to_quaternion()


def bone_euler(pose_bone, order: str = HINGE_ORDER, compatible: Euler | None = None) -> Euler:
    """The bone's rotation as Euler angles in ``order`` (its hinge order); with
    ``compatible``, the equivalent angles closest to those."""
    if pose_bone.rotation_mode == order:
        return pose_bone.rotation_euler.copy()
    if pose_bone.rotation_mode in EULER_ORDERS:
        rotation = pose_bone.rotation_euler.to_matrix()
    else:
        rotation = bone_quaternion(pose_bone)
    return rotation.to_euler(order, compatible) if compatible is not None else rotation.to_euler(order)


ROTATION_SLOTS = {"rotation_quaternion": 1, "rotation_euler": 2, "rotation_axis_angle": 3}


class BoneChannels:
    """One bone's rotation and location channels, to put back exactly."""

    def __init__(self, pose_bone):
        self.values = (tuple(pose_bone.location), tuple(pose_bone.rotation_quaternion),
                       tuple(pose_bone.rotation_euler), tuple(pose_bone.rotation_axis_angle))

    def restore(self, pose_bone) -> None:
        (pose_bone.location, pose_bone.rotation_quaternion, pose_bone.rotation_euler,
         pose_bone.rotation_axis_angle) = self.values

    def rotation(self, path: str) -> tuple:
        return self.values[ROTATION_SLOTS[path]]


class PoseSnapshot:
    """Every pose channel of every bone, to restore bit for bit."""

    CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")

    def __init__(self, obj):
        self.values = {
            pb.name: (pb.rotation_mode, *(tuple(getattr(pb, c)) for c in self.CHANNELS)) for pb in obj.pose.bones
        }

    def changed(self, obj) -> list[str]:
        """Names of the bones whose channels differ from the snapshot."""
        now = PoseSnapshot(obj).values
        return [name for name, value in self.values.items() if now.get(name) != value]

    def restore(self, obj) -> None:
        for name in self.changed(obj):
            pb = obj.pose.bones[name]
            mode, *channels = self.values[name]
            pb.rotation_mode = mode
            for channel, value in zip(self.CHANNELS, channels):
                setattr(pb, channel, value)


def euler_quaternion(angles, order: str) -> np.ndarray:
    """(w, x, y, z) of Euler ``angles`` (x, y, z) [rad] in Blender's ``order``, in double
    precision (mathutils works in single precision, which costs ~1e-5 m at arm's length)."""
    w, x, y, z = 1.0, 0.0, 0.0, 0.0
    for letter in order:  # 'XYZ' applies X first: q = qz * qy * qx
        i = AXES.index(letter)
        c, s = math.cos(0.5 * angles[i]), math.sin(0.5 * angles[i])
        if i == 0:
            w, x, y, z = c * w - s * x, c * x + s * w, c * y - s * z, c * z + s * y
        elif i == 1:
            w, x, y, z = c * w - s * y, c * x + s * z, c * y + s * w, c * z - s * x
        else:
            w, x, y, z = c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w
    return np.array([w, x, y, z])


def rotation_channels(pose_bone, euler: Euler) -> tuple[str, tuple]:
    """(data path, values) of a rotation in the bone's own mode, continuous with the value
    the bone holds now: Euler angles compatible with it, a quaternion on its hemisphere,
    an axis on the side of its axis (so keys interpolate cleanly)."""
    mode = pose_bone.rotation_mode
    if mode in EULER_ORDERS:
        if euler.order != mode:
            euler = euler.to_matrix().to_euler(mode, pose_bone.rotation_euler)
        return "rotation_euler", tuple(euler)
    quat = euler_quaternion(euler, euler.order)
    if quat @ np.array(bone_quaternion(pose_bone)) < 0.0:
        quat = -quat
    if mode == "QUATERNION":
        return "rotation_quaternion", tuple(float(v) for v in quat)
    _, *previous_axis = pose_bone.rotation_axis_angle
    norm = float(np.linalg.norm(quat[1:]))
    angle = 2.0 * float(np.arctan2(norm, quat[0]))
    axis = quat[1:] / norm if norm > 0.0 else np.array(previous_axis, dtype=float)
    if axis @ np.array(previous_axis) < 0.0:
        axis, angle = -axis, -angle
    return "rotation_axis_angle", (angle, *(float(v) for v in axis))


def set_rotation(pose_bone, euler: Euler) -> None:
    """Write a rotation in the bone's own mode, continuous with its previous value."""
    setattr(pose_bone, *rotation_channels(pose_bone, euler))
