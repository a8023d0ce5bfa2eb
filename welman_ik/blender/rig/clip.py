"""A clip's pose on many frames read at once: each frame's rotation channels (from the action's
F-curves, ``bake.sampling.Sampler.values``) to the tree's Euler angles, with a frame axis, as
``channels.read_eulers`` reads one frame from the pose bones (``WriteBack.read_frames``)."""

from __future__ import annotations

import numpy as np

from .channels import (
    axis_angle_quaternions,
    closest_euler,
    euler_pairs,
    euler_quaternions,
    order_axes,
    quaternion_matrices,
)


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
    modes, others = modes[other], rows[other]
    quat = np.empty((frames, other.size, 4))
    kinds = {"QUATERNION": modes == "QUATERNION", "AXIS_ANGLE": modes == "AXIS_ANGLE"}
    euler = ~(kinds["QUATERNION"] | kinds["AXIS_ANGLE"])
    if kinds["QUATERNION"].any():
        held = arrays["rotation_quaternion"][:, others[kinds["QUATERNION"]]].astype(float)
        length = np.linalg.norm(held, axis=2)[:, :, None]
        quat[:, kinds["QUATERNION"]] = np.where(length > 0.0, held / np.where(length > 0.0, length, 1.0),
                                                (1.0, 0.0, 0.0, 0.0))
    if kinds["AXIS_ANGLE"].any():
        held = arrays["rotation_axis_angle"][:, others[kinds["AXIS_ANGLE"]]]
        quat[:, kinds["AXIS_ANGLE"]] = axis_angle_quaternions(held.reshape(-1, 4)).reshape(frames, -1, 4)
    if euler.any():
        held = arrays["rotation_euler"][:, others[euler]]
        quat[:, euler] = euler_quaternions(held.reshape(-1, 3), np.tile(order_axes(modes[euler]), (frames, 1))
                                           ).reshape(frames, -1, 4)
    both = euler_pairs(quaternion_matrices(quat.reshape(-1, 4)), np.tile(axes[other], (frames, 1)))
    both = both.reshape(2, frames, other.size, 3)
    near = previous[other]
    for frame in range(frames):  # (each frame's choice is the nearest to the one before)
        near = out[frame, other] = closest_euler(both[:, frame], near)
    return out
