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

Joint limits are linear constraints handled by an active set (Rosen's gradient projection,
``qn_active_set``): a joint at a bound that the gradient or the step pushes outward is
held, a step is cut where the first free joint reaches its bound, and every trial is
clipped to the limits. Spherical ranges (``problem.ranges``) are a projection after each
step (``problem.constrain``).

Priorities: level l's goals are weighted c_l = ``LEVEL_RATIO``**l. When the iteration is
stationary with a level unmet that lower levels pull off (a drag out of reach), every
weight below that level is multiplied by ``ESCALATION`` (a quadratic penalty with a growing
parameter) and the iteration goes on, as long as that level gets closer; the last tenth of
the budget starts with such an escalation if the first level is unmet. So the first level
ends within tolerance whenever it can; a solve that ends with it unmet having met it on the
way returns the best configuration that met it (``FirstLevelKeeper``).

Reference pose (``problem.reference``, the lowest-priority task): from a configuration that
meets every goal, a step toward it in the goals' null space, corrected back onto the goals
(``qn_reference``); the solve goes on until that step is below ``REFERENCE_SETTLED`` or
gains less than ``REFERENCE_PROGRESS`` (as in the SR inverse), with half of any time
budget; one stopped with a goal unmet returns the last configuration that met every goal.

A stationary point with a goal unmet and nothing left to escalate (a straight chain pulled
along itself, where the gradient vanishes) gets the SR inverse's escape nudge.
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import FirstLevelKeeper, Problem, SolveResult, check_start, finish
from .qn_active_set import ARMIJO, HOLD_PASSES, MAX_HALVINGS, MAX_STEP
from .qn_active_set import direction as _direction
from .qn_active_set import line_search as _line_search
from .qn_potential import LEVEL_RATIO
from .qn_potential import Potential as _Potential
from .qn_reference import Reference as _Reference
from .sr_inverse import DAMPING_FACTOR, escape_nudge

__all__ = [
    "ARMIJO", "CURVATURE", "ESCALATION", "HOLD_PASSES", "LEVEL_RATIO", "MAX_BOOST", "MAX_HALVINGS", "MAX_NUDGES",
    "MAX_STEP", "MIN_RATIO", "STALL", "STEP_TOL", "TRUST", "TRUST_TRIES", "solve",
]

ESCALATION = 1e-2  # what the weights below a level unmet at a stationary point are multiplied by
MIN_RATIO = 1e-14  # weights are not escalated below this relative to the level above
CURVATURE = 1e-12  # y^T s must exceed this share of |y| |s| for an update
STEP_TOL = 1e-12  # [rad, or tree sizes] a step below this is no step
STALL = 1e-8  # a step that gains, or promises to first order, less than this share of G is no gain
MAX_NUDGES = 10
MAX_BOOST = 1e18
TRUST = 4.0  # a step longer than this many MAX_STEPs is damped more, up to TRUST_TRIES times
TRUST_TRIES = 8


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
                taken = _line_search(problem, pot, q, value, grad, step, unit, lower, upper, deadline)
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
        nudged = (escape_nudge(problem, groups, q, errors, movable, deadline=deadline)
                  if nudges < MAX_NUDGES and problem.rescue else None)
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



def _bfgs(hessian: np.ndarray, s: np.ndarray, y: np.ndarray, sy: float) -> np.ndarray:
    """The BFGS update of the model Hessian, B + y y^T / y^T s - B s s^T B / s^T B s (the
    update of Zhao & Badler's inverse, in the form whose submatrices the active set needs)."""
    bs = hessian @ s
    sbs = float(s @ bs)
    if sbs <= 0.0:
        return hessian
    return hessian + np.outer(y, y) / sy - np.outer(bs, bs) / sbs
