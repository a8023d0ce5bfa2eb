"""Many frames solved together: the SR inverse's common path with a frame axis (a bake's first pass).

A bake solves one skeleton on every frame of a range, each frame with its own goals, start and
preferred pose. Solved one by one, each frame is a Python loop of small numpy calls whose cost
does not depend on their size; here every frame of the range is one row of the same arrays, and
an iteration is a few dozen numpy calls on (frames, ...) arrays:

- forward kinematics of every frame (``Skeleton.forward_frames``);
- each goal's residual and Jacobian rows (``frames_rows``; conformal skeletons: ``a x (x - o)``);
- the damped task-priority step of ``task_priority`` (Yamane & Nakamura 2003), each level's
  Jacobian restricted to the null space of the levels above by the small Gram matrices of
  those levels (J_l N = J_l - (J_l A^T)(A A^T + eps I)^-1 A, A the rows above), the
  preferred pose as a diagonal last level, each level's part capped at ``MAX_STEP``;
- a step that takes a frame's first level further from its goals is halved, per frame.

Goals absent on a frame are rows of weight 0 (zero rows change no step), a floor point
above its plane is a zero row, and frames that have met every goal and settled leave the
arrays, as do frames that have stalled (no level closer over ``STALL_SPAN`` iterations). There
are no branches per frame: a frame that has not converged (a contact starting, a limit, a
near-singular pose, a one-sided goal switching on and off) is reported as such, and the caller
solves it with the per-frame solver and all its rescues (``sr_inverse``: line searches per
level, limit passes, range rows, the swapped levels, the nudge). Joint limits are clamped;
spherical ranges are left to the caller, who checks each frame's result against them
(``SphericalRanges.excess``).

Goal kinds: position and together (three rows each), held axes (three each), a whole
orientation (three), floor (one-sided, one row along its normal). A problem with other kinds
is for the per-frame solver.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields, replace
from functools import cached_property

import numpy as np

from ..skeleton import Skeleton, level_order, subset
from ..threads import in_parallel, single_threaded, workers
from .frames_rows import FrameRows, level_rows
from .reference_weights import carried_weights
from .sr_inverse import (
    INERTIA_POWER,
    MAX_STEP,
    REFERENCE_PROGRESS,
    REFERENCE_SETTLED,
    SLIDE_SCALE,
    STALL_GAIN,
    STALL_SPAN,
)

HALVINGS = 4  # per iteration, of the frames whose first level the full step takes further away
EPSILON = 1e-12  # relative regularisation of the levels above, in the null-space restriction
PARALLEL_FRAMES = 64  # frames from which a solve's frames are split between the cores
# ... where each frame's Jacobian has this many entries (goals times joints) or more: on smaller
# ones numpy's calls are mostly the interpreter's, and threads only queue for its lock.
PARALLEL_ENTRIES = 400


@dataclass
class FramesProblem:
    """Goals on ``F`` frames of one skeleton.

    joints, local: (G,) and (G, 3): each goal's point, fixed in its joint's frame.
    targets:   (F, G, 3) each goal's world target on each frame (a floor goal: a point of its plane).
    weights:   (F, G) each goal's weight on each frame; 0 where it is not in force.
    priority:  (G,) each goal's level, 0 first.
    normals:   (G, 3) a floor goal's unit normal (the side its point may be on); zeros for a
               position goal.
    joints_b, local_b: (G,) and (G, 3): a second point whose place is taken from the first's
               (-1: none): the goal is then on p - p_b (a together goal: ``targets`` its offset).
    lengths:   (G,) > 0 for a direction: the goal is ``length`` (t - u), u the unit direction
               from p_b to p and t ``targets``' (an orientation goal's held axis, p at ``length``
               along it); 0 for the others.
    owner:     (G,) the goal each row belongs to, whose error is the root of its rows' sum of
               squares (an orientation goal's held axes); None: each its own.
    turns, rotations: (G,) bool and (F, G, 3, 3): a whole orientation, the joint's frame's
               rotation R held at ``rotations`` T: its error is ``length`` |T - R| (an orientation
               goal holding all three axes), its rows ``length`` times the rotation vector of
               T R^T (three rows where its axes would take nine).
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
    joints_b: np.ndarray | None = None
    local_b: np.ndarray | None = None
    lengths: np.ndarray | None = None
    owner: np.ndarray | None = None
    turns: np.ndarray | None = None
    rotations: np.ndarray | None = None

    def clamp(self, q: np.ndarray, frames: np.ndarray) -> np.ndarray:
        """``q`` (k, n) of ``frames`` (k,) within their limits."""
        sk = self.skeleton
        return np.clip(q, sk.lower if self.lower is None else self.lower[frames],
                       sk.upper if self.upper is None else self.upper[frames])

    @cached_property
    def floor(self) -> np.ndarray:
        return np.any(self.normals != 0.0, axis=1)

    @cached_property
    def paired(self) -> np.ndarray:
        """(G,) the goals on two points."""
        return np.zeros(len(self.joints), dtype=bool) if self.joints_b is None else self.joints_b >= 0

    @cached_property
    def direction(self) -> np.ndarray:
        """(G,) the goals on a direction."""
        return (np.zeros(len(self.joints), dtype=bool) if self.lengths is None
                else (self.lengths > 0.0) & ~self.turning)

    @cached_property
    def turning(self) -> np.ndarray:
        """(G,) the whole orientations."""
        return np.zeros(len(self.joints), dtype=bool) if self.turns is None else np.asarray(self.turns, dtype=bool)

    def owners(self) -> np.ndarray:
        """(G, goals) 1 where a row belongs to a goal."""
        owner = np.arange(len(self.joints)) if self.owner is None else np.asarray(self.owner)
        return (owner[:, None] == np.arange(owner.max(initial=-1) + 1)[None]).astype(float)


@dataclass
class FramesResult:
    """q: (F, n) joint values; errors: (F, goals) each goal's distance [m] (0 where absent);
    converged: (F,) every goal within tolerance; iterations: (F,) iterations each frame took;
    stalled: (F,) left where no level came closer by ``STALL_GAIN`` over ``STALL_SPAN``
    iterations (as ``sr_inverse`` tells a stall); first_met: (F,) the first level held."""

    q: np.ndarray
    errors: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    stalled: np.ndarray  # (F,) left unconverged where no level came closer over STALL_SPAN iterations
    first_met: np.ndarray  # (F,) the first level's goals within tolerance


@single_threaded  # many small matrices: threaded BLAS would only wait on busy cores
def solve_frames(problem: FramesProblem, start: np.ndarray) -> FramesResult:
    """Every frame of ``problem`` from ``start`` (F, n), together (see the module's docstring).
    Only the joints that carry a goal point are worked on (``skeleton.subset``); the weights
    of the columns and of the preferred pose, and the tree's size, are the whole tree's. The
    frames are independent of each other: from ``PARALLEL_FRAMES`` on they are split between
    the cores (``threads.in_parallel``), each part solved as the whole would solve it."""
    count = len(start)
    parts = workers() if count >= PARALLEL_FRAMES and _entries(problem) >= PARALLEL_ENTRIES else 1
    if parts < 2:
        return _solve_frames(problem, start)
    pieces = np.array_split(np.arange(count), parts)
    results = in_parallel(lambda frames: _solve_frames(_frames_of(problem, frames), np.asarray(start)[frames]),
                          pieces)
    return FramesResult(*(np.concatenate(arrays) for arrays in zip(*(_fields_of(r) for r in results))))


def _entries(problem: FramesProblem) -> int:
    """A frame's Jacobian's size: its goal points times the joints that carry one."""
    return len(problem.joints) * int(_kept(problem).size)


def _kept(problem: FramesProblem) -> np.ndarray:
    """The joints that carry a goal point (the pass works on those alone)."""
    pointed = problem.joints if problem.joints_b is None else np.concatenate(
        [problem.joints, problem.joints_b[problem.joints_b >= 0]])
    return np.flatnonzero(problem.skeleton.ancestors[pointed].any(axis=0))


def _frames_of(problem: FramesProblem, frames: np.ndarray) -> FramesProblem:
    """``problem`` on ``frames`` (k,) of its frames alone."""
    def part(values):
        return None if values is None else values[frames]

    return replace(problem, targets=problem.targets[frames], weights=problem.weights[frames],
                   reference=part(problem.reference), lower=part(problem.lower), upper=part(problem.upper),
                   rotations=part(problem.rotations))


def _fields_of(result: FramesResult) -> tuple:
    """A result's arrays, each with the frame axis first."""
    return tuple(getattr(result, f.name) for f in fields(result))


_SUBSETS: dict = {}  # (skeleton's id, the joints kept) -> (that skeleton, those joints in level order, their tree)
_SUBSETS_LOCK = threading.Lock()


def _subset(sk: Skeleton, keep: np.ndarray) -> tuple[np.ndarray, Skeleton]:
    """(``keep`` in depth order, ``subset(sk, keep)`` numbered in that order): the tree's
    joints numbered as ``frames_by_level`` works on them (no reordering per evaluation),
    kept for the last few skeletons: a bake solves its runs of frames on one skeleton, each
    run on the same joints."""
    key = (id(sk), keep.tobytes())
    with _SUBSETS_LOCK:
        found = _SUBSETS.get(key)
    if found is not None and found[0] is sk:
        return found[1:]
    keep = keep[level_order(subset(sk, keep))]
    tree = subset(sk, keep)
    with _SUBSETS_LOCK:
        while len(_SUBSETS) >= 8:
            del _SUBSETS[next(iter(_SUBSETS))]
        _SUBSETS[key] = (sk, keep, tree)
    return keep, tree


def _solve_frames(problem: FramesProblem, start: np.ndarray) -> FramesResult:
    sk = problem.skeleton
    q = problem.clamp(np.array(start, dtype=float), np.arange(len(start)))
    fk = sk.forward_frames(q)  # the start's kinematics: the sizes', and the solve's on the whole tree
    sizes = _sizes(fk, problem)
    col_base = np.sqrt(np.clip(sk.mobility, 0.0, 1.0)) / sk.subtree**INERTIA_POWER
    ref_weight = carried_weights(sk)
    keep = _kept(problem)
    if keep.size == sk.size:
        return _solve(problem, q, sizes, col_base, ref_weight, fk)
    keep, tree = _subset(sk, keep)
    index = np.full(sk.size, -1, dtype=np.intp)
    index[keep] = np.arange(keep.size)

    def part(values):
        return None if values is None else np.asarray(values)[..., keep]

    inner = replace(problem, skeleton=tree, joints=index[problem.joints], reference=part(problem.reference),
                    active=part(problem.active), lower=part(problem.lower), upper=part(problem.upper),
                    joints_b=None if problem.joints_b is None else np.where(problem.joints_b >= 0,
                                                                            index[problem.joints_b], -1))
    result = _solve(inner, q[:, keep], sizes, col_base[keep], ref_weight[keep])
    q[:, keep] = result.q
    return replace(result, q=q)


def _solve(problem: FramesProblem, q: np.ndarray, sizes: np.ndarray, col_base: np.ndarray,
           all_weights: np.ndarray, fk: np.ndarray | None = None) -> FramesResult:
    sk = problem.skeleton
    frames, n = q.shape
    reference = q.copy() if problem.reference is None else np.asarray(problem.reference, dtype=float)
    movable = sk.mobility > 0.0
    if problem.active is not None:
        movable &= np.asarray(problem.active, dtype=bool)
    cols = np.flatnonzero(movable)
    weights = np.asarray(problem.weights, dtype=float)
    levels = [np.flatnonzero(problem.priority == p) for p in np.unique(problem.priority)]
    owners = problem.owners()
    errors = np.zeros((frames, owners.shape[1]))
    iterations = np.zeros(frames, dtype=np.intp)
    done = np.zeros(frames, dtype=bool)
    ref_weight = all_weights[cols]
    pull = min(1.0, float(problem.reference_weight))
    live = np.arange(frames)
    closest = np.full(frames, np.inf)  # the reference's smallest distance with the goals met
    first = levels[0]
    rows_of_levels = level_rows(problem.floor, levels)
    fk = sk.forward_frames(q) if fk is None else fk  # of the frames ``live``, at their joint values
    err = FrameRows(problem, live, weights, sizes).errors(fk)
    stalled = np.zeros(frames, dtype=bool)
    # Each level's weighted squared distance at the start of each iteration (the stall's test).
    distances = np.full((problem.max_iterations + 1, frames, len(levels)), np.nan)
    for iteration in range(problem.max_iterations + 1):
        sub = FrameRows(problem, live, weights, sizes[live])
        errors[live] = np.sqrt(err**2 @ owners)
        met = np.all(errors[live] <= problem.tolerance, axis=1)
        distances[iteration, live] = np.stack([  # each level's weighted RMS distance, as ``sr_inverse``'s
            np.sqrt(_level_distance(err[:, g], weights[live][:, g]) / np.maximum(weights[live][:, g].sum(axis=1),
                                                                                 1e-300)) for g in levels], axis=1)
        if iteration >= STALL_SPAN:  # no level closer by STALL_GAIN over STALL_SPAN iterations: stalled
            before, now = distances[iteration - STALL_SPAN, live], distances[iteration, live]
            stuck = ~met & np.all(before - now <= STALL_GAIN * np.maximum(before, problem.tolerance), axis=1)
            if stuck.any():
                stalled[live[stuck]] = True
                keep = ~stuck
                live, err, met, fk = live[keep], err[keep], met[keep], fk[keep]
                sub = FrameRows(problem, live, weights, sizes[live])
                if not live.size:
                    break
        if cols.size == 0:
            done[live] = True
            break
        col_scale = np.where(sk.prismatic[cols], SLIDE_SCALE * sub.size[:, None], 1.0) * col_base[cols]
        e, jac = sub.rows(fk, cols)  # (L, r), (L, r, c), rows weighted and divided by the size
        jac = jac * col_scale[:, None, :]
        target = (reference[live] - q[live])[:, cols] / col_scale
        x = _step(e, jac, rows_of_levels, target, ref_weight, problem.damping, pull)
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
        err = FrameRows(problem, live, weights, sizes[live]).errors(fk)
        worse = _level_distance(err[:, first], first_weights) > allowed
        for _halving in range(HALVINGS):  # the frames whose first level the step takes further off
            if not worse.any():
                break
            again = np.flatnonzero(worse)
            beta[again] *= 0.5
            trial[again] = problem.clamp(step_q[again] + beta[again, None] * dq[again], live[again])
            fk[again] = sk.forward_frames(trial[again])
            err[again] = FrameRows(problem, live[again], weights, sizes[live[again]]).errors(fk[again])
            worse[again] = _level_distance(err[again][:, first], first_weights[again]) > allowed[again]
        q[live] = trial
        iterations[live] += 1
    first_goals = np.flatnonzero((owners[first] > 0).any(axis=0))
    return FramesResult(q, errors, done & np.all(errors <= problem.tolerance, axis=1), iterations, stalled,
                        np.all(errors[:, first_goals] <= problem.tolerance, axis=1))


def _level_distance(errors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.einsum("fg,fg->f", weights, errors**2)


def _sizes(fk: np.ndarray, problem: FramesProblem) -> np.ndarray:
    """(F,) each frame's tree size at its start, from its kinematics ``fk`` (the bounding box of
    the joints and the targets), by which rows are divided and slides weighed, as in
    ``Kinematics.size_scale``."""
    origins = fk[:, :, :3, 3]
    targets = np.where(problem.weights[:, :, None] > 0.0, problem.targets, origins[:, :1])
    points = np.concatenate([origins, targets], axis=1)
    span = np.linalg.norm(points.max(axis=1) - points.min(axis=1), axis=1)
    return np.where(span > 1e-12, span, 1.0)


def _step(e: np.ndarray, jac: np.ndarray, level_rows: list[np.ndarray], target: np.ndarray,
          ref_weight: np.ndarray, damping: float, pull: float) -> np.ndarray:
    """The task-priority step (L, c) in scaled units: each level's damped least-squares part in
    the null space of the levels above, then the preferred pose's (``target``, diagonal weights
    ``ref_weight``) in the null space of every level (with every iteration's: the goals' steps
    then keep near it from the start, which saves iterations); each part capped at ``MAX_STEP``."""
    frames, c = target.shape
    total = np.zeros((frames, c))
    above = np.zeros((frames, 0, c))
    gram_above = None  # above's Gram matrix
    for rows in level_rows:
        a, err = jac[:, rows], e[:, rows] - np.einsum("lrc,lc->lr", jac[:, rows], total)
        if above.shape[1]:  # a - (a A^T) (A A^T)^-1 A
            cross = a @ np.swapaxes(above, 1, 2)
            a = a - np.swapaxes(np.linalg.solve(_damped(gram_above.copy(), EPSILON), np.swapaxes(cross, 1, 2)),
                                1, 2) @ above
        raw = a @ np.swapaxes(a, 1, 2)
        part = np.einsum("lrc,lr->lc", a, np.linalg.solve(_damped(raw.copy(), damping), err[:, :, None])[:, :, 0])
        total += _capped(part)
        if gram_above is None:
            gram_above = raw
        else:  # the rows below are in the null space of those above: the Gram matrix is block-diagonal
            size = gram_above.shape[1] + raw.shape[1]
            grown = np.zeros((frames, size, size))
            grown[:, :gram_above.shape[1], :gram_above.shape[1]] = gram_above
            grown[:, gram_above.shape[1]:, gram_above.shape[1]:] = raw
            gram_above = grown
        above = np.concatenate([above, a], axis=1)
    # The preferred pose: argmin ||W x - W t|| with A x = 0, x = t - W^-2 A^T (A W^-2 A^T)^-1 A t.
    t = target - total
    scaled = above * (1.0 / ref_weight**2)[None, None, :]  # A W^-2
    gram = _damped(scaled @ np.swapaxes(above, 1, 2), EPSILON)
    lam = np.linalg.solve(gram, np.einsum("lrc,lc->lr", above, t)[:, :, None])[:, :, 0]
    return total + pull * _capped(t - np.einsum("lrc,lr->lc", scaled, lam))


def _damped(gram: np.ndarray, k: float) -> np.ndarray:
    """``gram`` (a new array, changed in place) + k s I, s the mean of each frame's diagonal over
    its non-zero rows (zero rows, goals absent, get s alone: they then solve to 0)."""
    idx = np.arange(gram.shape[1])
    diagonal = gram[:, idx, idx]
    count = np.maximum((diagonal > 0.0).sum(axis=1), 1)
    s = np.maximum(diagonal.sum(axis=1) / count, 1e-300)
    gram[:, idx, idx] += np.where(diagonal > 0.0, k * s[:, None], s[:, None])
    return gram


def _capped(part: np.ndarray) -> np.ndarray:
    largest = np.abs(part).max(axis=1, initial=0.0)
    return part * np.minimum(1.0, MAX_STEP / np.maximum(largest, 1e-300))[:, None]
