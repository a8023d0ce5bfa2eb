"""The goals' potential for the quasi-Newton solver (Zhao & Badler 1994): G(x) in scaled joint
coordinates x (dq = S dx, S = ``col_scale`` as in the SR inverse; residuals in units of the
tree's size s), its gradient and its damped Gauss-Newton matrix,

    G(x) = sum_g c_l(g) w_g |e_g(q)|^2 / s^2,   grad G = -2 A^T r,   B_GN = 2 A^T A + lambda I,

A = sqrt(c w) J S / s, r = sqrt(c w) e / s, with level l's goals weighted c_l =
``LEVEL_RATIO``**l to start with (``quasi_newton`` escalates them).
"""

from __future__ import annotations

import numpy as np

from ..problem import GoalBatch, Problem
from .sr_inverse import INERTIA_POWER, MAX_DAMPING, SLIDE_SCALE

LEVEL_RATIO = 1e-4  # each priority level's weight relative to the level above it, to start with


class Potential:
    """G(x) at a configuration, its gradient and its Gauss-Newton matrix, in scaled units."""

    def __init__(self, problem: Problem, kin):
        sk = problem.skeleton
        self.problem = problem
        self.goals = list(problem.goals)
        self.cols = np.flatnonzero(problem.movable())
        priorities = sorted({g.priority for g in self.goals})
        self.level = np.array([priorities.index(g.priority) for g in self.goals], dtype=np.intp)
        self.groups = [np.flatnonzero(self.level == lv) for lv in range(len(priorities))]
        self.weights = np.array([g.weight for g in self.goals], dtype=float)
        self.batch = GoalBatch(self.goals, self.weights)
        self.c = LEVEL_RATIO ** np.arange(len(priorities), dtype=float)
        self.size = kin.size_scale(np.array([g.point_pairs(kin)[2][0] for g in self.goals]) if self.goals else None)
        subtree = self.problem.subtree()
        col_scale = (np.where(sk.prismatic, SLIDE_SCALE * self.size, 1.0) * np.sqrt(np.clip(sk.mobility, 0.0, 1.0))
                     / subtree**INERTIA_POWER)
        self.scale = col_scale[self.cols]
        self.row_goal = self.batch.row_goal  # the rows come grouped by kind
        self.level_rows = [np.arange(0)]

    def goal_weights(self) -> np.ndarray:
        return self.c[self.level] * self.weights

    def value(self, errors: np.ndarray) -> float:
        return float(self.goal_weights() @ errors**2) / self.size**2

    def jacobian(self, kin, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(r (rows,), A (rows, m)): scaled residuals and Jacobian over the movable joints."""
        e, jac = self.batch.stack(kin, weights)
        if self.row_goal.size == e.size:
            row_level = self.level[self.row_goal]
            self.level_rows = [np.flatnonzero(row_level == lv) for lv in range(len(self.c))]
        else:  # a goal kind whose row count varies: one scale for all
            self.level_rows = [np.arange(e.size)]
        return e / self.size, jac[:, self.cols] * (self.scale / self.size)

    def gradient(self, kin) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(grad G (m,), A (rows, m), r (rows,))."""
        r, a = self.jacobian(kin, self.goal_weights())
        return -2.0 * (a.T @ r), a, r

    def gauss_newton(self, a: np.ndarray, boost: float) -> np.ndarray:
        """2 A^T A damped by ``problem.damping`` times the mean diagonal of its weakest level
        (so that a lower level is not damped away in what freedom the higher ones leave it)
        times ``boost`` (raised where the model fails, as in Levenberg-Marquardt), at most
        ``MAX_DAMPING`` times the strongest level's."""
        m = a.shape[1]
        gn = 2.0 * (a.T @ a)
        squares = 2.0 * np.einsum("ij,ij->i", a, a)  # each row's share of the trace
        scales = [float(np.sum(squares[rows])) / max(m, 1) for rows in self.level_rows if rows.size]
        scales = [s for s in scales if s > 0.0]
        damping = min(self.problem.damping * min(scales, default=0.0) * boost, MAX_DAMPING * max(scales, default=0.0))
        gn[np.diag_indices(m)] += max(damping, 1e-12 * float(np.trace(gn)) / max(m, 1), 1e-300)
        return gn

    def level_distance(self, errors: np.ndarray, level: int) -> float:
        group = self.groups[level]
        total = float(self.weights[group].sum())
        return float(np.sqrt(self.weights[group] @ errors[group] ** 2 / total)) if total > 0 else 0.0
