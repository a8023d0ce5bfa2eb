"""Quasi-Newton minimisation of the goals' potential (Zhao & Badler 1994, "Inverse kinematics
positioning using nonlinear programming for highly articulated figures", ACM TOG 13(4)).

The goals are one potential in scaled joint coordinates x (dq = S dx, S = ``col_scale`` as
in the SR inverse: sqrt(mobility) / m**0.5 for a joint that moves m joints, prismatic
columns in tenths of the tree's size s; residuals in units of s):

    G(x) = sum_g c_l(g) w_g |e_g(q)|^2 / s^2,     e = target - feature  (``Goal.residual``),

    grad G = -2 A^T r,   A = sqrt(c w) J S / s,   r = sqrt(c w) e / s   (``stacked``).

BFGS (their Algorithm 1) on a model Hessian B = B_GN + C: the damped Gauss-Newton matrix
B_GN = 2 A^T A + lambda I, recomputed at each iterate from the Jacobian that the gradient
needs anyway, plus a correction C for what Gauss-Newton misses (the residuals' curvature,
large for a goal out of reach), learnt from the steps s = x_k+1 - x_k by the BFGS update

    B+ = B + y y^T / y^T s - B s s^T B / s^T B s,     C = B+ - B_GN(x_k+1),

with B = B_GN(x_k+1) + C and the structured secant y = 2 A+^T A+ s - 2 (A+ - A)^T r+ (Dennis,
Gay & Welsch 1981: grad_k+1 - grad_k with the Gauss-Newton part taken at the new point; where
the goals can be met the residual part vanishes and C stays near 0), skipped when the
curvature y^T s is not positive. The step solves B_FF p_F = -grad_F on the
free joints F (Cholesky; C is dropped when it makes B indefinite) and is searched by
Armijo backtracking, G(x + a p) <= G(x) + 1e-4 a grad^T p, from a = min(1, a_max, a cap of
``MAX_STEP`` per joint). lambda is ``problem.damping`` times the mean diagonal of the weakest
level (so that a lower level is not damped away in what freedom the higher ones leave it),
raised (and C dropped) when a step is capped or halved more than once, or comes out longer
than ``TRUST`` times ``MAX_STEP`` (a nearly singular direction: damped, not shortened), and
lowered when one is taken whole, as in Levenberg-Marquardt: far from the goals (or near a
singular pose) the iteration is a damped Gauss-Newton one, near them a quasi-Newton one. The iteration is
stationary after two steps in a row that gain, or promise to first order, less than
``STALL`` of G (or move less than ``STEP_TOL``), or when no step is accepted.

Joint limits are linear constraints handled by an active set (Rosen's gradient projection):
a joint at a bound whose gradient pushes outward is held; a free joint at a bound whose
step points outward is held too (and the step solved again); a_max is where the first free
joint reaches its bound, which it is then set to exactly and so joins the active set; a
held joint is released as soon as its gradient (the Lagrange multiplier of its bound)
points inward. Every trial is clipped to the limits, so none is ever exceeded. Spherical
ranges (``problem.ranges``) are a projection after each step (``problem.constrain``).

Priorities: level l's goals are weighted c_l = ``LEVEL_RATIO``**l. When the iteration is
stationary with a level unmet that lower levels pull off (a drag out of reach), every
weight below that level is multiplied by ``ESCALATION`` (a quadratic penalty with a growing
parameter) and the iteration goes on, as long as that level gets closer; the last tenth of
the budget starts with such an escalation if the first level is unmet. So the first level
ends within tolerance whenever it can; a solve that ends with it unmet having met it on the
way returns the best configuration that met it (``FirstLevelKeeper``).

Reference pose (``problem.reference``, the lowest-priority task): from a configuration that
meets every goal, a step minimises R(x) = sum_j b_j^2 (x_j - x_ref,j)^2 (b:
``sr_inverse.reference_weights``, in the columns' own units so that stiff joints keep to it
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

A stationary point with a goal unmet and nothing left to escalate (a straight chain pulled
along itself, where the gradient vanishes) gets the SR inverse's escape nudge.
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import FirstLevelKeeper, GoalBatch, Problem, SolveResult, check_start, finish
from .sr_inverse import (
    DAMPING_FACTOR,
    INERTIA_POWER,
    MAX_DAMPING,
    REFERENCE_DRIFT,
    REFERENCE_PROGRESS,
    REFERENCE_SETTLED,
    SLIDE_SCALE,
    escape_nudge,
    reference_weights,
)

MAX_STEP = 0.5  # largest joint step per iteration [rad, or tree sizes]
ARMIJO = 1e-4
MAX_HALVINGS = 30
LEVEL_RATIO = 1e-4  # each priority level's weight relative to the level above it, to start with
ESCALATION = 1e-2  # what the weights below a level unmet at a stationary point are multiplied by
MIN_RATIO = 1e-14  # weights are not escalated below this relative to the level above
CURVATURE = 1e-12  # y^T s must exceed this share of |y| |s| for an update
STEP_TOL = 1e-12  # [rad, or tree sizes] a step below this is no step
STALL = 1e-8  # a step that gains, or promises to first order, less than this share of G is no gain
MAX_NUDGES = 10
MAX_BOOST = 1e18
TRUST = 4.0  # a step longer than this many MAX_STEPs is damped more, up to TRUST_TRIES times
TRUST_TRIES = 8
HOLD_PASSES = 3  # solves per step that hold the joints it pushes out at a bound (the line search clips the rest)


class _Potential:
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


def solve(problem: Problem, q0) -> SolveResult:
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    now = time.perf_counter()
    reference_deadline = now + 0.5 * (deadline - now) if np.isfinite(deadline) else np.inf
    movable = problem.movable()
    kin = sk.forward(q)
    tol = problem.tolerance
    pot = _Potential(problem, kin)
    errors = pot.batch.errors(kin)
    cols = pot.cols
    if not problem.goals or cols.size == 0:
        return finish(problem, q, 0, [float(errors.max(initial=0.0))], kin)
    unit = np.where(sk.prismatic, pot.size, 1.0)[cols]
    lower, upper = sk.lower[cols], sk.upper[cols]
    groups = [list(g) for g in pot.groups]
    reference = None
    if problem.reference is not None and problem.reference_weight > 0.0:
        reference = _Reference(problem, pot, unit, lower, upper)

    value = pot.value(errors)
    grad, a, _ = pot.gradient(kin)
    boost = 1.0
    correction = np.zeros((cols.size, cols.size))  # C: what the Gauss-Newton matrix misses, from the secants
    stalls, nudges = 0, 0
    escalated_at: dict[int, float] = {}
    history: list[float] = []
    iterations = 0
    settled = None
    keeper = FirstLevelKeeper(problem)
    polish_from = problem.max_iterations - max(3, problem.max_iterations // 10)
    polished = False

    def restart(new_q, new_kin, new_errors):
        nonlocal q, kin, errors, value, grad, a, correction, stalls
        q, kin, errors = new_q, new_kin, new_errors
        value = pot.value(errors)
        grad, a, _ = pot.gradient(kin)
        correction = np.zeros_like(correction)
        stalls = 0

    for _ in range(problem.max_iterations):
        history.append(float(errors.max(initial=0.0)))
        keeper.see(q, kin, errors)
        met = bool(np.all(errors <= tol))
        if met:
            settled = (q, kin)
            if reference is None or reference.done(q) or time.perf_counter() > reference_deadline:
                break
        if time.perf_counter() > deadline:
            break
        if met:
            # Toward the reference in the goals' null space; the goals' own iterations take
            # back what that drifts them (second order) before the next such step.
            iterations += 1
            taken = reference.step(q, kin)
            if taken is None:
                break
            restart(*taken)
            continue

        if iterations >= polish_from and not polished and len(pot.c) > 1 and not np.all(errors[pot.groups[0]] <= tol):
            # The end of the budget with the first level unmet: it comes first now.
            polished = True
            pot.c[1:] *= ESCALATION**2
            restart(q, kin, errors)
        stationary = stalls >= 2
        if not stationary:
            iterations += 1
            gauss_newton = pot.gauss_newton(a, boost)
            step = _direction(gauss_newton + correction, grad, q[cols], lower, upper)
            if step is None and correction.any():  # the correction made B indefinite
                correction = np.zeros_like(correction)
                step = _direction(gauss_newton, grad, q[cols], lower, upper)
            for _ in range(TRUST_TRIES):
                # A step far beyond MAX_STEP follows a nearly singular direction: damp it
                # (a trust region, as in Levenberg-Marquardt) rather than shorten it.
                if step is None or np.abs(step * pot.scale / unit).max(initial=0.0) <= TRUST * MAX_STEP:
                    break
                boost = min(boost * DAMPING_FACTOR, MAX_BOOST)
                step = _direction(pot.gauss_newton(a, boost) + correction, grad, q[cols], lower, upper)
            taken = None
            if step is not None and float(grad @ step) < 0.0:
                taken = _line_search(problem, pot, q, value, grad, step, unit, lower, upper)
            if taken is None:
                if correction.any():
                    correction = np.zeros_like(correction)
                    continue
                stationary = True
            else:
                new_q, new_kin, new_errors, new_value, halvings, capped = taken
                s = (new_q - q)[cols] / pot.scale
                new_grad, new_a, new_r = pot.gradient(new_kin)
                # The secant of the Hessian's residual part alone (Dennis, Gay & Welsch 1981):
                # the Gauss-Newton part is known exactly at the new point.
                y = 2.0 * (new_a.T @ (new_a @ s)) - 2.0 * ((new_a - a).T @ new_r)
                sy = float(s @ y)
                moved = float(np.abs((new_q - q)[cols] / unit).max(initial=0.0))
                promised = -float(grad @ s)
                stalls = stalls + 1 if (moved < STEP_TOL or min(value - new_value, promised) <= STALL * value) else 0
                q, kin, errors, value, grad, a = new_q, new_kin, new_errors, new_value, new_grad, new_a
                if halvings > 1 or capped:
                    # The quadratic model was not to be trusted that far (a far target, a
                    # curved path): more damping and no correction, as in Levenberg-Marquardt.
                    boost = min(boost * DAMPING_FACTOR, MAX_BOOST)
                    correction = np.zeros_like(correction)
                    continue
                if halvings == 0:
                    boost = max(1.0, boost / DAMPING_FACTOR)
                if sy > CURVATURE * np.linalg.norm(s) * np.linalg.norm(y):
                    gauss_newton = pot.gauss_newton(a, boost)
                    correction = _bfgs(gauss_newton + correction, s, y, sy) - gauss_newton
                continue

        # Stationary with a goal unmet: the levels below the first unmet one are weakened,
        # or a stall at a singular configuration gets a nudge, or that is the answer.
        first = int(np.flatnonzero([not np.all(errors[g] <= tol) for g in pot.groups])[0])
        distance = pot.level_distance(errors, first)
        below = first < len(pot.c) - 1
        if below and pot.c[first + 1] / pot.c[first] > MIN_RATIO and distance < 0.5 * escalated_at.get(first, np.inf):
            escalated_at[first] = distance
            pot.c[first + 1:] *= ESCALATION
            restart(q, kin, errors)
            continue
        nudged = escape_nudge(problem, groups, q, errors, movable) if nudges < MAX_NUDGES else None
        if nudged is None:
            break
        nudges += 1
        nudged_kin = sk.forward(nudged)
        restart(nudged, nudged_kin, pot.batch.errors(nudged_kin))

    if reference is not None and settled is not None and settled[0] is not q and not np.all(errors <= tol):
        q, kin = settled  # stopped between a step toward the reference and the goals' correction
    else:
        q, kin = keeper.choose(q, kin, errors)
    return finish(problem, q, iterations, history, kin)


class _Reference:
    """The steps toward the preferred pose, from a configuration that meets the goals."""

    def __init__(self, problem: Problem, pot: _Potential, unit, lower, upper):
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
        if biggest <= 0.0:
            return None
        alpha = min(1.0, MAX_STEP / biggest)
        allowed = problem.tolerance + REFERENCE_DRIFT * pot.size
        before = self.distance(q)
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


def _direction(hessian: np.ndarray, grad: np.ndarray, x: np.ndarray, lower: np.ndarray,
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


def _place(problem: Problem, pot: _Potential, q, x, alpha, dq, alpha_max, hit, lower, upper) -> np.ndarray:
    """q + alpha dq within the limits (the joint that reaches its bound first exactly on it
    when alpha is alpha_max), projected onto the spherical ranges."""
    trial = q.copy()
    trial[pot.cols] = np.clip(x + alpha * dq, lower, upper)
    if alpha == alpha_max:
        trial[pot.cols[hit]] = upper[hit] if dq[hit] > 0.0 else lower[hit]
    return problem.constrain(trial)


def _line_search(problem: Problem, pot: _Potential, q: np.ndarray, value: float, grad: np.ndarray,
                 step: np.ndarray, unit: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    """Armijo backtracking along ``step`` (scaled units), cut at the first bound: (q, kin,
    errors, G) of the accepted point, the halvings it took and whether ``MAX_STEP`` capped
    it; or None."""
    cols = pot.cols
    dq = step * pot.scale
    x = q[cols]
    biggest = float(np.abs(dq / unit).max(initial=0.0))
    if biggest <= 0.0:
        return None
    alpha = min(1.0, MAX_STEP / biggest)
    capped = alpha < 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(dq > 0.0, (upper - x) / dq, np.where(dq < 0.0, (lower - x) / dq, np.inf))
    hit = int(np.argmin(reach))
    alpha_max = float(reach[hit])
    alpha = min(alpha, alpha_max)
    for halving in range(MAX_HALVINGS):
        trial = _place(problem, pot, q, x, alpha, dq, alpha_max, hit, lower, upper)
        trial_kin = problem.skeleton.forward(trial)
        trial_errors = pot.batch.errors(trial_kin)
        trial_value = pot.value(trial_errors)
        slope = float(grad @ ((trial - q)[cols] / pot.scale))
        if trial_value <= value + ARMIJO * min(slope, 0.0) and np.isfinite(trial_value):
            return trial, trial_kin, trial_errors, trial_value, halving, capped
        alpha *= 0.5
    return None


def _bfgs(hessian: np.ndarray, s: np.ndarray, y: np.ndarray, sy: float) -> np.ndarray:
    """The BFGS update of the model Hessian, B + y y^T / y^T s - B s s^T B / s^T B s (the
    update of Zhao & Badler's inverse, in the form whose submatrices the active set needs)."""
    bs = hessian @ s
    sbs = float(s @ bs)
    if sbs <= 0.0:
        return hessian
    return hessian + np.outer(y, y) / sy - np.outer(bs, bs) / sbs
