"""One problem description and one result shared by every solver."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .goals import Goal
from .range_check import all_inside
from .ranges import SphericalRanges
from .skeleton import Kinematics, Skeleton


@dataclass
class Problem:
    """What to solve.

    skeleton:   the hinge tree.
    goals:      the tasks; a goal's ``priority`` orders them (0 first).
    active:     (n,) bool, the joints the solver may move; None: every joint.
                Joints with zero mobility never move either way.
    tolerance:  a goal within this distance [m] is met.
    max_iterations: iterations (CCD: sweeps) per solve.
    damping:    the SR-inverse's k, relative to the scale of each task's Jacobian
                (so that the solution does not depend on units or joint weights).
    time_budget: seconds; a solve stops early after this (None: no limit).
    reference:  (n,) preferred joint values, the lowest-priority task (Yamane & Nakamura
                2003, section 3.3): what freedom the goals leave is spent keeping every
                joint near them. None: no preference.
    reference_weight: how strongly [cost per rad^2, relative to the goals' m^2 once scaled
                by the tree's size] the joints keep to ``reference``.
    ranges:     spherical joint ranges (swing cone and twist) of ball joints, enforced by
                every solver on top of the per-joint limits (``constrain``).
    tiers:      (n,) int, which joints join when (``solvers.limbs_first``): the joints of
                tier 0 (the limbs) solve first, each higher tier (the trunk) joins only for
                what the tiers below it cannot do; None: every joint shares every goal.
    gaze:       a joint whose frame keeps its world orientation (at ``reference``, else at the
                start) as far as the joints that move nothing else can keep it: the head, kept
                looking where it looked by the neck (``solvers.limbs_first``); None: no gaze.
    idle:       (n,) bool, joints in the tree only for the gaze (the neck): the solvers' weights
                (``subtree``, the carried lengths) leave them out, so that they change nothing.
    rescue:     the single solve's rescues when it stalls: a nudge off a singular pose, and
                (SR inverse) a second try with the first two levels swapped. A bake whose
                lowest level is met only as far as it can be (a retarget's orientations),
                each frame carrying on from the last, turns them off.
    """

    skeleton: Skeleton
    goals: Sequence[Goal]
    active: np.ndarray | None = None
    tolerance: float = 1e-5
    max_iterations: int = 100
    damping: float = 1e-3
    time_budget: float | None = None
    reference: np.ndarray | None = None
    reference_weight: float = 1.0
    ranges: SphericalRanges | None = None
    tiers: np.ndarray | None = None
    gaze: int | None = None
    idle: np.ndarray | None = None
    rescue: bool = True

    def __post_init__(self) -> None:
        if self.ranges is not None:
            self.ranges.check(self.skeleton)

    def constrain(self, q: np.ndarray) -> np.ndarray:
        """Joint values within the joint limits and the spherical ranges; only joints that
        may move are changed by the ranges."""
        sk = self.skeleton
        q = sk.clamp(q)
        if self.ranges is not None and self.ranges.size and not all_inside(self.ranges, sk, q):
            q = sk.clamp(self.ranges.project(sk, q, self.movable()))
        return q

    def constrain_many(self, q: np.ndarray) -> np.ndarray:
        """``constrain`` of each of the configurations ``q`` (T, n) at once."""
        sk = self.skeleton
        q = sk.clamp(q)
        if self.ranges is not None and self.ranges.size:
            q = sk.clamp(self.ranges.project_many(sk, q, self.movable()))
        return q

    def movable(self) -> np.ndarray:
        """(n,) bool: joints that may move in this solve."""
        sk = self.skeleton
        movable = sk.mobility > 0.0
        if self.active is not None:
            movable &= np.asarray(self.active, dtype=bool)
        return movable

    def in_play(self) -> np.ndarray | None:
        """(n,) bool: the joints the solvers' weights count, all but ``idle``; None: all."""
        if self.idle is None or not np.any(self.idle):
            return None
        return ~np.asarray(self.idle, dtype=bool)

    def subtree(self) -> np.ndarray:
        """(n,) how many joints in play (``in_play``) each joint moves, itself included."""
        mask = self.in_play()
        sk = self.skeleton
        return sk.subtree if mask is None else np.maximum(mask.astype(float) @ sk.ancestors, 1.0)

    def deadline(self) -> float:
        return np.inf if self.time_budget is None else time.perf_counter() + self.time_budget


@dataclass
class SolveResult:
    """q: joint values; iterations done; errors: each goal's distance [m]; converged:
    True only when every goal is within tolerance."""

    q: np.ndarray
    iterations: int
    errors: np.ndarray
    converged: bool
    history: list[float] = field(default_factory=list)

    @property
    def max_error(self) -> float:
        return float(self.errors.max(initial=0.0))


def level_weights(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Goal weights, and the same with every goal below the first priority level at 0
    (for the solvers that have no null space and handle priority by alternating)."""
    weights = np.array([g.weight for g in problem.goals], dtype=float)
    if not problem.goals:
        return weights, weights
    first = min(g.priority for g in problem.goals)
    return weights, np.where([g.priority == first for g in problem.goals], weights, 0.0)


def by_kind(goals: Sequence[Goal]) -> dict[type, list[int]]:
    """Indices of the goals of each kind, so that each kind is evaluated in one batch."""
    kinds: dict[type, list[int]] = {}
    for i, goal in enumerate(goals):
        kinds.setdefault(type(goal), []).append(i)
    return kinds


def goal_errors(goals: Sequence[Goal], kin: Kinematics) -> np.ndarray:
    """Each goal's distance from being met [m], in order."""
    errors = np.empty(len(goals))
    for kind, members in by_kind(goals).items():
        errors[members] = kind.errors([goals[i] for i in members], kin)
    return errors


def finish(problem: Problem, q: np.ndarray, iterations: int, history: list[float],
           kin: Kinematics | None = None, errors: np.ndarray | None = None) -> SolveResult:
    """Evaluate the final pose (``kin``, if given, must be at ``q``; ``errors``, if given,
    the goals' errors there) and package it."""
    if errors is None:
        if kin is None:
            kin = problem.skeleton.forward(q)
        errors = goal_errors(problem.goals, kin)
    converged = bool(np.all(errors <= problem.tolerance))
    return SolveResult(q=q, iterations=iterations, errors=errors, converged=converged, history=history)


def check_start(problem: Problem, q0) -> np.ndarray:
    """The starting configuration, finite and within limits."""
    q = np.asarray(q0, dtype=float).copy()
    if q.shape != (problem.skeleton.size,):
        raise ValueError(f"expected {problem.skeleton.size} joint values, got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError("starting joint values contain NaN or infinity")
    return problem.constrain(q)


def stacked(goals: Sequence[Goal], kin: Kinematics, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residuals (r,) and Jacobians (r, n) of ``goals``, each goal's rows times sqrt(weight).
    Goals of one kind are evaluated in one batch, so rows come grouped by kind."""
    n = kin.skeleton.size
    if not goals:
        return np.zeros(0), np.zeros((0, n))
    rows_e, rows_j = [], []
    for kind, members in by_kind(goals).items():
        e, j = kind.stack([goals[i] for i in members], kin)
        scale = np.repeat(np.sqrt(np.asarray(weights, dtype=float)[members]), [goals[i].rows for i in members])
        rows_e.append(e * scale)
        rows_j.append(j * scale[:, None])
    return np.concatenate(rows_e), np.vstack(rows_j)


class GoalBatch:
    """The goals of one solve, grouped by kind once: their errors, and their residual and
    Jacobian rows each times sqrt(weight), every kind in one batch per call. ``rows(members)``
    picks the rows of some of the goals out of ``stack``'s (which come grouped by kind)."""

    def __init__(self, goals: Sequence[Goal], weights: np.ndarray):
        self.goals = list(goals)
        self.kinds = [(np.array(members, dtype=np.intp), kind.batch([self.goals[i] for i in members]))
                      for kind, members in by_kind(self.goals).items()]
        order = np.concatenate([members for members, _ in self.kinds]) if self.kinds else np.zeros(0, np.intp)
        counts = np.array([self.goals[i].rows for i in order], dtype=np.intp)
        self._first_row = np.empty(len(self.goals), dtype=np.intp)
        self._first_row[order] = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(order) else []
        self.row_goal = np.repeat(order, counts)  # the goal of each of ``stack``'s rows
        self.row_scale = np.sqrt(np.asarray(weights, dtype=float))[self.row_goal]

    def rows(self, members) -> np.ndarray:
        """Indices into ``stack``'s rows of the goals ``members``, in their order."""
        return np.concatenate([np.arange(self._first_row[i], self._first_row[i] + self.goals[i].rows)
                               for i in members]) if len(members) else np.zeros(0, dtype=np.intp)

    def errors(self, kin: Kinematics) -> np.ndarray:
        """Each goal's distance from being met [m], in order."""
        errors = np.empty(len(self.goals))
        for members, batch in self.kinds:
            errors[members] = batch.errors(kin)
        return errors

    def residuals(self, kin: Kinematics) -> np.ndarray:
        """The weighted residuals of ``stack`` alone, without the Jacobians."""
        if not self.kinds:
            return np.zeros(0)
        parts = [batch.residuals(kin) for _, batch in self.kinds]
        return (np.concatenate(parts) if len(parts) > 1 else parts[0]) * self.row_scale

    def stack(self, kin: Kinematics, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Weighted residuals (r,) and Jacobians (r, n), grouped by kind; ``weights``: the
        goals' weights for this call instead of the batch's."""
        if not self.kinds:
            return np.zeros(0), np.zeros((0, kin.skeleton.size))
        parts = [batch.stack(kin) for _, batch in self.kinds]
        e = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        j = np.vstack([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
        scale = self.row_scale if weights is None else np.sqrt(np.asarray(weights, dtype=float))[self.row_goal]
        return e * scale, j * scale[:, None]


class FirstLevelKeeper:
    """The configuration to fall back on when a solve ends with its first priority level
    unmet although it met it on the way (a lower level pulled it off and the solver could
    not bring it back): of those that met it, the one closest to meeting the rest."""

    def __init__(self, problem: Problem):
        goals = problem.goals
        first = min((g.priority for g in goals), default=0)
        self.first = np.array([g.priority == first for g in goals], dtype=bool)
        self.weights = np.array([g.weight for g in goals], dtype=float)
        self.tolerance = problem.tolerance
        self.best = None

    def see(self, q: np.ndarray, kin: Kinematics, errors: np.ndarray) -> None:
        if not np.all(errors[self.first] <= self.tolerance):
            return
        rest = float(self.weights[~self.first] @ errors[~self.first] ** 2)
        if self.best is None or rest <= self.best[2]:
            self.best = (q, kin, rest)

    def choose(self, q: np.ndarray, kin: Kinematics, errors: np.ndarray) -> tuple[np.ndarray, Kinematics]:
        if self.best is not None and not np.all(errors[self.first] <= self.tolerance):
            return self.best[0], self.best[1]
        return q, kin
