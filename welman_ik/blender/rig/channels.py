"""A pose bone's channels: its rotation read and written in its own rotation mode, and
snapshots that put every channel back bit for bit.

Rotations reach the solver as Euler angles in a bone's hinge order and come back in the
bone's own mode (quaternion, any Euler order, axis-angle), continuous with the value the
bone held, so keys interpolate cleanly. The conversions work on arrays of bones at once
(``rotations.ROTATION_VALUES``), and ``PoseArrays`` reads and writes every bone's channels in bulk.
"""

from __future__ import annotations

import functools
import math

import bpy
import numpy as np
from mathutils import Euler, Quaternion, Vector

from .rotations import AXES, EULER_ORDERS, axis_angle_quaternions

HINGE_ORDER = "XYZ"  # Euler order used to split quaternion and axis-angle rotations
# ``foreach_get`` reads enum properties as their values from Blender 4.2 on (3.4 gives other numbers).
ENUMS_IN_BULK = bpy.app.version >= (4, 2, 0)


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


ROTATION_SLOTS = {"rotation_quaternion": 1, "rotation_euler": 2, "rotation_axis_angle": 3}


class BoneChannels:
    """One bone's rotation and location channels, to put back exactly."""

    CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle")  # as in ``values``

    def __init__(self, pose_bone=None, values: tuple | None = None):
        """From a pose bone, or ``values``: (location, quaternion, Euler, axis-angle) tuples."""
        self.values = values if pose_bone is None else (
            tuple(pose_bone.location), tuple(pose_bone.rotation_quaternion),
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

    def changed(self, obj, angle: float = 0.0, length: float = 0.0) -> list[str]:
        """Names of the bones whose channels differ from the snapshot: with ``angle`` [rad]
        and ``length`` [m], only those that turned or moved by more (or changed rotation mode
        or scale at all)."""
        now = PoseSnapshot(obj).values
        names = [name for name, value in self.values.items() if now.get(name) != value]
        if angle <= 0.0 and length <= 0.0:
            return names
        return [name for name in names if _channels_moved(self.values[name], now[name], angle, length)]

    def restore(self, obj) -> None:
        for name in self.changed(obj):
            pb = obj.pose.bones[name]
            mode, *channels = self.values[name]
            pb.rotation_mode = mode
            for channel, value in zip(self.CHANNELS, channels):
                setattr(pb, channel, value)



def _channels_moved(before: tuple, after: tuple, angle: float, length: float) -> bool:
    """Snapshot values ``after`` differ from ``before`` by a turn over ``angle`` [rad], a move
    over ``length`` [m], another rotation mode or another scale (the turn in double precision:
    mathutils' single precision cannot tell 1e-4 rad from nothing)."""
    if before[0] != after[0] or before[5] != after[5]:
        return True
    if np.abs(np.subtract(after[1], before[1])).max() > length:
        return True
    a, b = _snapshot_quaternion(before), _snapshot_quaternion(after)
    # The turn between them, conj(a) b: its vector part formed directly (from the dot product
    # alone, 1 - dot**2 cancels to nothing below 1e-7 rad).
    vector = a[0] * b[1:] - b[0] * a[1:] - np.cross(a[1:], b[1:])
    return 2.0 * math.atan2(float(np.linalg.norm(vector)), abs(float(a @ b))) > angle


def _snapshot_quaternion(values: tuple) -> np.ndarray:
    """The unit rotation of snapshot ``values`` (mode, location, quaternion, Euler, axis-angle, scale)."""
    mode = values[0]
    if mode == "QUATERNION":
        quat = np.array(values[2], dtype=float)
        norm = float(np.linalg.norm(quat))
        return quat / norm if norm > 0.0 else np.array([1.0, 0.0, 0.0, 0.0])
    if mode == "AXIS_ANGLE":
        return axis_angle_quaternions(np.array([values[4]]))[0]
    return euler_quaternion(values[3], mode)


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


ROTATION_PATHS = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}  # Euler: rotation_euler
FEW_READS = 128  # the same for reading them: the arrays' work is larger, mathutils' no different


def rotation_path(mode: str) -> str:
    """The data path of the channel rotation mode ``mode`` stores its rotation in."""
    return ROTATION_PATHS.get(mode, "rotation_euler")


class PoseArrays:
    """The channels of every pose bone of an armature as float32 arrays, one row per bone
    in ``pose.bones`` order, read and written in bulk (``foreach_get``/``foreach_set``):
    each channel is read on first use; ``flush`` writes back the ones that were set."""

    SIZES = {"location": 3, "rotation_quaternion": 4, "rotation_euler": 3, "rotation_axis_angle": 4, "scale": 3}

    def __init__(self, pose_bones):
        self.pose_bones = pose_bones
        self.arrays: dict[str, np.ndarray] = {}
        self.changed: set[str] = set()
        self._modes = None

    @classmethod
    def held(cls, pose_bones, arrays: dict, modes: np.ndarray) -> PoseArrays:
        """The channels ``arrays`` (channel -> (bones, width) float32) and rotation ``modes`` as
        if read from ``pose_bones`` (a frame of a clip, not put on the bones)."""
        pose = cls(pose_bones)
        pose.arrays = dict(arrays)
        pose._modes = modes
        return pose

    def __getitem__(self, channel: str) -> np.ndarray:
        if channel not in self.arrays:
            values = np.empty((len(self.pose_bones), self.SIZES[channel]), dtype=np.float32)
            self.pose_bones.foreach_get(channel, values.ravel())
            self.arrays[channel] = values
        return self.arrays[channel]

    @property
    def modes(self) -> np.ndarray:
        """Every pose bone's rotation mode (n,) ('QUATERNION', 'XYZ', ..., 'AXIS_ANGLE')."""
        if self._modes is None:
            if ENUMS_IN_BULK:
                values = np.empty(len(self.pose_bones), dtype=np.int32)  # (an enum: 32-bit ints, whatever the buffer)
                self.pose_bones.foreach_get("rotation_mode", values)
                self._modes = _mode_names()[values]
            else:
                self._modes = np.array([pb.rotation_mode for pb in self.pose_bones], dtype=str).reshape(-1)
        return self._modes

    def set(self, channel: str, rows: np.ndarray, values: np.ndarray) -> None:
        self[channel][rows] = values
        self.changed.add(channel)

    def flush(self) -> bool:
        """Write the channels that were set onto the pose bones; False when there were none.
        The caller tags the armature for evaluation (``foreach_set`` runs no update)."""
        for channel in self.changed:
            self.pose_bones.foreach_set(channel, self.arrays[channel].ravel())
        return bool(self.changed)


@functools.cache
def _mode_names() -> np.ndarray:
    """The names of the rotation modes indexed by their enum values (a negative value, as
    'AXIS_ANGLE''s, indexes from the end)."""
    items = {i.value: i.identifier for i in bpy.types.PoseBone.bl_rna.properties["rotation_mode"].enum_items}
    table = np.empty(max(items) + 1 - min(min(items), 0), dtype=object)
    for value, name in items.items():
        table[value] = name
    return table.astype(str)
