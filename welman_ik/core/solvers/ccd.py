"""Cyclic coordinate descent with several goals (Welman 1993, sections 4.2 and 5.4): the solve.

A sweep (``ccd_sweep``) visits the joints one at a time, from the leaves to the root, and
turns each to the angle that minimises the weighted squared distance of the goals distal
to it (phi = atan2(k3, k2 - k1), held axes weighed as points), scaled by its mobility and
clipped to the limits, so the weighted error never grows. The goals' point and direction
pairs and what they cost are ``pairs``. Here: how sweeps make a solve.

Priority levels (pins at 0, a drag below): each iteration is two sweeps, one over every
goal and one over the first level alone, which the last sweep leaves exact when the goals
conflict. In the sweep over every goal, a joint that moves a lower level's goal (a shared
joint: the root's sliders under pinned feet and a dragged hip) leaves out of its sums the
first level's goals that an own joint of the first level also moves, one that moves no
lower level's goal (the legs under the pins; ``Sweeps.plan``). Weighed together with
four foot pins, a slider would move the hips a fifth of the way per sweep, and the pins'
sweep would lift them back by whatever the legs had not yet folded: a squat took hundreds
of sweeps. So the shared joints follow the drag, the legs take up what that moved the
feet by, and the sweep over the first level gives back through the shared joints only
what the legs cannot. A first-level goal that no own joint moves (a pin on the root
itself) keeps its weight everywhere.

Stalls. When the pose stops changing short of the goals, the hinges with no lever on a
goal they fall short of (a chain folded onto its own joint, a straight chain pulled along
itself) are turned by ``NUDGE``, once per solve; a solve never ends worse than its stall
(by the first level's error, then every goal's). With several levels, when ``STALL``
iterations bring no new least weighted error (or the pose stops changing with no hinge
to nudge) the levels conflict (a drag out of reach): the first level goes on alone until
it is met, so that it ends exact and the rest as near as the sweeps brought them.

Acceleration. At a nearly straight knee a visit sees its goal almost along its own lever
and turns a little, the foot's joints take up most of the error first, and the sweeps
converge geometrically with a ratio near 1 (0.95-0.995 per sweep, measured on a squat
and a reach with pinned feet). After each iteration the last sweeps' results are
therefore mixed (Anderson mixing of up to ``ANDERSON`` past iterations) or, if that does
no better, a creeping change is extrapolated (``_accelerate``). Either point is taken
only within the limits and ranges and only if it lowers the weighted error of every
goal without raising the first level's above the tolerance squared; the sweeps
themselves stay Welman's.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..problem import FirstLevelKeeper, Problem, SolveResult, check_start, finish, level_weights
from .ccd_sweep import AXIAL, MAX_PLANS, NEGLIGIBLE, Sweeps, ranged_balls
from .pairs import Pairs, goal_cost, weighted_cost
from .preference import ReferencePull

__all__ = [
    "ANDERSON", "AXIAL", "COHERENT", "MAX_LEAP", "MAX_PLANS", "NEGLIGIBLE", "NUDGE", "PROGRESS", "STALL", "Pairs",
    "conclude", "goal_cost", "solve", "weighted_cost",
]

NUDGE = 0.5  # [rad] the turn out of a stall
ANDERSON = 3  # past iterations mixed with the last one (``_accelerate``)
COHERENT = 0.9  # a change is extrapolated when its cosine with the one before is above this
MAX_LEAP = 128.0  # the most changes an extrapolation jumps
STALL = 8  # iterations of several levels without a new least error before the first level goes alone
PROGRESS = 1e-3  # the share by which the weighted squared error must fall to make a new least


def _nudge(problem: Problem, q: np.ndarray, idle: list[int]) -> np.ndarray:
    """Out of a stall: turn the hinges that had no lever on a goal they fall short of (a
    chain folded onto its own joint, a straight chain pulled along itself) by ``NUDGE``,
    once per solve, so that the sweeps can go on."""
    nudged = q.copy()
    nudged[np.unique(idle)] += NUDGE
    return problem.constrain(nudged)


def solve(problem: Problem, q0) -> SolveResult:
    """Sweeps until every goal is met, the pose stops changing, or the budget runs out
    (with several priority levels: or the first level is met while it goes alone,
    ``_stages``); each iteration's sweeps are followed by ``_accelerate``. An iteration
    (one sweep per priority level) counts as one of the result's iterations."""
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    weights, first_level = level_weights(problem)
    if np.array_equal(weights, first_level):
        first_level = weights
    movable = problem.movable()
    order = np.flatnonzero(movable)[::-1]
    pairs = Pairs(problem.goals)
    sweeper = Sweeps(problem, order, ranged_balls(problem, order), movable, pairs)
    history: list[float] = []
    sweeps = 0
    previous_cost, previous_q = math.inf, q.copy()
    kin = sk.forward(q)  # the kinematics at q, or None until needed
    stages = _stages(weights, first_level)
    phases = stage_one = stages.pop(0)
    first = np.array([g.priority for g in problem.goals]) == min((g.priority for g in problem.goals), default=0)
    pull = ReferencePull(problem, kin, pairs.errors)
    keeper = FirstLevelKeeper(problem)
    idle: list[int] = []
    nudged, unnudged = False, None
    memory: list = []  # (start, result) of the last iterations' sweeps since the pose last jumped
    best, since_best = math.inf, 0  # the least weighted squared error of the levels' iterations, and since when
    for _ in range(problem.max_iterations):
        if kin is None:
            kin = sk.forward(q)
        errors = pairs.errors(kin)
        history.append(float(errors.max(initial=0.0)))
        keeper.see(q, kin, errors)
        if np.all(errors <= problem.tolerance):
            if time.perf_counter() > deadline:
                break
            pulled = pull.step(q, kin, errors)
            if pulled is None:
                break
            (q, kin), previous_cost, memory, best = pulled, math.inf, [], math.inf
            continue
        if time.perf_counter() > deadline:
            break
        if stages:
            measure = float(weights @ errors**2)
            if measure < (1.0 - PROGRESS) * best:
                best, since_best = measure, 0
            else:
                since_best += 1
            if since_best >= STALL:  # the levels conflict: the first level alone from here
                phases, memory, previous_cost = stages.pop(0), [], math.inf
        elif len(phases) < len(stage_one) and np.all(errors[first] <= problem.tolerance):
            break  # the first level met alone: the rest is as near as the levels together brought it
        if len(phases) == 1:
            cost = pairs.cost(kin, phases[0][0])
            if cost >= previous_cost * (1.0 - 1e-12):
                # A fixed point. Under a sheared or non-uniformly scaled frame a hinge is
                # not a rigid world rotation and a sweep can overshoot: keep the better pose.
                if cost > previous_cost:
                    q, kin = previous_q, None
                if nudged or not idle:
                    break
                unnudged, nudged, previous_cost, memory = q, True, math.inf, []
                q, kin = _nudge(problem, q, idle), None
                continue
            previous_cost, previous_q = cost, q.copy()
        start = q
        idle = []
        for i, (phase, lower) in enumerate(phases):
            q, stuck = sweeper.sweep(q, kin if i == 0 else sk.forward(q), phase, lower, deadline)
            idle += stuck
        kin = None
        sweeps += 1
        step = q - start
        if np.abs(step).max(initial=0.0) < 1e-14:
            if stages and (nudged or not idle):
                phases, memory, previous_cost = stages.pop(0), [], math.inf
                continue
            if nudged or not idle:
                break
            unnudged, nudged, memory, best = q, True, [], math.inf
            q = _nudge(problem, q, idle)
            continue
        memory = memory[-ANDERSON:] + [(start, q)]
        if len(memory) > 1 and time.perf_counter() < deadline:
            q, kin = _accelerate(problem, pairs, phases[0][0], phases[-1][0], memory)
    if kin is None:
        kin = sk.forward(q)
    if unnudged is not None:  # the nudge led nowhere better: no solve ends worse than its stall
        tolerance2 = problem.tolerance**2
        ends, stalled = (_level_costs(pairs, k, weights, first_level) for k in (kin, sk.forward(unnudged)))
        if (max(ends[1], tolerance2), ends[0]) > (max(stalled[1], tolerance2), stalled[0]):
            q, kin = unnudged, None
    return conclude(problem, pull, keeper, pairs, q, sk.forward(q) if kin is None else kin, sweeps, history)


def _stages(weights: np.ndarray, first_level: np.ndarray) -> list:
    """The sweeps of an iteration, stage by stage (a solve goes on to the next stage when
    the last makes no more progress), each as (goal weights, the lower levels' weights
    that tell the shared joints (``Sweeps.plan``), or None).

    With one priority level, one sweep over every goal. With several: a sweep over every
    goal in which the shared joints leave out the first level's goals that its own joints
    move, then one over the first level alone; then, once the levels are found to
    conflict, the first level alone.
    """
    if first_level is weights:
        return [[(weights, None)]]
    return [[(weights, weights - first_level), (first_level, None)], [(first_level, None)]]


def _level_costs(pairs: Pairs, kin, weights: np.ndarray, first_level: np.ndarray) -> tuple[float, float]:
    """``Pairs.cost`` by every goal's weight and by the first level's alone, from one look at the pairs."""
    _, points, targets, w = pairs.points(kin, weights)
    _, units, d_targets, d_w = pairs.directions(kin, weights)
    gaps = np.einsum("ij,ij->i", targets - points, targets - points)
    d_gaps = np.einsum("ij,ij->i", d_targets - units, d_targets - units)
    total = float(w @ gaps + d_w @ d_gaps)
    if first_level is weights:
        return total, total
    first_w = first_level[pairs.point_goals]
    first_dw = first_level[pairs.direction_goals] * pairs.direction_scale
    return total, float(first_w @ gaps + first_dw @ d_gaps)


def _accelerate(problem: Problem, pairs: Pairs, weights: np.ndarray, first_level: np.ndarray, memory: list):
    """Acceleration of the sweeps, from ``memory``: (start, swept) of the last iterations
    (at least two, oldest first; q_k and its sweeps' result g_k, change f_k = g_k - q_k).

    First Anderson's mixing (Anderson 1965; Walker & Ni 2011), the extrapolation that
    several sweeps' changes support: the changes' differences combined to cancel as much
    of the last change as they can, gamma = argmin |f_k - sum_i gamma_i (f_i+1 - f_i)|,
    and the results' differences combined alike, g_k - sum_i gamma_i (g_i+1 - g_i). Then,
    if that does not do better, the plain extrapolation of a creeping sweep: when the last
    change goes the way the one before went (cosine above ``COHERENT``) and is shorter,
    the sweeps converge geometrically with ratio r = |f_k| / |f_k-1| and have about
    r / (1 - r) times f_k still to go; that jump (at most ``MAX_LEAP`` times f_k) is
    doubled while it does better, or halved until it does.

    A point is taken only within the limits and ranges (``Problem.constrain``) and only if
    it lowers the weighted squared error of every goal (``Pairs.cost``) without raising the
    first level's above the tolerance squared. Returns (q, its kinematics): the sweeps'
    own g_k if neither does better."""
    starts = np.array([start for start, _ in memory])
    swept = np.array([end for _, end in memory])
    changes = swept - starts
    q = swept[-1]
    sk = problem.skeleton
    kin = sk.forward(q)
    cost, first = _level_costs(pairs, kin, weights, first_level)
    allowed = max(first, problem.tolerance**2)

    def trial(point: np.ndarray):
        """(point within the limits, its kinematics, its cost) if it does better, else None."""
        point = problem.constrain(point)
        point_kin = sk.forward(point)
        point_cost, point_first = _level_costs(pairs, point_kin, weights, first_level)
        return (point, point_kin, point_cost) if point_cost < cost and point_first <= allowed else None

    gamma = np.linalg.lstsq((changes[1:] - changes[:-1]).T, changes[-1], rcond=1e-10)[0]
    mixed = trial(q - (swept[1:] - swept[:-1]).T @ gamma)
    if mixed is not None:
        return mixed[0], mixed[1]
    step, before = changes[-1], changes[-2]
    length, last = math.sqrt(float(step @ step)), math.sqrt(float(before @ before))
    if length >= last or float(step @ before) < COHERENT * length * last:
        return q, kin
    ratio = length / last
    leap = min(ratio / (1.0 - ratio), MAX_LEAP)
    best, growing = None, True
    while leap >= 1.0:
        better = trial(q + leap * step)
        if better is not None:
            best, cost = better, better[2]
            if not growing or leap >= MAX_LEAP:
                break
            leap = min(2.0 * leap, MAX_LEAP)  # further while it does better
        elif best is not None:
            break
        else:
            growing = False
            leap *= 0.5
    return (q, kin) if best is None else (best[0], best[1])


def conclude(problem: Problem, pull, keeper, pairs: Pairs, q: np.ndarray, kin, iterations: int,
             history: list[float]) -> SolveResult:
    """The result of a solve without a null space (CCD, the Jacobian transpose): the last
    configuration that met the goals if the preferred pose's pull left them, else the
    closest one that met the first level if that was lost (``FirstLevelKeeper``)."""
    q, kin = pull.finish(q, kin)
    errors = pairs.errors(kin)
    chosen = keeper.choose(q, kin, errors)
    if chosen[1] is not kin:
        q, kin = chosen
        errors = pairs.errors(kin)
    return finish(problem, q, iterations, history, kin, errors)
