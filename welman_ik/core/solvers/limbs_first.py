"""The limbs first, the trunk for the rest, and the head kept looking where it looked.

A least-norm step shares each goal among every joint that moves it, in proportion to its
lever; the trunk's joints have long levers to a hand, so they would take a large share of
any reach, and the head would turn with the chest. A person reaching does neither: the arm
(its shoulder girdle with it) reaches, the trunk leans only when that is not enough, and the
eyes stay on what they looked at. So, around any solver, with ``problem.tiers`` (0 the
limbs; each higher tier, such as the trunk, joins only after the tiers below it):

1. **The limbs.** The joints of the higher tiers are held at their preferred pose
   (``problem.reference``; without one, where they are), and so are the joints that keep
   the gaze (below); the limbs solve every goal. An arm that reaches for a target starts
   placed by its posture (``posture``: the hand along the forearm, the elbow hanging), which
   is its preferred pose for this stage, its wrist stiff. If that meets them, it is the answer.
2. **Each tier for the rest.** Only while a goal is still unmet, the next tier joins and the
   solve goes on from where the last stage got. The limbs are already stretched toward their
   goals, so the joints that join take only what remains (and the solver's own preferred
   pose keeps that least). The last stage has every joint.

A stage that may not be the last runs in chunks of about the iterations its solver takes
for a stride of a drag (``solvers.STAGE_ITERATIONS``), and goes on only while each chunk
cuts the worst error by at least a fifth: a limb that can serve gets there, and one its
ranges block hands over soon instead of crawling along them for the whole budget. A stage
is skipped when it cannot help: a goal that none of its joints moves (the pelvis dragged,
while only the limbs may move), a goal of a kind with no bone of its own (the balance), or
a position goal that must move farther from where its limb hangs than ``REACH_SHARE`` of
the limb's length (a limb pulled straight has no way back but a flop of its last joint).

**The gaze** (``problem.gaze``, the head's joint): after the stages, the joints that turn
the head and move no goal (the neck) turn it back to its world orientation at the preferred
pose, as a goal below every other: the same solver, on those joints alone, within their
limits and ranges. What they cannot keep, the head turns with the chest.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

import numpy as np

from ..goals import OrientationGoal, PoseGoal, PositionGoal
from ..problem import Problem, SolveResult, check_start, finish, goal_errors
from .posture import place, stiff_wrists

GAZE_TOLERANCE = 1e-4  # [rad] the head counts as kept within this turn
GAZE_ITERATIONS = 50
REACH_SHARE = 0.95  # a limb serves alone only targets within this share of its length: a limb held
# straight has no way back but a flop of its last joint (a straight arm pulled in bends the wrist)
STAGE_ITERATIONS = 25  # by default, the chunk of iterations of a stage that may not be the last
STAGE_PROGRESS = 0.8  # a stage goes on past a chunk of iterations only if the chunk cut the worst error by a fifth
HELD = 100.0  # a goal within this many tolerances of its target is held where it is, not reached for


def limbs_first(solve: Callable[[Problem, np.ndarray], SolveResult],
                stage_iterations: int = STAGE_ITERATIONS) -> Callable[[Problem, np.ndarray], SolveResult]:
    """``solve`` staged as the module docstring says; problems without tiers or a gaze go
    straight to it. ``stage_iterations``: the chunk of iterations of a stage that may not be
    the last (about what ``solve`` takes for a stride of a drag)."""

    @functools.wraps(solve)
    def staged(problem: Problem, q0) -> SolveResult:
        if problem.tiers is None and problem.gaze is None:
            return solve(problem, q0)

        deadline = problem.deadline()
        q = check_start(problem, q0)
        movable = problem.movable()
        tiers = np.zeros(len(q), np.intp) if problem.tiers is None else np.asarray(problem.tiers, np.intp)
        levels = np.unique(tiers[movable])
        served = _asking(problem, q)
        neck = gaze_joints(served, movable & (tiers == (levels[0] if levels.size else 0)))
        inner = dataclasses.replace(problem, tiers=None, gaze=None, idle=neck if neck.any() else None)
        home = q  # where the limbs start: the higher tiers and the neck at the preferred pose
        rested = np.zeros(len(q), dtype=bool)  # limb joints back at the preferred pose
        if problem.reference is not None and levels.size > 1:
            held = (tiers > levels[0]) | neck
            home = q.copy()
            home[held] = np.asarray(problem.reference, dtype=float)[held]
            home, rested = _rested(served, home, movable & ~held)
            home = problem.constrain(home)
        rest_pose = home
        result = None
        for level in levels[:-1]:
            joining = movable & (tiers <= level) & ~neck
            if time.perf_counter() > deadline or not limbs_can_serve(served, joining, home):
                continue
            limbs, start = _posed(problem, inner, joining, home) if result is None else (inner, home)
            stage = _stage(solve, _within(limbs, _halfway(deadline), active=joining), start, stage_iterations)
            result = stage if result is None else _joined(result, stage)
            home = stage.q
            if stage.converged:
                break
        if result is None:  # no limbs stage: every joint from where it is (a pelvis dragged)
            result = solve(_within(inner, deadline), q)
        elif not result.converged:
            result = _joined(result, solve(_within(inner, deadline), result.q))
        if rested.any() and result.converged:  # what the stages moved them by is rounding: undone
            settled = result.q.copy()
            settled[rested] = rest_pose[rested]
            exact = finish(inner, settled, result.iterations, result.history)
            result = exact if exact.converged else result
        if neck.any():
            result = keep_gaze(solve, problem, result, neck, deadline)
        return result

    return staged


def _asking(problem: Problem, q: np.ndarray) -> Problem:
    """``problem`` less the one-sided goals without a joint of their own that ask nothing at
    ``q`` (a body standing balanced over its feet): the stages are planned by the goals that
    ask something; the solves keep every goal."""
    kin = None
    goals = []
    for goal in problem.goals:
        if getattr(goal, "joint", None) is None and goal.one_sided:
            kin = kin if kin is not None else problem.skeleton.forward(q)
            if not goal.active(kin):
                continue
        goals.append(goal)
    return problem if len(goals) == len(problem.goals) else dataclasses.replace(problem, goals=goals)


def _rested(problem: Problem, q: np.ndarray, limbs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``q`` with the ``limbs`` joints that serve only goals the preferred pose meets (a pinned
    foot's leg, bent along while the trunk leaned) at the preferred pose, and (n,) bool those
    joints: back where they were exactly, and put back there after the stages if the goals are
    still met (the stages move them by rounding: a leftover that keys the legs after an
    overshoot)."""
    reference = problem.constrain(np.asarray(problem.reference, dtype=float))
    joints = goal_joints(problem)
    if joints is None:
        return q, np.zeros(len(q), dtype=bool)
    goals = [g for g in problem.goals if g.weight > 0.0]
    met = goal_errors(goals, problem.skeleton.forward(reference)) <= problem.tolerance
    ancestors = problem.skeleton.ancestors
    above = [ancestors[j].any(axis=0) for j in joints]
    serve_met = np.any([a for a, m in zip(above, met) if m], axis=0) if met.any() else np.zeros(len(q), bool)
    serve_unmet = np.any([a for a, m in zip(above, met) if not m], axis=0) if not met.all() else np.zeros(len(q), bool)
    rest = limbs & serve_met & ~serve_unmet
    out = q.copy()
    out[rest] = reference[rest]
    return out, rest


def _posed(problem: Problem, inner: Problem, limbs: np.ndarray, q: np.ndarray) -> tuple[Problem, np.ndarray]:
    """The limbs' stage's problem (``inner``, the staged ``problem`` for one solve) and start:
    each arm that reaches placed by its posture (``posture.place``), which is then the arm's
    preferred pose for the stage, its wrist stiffened (``posture.stiff_wrists``)."""
    found = place(problem, limbs, q, HELD * problem.tolerance)
    if found is None:
        return inner, q
    placed, wrists = found
    reference = inner.reference
    if reference is not None:
        reference = np.where(placed != q, placed, np.asarray(reference, dtype=float))
    return dataclasses.replace(inner, skeleton=stiff_wrists(inner.skeleton, wrists.tobytes()), reference=reference), placed


def _stage(solve, problem: Problem, q: np.ndarray, chunk: int) -> SolveResult:
    """A stage that may not be the last: ``chunk`` iterations at a time, on only while each
    chunk cuts the worst error by ``STAGE_PROGRESS``, within the problem's own iterations and
    time budget."""
    deadline = problem.deadline()
    budget = problem.max_iterations
    before = float(np.max(goal_errors(problem.goals, problem.skeleton.forward(q)), initial=0.0))
    result = None
    while True:
        part = solve(_within(problem, deadline, max_iterations=max(1, min(chunk, budget))), q)
        result = part if result is None else _joined(result, part)
        budget -= max(part.iterations, 1)
        if (part.converged or budget <= 0 or part.max_error > STAGE_PROGRESS * before
                or time.perf_counter() > deadline):
            return result
        q, before = part.q, part.max_error


def _joined(before: SolveResult, after: SolveResult) -> SolveResult:
    """``after``, with the iterations and history of the stage ``before`` it."""
    return dataclasses.replace(after, iterations=before.iterations + after.iterations,
                               history=before.history + after.history)


def _halfway(deadline: float) -> float:
    now = time.perf_counter()
    return now + 0.5 * (deadline - now) if np.isfinite(deadline) else deadline


def _within(problem: Problem, deadline: float, **changes) -> Problem:
    """``problem`` with what is left of the time budget until ``deadline``."""
    if problem.time_budget is not None:
        changes["time_budget"] = max(0.0, deadline - time.perf_counter())
    return dataclasses.replace(problem, **changes)


def goal_joints(problem: Problem) -> list[np.ndarray] | None:
    """The joints each goal (of weight > 0) is measured on; None when a goal has none of its
    own (a balance of the whole body)."""
    joints = []
    for goal in problem.goals:
        if goal.weight <= 0.0:
            continue
        own = getattr(goal, "joint", None)
        if own is None:
            return None
        joints.append(np.asarray(own, dtype=np.intp).reshape(-1))
    return joints


def limbs_can_serve(problem: Problem, limbs: np.ndarray, q: np.ndarray) -> bool:
    """Whether every goal has a limb joint above it, and every position goal that must move
    is within ``REACH_SHARE`` of its limb's length from where the limb hangs (at ``q``)."""
    joints = goal_joints(problem)
    if joints is None:
        return False
    sk = problem.skeleton
    above = [sk.ancestors[j].any(axis=0) for j in joints]
    if not all((a & limbs).any() for a in above):
        return False
    kin = sk.forward(q)
    for goal, a in zip((g for g in problem.goals if g.weight > 0.0), above):
        position = goal.position if isinstance(goal, PoseGoal) else goal
        if type(position) is not PositionGoal:
            continue
        chain = np.flatnonzero(a)  # the goal's joint and every joint above it, parents first
        root = int(np.flatnonzero(a & limbs)[0])  # the limb's topmost joint
        chain = chain[chain >= root]
        if sk.prismatic[chain].any():
            continue
        point = kin.points(position.joint, position.local)[0]
        if np.linalg.norm(np.asarray(position.target) - point) <= HELD * problem.tolerance:
            continue  # held where it is (a pinned foot, however straight its leg)
        path = np.vstack([kin.origins[chain], point])
        length = float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())
        if np.linalg.norm(np.asarray(position.target) - path[0]) > REACH_SHARE * length:
            return False
    return True


def gaze_joints(problem: Problem, candidates: np.ndarray) -> np.ndarray:
    """(n,) bool: the joints among ``candidates`` that turn the gaze's joint and move no goal
    (the neck, when no goal is on the head)."""
    sk = problem.skeleton
    chosen = np.zeros(sk.size, dtype=bool)
    if problem.gaze is None or not 0 <= problem.gaze < sk.size:
        return chosen
    joints = goal_joints(problem)
    if joints is None:
        return chosen
    moving_goals = np.zeros(sk.size, dtype=bool)
    for j in joints:
        moving_goals |= sk.ancestors[j].any(axis=0)
    return candidates & sk.ancestors[problem.gaze] & ~moving_goals & ~sk.prismatic


def keep_gaze(solve, problem: Problem, result: SolveResult, neck: np.ndarray, deadline: float) -> SolveResult:
    """``result`` with the neck (``neck``) turned so that the gaze's joint keeps its world
    orientation at the preferred pose (or the start), as far as the neck can; taken only if
    no goal is then further from being met than the tolerance allows."""
    sk = problem.skeleton
    look = problem.reference if problem.reference is not None else result.q
    wanted = _rotation(sk.forward(np.asarray(look, dtype=float)).frames[problem.gaze])
    kin = sk.forward(result.q)
    now = _rotation(kin.frames[problem.gaze])
    if _angle(now, wanted) <= GAZE_TOLERANCE or time.perf_counter() > deadline:
        return result
    goal = OrientationGoal(problem.gaze, wanted)
    sub = Problem(sk, [goal], active=neck, tolerance=GAZE_TOLERANCE, max_iterations=GAZE_ITERATIONS,
                  damping=problem.damping, ranges=problem.ranges,
                  time_budget=None if problem.time_budget is None else max(0.0, deadline - time.perf_counter()))
    turned = solve(sub, result.q)
    if _angle(_rotation(sk.forward(turned.q).frames[problem.gaze]), wanted) >= _angle(now, wanted):
        return result
    errors = goal_errors(problem.goals, sk.forward(turned.q))
    if np.any(errors > np.maximum(result.errors, problem.tolerance)):
        return result
    return dataclasses.replace(result, q=turned.q, errors=errors, iterations=result.iterations + turned.iterations,
                               converged=bool(np.all(errors <= problem.tolerance)))


def _rotation(frame: np.ndarray) -> np.ndarray:
    """The rotation of a frame, its scale taken out."""
    u, _, vt = np.linalg.svd(frame[:3, :3])
    return u @ vt


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.arccos(np.clip((np.trace(a.T @ b) - 1.0) / 2.0, -1.0, 1.0)))
