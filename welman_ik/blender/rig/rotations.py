"""Rotations on arrays of bones, in double precision, as Blender's own conversions make them:
Euler angles in any order to quaternions and matrices and back (both decompositions of a
matrix, each shifted by whole turns to the one closest to a bone's last value, for one pose or
for every frame of a clip at once), axis-angle, and a bone's channels in its own rotation mode
from the tree's Euler angles (``ROTATION_VALUES``)."""

from __future__ import annotations

import math

import numpy as np
from mathutils import Euler

AXES = "XYZ"
EULER_ORDERS = {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"}
EULER_HYPOT_EPSILON = 1e-12  # below it the middle angle is at +-90 degrees (gimbal lock)
FEW_ROWS = 8  # up to this many rotations, mathutils one by one is faster than the array operations


def order_axes(orders) -> np.ndarray:
    """(n, 3): the axis index (0 X, 1 Y, 2 Z) of each letter of each Euler order, in the
    order the rotations apply."""
    return np.array([_ORDER_AXES.get(order) or [AXES.index(letter) for letter in order] for order in orders],
                    dtype=np.intp).reshape(-1, 3)


_ORDER_AXES = {order: [AXES.index(letter) for letter in order] for order in EULER_ORDERS}


def _parity(axes: np.ndarray) -> np.ndarray:
    """(n,): -1 for the orders whose axes are an odd permutation of XYZ (XZY, YXZ, ZYX), else 1."""
    return np.where((axes[:, 1] - axes[:, 0]) % 3 == 2, -1.0, 1.0)


def _quaternion_matrix_form() -> np.ndarray:
    """T (16, 9): the rotation matrix of a unit quaternion q (w, x, y, z) is
    ``(q q^T).ravel() @ T``, row by row."""
    terms = {  # matrix entry -> (coefficient, a, b) of its products q_a q_b
        (0, 0): ((1, 0, 0), (1, 1, 1), (-1, 2, 2), (-1, 3, 3)), (0, 1): ((2, 1, 2), (-2, 0, 3)),
        (0, 2): ((2, 1, 3), (2, 0, 2)), (1, 0): ((2, 1, 2), (2, 0, 3)),
        (1, 1): ((1, 0, 0), (-1, 1, 1), (1, 2, 2), (-1, 3, 3)), (1, 2): ((2, 2, 3), (-2, 0, 1)),
        (2, 0): ((2, 1, 3), (-2, 0, 2)), (2, 1): ((2, 2, 3), (2, 0, 1)),
        (2, 2): ((1, 0, 0), (-1, 1, 1), (-1, 2, 2), (1, 3, 3)),
    }
    form = np.zeros((4, 4, 3, 3))
    for (i, j), products in terms.items():
        for coefficient, a, b in products:
            form[a, b, i, j] = coefficient
    return form.reshape(16, 9)


def _euler_quaternion_form() -> np.ndarray:
    """T (8, 4): the quaternion (w, then the vector part by slot) of Euler angles whose
    half angles by slot (first, middle, last axis) have cosines c and sines s is the
    products (c|s)_first (c|s)_middle (c|s)_last, raveled, ``@ T`` (Blender's ``eulO_to_quat``)."""
    form = np.zeros((2, 2, 2, 4))
    form[0, 0, 0, 0] = form[1, 1, 1, 0] = 1.0  # w = c c c + s s s
    form[1, 0, 0, 1], form[0, 1, 1, 1] = 1.0, -1.0  # first axis
    form[1, 0, 1, 2] = form[0, 1, 0, 2] = 1.0  # middle axis
    form[0, 0, 1, 3], form[1, 1, 0, 3] = 1.0, -1.0  # last axis
    return form.reshape(8, 4)


QUATERNION_MATRIX = _quaternion_matrix_form()
EULER_QUATERNION = _euler_quaternion_form()
CANDIDATE_SINES = np.array([[[1.0, 1.0, 1.0]], [[-1.0, 1.0, -1.0]]])  # the two decompositions of a matrix
CANDIDATE_COSINES = np.array([[[1.0]], [[-1.0]]])
IN_ORDER_PASSES = 3  # ``closest_in_order``'s checks of every frame at once before its loop


def euler_quaternions(angles: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """(w, x, y, z) (n, 4) of Euler angles (n, 3) [rad, x y z], each row in the order of
    its ``axes`` (``order_axes``), in double precision (mathutils works in single): Blender's
    ``eulO_to_quat``."""
    n = len(axes)
    rows = np.arange(n)[:, None]
    parity = _parity(axes)
    half = 0.5 * np.asarray(angles, dtype=float)[rows, axes]  # by slot
    half[:, 1] *= parity
    trig = np.stack([np.cos(half), np.sin(half)], axis=2)  # (n, slot, c|s)
    products = (trig[:, 0, :, None, None] * trig[:, 1, None, :, None] * trig[:, 2, None, None, :]).reshape(n, 8)
    by_slot = products @ EULER_QUATERNION
    by_slot[:, 2] *= parity
    quat = np.empty((n, 4))
    quat[:, 0] = by_slot[:, 0]
    quat[rows, 1 + axes] = by_slot[:, 1:]
    return quat


def quaternion_matrices(quat: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3) of unit quaternions (n, 4) (w, x, y, z)."""
    return ((quat[:, :, None] * quat[:, None, :]).reshape(-1, 16) @ QUATERNION_MATRIX).reshape(-1, 3, 3)


def compatible_eulers(euler: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """Euler angles shifted by whole turns to within half a turn of ``previous`` (Blender's
    ``compatible_eul``)."""
    d = euler - previous
    far = np.abs(d)
    turns = np.where(far > math.pi, np.floor(far / (2.0 * math.pi) + 0.5), 0.0)
    return euler - np.copysign(turns * (2.0 * math.pi), d)


def euler_pairs(matrices: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """The two Euler decompositions (2, n, 3) of rotation matrices (n, 3, 3), each row in the
    order of its ``axes``, as ``Matrix.to_euler`` finds them."""
    rows = np.arange(len(axes))[:, None]
    m = matrices[rows[:, :, None], axes[:, :, None], axes[:, None, :]]  # rows and columns by slot
    cy = np.hypot(m[:, 0, 0], m[:, 1, 0])
    sines = m[:, (2, 2, 1), (1, 0, 0)]
    sines[:, 1] *= -1.0
    cosines = np.stack([m[:, 2, 2], cy, m[:, 0, 0]], axis=1)
    by_slot = np.arctan2(sines * CANDIDATE_SINES, cosines * CANDIDATE_COSINES)  # (2, n, slot)
    locked = cy <= EULER_HYPOT_EPSILON  # the first and last axes line up: all on the first
    if locked.any():
        by_slot[:, locked, 0] = np.arctan2(-m[locked, 1, 2], m[locked, 1, 1])
        by_slot[:, locked, 1] = np.arctan2(-m[locked, 2, 0], cy[locked])
        by_slot[:, locked, 2] = 0.0
    both = np.empty_like(by_slot)
    both[:, rows, axes] = by_slot * _parity(axes)[:, None]
    return both


def closest_euler(both: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """Of the two decompositions ``both`` (2, ..., 3) (``euler_pairs``), each shifted by whole
    turns, the one closest to ``previous`` (..., 3)."""
    both = compatible_eulers(both, previous)
    return np.where(_nearer(both, previous)[..., None] == 1, both[1], both[0])


def closest_in_order(both: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """(F, n, 3): frame after frame, of each frame's two decompositions ``both`` (2, F, n, 3),
    each shifted by whole turns, the one closest to the frame's before (the first frame's: to
    ``previous`` (n, 3)); what ``closest_euler`` gives in a loop over the frames, to the bit,
    worked out at once.

    Which of the two a frame takes depends on which its frame before took, and on nothing
    else of it (the distance is between angles taken modulo whole turns): for each frame,
    the one nearer the first decomposition of the frame before and the one nearer the second
    make a map of {0, 1} onto itself (keep, swap, or either to the same one), and the frames'
    choices follow from the first's by the last such "either" and the swaps since. The
    chosen angles are then unwound by whole turns from frame to frame, and that guess is
    checked as ``closest_euler`` of every frame against the guess's frame before: where it is
    its own answer it is the loop's. Where it is not (the two nearly as near, a difference a
    rounding decides), ``IN_ORDER_PASSES`` such passes, then the loop."""
    frames, bones = both.shape[1], both.shape[2]
    if not frames:
        return np.empty(both.shape[1:])
    first = _nearer(compatible_eulers(both[:, 0], previous), previous)
    branch = np.empty((frames, bones), dtype=np.intp)
    branch[0] = first
    if frames > 1:
        later = both[:, 1:]
        # the choice after each choice of the frame before: (F - 1, n) each
        after = [_nearer(compatible_eulers(later, both[b, :-1]), both[b, :-1]) for b in (0, 1)]
        either = after[0] == after[1]
        swap = (after[0] == 1) & (after[1] == 0)
        steps = np.arange(1, frames)[:, None]
        last = np.maximum.accumulate(np.where(either, steps, 0), axis=0)  # the last "either" (0: none)
        swaps = np.cumsum(swap, axis=0)
        held = np.take_along_axis(np.concatenate([first[None], after[0]]), last, axis=0)
        since = swaps - np.where(last > 0, np.take_along_axis(np.concatenate([np.zeros((1, bones), np.intp),
                                                                              swaps]), last, axis=0), 0)
        branch[1:] = held ^ (since & 1)
    chosen = np.where(branch[..., None] == 1, both[1], both[0])
    turns = np.cumsum(np.round(np.diff(chosen, axis=0, prepend=previous[None]) / (2.0 * math.pi)), axis=0)
    guess = chosen - turns * (2.0 * math.pi)
    for _ in range(IN_ORDER_PASSES):
        closest = closest_euler(both, np.concatenate([previous[None], guess[:-1]]))
        if np.array_equal(closest, guess):
            return guess
        guess = closest
    out = np.empty(chosen.shape)
    near = previous
    for frame in range(frames):
        near = out[frame] = closest_euler(both[:, frame], near)
    return out


def _nearer(shifted: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Which of two Euler angles ``shifted`` (2, ..., 3) is nearer ``before`` (..., 3): 0 or 1,
    as ``closest_euler`` picks."""
    distance = np.abs(shifted - before).sum(axis=-1)
    return (distance[1] < distance[0]).astype(np.intp)


def matrix_eulers(matrices: np.ndarray, axes: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """Euler angles (n, 3) of rotation matrices (n, 3, 3), each row in the order of its
    ``axes``: of the two decompositions, each shifted by whole turns, the one closest to
    ``previous`` (n, 3); the double-precision form of Blender's ``Matrix.to_euler(order,
    compatible)``."""
    return closest_euler(euler_pairs(matrices, axes), previous)


def euler_values(angles: np.ndarray, axes: np.ndarray, mode_axes: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Euler channels (n, 3) in the orders of ``mode_axes`` of Euler angles (n, 3) in the
    orders of ``axes``: the angles themselves where the orders agree, else the equivalent
    angles closest to the ``current`` channels."""
    out = np.array(angles, dtype=float)
    other = np.flatnonzero(np.any(axes != mode_axes, axis=1))
    if len(other) > FEW_ROWS:
        matrices = quaternion_matrices(euler_quaternions(out[other], axes[other]))
        out[other] = matrix_eulers(matrices, mode_axes[other], current[other])
    else:
        for i in other:
            order, mode = "".join(AXES[a] for a in axes[i]), "".join(AXES[a] for a in mode_axes[i])
            out[i] = Euler(out[i].tolist(), order).to_matrix().to_euler(mode, Euler(current[i].tolist(), mode))
    return out


def quaternion_values(angles: np.ndarray, axes: np.ndarray, mode_axes: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Quaternion channels (n, 4) of Euler angles (n, 3) in the orders of ``axes``, each on
    the hemisphere of the ``current`` quaternion (so keys interpolate the short way)."""
    quat = euler_quaternions(angles, axes)
    quat[np.einsum("ij,ij->i", quat, current) < 0.0] *= -1.0
    return quat


def axis_angle_quaternions(values: np.ndarray) -> np.ndarray:
    """Unit quaternions (n, 4) of axis-angle channels (n, 4) (angle, axis); a zero axis is +Y,
    as Blender takes it."""
    values = np.asarray(values, dtype=float)
    length = np.linalg.norm(values[:, 1:], axis=1)[:, None]
    unit = np.where(length > 0.0, values[:, 1:] / np.where(length > 0.0, length, 1.0), (0.0, 1.0, 0.0))
    return np.concatenate([np.cos(0.5 * values[:, :1]), np.sin(0.5 * values[:, :1]) * unit], axis=1)


def axis_angle_values(angles: np.ndarray, axes: np.ndarray, mode_axes: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Axis-angle channels (n, 4) (angle, axis) of Euler angles (n, 3) in the orders of
    ``axes``, on the hemisphere of the ``current`` rotation, the axis on the side of its axis."""
    current = np.asarray(current, dtype=float)
    held_axis = current[:, 1:]
    quat = quaternion_values(angles, axes, mode_axes, axis_angle_quaternions(current))
    norm = np.linalg.norm(quat[:, 1:], axis=1)[:, None]
    angle = 2.0 * np.arctan2(norm, quat[:, :1])
    axis = np.where(norm > 0.0, quat[:, 1:] / np.where(norm > 0.0, norm, 1.0), held_axis)
    flip = (np.einsum("ij,ij->i", axis, held_axis) < 0.0)[:, None]
    return np.where(flip, -1.0, 1.0) * np.concatenate([angle, axis], axis=1)


ROTATION_VALUES = {"rotation_euler": euler_values, "rotation_quaternion": quaternion_values,
                   "rotation_axis_angle": axis_angle_values}
