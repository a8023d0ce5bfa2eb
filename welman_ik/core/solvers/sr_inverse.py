"""Singularity-robust inverse with task priority (Yamane & Nakamura 2003, sections 2-3).

Each priority level l is solved with the SR inverse

    A* = A^T (A A^T + k I)^-1

applied to its Jacobian restricted to the null space N of all higher levels:

    dq += (J_l N)* (e_l - J_l dq),   N = I - V V^T  (V spans the rows of J_1..J_l)

so pins (level 0) hold while the drag (level 1) takes what freedom is left, or the
other way round. Rows are divided by the tree's size and prismatic columns multiplied
by it, so k and the result are independent of units; columns are scaled by
sqrt(mobility), giving the mobility-weighted least-norm step.

Joint limits: a joint that the step would carry past a limit is clamped at it,
locked, and the step re-solved with the remaining joints (at most a few passes).
"""

from __future__ import annotations

import time

import numpy as np

from ..limits import clamp_step, violating
from ..problem import Problem, SolveResult, check_start, finish, goal_errors, stacked

MAX_STEP = 0.5  # largest joint step per iteration [rad, or tree sizes]
LIMIT_PASSES = 4
MAX_HALVINGS = 12


def sr_inverse(a: np.ndarray, e: np.ndarray, k: float) -> np.ndarray:
    """A^T (A A^T + k I)^-1 e."""
    if a.shape[0] == 0 or a.shape[1] == 0:
        return np.zeros(a.shape[1])
    gram = a @ a.T
    gram[np.diag_indices_from(gram)] += k
    return a.T @ np.linalg.solve(gram, e)


def null_space_projector(a: np.ndarray, rank_tol: float = 1e-9) -> np.ndarray:
    """I - V V^T where V spans the row space of ``a``."""
    n = a.shape[1]
    if a.shape[0] == 0:
        return np.eye(n)
    _, s, vt = np.linalg.svd(a, full_matrices=False)
    rank = int(np.sum(s > rank_tol * max(s[0], 1.0))) if s.size else 0
    v = vt[:rank]
    return np.eye(n) - v.T @ v


def prioritized_step(levels: list[tuple[np.ndarray, np.ndarray]], k: float) -> np.ndarray:
    """The task-priority step for ``levels`` [(J_l, e_l)], highest priority first."""
    n = levels[0][0].shape[1]
    x = np.zeros(n)
    projector = None
    above: list[np.ndarray] = []
    for jac, err in levels:
        jn = jac if projector is None else jac @ projector
        x = x + sr_inverse(jn, err - jac @ x, k)
        above.append(jac)
        projector = null_space_projector(np.vstack(above))
    return x


class Merit:
    """Priority-ordered weighted squared error, compared level by level.

    A level whose goals are all within tolerance before and after counts as equal,
    so that a met level does not block progress on the ones below it.
    """

    def __init__(self, problem: Problem, groups: list[list[int]]):
        self.problem = problem
        self.groups = groups
        self.weights = np.array([g.weight for g in problem.goals])

    def levels(self, errors: np.ndarray) -> np.ndarray:
        return np.array([self.weights[g] @ errors[g] ** 2 for g in self.groups])

    def better(self, errors_new: np.ndarray, errors_old: np.ndarray) -> bool:
        """True when ``errors_new`` is lexicographically lower than ``errors_old``."""
        tol = self.problem.tolerance
        new, old = self.levels(errors_new), self.levels(errors_old)
        for g, a, b in zip(self.groups, old, new):
            if np.all(errors_old[g] <= tol) and np.all(errors_new[g] <= tol):
                continue
            if b < a * (1.0 - 1e-12):
                return True
            if b > a * (1.0 + 1e-12):
                return False
        return False


def escape_nudge(problem: Problem, merit: Merit, q: np.ndarray, errors: np.ndarray,
                 movable: np.ndarray, angle: float = 0.05):
    """The best single-hinge rotation by +-``angle`` [rad], or None if none lowers the merit.

    Used only when the SR step has stalled at a singular configuration (a straight chain
    pulled along itself), where no first-order step helps; at a true optimum no nudge
    helps, so the solver stops as before.
    """
    sk = problem.skeleton
    best_q, best = None, errors
    for j in np.flatnonzero(movable & ~sk.prismatic):
        for sign in (1.0, -1.0):
            trial = q.copy()
            trial[j] += sign * angle
            trial = sk.clamp(trial)
            trial_errors = goal_errors(problem.goals, sk.forward(trial))
            if merit.better(trial_errors, best):
                best_q, best = trial, trial_errors
    return best_q


def solve(problem: Problem, q0) -> SolveResult:
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    movable = problem.movable()
    goals = list(problem.goals)
    priorities = sorted({g.priority for g in goals})
    groups = [[i for i, g in enumerate(goals) if g.priority == p] for p in priorities]
    weights = np.array([g.weight for g in goals])

    kin = sk.forward(q)
    size = kin.size_scale(np.array([g.point_pairs(kin)[2][0] for g in goals]) if goals else None)
    col_scale = np.where(sk.prismatic, size, 1.0) * np.sqrt(np.clip(sk.mobility, 0.0, 1.0))
    k = problem.damping
    merit = Merit(problem, groups)

    history: list[float] = []
    iterations = 0
    for _ in range(problem.max_iterations):
        errors = goal_errors(goals, kin)
        history.append(float(errors.max(initial=0.0)))
        if np.all(errors <= problem.tolerance) or time.perf_counter() > deadline:
            break
        cols = np.flatnonzero(movable)
        if cols.size == 0:
            break
        tasks = []
        for group in groups:
            e, j = stacked([goals[i] for i in group], kin, weights[group])
            tasks.append((e / size, j[:, cols] * (col_scale[cols] / size)))

        scale = col_scale[cols]
        free = np.ones(cols.size, dtype=bool)
        fixed_x = np.zeros(cols.size)  # steps of joints clamped at a limit, scaled units
        dq = np.zeros(sk.size)
        for _pass in range(LIMIT_PASSES):
            reduced = [(j[:, free], e - j[:, ~free] @ fixed_x[~free]) for e, j in tasks]
            x = fixed_x.copy()
            if free.any():
                x_free = prioritized_step(reduced, k)
                biggest = np.abs(x_free).max(initial=0.0)
                if biggest > MAX_STEP:
                    x_free *= MAX_STEP / biggest
                x[free] = x_free
            dq[:] = 0.0
            dq[cols] = x * scale
            over = violating(sk, q, dq, movable)[cols] & free
            if not over.any():
                break
            fixed_x[over] = clamp_step(sk, q, dq)[cols][over] / scale[over]
            free &= ~over
        iterations += 1
        # Safeguard: a step that makes the priority-ordered error worse (an overshoot
        # toward an unreachable goal) is halved until it does not.
        accepted = None
        for _halving in range(MAX_HALVINGS):
            if np.abs(dq).max(initial=0.0) < 1e-12:
                break
            trial = sk.clamp(q + dq)
            trial_kin = sk.forward(trial)
            trial_errors = goal_errors(goals, trial_kin)
            if merit.better(trial_errors, errors):
                accepted = (trial, trial_kin)
                break
            dq *= 0.5
        if accepted is None:  # stalled
            nudged = escape_nudge(problem, merit, q, errors, movable)
            if nudged is None:
                break
            q, kin = nudged, sk.forward(nudged)
            continue
        q, kin = accepted
    return finish(problem, q, iterations, history)
