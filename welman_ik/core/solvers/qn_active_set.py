"""The quasi-Newton solver's joint limits and line search (Zhao & Badler 1994).

Joint limits are linear constraints handled by an active set (Rosen's gradient projection):
a joint at a bound whose gradient pushes outward is held; a free joint at a bound whose
step points outward is held too (and the step solved again); a_max is where the first free
joint reaches its bound, which it is then set to exactly and so joins the active set; a
held joint is released as soon as its gradient (the Lagrange multiplier of its bound)
points inward. Every trial is clipped to the limits, so none is ever exceeded. Spherical
ranges (``problem.ranges``) are a projection after each step (``problem.constrain``).

The step is searched by Armijo backtracking, G(x + a p) <= G(x) + ``ARMIJO`` a grad^T p,
from a = min(1, a_max, a cap of ``MAX_STEP`` per joint).
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import Problem
from ..skeleton import Kinematics
from .qn_potential import Potential

MAX_STEP = 0.5  # largest joint step per iteration [rad, or tree sizes]
ARMIJO = 1e-4
MAX_HALVINGS = 30
HALVING_BATCHES = (1, 4, MAX_HALVINGS)  # the line search's trials posed together: the first alone, then more
HOLD_PASSES = 3  # solves per step that hold the joints it pushes out at a bound (the line search clips the rest)


def direction(hessian: np.ndarray, grad: np.ndarray, x: np.ndarray, lower: np.ndarray,
               upper: np.ndarray) -> np.ndarray | None:
    """The quasi-Newton step on the free joints, B_FF p_F = -grad_F (None if B_FF is not
    positive definite): joints at a bound that the gradient, or the step itself, pushes
    outward are held."""
    at_lower, at_upper = x <= lower, x >= upper
    held = (at_lower & (grad > 0.0)) | (at_upper & (grad < 0.0))
    step = np.zeros_like(grad)
    for _ in range(HOLD_PASSES):
        free = ~held
        step[:] = 0.0
        if free.any():
            reduced = hessian[np.ix_(free, free)]
            try:
                np.linalg.cholesky(reduced)
            except np.linalg.LinAlgError:
                return None
            step[free] = -np.linalg.solve(reduced, grad[free])
        out = free & ((at_lower & (step < 0.0)) | (at_upper & (step > 0.0)))
        if not out.any():
            break
        held |= out
    return step


def place(problem: Problem, pot: Potential, q, x, alphas, dq, alpha_max, hit, lower, upper) -> np.ndarray:
    """q + alpha dq (k, n) for each of ``alphas`` (k,) within the limits (the joint that reaches
    its bound first exactly on it when alpha is alpha_max), projected onto the spherical ranges."""
    trials = np.repeat(q[None], len(alphas), axis=0)
    trials[:, pot.cols] = np.clip(x + alphas[:, None] * dq, lower, upper)
    trials[alphas == alpha_max, pot.cols[hit]] = upper[hit] if dq[hit] > 0.0 else lower[hit]
    return problem.constrain_many(trials)


def line_search(problem: Problem, pot: Potential, q: np.ndarray, value: float, grad: np.ndarray,
                step: np.ndarray, unit: np.ndarray, lower: np.ndarray, upper: np.ndarray, deadline: float = np.inf):
    """Armijo backtracking along ``step`` (scaled units), cut at the first bound: (q, kin,
    errors, G) of the accepted point, the halvings it took and whether ``MAX_STEP`` capped
    it; or None (none accepted, or ``deadline`` passed). The full step alone, then the
    halvings in growing batches (``HALVING_BATCHES``), each batch placed and posed at once."""
    cols = pot.cols
    dq = step * pot.scale
    x = q[cols]
    biggest = float(np.abs(dq / unit).max(initial=0.0))
    if biggest <= 0.0:
        return None
    alpha = min(1.0, MAX_STEP / biggest)
    capped = alpha < 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (a tiny step: a bound out of reach)
        reach = np.where(dq > 0.0, (upper - x) / dq, np.where(dq < 0.0, (lower - x) / dq, np.inf))
    hit = int(np.argmin(reach))
    alpha_max = float(reach[hit])
    alpha = min(alpha, alpha_max)
    sk = problem.skeleton
    start = 0
    for count in HALVING_BATCHES:
        ks = np.arange(start, min(start + count, MAX_HALVINGS))
        if not ks.size:
            break
        trials = place(problem, pot, q, x, alpha * 0.5**ks, dq, alpha_max, hit, lower, upper)
        # (the full step alone, most are taken as they are: its kinematics kept for the next iteration)
        frames = sk.forward(trials[0]).frames[None] if ks.size == 1 else sk.forward_frames(trials)
        for k, trial, frame in zip(ks, trials, frames):
            found = _accepted(pot, q, value, grad, trial, Kinematics(sk, trial, frame))
            if found is not None:
                return (*found, int(k), capped)
            if time.perf_counter() > deadline:
                return None
        start += ks.size
    return None


def _accepted(pot: Potential, q: np.ndarray, value: float, grad: np.ndarray, trial: np.ndarray, trial_kin):
    """(trial, kin, errors, value) where ``trial`` meets Armijo's condition, else None."""
    trial_errors = pot.batch.errors(trial_kin)
    trial_value = pot.value(trial_errors)
    slope = float(grad @ ((trial - q)[pot.cols] / pot.scale))
    if trial_value <= value + ARMIJO * min(slope, 0.0) and np.isfinite(trial_value):
        return trial, trial_kin, trial_errors, trial_value
    return None
