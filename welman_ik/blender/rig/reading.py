"""The pose bones' rotations read as the tree's Euler angles, each bone in its hinges' order:
one frame from the pose bones (``read_eulers``), or every frame of a clip at once from its
channels (``read_eulers_frames``, with a frame axis: the action's F-curves evaluated for a
chunk of a bake's frames, ``bake.sampling.Sampler.values``), through the same quaternions
(``rotation_quaternions``) and decompositions."""

from __future__ import annotations

import numpy as np
from mathutils import Euler

from .channels import FEW_READS, PoseArrays, bone_quaternion
from .rotations import (
    EULER_ORDERS,
    axis_angle_quaternions,
    closest_in_order,
    euler_pairs,
    euler_quaternions,
    matrix_eulers,
    order_axes,
    quaternion_matrices,
)


def _bone_euler(pose_bone, order: str, compatible: Euler | None) -> Euler:
    """One bone's rotation as Euler angles in ``order`` (mathutils, in single precision)."""
    if pose_bone.rotation_mode in EULER_ORDERS:
        rotation = pose_bone.rotation_euler.to_matrix()
    else:
        rotation = bone_quaternion(pose_bone)
    return rotation.to_euler(order, compatible) if compatible is not None else rotation.to_euler(order)


def read_eulers(pose: PoseArrays, rows: np.ndarray, orders: np.ndarray, axes: np.ndarray,
                previous: np.ndarray | None = None) -> np.ndarray:
    """Each pose bone ``rows`` (n,) of ``pose``'s rotation as Euler angles (n, 3) [x y z] in
    its order (``orders`` (n,) and their ``axes``): the channels themselves for an Euler bone
    in that order, else the decomposition Blender's ``to_euler(order)`` picks, or with
    ``previous`` (n, 3) its ``to_euler(order, compatible)``: bone by bone with mathutils for
    up to ``FEW_READS`` bones, in double precision on arrays for more."""
    modes = pose.modes[rows]
    out = np.empty((len(rows), 3))
    same = modes == orders
    out[same] = pose["rotation_euler"][rows[same]]
    other = np.flatnonzero(~same)
    if not other.size:
        return out
    if other.size <= FEW_READS:
        pose_bones, near = pose.pose_bones, None if previous is None else previous[other].tolist()
        out[other] = [_bone_euler(pose_bones[row], order, None if near is None else Euler(near[k], order))
                      for k, (row, order) in enumerate(zip(rows[other].tolist(), orders[other].tolist()))]
        return out
    quat = rotation_quaternions(pose, rows[other], modes[other])
    start = np.zeros((other.size, 3)) if previous is None else previous[other]
    out[other] = matrix_eulers(quaternion_matrices(quat), axes[other], start)
    return out


def rotation_quaternions(channels, rows: np.ndarray, modes: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., k, 4) of the bones ``rows`` (k,) whose rotation modes are ``modes``
    (k,), from their channels (channel -> (..., bones, width): a ``PoseArrays``, or a clip's
    frames): a quaternion normalised (a zero one as the identity), an axis-angle or Euler
    rotation turned into one. Only the channels the modes use are read."""
    quat = None
    for kind in ("QUATERNION", "AXIS_ANGLE", "EULER"):
        which = modes == kind if kind != "EULER" else ~np.isin(modes, ("QUATERNION", "AXIS_ANGLE"))
        if not which.any():
            continue
        if kind == "QUATERNION":
            held = channels["rotation_quaternion"][..., rows[which], :].astype(float)
            length = np.linalg.norm(held, axis=-1)[..., None]
            values = np.where(length > 0.0, held / np.where(length > 0.0, length, 1.0), (1.0, 0.0, 0.0, 0.0))
        elif kind == "AXIS_ANGLE":
            held = channels["rotation_axis_angle"][..., rows[which], :]
            values = axis_angle_quaternions(held.reshape(-1, 4)).reshape(held.shape)
        else:
            held = channels["rotation_euler"][..., rows[which], :]
            orders = np.broadcast_to(order_axes(modes[which]), held.shape).reshape(-1, 3)
            values = euler_quaternions(held.reshape(-1, 3), orders).reshape(held.shape[:-1] + (4,))
        if quat is None:
            quat = np.empty(values.shape[:-2] + (len(rows), 4))
        quat[..., which, :] = values
    return quat


def read_eulers_frames(arrays: dict, modes: np.ndarray, rows: np.ndarray, orders: np.ndarray, axes: np.ndarray,
                       previous: np.ndarray) -> np.ndarray:
    """``read_eulers`` of every frame of ``arrays`` (channel -> (F, bones, width), the pose's
    channels on F frames; ``modes`` (bones,) the rotation modes) at once: (F, n, 3), each
    frame's angles the ones closest to the frame's before (the first: to ``previous``)."""
    frames = len(arrays["rotation_euler"])
    modes = modes[rows]
    out = np.empty((frames, len(rows), 3))
    same = modes == orders
    out[:, same] = arrays["rotation_euler"][:, rows[same]]
    other = np.flatnonzero(~same)
    if not other.size:
        return out
    quat = rotation_quaternions(arrays, rows[other], modes[other])
    both = euler_pairs(quaternion_matrices(quat.reshape(-1, 4)), np.tile(axes[other], (frames, 1)))
    out[:, other] = closest_in_order(both.reshape(2, frames, other.size, 3), previous[other])
    return out
