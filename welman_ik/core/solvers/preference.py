"""The preferred pose for the solvers that have no null space (CCD, Jacobian transpose).

Yamane & Nakamura's reference pose is the lowest-priority task. Without a null space it
becomes a pull weighted below the goals: only from a configuration that meets every goal,
each joint takes ``reference_weight`` of the way back to its preferred value (times its
mobility: a stiff joint is pulled back less, as it also moves less; and times the share
of the bone length it carries, ``sr_inverse.reference_weights`` capped at 1, so that the
trunk is pulled back the whole way and the limbs do the reaching), halved until no goal
drifts more than ``REFERENCE_DRIFT`` of the tree's size; the solver's own iterations then
bring the goals back. The whole way is tried first: where the preferred pose itself meets
the goals (a hand dragged back to where it started) it is taken, whatever lies between.
Then the smallest of the halvings, and if even it drifts too far no pull is taken (one
forward pass instead of one per halving: a drag's pose is usually that far from the
reference). The pull stops when its step is below
``REFERENCE_SETTLED`` or the distance to the reference, measured each time the goals are
met again, shrinks by less than ``REFERENCE_PROGRESS``; it has the first half of a time
budget. A solve that stops between a pull and the goals' correction returns the last
configuration that met them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..problem import GoalBatch, Problem
from ..skeleton import Kinematics
from .sr_inverse import REFERENCE_DRIFT, REFERENCE_PROGRESS, REFERENCE_SETTLED, reference_weights

MAX_HALVINGS = 6


class ReferencePull:
    """The pull of one solve; ``errors``: the goals' errors at given kinematics (by default
    ``GoalBatch.errors``), if the solver has a cheaper way to them."""

    def __init__(self, problem: Problem, kin, errors: Callable[[Kinematics], np.ndarray] | None = None):
        self.problem = problem
        goals = problem.goals
        self.active = problem.reference is not None and problem.reference_weight > 0.0 and len(goals) > 0
        if not self.active:
            return
        self.goal_errors = GoalBatch(goals, np.ones(len(goals))).errors if errors is None else errors
        sk = problem.skeleton
        self.reference = np.asarray(problem.reference, dtype=float)
        # The joints that carry most (the trunk) are pulled back the whole way, the limbs' less.
        carried = np.minimum(reference_weights(problem), 1.0)
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

        def kept(beta: float):
            trial = problem.constrain(q + beta * delta)
            trial_kin = problem.skeleton.forward(trial)
            return (trial, trial_kin) if np.all(self.goal_errors(trial_kin) <= allowed) else None

        # The whole way first: where the preferred pose itself meets the goals (a hand dragged
        # back to where it started), it is the answer, whatever lies between.
        whole = kept(1.0)
        if whole is not None:
            return whole
        # Then the smallest pull: if even that moves a goal too far, none is taken (the
        # larger pulls drift more).
        least = kept(0.5 ** (MAX_HALVINGS - 1))
        if least is None:
            return None
        for halvings in range(1, MAX_HALVINGS - 1):
            taken = kept(0.5**halvings)
            if taken is not None:
                return taken
        return least

    def finish(self, q: np.ndarray, kin):
        """The configuration to return: ``q``, unless it misses a goal that the last settled
        configuration met."""
        if (self.active and self.settled is not None and self.settled[0] is not q
                and not np.all(self.goal_errors(kin) <= self.problem.tolerance)):
            return self.settled[0], self.settled[1]
        return q, kin
