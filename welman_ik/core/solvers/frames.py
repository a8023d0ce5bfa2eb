"""Many frames solved together: the SR inverse's common path with a frame axis (a bake's first pass).

A bake solves one skeleton on every frame of a range, each frame with its own goals, start and
preferred pose. Solved one by one, each frame is a Python loop of small numpy calls whose cost
does not depend on their size; here every frame of the range is one row of the same arrays, and
an iteration is a few dozen numpy calls on (frames, ...) arrays:

- forward kinematics of every frame (``Skeleton.forward_frames``);
- each goal point, its residual and its Jacobian (conformal skeletons: ``a x (x - o)``);
- the damped task-priority step of ``task_priority`` (Yamane & Nakamura 2003), each level's
  Jacobian restricted to the null space of the levels above by the small Gram matrices of
  those levels (J_l N = J_l - (J_l A^T)(A A^T + eps I)^-1 A, A the rows above), the
  preferred pose as a diagonal last level, each level's part capped at ``MAX_STEP``;
- a step that takes a frame's first level further from its goals is halved, per frame.

Goals absent on a frame are rows of weight 0 (zero rows change no step), a floor point
above its plane is a zero row, and frames that have met every goal and settled leave the
arrays. There are no branches per frame: a frame that has not converged within the
iterations (a contact starting, a limit, a near-singular pose, a one-sided goal switching
on and off) is reported as such, and the caller solves it with the per-frame solver and all
its rescues (``sr_inverse``: line searches per level, limit passes, range rows, the swapped
levels, the nudge). Joint limits are clamped; spherical ranges are left to the caller, who
checks each frame's result against them (``SphericalRanges.excess``).

Goal kinds: position (three rows) and floor (one-sided, three rows along its normal). A
problem with other kinds is for the per-frame solver.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..skeleton import Skeleton, subset
from .reference_weights import carried_weights
from .sr_inverse import INERTIA_POWER, MAX_STEP, REFERENCE_PROGRESS, REFERENCE_SETTLED, SLIDE_SCALE

HALVINGS = 4  # per iteration, of the frames whose first level the full step takes further away
EPSILON = 1e-12  # relative regularisation of the levels above, in the null-space restriction


@dataclass
class FramesProblem:
    """Goals on ``F`` frames of one skeleton.

    joints, local: (G,) and (G, 3): each goal's point, fixed in its joint's frame.
    targets:   (F, G, 3) each goal's world target on each frame (a floor goal: a point of its plane).
    weights:   (F, G) each goal's weight on each frame; 0 where it is not in force.
    priority:  (G,) each goal's level, 0 first.
    normals:   (G, 3) a floor goal's unit normal (the side its point may be on); zeros for a
               position goal.
    reference: (F, n) the preferred pose of each frame (None: the start).
    active:    (n,) bool, the joints that may move (with mobility > 0).
    lower, upper: (F, n) each frame's joint limits (None: the skeleton's).
    """

    skeleton: Skeleton
    joints: np.ndarray
    local: np.ndarray
    targets: np.ndarray
    weights: np.ndarray
    priority: np.ndarray
    normals: np.ndarray
    reference: np.ndarray | None = None
    active: np.ndarray | None = None
    tolerance: float = 1e-5
    max_iterations: int = 30
    damping: float = 1e-3
    reference_weight: float = 1.0
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None

    def clamp(self, q: np.ndarray, frames: np.ndarray) -> np.ndarray:
        """``q`` (k, n) of ``frames`` (k,) within their limits."""
        sk = self.skeleton
        return np.clip(q, sk.lower if self.lower is None else self.lower[frames],
                       sk.upper if self.upper is None else self.upper[frames])

    @property
    def floor(self) -> np.ndarray:
        return np.any(self.normals != 0.0, axis=1)


@dataclass
class FramesResult:
    """q: (F, n) joint values; errors: (F, G) each goal's distance [m] (0 where absent);
    converged: (F,) every goal within tolerance; iterations: (F,) iterations each frame took."""

    q: np.ndarray
    errors: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray


def solve_frames(problem: FramesProblem, start: np.ndarray) -> FramesResult:
    """Every frame of ``problem`` from ``start`` (F, n), together (see the module's docstring).
    Only the joints that carry a goal point are worked on (``skeleton.subset``); the weights
    of the columns and of the preferred pose, and the tree's size, are the whole tree's."""
    sk = problem.skeleton
    q = problem.clamp(np.array(start, dtype=float), np.arange(len(start)))
    sizes = _sizes(sk, q, problem)
    col_base = np.sqrt(np.clip(sk.mobility, 0.0, 1.0)) / sk.subtree**INERTIA_POWER
    ref_weight = carried_weights(sk)
    keep = np.flatnonzero(sk.ancestors[problem.joints].any(axis=0))
    if keep.size == sk.size:
        return _solve(problem, q, sizes, col_base, ref_weight)
    index = np.full(sk.size, -1, dtype=np.intp)
    index[keep] = np.arange(keep.size)

    def part(values):
        return None if values is None else np.asarray(values)[..., keep]

    inner = replace(problem, skeleton=subset(sk, keep), joints=index[problem.joints], reference=part(problem.reference),
                    active=part(problem.active), lower=part(problem.lower), upper=part(problem.upper))
    result = _solve(inner, q[:, keep], sizes, col_base[keep], ref_weight[keep])
    q[:, keep] = result.q
    return replace(result, q=q)


def _solve(problem: FramesProblem, q: np.ndarray, sizes: np.ndarray, col_base: np.ndarray,
           all_weights: np.ndarray) -> FramesResult:
    sk = problem.skeleton
    frames, n = q.shape
    reference = q.copy() if problem.reference is None else np.asarray(problem.reference, dtype=float)
    movable = sk.mobility > 0.0
    if problem.active is not None:
        movable &= np.asarray(problem.active, dtype=bool)
    cols = np.flatnonzero(movable)
    weights = np.asarray(problem.weights, dtype=float)
    levels = [np.flatnonzero(problem.priority == p) for p in np.unique(problem.priority)]
    errors = np.zeros(weights.shape)
    iterations = np.zeros(frames, dtype=np.intp)
    done = np.zeros(frames, dtype=bool)
    ref_weight = all_weights[cols]
    pull = min(1.0, float(problem.reference_weight))
    live = np.arange(frames)
    closest = np.full(frames, np.inf)  # the reference's smallest distance with the goals met
    first = levels[0]
    level_rows = _level_rows(problem.floor, levels)
    fk = sk.forward_frames(q)  # of the frames ``live``, at their joint values
    err = _Frames(problem, live, weights, sizes).errors(fk)
    for iteration in range(problem.max_iterations + 1):
        sub = _Frames(problem, live, weights, sizes[live])
        errors[live] = err
        met = np.all(err <= problem.tolerance, axis=1)
        if cols.size == 0:
            done[live] = True
            break
        col_scale = np.where(sk.prismatic[cols], SLIDE_SCALE * sub.size[:, None], 1.0) * col_base[cols]
        e, jac = sub.rows(fk, cols)  # (L, r), (L, r, c), rows weighted and divided by the size
        jac = jac * col_scale[:, None, :]
        target = (reference[live] - q[live])[:, cols] / col_scale
        x = _step(e, jac, level_rows, target, ref_weight, problem.damping, pull)
        dq = np.zeros((live.size, n))
        dq[:, cols] = x * col_scale
        # Met and settled: the preferred pose's step is all that is left, and it is small or
        # no longer brings the pose closer to it by REFERENCE_PROGRESS (as ``sr_inverse``).
        distance = np.linalg.norm(target * ref_weight, axis=1)
        settled = met & ((np.abs(dq).max(axis=1) < REFERENCE_SETTLED)
                         | (distance > (1.0 - REFERENCE_PROGRESS) * closest[live]))
        closest[live] = np.where(met, np.minimum(closest[live], distance), np.inf)
        done[live[settled]] = True
        if settled.all() or iteration == problem.max_iterations:
            break
        keep = ~settled
        live, dq, err = live[keep], dq[keep], err[keep]
        first_weights = weights[live][:, first]
        before = _level_distance(err[:, first], first_weights)
        # (within half the tolerance, a level that grows is as good as met)
        allowed = np.maximum(before * (1.0 + 1e-9), 0.25 * problem.tolerance**2 * first_weights.sum(axis=1))
        step_q = q[live]
        beta = np.ones(live.size)
        trial = problem.clamp(step_q + dq, live)
        fk = sk.forward_frames(trial)
        err = _Frames(problem, live, weights, sizes[live]).errors(fk)
        worse = _level_distance(err[:, first], first_weights) > allowed
        for _halving in range(HALVINGS):  # the frames whose first level the step takes further off
            if not worse.any():
                break
            again = np.flatnonzero(worse)
            beta[again] *= 0.5
            trial[again] = problem.clamp(step_q[again] + beta[again, None] * dq[again], live[again])
            fk[again] = sk.forward_frames(trial[again])
            err[again] = _Frames(problem, live[again], weights, sizes[live[again]]).errors(fk[again])
            worse[again] = _level_distance(err[again][:, first], first_weights[again]) > allowed[again]
        q[live] = trial
        iterations[live] += 1
    return FramesResult(q, errors, done & np.all(errors <= problem.tolerance, axis=1), iterations)


def _level_distance(errors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.einsum("fg,fg->f", weights, errors**2)


def _sizes(sk: Skeleton, q: np.ndarray, problem: FramesProblem) -> np.ndarray:
    """(F,) each frame's tree size at its start (the bounding box of the joints and the
    targets), by which rows are divided and slides weighed, as in ``Kinematics.size_scale``."""
    origins = sk.forward_frames(q)[:, :, :3, 3]
    targets = np.where(problem.weights[:, :, None] > 0.0, problem.targets, origins[:, :1])
    points = np.concatenate([origins, targets], axis=1)
    span = np.linalg.norm(points.max(axis=1) - points.min(axis=1), axis=1)
    return np.where(span > 1e-12, span, 1.0)


class _Frames:
    """The goals of the frames ``live``: their points, errors and weighted rows."""

    def __init__(self, problem: FramesProblem, live: np.ndarray, weights: np.ndarray, size: np.ndarray):
        self.problem = problem
        self.targets = problem.targets[live]
        self.weights = weights[live]
        self.size = size
        self.floor = problem.floor

    def _residuals(self, fk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(points (L, G, 3), residuals (L, G, 3)): a floor goal's residual is its depth below
        the plane along the normal (zero above it)."""
        p = self.problem
        frames = fk[:, p.joints]
        points = np.einsum("lgij,gj->lgi", frames[:, :, :3, :3], p.local) + frames[:, :, :3, 3]
        residual = self.targets - points
        if self.floor.any():
            depth = np.maximum(np.einsum("gi,lgi->lg", p.normals, residual), 0.0)
            residual = np.where(self.floor[None, :, None], depth[:, :, None] * p.normals[None], residual)
        return points, residual

    def errors(self, fk: np.ndarray) -> np.ndarray:
        residual = self._residuals(fk)[1]
        return np.where(self.weights > 0.0, np.sqrt(np.einsum("lgi,lgi->lg", residual, residual)), 0.0)

    def rows(self, fk: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Residual rows (L, r) and Jacobian rows (L, r, c) of the joints ``cols``, each goal's
        times sqrt(weight) / size: three of each position goal, then one of each floor goal
        (its depth below the plane along the normal, zero above it); ``_level_rows`` says which."""
        p = self.problem
        points, residual = self._residuals(fk)
        jac = _point_jacobians(p.skeleton, fk, p.joints, points, cols)  # (L, G, 3, c)
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



def _level_rows(floor: np.ndarray, levels: list[np.ndarray]) -> list[np.ndarray]:
    """The rows of ``_Frames.rows`` of each level's goals (``floor``: which goals are floors)."""
    first = np.cumsum(np.where(floor, 0, 3)) - np.where(floor, 0, 3)  # a position goal's first row
    first = np.where(floor, 3 * int((~floor).sum()) + np.cumsum(floor) - 1, first)
    return [np.concatenate([first[g] + np.arange(1 if floor[g] else 3) for g in goals]) if len(goals)
            else np.zeros(0, dtype=np.intp) for goals in levels]


def _point_jacobians(sk: Skeleton, fk: np.ndarray, joints: np.ndarray, points: np.ndarray,
                     cols: np.ndarray) -> np.ndarray:
    """d(point)/dq (L, G, 3, c) of world ``points`` (L, G, 3) riding on ``joints`` (G,), for
    the joints ``cols`` (a conformal skeleton: unit(world axis) x (x - o), x the point or the
    head of the first non-inheriting joint between, ``Kinematics.point_jacobian``)."""
    frames = fk[:, cols]
    axes = np.einsum("lcij,cj->lci", frames[:, :, :3, :3], sk.axis[cols])
    lengths = np.sqrt(np.einsum("lci,lci->lc", axes, axes))
    unit = axes * (sk.handedness[cols] / lengths)[:, :, None]
    origins = frames[:, :, :3, 3]
    if sk.detached.size:
        lever = sk.lever[np.ix_(joints, cols)]  # (G, c)
        heads = sk.heads_frames(fk)  # (L, n, 3)
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
        jac[:, :, :, slides] = np.swapaxes(axes[:, slides], 1, 2)[:, None]
    return jac * sk.ancestors[np.ix_(joints, cols)][None, :, None, :]


def _step(e: np.ndarray, jac: np.ndarray, level_rows: list[np.ndarray], target: np.ndarray,
          ref_weight: np.ndarray, damping: float, pull: float) -> np.ndarray:
    """The task-priority step (L, c) in scaled units: each level's damped least-squares part in
    the null space of the levels above, then the preferred pose's (``target``, diagonal
    weights ``ref_weight``) in the null space of every level; each part capped at ``MAX_STEP``."""
    frames, c = target.shape
    total = np.zeros((frames, c))
    above = np.zeros((frames, 0, c))
    for rows in level_rows:
        a, err = jac[:, rows], e[:, rows] - np.einsum("lrc,lc->lr", jac[:, rows], total)
        if above.shape[1]:
            gram_above = _damped(above @ np.swapaxes(above, 1, 2), EPSILON)
            a = a - (a @ np.swapaxes(above, 1, 2)) @ np.linalg.solve(gram_above, above)
        gram = _damped(a @ np.swapaxes(a, 1, 2), damping)
        part = np.einsum("lrc,lr->lc", a, np.linalg.solve(gram, err[:, :, None])[:, :, 0])
        total += _capped(part)
        above = np.concatenate([above, a], axis=1)
    # The preferred pose: argmin ||W x - W t|| with A x = 0, x = t - W^-2 A^T (A W^-2 A^T)^-1 A t.
    t = target - total
    inverse = 1.0 / ref_weight**2
    scaled = above * inverse[None, None, :]  # A W^-2
    gram = _damped(scaled @ np.swapaxes(above, 1, 2), EPSILON)
    lam = np.linalg.solve(gram, np.einsum("lrc,lc->lr", above, t)[:, :, None])[:, :, 0]
    return total + pull * _capped(t - np.einsum("lrc,lr->lc", scaled, lam))


def _damped(gram: np.ndarray, k: float) -> np.ndarray:
    """``gram`` + k s I, s the mean of each frame's diagonal over its non-zero rows (zero rows,
    goals absent, get s alone: they then solve to 0)."""
    diagonal = np.einsum("lii->li", gram)
    count = np.maximum((diagonal > 0.0).sum(axis=1), 1)
    s = np.maximum(diagonal.sum(axis=1) / count, 1e-300)
    out = gram.copy()
    idx = np.arange(gram.shape[1])
    out[:, idx, idx] += np.where(diagonal > 0.0, k * s[:, None], s[:, None])
    return out


def _capped(part: np.ndarray) -> np.ndarray:
    largest = np.abs(part).max(axis=1, initial=0.0)
    return part * np.minimum(1.0, MAX_STEP / np.maximum(largest, 1e-300))[:, None]
