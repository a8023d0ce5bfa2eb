"""The quasi-Newton solver's steps toward the preferred pose.

Reference pose (``problem.reference``, the lowest-priority task): from a configuration that
meets every goal, a step minimises R(x) = sum_j b_j^2 (x_j - x_ref,j)^2 (b:
``reference_weights``, in the columns' own units so that stiff joints keep to it
hardest, squared as in the SR inverse's reference level) subject to the goals (every level
alike, by their weights) linearised, A dx = r, the joints it pushes out at a bound held:
with W = diag(1/b^2) and d = x - x_ref,

    dx = W A^T (A W A^T + k I)^-1 r  -  p (d - W A^T (A W A^T + k I)^-1 A d),

k = ``problem.damping`` relative, p = ``reference_weight`` (at most 1). R is quadratic, so
the second part is the exact Newton step in the goals' null space (Rosen's projection,
with the goals as linearised equality constraints). Each trial gets a second-order
correction (the first part again, at the trial), as in SQP, and is halved until no goal
is further than ``REFERENCE_DRIFT`` of the tree's size off and R decreases; the goals'
iterations take back what drift is left. The solve goes on until the step is below
``REFERENCE_SETTLED`` with the goals met, or R's distance gains less than
``REFERENCE_PROGRESS`` from one goals-met configuration to the next (as in the SR inverse),
with half of any time budget; one stopped with a goal unmet returns the last configuration
that met every goal.
"""

from __future__ import annotations

import numpy as np

from ..problem import Problem
from .qn_active_set import HOLD_PASSES, MAX_HALVINGS, MAX_STEP
from .qn_potential import Potential
from .reference_weights import reference_weights
from .sr_inverse import REFERENCE_DRIFT, REFERENCE_PROGRESS, REFERENCE_SETTLED


class Reference:
    """The steps toward the preferred pose, from a configuration that meets the goals."""

    def __init__(self, problem: Problem, pot: Potential, unit, lower, upper):
        self.problem, self.pot, self.unit, self.lower, self.upper = problem, pot, unit, lower, upper
        self.target = np.asarray(problem.reference, dtype=float)[pot.cols]
        self.inverse_weight = 1.0 / reference_weights(problem)[pot.cols] ** 2  # as the SR inverse's level weighs it
        self.pull = min(1.0, float(problem.reference_weight))
        self.started = False
        self.last_step = np.inf
        self.closest = np.inf

    def distance(self, q: np.ndarray) -> float:
        d = (q[self.pot.cols] - self.target) / self.pot.scale
        return float(np.sqrt(np.sum(d**2 / self.inverse_weight)))

    def done(self, q: np.ndarray) -> bool:
        """Called with every goal met: whether the reference has nothing more to give."""
        distance = self.distance(q)
        if self.started and (self.last_step < REFERENCE_SETTLED or distance > (1.0 - REFERENCE_PROGRESS) * self.closest):
            return True
        self.started = True
        self.closest = min(self.closest, distance)
        return False

    def _least_norm(self, a: np.ndarray, rhs: np.ndarray, free: np.ndarray) -> np.ndarray:
        """W A^T (A W A^T + k I)^-1 rhs on the ``free`` joints (W = diag(1/b^2))."""
        out = np.zeros(free.size)
        if rhs.size and free.any():
            w = self.inverse_weight[free]
            af = a[:, free]
            gram = (af * w) @ af.T
            gram[np.diag_indices_from(gram)] += self.problem.damping * max(float(np.trace(gram)) / len(gram), 1e-300)
            out[free] = w * (af.T @ np.linalg.solve(gram, rhs))
        return out

    def step(self, q: np.ndarray, kin):
        """One step (q, kin, errors) toward the reference, followed by a correction of the
        goals (a second-order correction, as in SQP), or None."""
        pot, problem = self.pot, self.problem
        r, a = pot.jacobian(kin, pot.weights)
        x = q[pot.cols]
        d = (x - self.target) / pot.scale
        at_lower, at_upper = x <= self.lower, x >= self.upper
        held = np.zeros(x.size, dtype=bool)
        for _ in range(HOLD_PASSES):
            free = ~held
            dx = self._least_norm(a, r, free) - self.pull * np.where(free, d - self._least_norm(a, a @ np.where(
                free, d, 0.0), free), 0.0)
            out = free & ((at_lower & (dx < 0.0)) | (at_upper & (dx > 0.0)))
            if not out.any():
                break
            held |= out
        dq = dx * pot.scale
        biggest = float(np.abs(dq / self.unit).max(initial=0.0))
        self.last_step = 0.0
        before = self.distance(q)
        if biggest < REFERENCE_SETTLED or before <= 0.0:  # settled, as the SR inverse's test: no step
            return None  # to try and halve (a pose at its reference can only move off it)
        alpha = min(1.0, MAX_STEP / biggest)
        allowed = problem.tolerance + REFERENCE_DRIFT * pot.size
        sk = problem.skeleton
        for _ in range(MAX_HALVINGS // 2):
            trial = q.copy()
            trial[pot.cols] = np.clip(x + alpha * dq, self.lower, self.upper)
            trial = problem.constrain(trial)
            r_trial, a_trial = pot.jacobian(sk.forward(trial), pot.weights)
            fixed = trial.copy()
            fixed[pot.cols] = np.clip(trial[pot.cols] + self._least_norm(a_trial, r_trial, free) * pot.scale,
                                      self.lower, self.upper)
            fixed = problem.constrain(fixed)
            fixed_kin = sk.forward(fixed)
            fixed_errors = pot.batch.errors(fixed_kin)
            if np.all(fixed_errors <= allowed) and self.distance(fixed) < before:
                self.last_step = float(np.abs((fixed - q)[pot.cols] / self.unit).max(initial=0.0))
                return fixed, fixed_kin, fixed_errors
            alpha *= 0.5
        return None
