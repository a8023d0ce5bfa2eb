"""Jacobian transpose (Welman 1993, section 4.1).

The step is dq = alpha K J^T W e: the gradient of the weighted squared error, with a
per-joint gain K_i = mobility_i / sum_g w_g r_ig^2, where r_ig is the distance from
joint i to goal g's effector (the link-length scaling of section 4.1.4; for a sliding
joint the lever is 1). This makes the step independent of units and of how far a
joint is from its effectors.

Safeguard: a step that would increase the weighted error is halved until it does not
(backtracking), and alpha grows back towards 1 after each accepted step, so the method
never diverges. Joint steps are clipped to the limits.

Like Welman reports, the method crawls near singular configurations: a straight chain
pulled inward along its own axis has J^T e = 0 and barely moves.
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import Problem, SolveResult, check_start, finish, goal_errors, stacked
from .ccd import _pairs, weighted_cost

MAX_STEP = 0.5  # largest revolute step per iteration [rad]
MAX_HALVINGS = 30


def solve(problem: Problem, q0) -> SolveResult:
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    weights = problem.effective_weights()
    movable = problem.movable()
    history: list[float] = []
    alpha = 1.0
    iterations = 0

    def cost_at(qq):
        kin = sk.forward(qq)
        _, pts, tgts, w = _pairs(problem, kin, weights)
        return weighted_cost(pts, tgts, w), kin

    cost, kin = cost_at(q)
    for _ in range(problem.max_iterations):
        errors = goal_errors(problem.goals, kin)
        history.append(float(errors.max(initial=0.0)))
        if np.all(errors <= problem.tolerance) or time.perf_counter() > deadline:
            break
        e, jac = stacked(problem.goals, kin, weights)
        gradient = jac.T @ e
        joints, points, _, w = _pairs(problem, kin, weights)
        distal = sk.ancestors[joints]  # (k, n)
        arm2 = np.sum((points[:, None, :] - kin.origins[None, :, :]) ** 2, axis=2)
        lever2 = np.where(sk.prismatic[None, :], np.sum(kin.world_axes**2, axis=1)[None, :], arm2)
        denominator = np.sum(w[:, None] * distal * lever2, axis=0)
        gain = np.where(movable & (denominator > 0), sk.mobility / np.maximum(denominator, 1e-300), 0.0)
        direction = gain * gradient
        accepted = False
        for _h in range(MAX_HALVINGS):
            dq = alpha * direction
            biggest = np.abs(dq[~sk.prismatic]).max(initial=0.0)
            if biggest > MAX_STEP:
                dq *= MAX_STEP / biggest
            trial = sk.clamp(q + dq)
            new_cost, new_kin = cost_at(trial)
            if new_cost <= cost:
                accepted = True
                break
            alpha *= 0.5
        iterations += 1
        if not accepted or np.abs(trial - q).max(initial=0.0) < 1e-15:
            break
        q = trial
        cost, kin = new_cost, new_kin
        alpha = min(1.0, alpha * 1.5)
    return finish(problem, q, iterations, history)
