"""The goals of many frames as rows (``frames.solve_frames``'s): each goal's points, residuals
and Jacobian rows on (frames, ...) arrays. A position goal's three rows, a together goal's gap,
a held axis's unit direction (``length`` (t - u)), a whole orientation's rotation vector, a
floor's one row along its normal; each row group's errors as its goal measures them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..skeleton import Skeleton

if TYPE_CHECKING:
    from .frames import FramesProblem


class FrameRows:
    """The goals of the frames ``live``: their points, errors and weighted rows."""

    def __init__(self, problem: FramesProblem, live: np.ndarray, weights: np.ndarray, size: np.ndarray):
        self.problem = problem
        self.targets = problem.targets[live]
        self.weights = weights[live]
        self.size = size
        self.floor, self.paired, self.direction = problem.floor, problem.paired, problem.direction
        self.turning = problem.turning
        self.rotations = problem.rotations[live][:, self.turning] if self.turning.any() else None

    def _points(self, fk: np.ndarray, joints: np.ndarray, local: np.ndarray) -> np.ndarray:
        frames = fk[:, joints]
        return np.einsum("lgij,gj->lgi", frames[:, :, :3, :3], local) + frames[:, :, :3, 3]

    def _residuals(self, fk: np.ndarray) -> tuple:
        """(points (L, G, 3), second points of the paired goals, the gaps p - p_b (p where
        unpaired), the directions' unit vectors and lengths, residuals (L, G, 3)): a floor
        goal's residual is its depth below the plane along the normal (zero above it)."""
        p = self.problem
        points = self._points(fk, p.joints, p.local)
        gap, seconds = points, None
        if self.paired.any():
            seconds = self._points(fk, p.joints_b[self.paired], p.local_b[self.paired])
            gap = points.copy()
            gap[:, self.paired] -= seconds
        residual = self.targets - gap
        units = spans = None
        if self.direction.any():
            vectors = gap[:, self.direction]
            spans = np.sqrt(np.einsum("lgi,lgi->lg", vectors, vectors))
            units = vectors / spans[:, :, None]
            residual[:, self.direction] = p.lengths[self.direction][None, :, None] * (
                self.targets[:, self.direction] - units)
        if self.floor.any():
            depth = np.maximum(np.einsum("gi,lgi->lg", p.normals, residual), 0.0)
            residual = np.where(self.floor[None, :, None], depth[:, :, None] * p.normals[None], residual)
        if self.rotations is not None:
            residual[:, self.turning] = p.lengths[self.turning][None, :, None] * _rotation_vectors(
                self.rotations @ np.swapaxes(self._frame_rotations(fk), 2, 3))
        return points, seconds, units, spans, residual

    def _frame_rotations(self, fk: np.ndarray) -> np.ndarray:
        """The turning goals' joints' frame rotations (L, Gt, 3, 3), columns made unit."""
        linear = fk[:, self.problem.joints[self.turning], :3, :3]
        return linear / np.linalg.norm(linear, axis=2, keepdims=True)

    def errors(self, fk: np.ndarray) -> np.ndarray:
        residual = self._residuals(fk)[-1]
        squares = np.einsum("lgi,lgi->lg", residual, residual)
        if self.rotations is not None:  # length |T - R|, as the orientation goal measures its axes
            gap = self.rotations - self._frame_rotations(fk)
            squares[:, self.turning] = self.problem.lengths[self.turning][None] ** 2 * np.einsum(
                "lgij,lgij->lg", gap, gap)
        return np.where(self.weights > 0.0, np.sqrt(squares), 0.0)

    def rows(self, fk: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Residual rows (L, r) and Jacobian rows (L, r, c) of the joints ``cols``, each goal's
        times sqrt(weight) / size: three of each goal but a floor, then one of each floor goal
        (its depth below the plane along the normal, zero above it); ``level_rows`` says which."""
        p = self.problem
        sk = p.skeleton
        points, seconds, units, spans, residual = self._residuals(fk)
        unit = _unit_axes(sk, fk, cols)  # (L, c, 3), once for every kind
        heads = sk.heads_of(fk) if sk.detached.size else None
        pointed = ~self.turning  # (a whole orientation's rows come from the axes alone)
        jac = np.zeros((len(fk), len(p.joints), 3, cols.size))
        jac[:, pointed] = _point_jacobians(sk, fk, p.joints[pointed], points[:, pointed], cols, unit, heads)
        if seconds is not None:  # the gap's: the first point's columns less the second's
            jac[:, self.paired] -= _point_jacobians(sk, fk, p.joints_b[self.paired], seconds, cols, unit, heads)
        if units is not None:  # length (I - u u^T) d(gap) / |gap|
            along = np.einsum("lgi,lgic->lgc", units, jac[:, self.direction])
            scale = (p.lengths[self.direction][None] / spans)[:, :, None, None]
            jac[:, self.direction] = scale * (jac[:, self.direction] - units[:, :, :, None] * along[:, :, None, :])
        if self.rotations is not None:  # length times the unit axes of the hinges that turn the frame
            joints = p.joints[self.turning]
            turns = (sk.ancestors[np.ix_(joints, cols)] & (sk.lever[np.ix_(joints, cols)] < 0)
                     & ~sk.prismatic[cols][None])
            jac[:, self.turning] = (p.lengths[self.turning][None, :, None, None]
                                    * np.swapaxes(unit, 1, 2)[:, None] * turns[None, :, None, :])
        scale = np.sqrt(self.weights) / self.size[:, None]  # (L, G)
        frames, floor = len(scale), self.floor
        place = ~floor
        e = (residual[:, place] * scale[:, place, None]).reshape(frames, -1)
        j = (jac[:, place] * scale[:, place, None, None]).reshape(frames, -1, cols.size)
        if floor.any():
            normals = p.normals[floor]
            depth = np.einsum("gi,lgi->lg", normals, residual[:, floor])  # (zero above the plane)
            below = (depth > 0.0) * scale[:, floor]
            e = np.concatenate([e, depth * scale[:, floor]], axis=1)
            j = np.concatenate([j, np.einsum("gi,lgic->lgc", normals, jac[:, floor]) * below[:, :, None]], axis=1)
        return e, j


def level_rows(floor: np.ndarray, levels: list[np.ndarray]) -> list[np.ndarray]:
    """The rows of ``FrameRows.rows`` of each level's goals (``floor``: which goals are floors)."""
    first = np.cumsum(np.where(floor, 0, 3)) - np.where(floor, 0, 3)  # a position goal's first row
    first = np.where(floor, 3 * int((~floor).sum()) + np.cumsum(floor) - 1, first)
    return [np.concatenate([first[g] + np.arange(1 if floor[g] else 3) for g in goals]) if len(goals)
            else np.zeros(0, dtype=np.intp) for goals in levels]


def _unit_axes(sk: Skeleton, fk: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(L, c, 3) each joint's world axis, unit, signed by its frame's handedness."""
    axes = np.einsum("lcij,cj->lci", fk[:, cols, :3, :3], sk.axis[cols])
    lengths = np.sqrt(np.einsum("lci,lci->lc", axes, axes))
    return axes * (sk.handedness[cols] / lengths)[:, :, None]


def _rotation_vectors(rotations: np.ndarray) -> np.ndarray:
    """The rotation vectors (..., 3), axis times angle, of rotations (..., 3, 3)."""
    w = 0.5 * np.stack([rotations[..., 2, 1] - rotations[..., 1, 2], rotations[..., 0, 2] - rotations[..., 2, 0],
                        rotations[..., 1, 0] - rotations[..., 0, 1]], axis=-1)
    sine = np.sqrt(np.einsum("...i,...i->...", w, w))
    cosine = 0.5 * (np.trace(rotations, axis1=-2, axis2=-1) - 1.0)
    angle = np.arctan2(sine, cosine)
    return w * np.where(sine > 1e-12, angle / np.maximum(sine, 1e-300), 1.0)[..., None]


def _point_jacobians(sk: Skeleton, fk: np.ndarray, joints: np.ndarray, points: np.ndarray,
                     cols: np.ndarray, unit: np.ndarray, heads: np.ndarray | None) -> np.ndarray:
    """d(point)/dq (L, G, 3, c) of world ``points`` (L, G, 3) riding on ``joints`` (G,), for
    the joints ``cols`` (a conformal skeleton: unit(world axis) x (x - o), x the point or the
    head of the first non-inheriting joint between, ``Kinematics.point_jacobian``); ``unit``
    the joints' unit axes (``_unit_axes``), ``heads`` the joints' heads (``Skeleton.heads_of``;
    None: every joint inherits)."""
    origins = fk[:, cols][..., :3, 3]
    if heads is not None:
        lever = sk.lever[np.ix_(joints, cols)]  # (G, c)
        through = np.where((lever >= 0)[None, :, :, None], heads[:, np.maximum(lever, 0)], points[:, :, None, :])
    else:
        through = points[:, :, None, :]
    rel = through - origins[:, None]  # (L, G, c, 3)
    u = unit[:, None]
    jac = np.stack([u[..., 1] * rel[..., 2] - u[..., 2] * rel[..., 1],
                    u[..., 2] * rel[..., 0] - u[..., 0] * rel[..., 2],
                    u[..., 0] * rel[..., 1] - u[..., 1] * rel[..., 0]], axis=2)  # (L, G, 3, c)
    slides = sk.prismatic[cols]
    if slides.any():
        axes = np.einsum("lcij,cj->lci", fk[:, cols[slides], :3, :3], sk.axis[cols[slides]])
        jac[:, :, :, slides] = np.swapaxes(axes, 1, 2)[:, None]
    return jac * sk.ancestors[np.ix_(joints, cols)][None, :, None, :]
