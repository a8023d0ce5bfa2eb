"""Singularity-robust inverse with task priority (Yamane & Nakamura 2003, sections 2-3).

Each priority level l is solved with the SR inverse

    A* = A^T (A A^T + k I)^-1

applied to its Jacobian restricted to the null space N of all higher levels:

    dq_l = (J_l N)* (e_l - J_l (dq_0 + ... + dq_l-1)),   N = I - V V^T

(V spans the rows of J_0..J_l-1), so pins (level 0) hold while the drag (level 1)
takes what freedom is left, or the other way round. That step, with N never formed and
the diagonal reference level below solved in closed form, is ``task_priority``'s; here
are the iterations around it. Rows are divided by the tree's size and prismatic columns
multiplied by it, so k and the result do not depend on units. Columns are scaled by
sqrt(mobility) / m**0.5, where m counts the joints a joint moves: the least-norm step
then prefers the limbs to the trunk and the root (as an animator would), and stiff
joints move less.

Joint limits: a joint that the step would carry past a limit is clamped at it,
locked, and the step re-solved with the remaining joints (at most a few passes). A ball
joint carried out of its spherical range (``problem.ranges``) gets the boundary of its
range, linearised, as a constraint above every goal: it may slide along the boundary,
and the rest of the body takes up what it cannot do (what linearisation leaves outside
is projected onto the range).

Reference pose (Yamane & Nakamura 2003, section 3.3): with ``problem.reference``, a last
level asks every movable joint back toward its preferred value, in the columns' own
units (so stiff joints, whose columns are small, keep to it hardest), each weighted by
the bone length it carries (``reference_weights``: the trunk keeps to it hardest). It
works only in what freedom the goals leave, takes ``reference_weight`` (at most 1) of
its step per iteration, only in iterations that start with every goal met (and once per
solve in an iteration that starts with every goal within ``NEAR_MET`` tolerances, along with
the goals' correction, which saves a drag step an iteration), and only while no goal level
drifts by more than ``REFERENCE_DRIFT`` of the tree's size (the goal levels take that back in the next
iteration); with a reference the solve goes on, goals met, until its step is below
``REFERENCE_SETTLED`` or it gains less than ``REFERENCE_PROGRESS`` per iteration. A solve
stopped (time, iterations) between a step toward the reference and the goals' correction
returns the last configuration that met the goals.

Swapped: from nearly straight legs, pinned feet and the hips dragged straight down, the way
down in the null space of the pins goes through a nearly singular knee, which the damped
inverse barely takes (and a joint range may block the sideways fold it takes instead). With
the drag first and the pins in its null space it is a plain step. So when the solve in
priority order ends with the first level met and the second not, the same problem is
solved again from the start, with half the iterations, the first two levels swapped; that
result is kept only when it meets every goal, so the priorities still decide whenever the
goals truly conflict, and a drag out of reach costs at most what is left of the budget.

Safeguard: each level's part of the step is halved until that level's weighted
error does not grow and the levels above it lose at most a small share of what it gains
(a level already within tolerance takes its part as it is), so a goal out of reach, or
pins that conflict, never make the iteration oscillate. The last tenth of the budget
serves the first level alone, so it ends as exact as it can be.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..limits import clamp_step, violating
from ..problem import FirstLevelKeeper, GoalBatch, Problem, SolveResult, check_start, finish
from ..skeleton import Kinematics
from .reference_weights import REFERENCE_INERTIA, carried_weights, reference_weights
from .task_priority import prioritized_step, row_basis, sr_inverse

__all__ = [
    "DAMPING_FACTOR", "DRIFT_SHARE", "INERTIA_POWER", "LIMIT_PASSES", "MAX_DAMPING", "MAX_HALVINGS", "MAX_STEP",
    "NEAR_MET", "REFERENCE_DRIFT", "REFERENCE_INERTIA", "REFERENCE_PROGRESS", "REFERENCE_SETTLED", "SLIDE_SCALE",
    "STALL_GAIN", "STALL_SPAN", "carried_weights", "escape_nudge", "prioritized_step", "reference_weights",
    "row_basis", "solve", "sr_inverse",
]

MAX_STEP = 0.5  # largest joint step per iteration [rad, or tree sizes]
LIMIT_PASSES = 4
MAX_HALVINGS = 12
SLIDE_SCALE = 0.1  # a root slide of one tenth of the body costs what one radian does
INERTIA_POWER = 0.5  # a joint that moves m joints costs m**0.5 times more per unit step
DAMPING_FACTOR = 4.0
MAX_DAMPING = 1.0
DRIFT_SHARE = 0.1  # how much higher levels may lose per unit a lower level gains
REFERENCE_SETTLED = 1e-4  # [rad] the reference's step below which a solve with goals met stops
REFERENCE_PROGRESS = 0.1  # a reference that gains less than this share per iteration is done
REFERENCE_DRIFT = 1e-3  # of the tree's size: how far a step toward the reference may move a goal
STALL_SPAN = 8  # iterations over which a solve that gains nothing is stalled
STALL_GAIN = 1e-3  # relative gain per STALL_SPAN iterations below which a solve is stalled (a crawl that slow
# could not get much closer within any budget)
NEAR_MET = 100.0  # goals within this many tolerances take the reference's step with their correction


def escape_nudge(problem: Problem, groups, q: np.ndarray, errors: np.ndarray,
                 movable: np.ndarray, angle: float = 0.05, deadline: float = np.inf):
    """The best single-hinge rotation by +-``angle`` [rad], or None if none helps.

    Used only when the step has stalled at a singular configuration (a straight chain
    pulled along itself), where no first-order step helps. A nudge must lower the
    weighted error of the first level not yet met without raising any level above it;
    at a true optimum none does, and the solver stops as before. Past ``deadline`` (a drag's
    time per mouse event) the trials stop: the best so far, or None.
    """
    sk = problem.skeleton
    weights = np.array([g.weight for g in problem.goals])

    def key(errs):
        return [float(weights[g] @ errs[g] ** 2) for g in groups]

    best_q, best = None, key(errors)
    hinges = np.flatnonzero(movable & ~sk.prismatic)
    if not hinges.size:
        return None
    # Every trial made and posed at once (+angle, then -angle, hinge by hinge), then compared.
    trials = np.repeat(q[None], 2 * hinges.size, axis=0)
    order = np.arange(trials.shape[0])
    trials[order, np.repeat(hinges, 2)] += np.tile([angle, -angle], hinges.size)
    trials = problem.constrain_many(trials)
    frames = sk.forward_frames(trials)
    batch = GoalBatch(problem.goals, weights)
    for trial, frame in zip(trials, frames):
        if time.perf_counter() > deadline:
            break
        trial_key = key(batch.errors(Kinematics(sk, trial, frame)))
        if _lexicographically_lower(trial_key, best):
            best_q, best = trial, trial_key
    return best_q


def _lexicographically_lower(a: list[float], b: list[float]) -> bool:
    for x, y in zip(a, b):
        if x < y * (1.0 - 1e-12):
            return True
        if x > y * (1.0 + 1e-12):
            return False
    return False


def solve(problem: Problem, q0) -> SolveResult:
    """The priority levels in order; if that stalls with the first level met and the second
    not, once more from ``q0`` with the first two levels the other way round, whose result is
    taken only if it meets every goal (see ``SWAPPED``)."""
    deadline = problem.deadline()
    result = _solve(problem, q0, deadline)
    levels = sorted({g.priority for g in problem.goals})
    if result.converged or len(levels) < 2 or time.perf_counter() > deadline or not problem.rescue:
        return result
    first = [i for i, g in enumerate(problem.goals) if g.priority == levels[0]]
    if not np.all(result.errors[first] <= problem.tolerance):
        return result
    other = _solve(dataclasses.replace(problem, max_iterations=max(1, problem.max_iterations // 2)), q0, deadline,
                   swapped=True)
    if other.converged:
        other.iterations += result.iterations
        other.history = result.history + other.history
        return other
    return result


def _solve(problem: Problem, q0, deadline: float, swapped: bool = False) -> SolveResult:
    sk = problem.skeleton
    q = check_start(problem, q0)
    # Under a time budget the preferred pose has its first half; the rest is the goals'.
    now = time.perf_counter()
    reference_deadline = now + 0.5 * (deadline - now) if np.isfinite(deadline) else np.inf
    movable = problem.movable()
    goals = list(problem.goals)
    priorities = sorted({g.priority for g in goals})
    # (index arrays, made once: indexing with a list converts it at every use)
    groups = [np.array([i for i, g in enumerate(goals) if g.priority == p], dtype=np.intp) for p in priorities]
    if swapped:
        groups[0], groups[1] = groups[1], groups[0]
    weights = np.array([g.weight for g in goals])
    batch = GoalBatch(goals, weights)
    group_rows = [batch.rows(g) for g in groups]
    group_weights = [(weights[g], float(weights[g].sum())) for g in groups]
    tol = problem.tolerance
    one_sided = [i for i, g in enumerate(goals) if g.one_sided and g.weight > 0.0]

    kin = sk.forward(q)
    size = kin.size_scale(np.array([g.point_pairs(kin)[2][0] for g in goals]) if goals else None)
    subtree = problem.subtree()
    col_scale = (np.where(sk.prismatic, SLIDE_SCALE * size, 1.0) * np.sqrt(np.clip(sk.mobility, 0.0, 1.0))
                 / subtree**INERTIA_POWER)
    # Each level's damping adapts as in Levenberg-Marquardt: raised when the level's full
    # step is refused (large residuals, such as a goal out of reach, make Gauss-Newton
    # steps overshoot), lowered back toward the setting when it is taken.
    damping = [problem.damping] * len(groups)

    def level_distances(errs) -> list[float]:
        """Weighted RMS distance of each level's goals [m]."""
        return [float(np.sqrt(w @ errs[g] ** 2 / total)) if total > 0 else 0.0
                for g, (w, total) in zip(groups, group_weights)]

    preferred = problem.reference is not None and problem.reference_weight > 0.0 and len(goals) > 0
    if preferred:
        damping.append(problem.damping)
        pull = min(1.0, float(problem.reference_weight))
        ref_weight = reference_weights(problem)

    history: list[float] = []
    iterations = 0
    settled = None  # the last configuration with every goal met
    closest = np.inf  # the reference's smallest distance seen with the goals met
    # The last iterations of the budget serve the first level alone: when a lower level
    # cannot be met (a drag out of reach), what it drifted the first level by is undone.
    polish = max(3, problem.max_iterations // 10)
    polish_from = problem.max_iterations - polish
    end = problem.max_iterations
    progress: list[list[float]] = []  # each level's distance at the start of each iteration
    keeper = FirstLevelKeeper(problem)
    folded = False  # the reference has come along with a correction of the goals
    for _ in range(problem.max_iterations):
        errors = batch.errors(kin)
        history.append(float(errors.max(initial=0.0)))
        goals_met = bool(np.all(errors <= tol))
        if goals_met:
            settled = (q, kin)
        if not swapped:
            keeper.see(q, kin, errors)
        if (goals_met and not preferred) or time.perf_counter() > deadline or iterations >= end:
            break
        if not goals_met:
            # Stalled: no level has come closer by a relative STALL_GAIN over STALL_SPAN
            # iterations (a goal out of reach, conflicting goals): the polish starts now.
            progress.append(level_distances(errors))
            if len(progress) > STALL_SPAN and iterations < polish_from:
                before, now = progress[-1 - STALL_SPAN], progress[-1]
                if all(b - n <= STALL_GAIN * max(b, tol) for b, n in zip(before, now)):
                    polish_from, end = iterations, iterations + polish
        cols = np.flatnonzero(movable)
        if cols.size == 0:
            break
        if preferred:
            reference_x = ref_weight[cols] * (problem.reference - q)[cols] / col_scale[cols]
            distance = float(np.linalg.norm(reference_x))
            if goals_met and (distance > (1.0 - REFERENCE_PROGRESS) * closest or distance == 0.0):
                break  # goals met and the reference no longer gets closer, or reached: no step is needed to know
        e_all, j_all = batch.stack(kin)
        e_all = e_all / size
        j_all = (j_all if cols.size == sk.size else j_all[:, cols]) * (col_scale[cols] / size)
        tasks = [(e_all[rows], j_all[rows]) for rows in group_rows]
        # The lowest level, x = dq / scale toward the reference: only when every goal is met
        # (it is taken in no other iteration, so it would only sway the limit passes).
        # Goals nearly met (the correction after a drag step): the reference comes along in
        # the same iteration, in the null space of the goals' Jacobians there; once per solve,
        # so that later corrections are the goals' alone and cannot trade places with it.
        folding = preferred and not goals_met and not folded and bool(np.all(errors <= NEAR_MET * tol))
        folded = folded or folding
        with_reference = (preferred and goals_met) or folding
        if with_reference:
            tasks.append((reference_x, ref_weight[cols]))  # diagonal: W x = e

        scale = col_scale[cols]
        free = np.ones(cols.size, dtype=bool)
        fixed_x = np.zeros(cols.size)  # steps of joints clamped at a limit, scaled units
        parts = [np.zeros(cols.size) for _ in tasks]
        bound_rows, bound_values = np.zeros((0, cols.size)), np.zeros(0)  # range constraints, x units
        for _pass in range(LIMIT_PASSES):
            if free.all():
                reduced = [(j, e) for e, j in tasks]
            else:
                reduced = [(j[free], (e - j * np.where(free, 0.0, fixed_x))[free]) if j.ndim == 1
                           else (j[:, free], e - j[:, ~free] @ fixed_x[~free]) for e, j in tasks]
            if bound_values.size:  # above every goal: ball joints stay on their range's boundary
                reduced.insert(0, (bound_rows[:, free], bound_values - bound_rows[:, ~free] @ fixed_x[~free]))
            parts = [np.zeros(cols.size) for _ in reduced]
            if free.any():
                levels_k = ([problem.damping] if bound_values.size else []) + damping
                for part, free_part in zip(parts, prioritized_step(reduced, levels_k)):
                    part[free] = free_part
            if bound_values.size:
                bounded = parts.pop(0)
                parts[0] = parts[0] + bounded
            # Cap each level's part on its own, so that a far lower-level goal cannot
            # shrink the step of the level above it.
            parts = [p * min(1.0, MAX_STEP / max(np.abs(p).max(initial=0.0), 1e-300)) for p in parts]
            parts[0] = parts[0] + fixed_x
            total = np.sum(parts, axis=0)
            dq = np.zeros(sk.size)
            dq[cols] = total * scale
            if time.perf_counter() > deadline:  # (no more passes: the line search keeps the step within bounds)
                break
            over = violating(sk, q, dq, movable)[cols] & free
            found = False
            if problem.ranges is not None and problem.ranges.size and _pass < LIMIT_PASSES - 1:
                # A ball joint the step carries out of its range gets its linearised boundary
                # as a constraint above the goals: it may slide along the boundary, and the
                # rest of the body re-solves around it.
                g, b = problem.ranges.rows(sk, q, q + dq)
                if b.size:
                    bound_rows = np.vstack([bound_rows, g[:, cols] * scale])
                    bound_values = np.concatenate([bound_values, b])
                    found = True
            if one_sided and _pass < LIMIT_PASSES - 1:
                # A one-sided goal (a region, the balance over its support) the step carries
                # out of its region gets its linearised boundary as a constraint above the
                # goals, as a joint range does: it slides along the boundary instead of
                # stepping out and back in on alternate iterations.
                after = sk.forward(problem.constrain(q + dq))
                for i in one_sided:
                    crossed = goals[i].boundary(kin, after)
                    if crossed is not None:
                        bound_rows = np.vstack([bound_rows, crossed[0][cols] * scale / size])
                        bound_values = np.append(bound_values, crossed[1] / size)
                        found = True
            if not (over.any() or found):
                break
            fixed_x[over] = clamp_step(sk, q, dq)[cols][over] / scale[over]
            free &= ~over
        if with_reference:
            parts[-1] = pull * parts[-1]
            # Goals met, the reference is done when its step is small or it no longer
            # gets closer (what is left of it conflicts with the goals or the limits).
            if goals_met and (np.abs(parts[-1] * scale).max(initial=0.0) < REFERENCE_SETTLED
                              or distance > (1.0 - REFERENCE_PROGRESS) * closest):
                break
            closest = min(closest, distance)
        iterations += 1
        if iterations > polish_from and len(parts) > 1:
            parts = parts[:1] + [np.zeros_like(p) for p in parts[1:]]

        # Line search, level by level: a level met now takes its part as it is;
        # otherwise its part is halved until the level is no further from its goals than
        # at the start of the iteration, and the levels above it lose (beyond tolerance,
        # from where their own parts took them) at most DRIFT_SHARE of the distance it
        # gained. Total drift is then bounded by the lower levels' total progress.
        taken = np.zeros(cols.size)
        new_q, new_kin = None, None
        start = level_distances(errors)
        reference = list(start)
        for level, (group, part) in enumerate(zip(groups, parts)):
            if not part.any():
                continue
            met = bool(np.all(errors[group] <= tol))
            beta = 1.0
            for halving in range(MAX_HALVINGS):
                if halving and time.perf_counter() > deadline:
                    break  # (past the time: this level takes no step now, the next solve goes on)
                trial = problem.constrain(q + _dq(sk, cols, taken + beta * part, scale))
                if met:
                    taken, new_q, new_kin = taken + part, trial, None
                    break
                trial_kin = sk.forward(trial)
                trial_errors = batch.errors(trial_kin)
                trial_distances = level_distances(trial_errors)
                gain = start[level] - trial_distances[level]
                drift = sum(max(0.0, d - max(r, tol)) for d, r in zip(trial_distances[:level], reference))
                if gain >= -1e-15 * start[level] and drift <= DRIFT_SHARE * max(gain, 0.0):
                    taken, new_q, new_kin = taken + beta * part, trial, trial_kin
                    if beta == 1.0:
                        damping[level] = max(problem.damping, damping[level] / DAMPING_FACTOR)
                    reference[: level + 1] = trial_distances[: level + 1]
                    break
                if beta == 1.0:
                    damping[level] = min(damping[level] * DAMPING_FACTOR, MAX_DAMPING)
                beta *= 0.5
        if with_reference and parts[-1].any() and time.perf_counter() < reference_deadline:
            # The reference is served as long as no goal level drifts more than a small share
            # of the tree's size (second order: the goal levels take it back next iteration,
            # and a solve ends only with the goals met).
            beta = 1.0
            for _halving in range(MAX_HALVINGS // 2):
                trial = problem.constrain(q + _dq(sk, cols, taken + beta * parts[-1], scale))
                trial_kin = sk.forward(trial)
                allowed = REFERENCE_DRIFT * size
                if all(d <= max(r, tol) + allowed for d, r in zip(level_distances(batch.errors(trial_kin)), reference)):
                    taken, new_q, new_kin = taken + beta * parts[-1], trial, trial_kin
                    break
                beta *= 0.5
        if new_q is None or np.abs(new_q - q).max(initial=0.0) < 1e-12:
            nudged = escape_nudge(problem, groups, q, errors, movable, deadline=deadline) if problem.rescue else None
            if nudged is None:
                break
            q, kin = nudged, sk.forward(nudged)
            continue
        q, kin = new_q, (new_kin if new_kin is not None else sk.forward(new_q))
    final = batch.errors(kin)
    chosen = q
    if preferred and settled is not None and settled[0] is not q and not np.all(final <= tol):
        q, kin = settled  # stopped (time, iterations) between a step toward the reference and its correction
    elif not swapped:
        # A first level that drifted and could not be brought back (a joint range in the
        # way) was met before: the closest configuration that met it is the answer.
        q, kin = keeper.choose(q, kin, final)
    return finish(problem, q, iterations, history, kin, final if q is chosen else None)


def _dq(sk, cols, x, scale) -> np.ndarray:
    dq = np.zeros(sk.size)
    dq[cols] = x * scale
    return dq
