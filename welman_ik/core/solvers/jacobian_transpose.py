"""Jacobian transpose (Welman 1993, section 4.1).

The step is dq = alpha K J^T W e: the gradient of the weighted squared error, with a
per-joint gain K_i = mobility_i / sum_g w_g r_ig^2, where r_ig is the distance from
joint i to goal g's effector (the link-length scaling of section 4.1.4; for a sliding
joint the lever is 1; past a joint that does not inherit its parent's rotation, r_ig
is the distance to that joint's head, which is what joint i turns; see
``Kinematics.lever_points``). This makes the step independent of units and of how far
a joint is from its effectors.

Safeguard: a step that would increase the weighted error is halved until it does not
(backtracking), and alpha grows back towards 1 after each accepted step, so the method
never diverges. Joint steps are clipped to the limits.

With several priority levels each iteration takes a step on every goal, then one on the
first level alone, which is therefore what holds when goals conflict.

Like Welman reports, the method crawls near singular configurations: a straight chain
pulled inward along its own axis has J^T e = 0 and does not move.
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import (
    FirstLevelKeeper,
    Problem,
    SolveResult,
    check_start,
    finish,
    goal_errors,
    level_weights,
    stacked,
)
from .ccd import _directions, _pairs
from .preference import ReferencePull

MAX_STEP = 0.5  # largest revolute step per iteration [rad]
MAX_HALVINGS = 30
MIN_LEVER = 1e-6  # [m] a joint whose effectors are all nearer its axis point than this does not move


class _Descent:
    """Backtracking gradient steps on one weighting of the goals."""

    def __init__(self, problem: Problem, weights: np.ndarray):
        self.problem = problem
        self.weights = weights
        self.alpha = 1.0

    def cost(self, kin) -> float:
        e, _ = stacked(self.problem.goals, kin, self.weights)
        return float(e @ e)

    def step(self, q: np.ndarray, kin, movable: np.ndarray):
        """One accepted step from q: (new q, its kinematics), or None if none helps."""
        sk = self.problem.skeleton
        e, jac = stacked(self.problem.goals, kin, self.weights)
        gradient = jac.T @ e
        joints, points, _, w = _pairs(self.problem, kin, self.weights)
        distal = sk.ancestors[joints]  # (k, n)
        arm2 = np.sum((kin.lever_points(joints, points) - kin.origins[None, :, :]) ** 2, axis=2)
        lever2 = np.where(sk.prismatic[None, :], np.sum(kin.world_axes**2, axis=1)[None, :], arm2)
        denominator = np.sum(w[:, None] * distal * lever2, axis=0)
        d_joints, _, _, d_w = _directions(self.problem, kin, self.weights)
        if d_joints.size:  # a held axis turns with a joint at its length: lever^2 = length^2
            denominator += np.sum(d_w[:, None] * (sk.ancestors[d_joints] & (sk.lever[d_joints] < 0)), axis=0)
        # A joint with no lever on its effectors (a bone's head on its own hinges) has a
        # gradient of round-off: it stays (its gain would be that noise over nothing).
        levered = denominator > MIN_LEVER**2 * np.sum(w[:, None] * distal, axis=0)
        gain = np.where(movable & levered, sk.mobility / np.maximum(denominator, 1e-300), 0.0)
        direction = gain * gradient
        cost = self.cost(kin)
        for _h in range(MAX_HALVINGS):
            dq = self.alpha * direction
            biggest = np.abs(dq[~sk.prismatic]).max(initial=0.0)
            if biggest > MAX_STEP:
                dq *= MAX_STEP / biggest
            trial = self.problem.constrain(q + dq)
            if np.abs(trial - q).max(initial=0.0) < 1e-15:
                return None
            trial_kin = sk.forward(trial)
            if self.cost(trial_kin) <= cost:
                self.alpha = min(1.0, self.alpha * 1.5)
                return trial, trial_kin
            self.alpha *= 0.5
        return None


def solve(problem: Problem, q0) -> SolveResult:
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    movable = problem.movable()
    weights, first_level = level_weights(problem)
    phases = [_Descent(problem, weights)]
    if not np.array_equal(weights, first_level):
        phases.append(_Descent(problem, first_level))
    history: list[float] = []
    iterations = 0
    kin = sk.forward(q)
    pull = ReferencePull(problem, kin)
    keeper = FirstLevelKeeper(problem)
    for _ in range(problem.max_iterations):
        errors = goal_errors(problem.goals, kin)
        history.append(float(errors.max(initial=0.0)))
        keeper.see(q, kin, errors)
        if np.all(errors <= problem.tolerance):
            pulled = pull.step(q, kin, errors)
            if pulled is None:
                break
            q, kin = pulled
            continue
        if time.perf_counter() > deadline:
            break
        iterations += 1
        moved = False
        for phase in phases:
            taken = phase.step(q, kin, movable)
            if taken is not None:
                (q, kin), moved = taken, True
        if not moved:
            break
    q, kin = pull.finish(q, kin)
    q, kin = keeper.choose(q, kin, goal_errors(problem.goals, kin))
    return finish(problem, q, iterations, history, kin)
