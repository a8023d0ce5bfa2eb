"""The preferred pose for the solvers that have no null space (CCD, Jacobian transpose).

Yamane & Nakamura's reference pose is the lowest-priority task. Without a null space it
becomes a pull weighted below the goals: only from a configuration that meets every goal,
each joint takes ``reference_weight`` of the way back to its preferred value (times its
mobility: a stiff joint is pulled back less, as it also moves less; and times the share
of the bone length it carries, ``sr_inverse.reference_weights`` capped at 1, so that the
trunk is pulled back the whole way and the limbs do the reaching), halved until no goal drifts
more than ``REFERENCE_DRIFT`` of the tree's size; the solver's own iterations then bring the
goals back. The pull stops when its step is below ``REFERENCE_SETTLED`` or the distance to
the reference, measured each time the goals are met again, shrinks by less than
``REFERENCE_PROGRESS``; it has the first half of a time budget. A solve that stops between
a pull and the goals' correction returns the last configuration that met them.
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import Problem, goal_errors
from .sr_inverse import REFERENCE_DRIFT, REFERENCE_PROGRESS, REFERENCE_SETTLED, reference_weights

MAX_HALVINGS = 6


class ReferencePull:
    def __init__(self, problem: Problem, kin):
        self.problem = problem
        goals = problem.goals
        self.active = problem.reference is not None and problem.reference_weight > 0.0 and len(goals) > 0
        if not self.active:
            return
        sk = problem.skeleton
        self.reference = np.asarray(problem.reference, dtype=float)
        # The joints that carry most (the trunk) are pulled back the whole way, the limbs' less.
        carried = np.minimum(reference_weights(sk), 1.0)
        self.rate = min(1.0, float(problem.reference_weight)) * np.where(problem.movable(), sk.mobility, 0.0) * carried
        self.size = kin.size_scale(np.array([g.point_pairs(kin)[2][0] for g in goals]))
        self.closest = np.inf
        self.settled = None
        now = time.perf_counter()
        deadline = problem.deadline()
        self.deadline = now + 0.5 * (deadline - now) if np.isfinite(deadline) else np.inf

    def step(self, q: np.ndarray, kin, errors: np.ndarray):
        """From ``q`` (every goal met): (next q, its kinematics) toward the reference, or None
        when the reference is done."""
        if not self.active:
            return None
        self.settled = (q, kin, errors)
        delta = self.rate * (self.reference - q)
        distance = float(np.linalg.norm(self.reference - q))
        if (np.abs(delta).max(initial=0.0) < REFERENCE_SETTLED or distance > (1.0 - REFERENCE_PROGRESS) * self.closest
                or time.perf_counter() > self.deadline):
            return None
        self.closest = distance
        problem = self.problem
        allowed = np.maximum(errors, problem.tolerance) + REFERENCE_DRIFT * self.size
        beta = 1.0
        for _ in range(MAX_HALVINGS):
            trial = problem.constrain(q + beta * delta)
            trial_kin = problem.skeleton.forward(trial)
            if np.all(goal_errors(problem.goals, trial_kin) <= allowed):
                return trial, trial_kin
            beta *= 0.5
        return None

    def finish(self, q: np.ndarray, kin):
        """The configuration to return: ``q``, unless it misses a goal that the last settled
        configuration met."""
        if (self.active and self.settled is not None and self.settled[0] is not q
                and not np.all(goal_errors(self.problem.goals, kin) <= self.problem.tolerance)):
            return self.settled[0], self.settled[1]
        return q, kin
