"""Euler angles in one fixed order (a BVH joint's channels): the rotation of three angles and
the angles of a rotation, nearest a given reading. Pure numpy; never imports bpy."""

from __future__ import annotations

import numpy as np

__all__ = ["axis_rotations", "euler_angles", "euler_matrix"]


def axis_rotations(angle: np.ndarray, axis: int) -> np.ndarray:
    """(..., 3, 3) rotations by ``angle`` [rad] about axis 0, 1 or 2."""
    angle = np.asarray(angle, dtype=float)
    p, q = (axis + 1) % 3, (axis + 2) % 3
    out = np.zeros(angle.shape + (3, 3))
    out[..., axis, axis] = 1.0
    out[..., p, p] = out[..., q, q] = np.cos(angle)
    out[..., q, p] = np.sin(angle)
    out[..., p, q] = -np.sin(angle)
    return out


def euler_matrix(angles: np.ndarray, order: str) -> np.ndarray:
    """(..., 3, 3) R_order[0](a)·R_order[1](b)·R_order[2](c) for ``angles`` (..., 3) (a, b, c) [rad]."""
    i, j, k = ("XYZ".index(axis) for axis in order)
    return axis_rotations(angles[..., 0], i) @ axis_rotations(angles[..., 1], j) @ axis_rotations(angles[..., 2], k)


def euler_angles(r: np.ndarray, order: str, near: np.ndarray) -> np.ndarray:
    """(..., 3) angles [rad] (a, b, c) with r = R_order[0](a)·R_order[1](b)·R_order[2](c): of the
    two solutions (and their 2π multiples) the one nearest ``near`` (..., 3); at gimbal lock a
    is ``near``'s."""
    i, j, k = ("XYZ".index(axis) for axis in order)
    s = 1.0 if (j - i) % 3 == 1 else -1.0
    b = np.arctan2(s * r[..., i, k], np.hypot(r[..., i, i], r[..., i, j]))
    locked = np.hypot(r[..., j, k], r[..., k, k]) < 1e-6  # gimbal lock: a is free, take the near one's
    a = np.where(locked, near[..., 0], np.arctan2(-s * r[..., j, k], r[..., k, k]))
    m = (axis_rotations(a, i) @ axis_rotations(b, j)).swapaxes(-1, -2) @ r  # R_k(c)
    c = np.arctan2(m[..., (k + 2) % 3, (k + 1) % 3], m[..., (k + 1) % 3, (k + 1) % 3])
    both = np.stack([np.stack([a, b, c], -1), np.stack([a + np.pi, np.pi - b, c + np.pi], -1)])
    both += 2 * np.pi * np.round((near - both) / (2 * np.pi))
    return np.where((np.abs(both - near).sum(-1).argmin(0) == 1)[..., None], both[1], both[0])
