"""Jacobian transpose (Welman 1993, section 4.1) with conjugate directions.

The direction of steepest descent is z = K J^T W e, the gradient of the weighted squared
error E = sum_g w_g |e_g|^2 scaled by a per-joint gain K_i = mobility_i / sum_g w_g r_ig^2,
where r_ig is the distance from joint i to goal g's effector (the link-length scaling of
section 4.1.4; for a sliding joint the lever is 1; past a joint that does not inherit its
parent's rotation, r_ig is the distance to that joint's head, which is what joint i turns;
see ``Kinematics.lever_points``; a held axis counts as a point at its length). This makes
the step independent of units and of how far a joint is from its effectors.

Steps follow nonlinear conjugate gradients over that direction (Polak-Ribiere, preconditioned
by K; Nocedal & Wright 2006, section 5.2): d = z + beta d_prev with
beta = max(0, z . (g - g_prev) / (z_prev . g_prev)), g = J^T W e, and d = z alone after a
refused step, whenever the weighting changes, and when d is not a descent direction. Along
d the step is alpha = (g . d) / |J d|_W^2, the minimiser of the error's linearisation (Buss's
alpha, here along d), no joint turning more than ``MAX_STEP``; a step that would increase
the weighted error is halved until it does not (backtracking), so the method never
diverges. Where plain transpose steps zig-zag across a narrow valley of E (pinned feet with
the pelvis free to tilt: the error falls by a fraction of a percent per step), conjugate
directions take it in tens of steps.

Limits: a joint at a limit that z pushes past it keeps its value (its part of z is 0).
A ball joint on the boundary of its spherical range that z would carry out of (a probe of
``PROBE`` through ``SphericalRanges.rows``) slides along it: the part of z across those
boundaries' normals N is taken out in the metric of K, z - K N^T (N K N^T)^-1 N z (still a
descent direction), and the conjugate direction likewise. Each trial is then brought within
the limits and ranges (``Problem.constrain``).

Priority levels, without a null space: one descent on every goal at once, the first level's
weights times a penalty (1 to begin with). When it stalls (its error falls by less than
``STALL_GAIN`` over ``STALL_SPAN`` steps) with the first level unmet, the goals conflict: the
penalty grows tenfold and the descent starts again, up to ``MAX_PENALTY``; past it the first
level alone descends until it is met, and the solve ends. So the first level is what holds
when goals conflict, yet no step undoes what the previous one gained on the other goals (as
a step on the first level alone after each step on every goal did). The last tenth of the
budget serves the first level alone whenever it is unmet, and a solve that ends with it
unmet returns the closest configuration that met it (``FirstLevelKeeper``).

Singular configurations: the first time the descent on every goal of a prioritised problem
stalls (a squat from straight legs: pulled along themselves, the knees get no gradient),
every hinge that moves a goal is turned by a fixed pseudo-random amount of at most ``NUDGE``
times its mobility, and the descent goes on from there (a perturbed gradient method, Jin et
al. 2017, "How to escape saddle points efficiently"). A single level gets no such shake: as
Welman reports, a straight chain pulled inward along its own axis has J^T e = 0 and does not
move.

For position goals on a conformal tree without non-inheriting joints, J^T W e and J d
come from the joints' screws (``_Descent``) without forming the Jacobian; other goals
give their Jacobian rows (``GoalBatch.stack``). A trial step's error is the residuals
alone, and an accepted trial's kinematics are the next step's.
"""

from __future__ import annotations

import time

import numpy as np

from ..problem import FirstLevelKeeper, GoalBatch, Problem, SolveResult, check_start, level_weights
from .ccd import Pairs, conclude
from .preference import ReferencePull

MAX_STEP = 0.5  # largest revolute step per iteration [rad]
MAX_HALVINGS = 30
MIN_LEVER = 1e-6  # [m] a joint whose effectors are all nearer its axis point than this does not move
SHORT_LEVER = 0.01  # a joint's gain is at most that of a lever this share of the longest
STALL_SPAN = 8  # steps over which a descent that gains too little has stalled
STALL_GAIN = 1e-2  # the share of its error a descent must lose over STALL_SPAN steps
PENALTY_GROWTH = 10.0  # the first level's weight grows by this when the levels conflict
MAX_PENALTY = 100.0  # past this, the first level alone
SLIDE_PASSES = 3  # rounds of range boundaries gathered per direction
PROBE = 1e-6  # [rad] the largest joint step of the probe that finds the range boundaries a direction crosses
CROSSING = 1e-3  # the share of PROBE by which a probe must cross a boundary outward
MAX_ESCAPES = 1  # shakes out of a stall per solve
NUDGE = 0.02  # [rad] the largest hinge turn of the shake
SHAKE_SEED = 1993  # the shake is the same in every solve

_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a x b of (k, 3) arrays, in fewer calls than component by component."""
    return a.take(_NEXT, 1) * b.take(_AFTER, 1) - a.take(_AFTER, 1) * b.take(_NEXT, 1)


def _project(d: np.ndarray, normals: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """d - K N^T (N K N^T)^-1 N d: ``d`` with no part along the rows of ``normals`` (N) in
    the metric of the gains K."""
    scaled = normals * gain  # N K
    return d - scaled.T @ np.linalg.lstsq(scaled @ normals.T, normals @ d, rcond=None)[0]


class _Descent:
    """Conjugate-gradient steps on one weighting of the goals, each with its line search."""

    def __init__(self, problem: Problem, weights: np.ndarray, pairs: Pairs, movable: np.ndarray):
        sk = problem.skeleton
        goals = list(problem.goals)
        self.problem = problem
        self.skeleton = sk
        self.weights = weights
        self.pairs = pairs
        # On a conformal tree without non-inheriting joints a position goal's Jacobian
        # column for joint i is the screw (s_i, o_i x s_i) applied to its point p,
        # s_i x p + o_i x s_i (s_i the signed unit axis at o_i; (0, a_i) for a slider), so
        # its share of J^T W e and of J dq is a few products, without the Jacobian. Other
        # goals give their Jacobian rows.
        m = self.direct = len(pairs.fixed) if sk.conformal and not sk.detached.size else 0
        rest = sorted(set(range(len(goals))) - set(pairs.fixed[:m].tolist()))
        self.rest = GoalBatch([goals[i] for i in rest], weights[rest]) if rest else None
        self.direct_weights = weights[pairs.fixed[:m]]
        self.direct_distal = sk.ancestors[pairs.joints[:m]].astype(float)  # (m, n)
        self.mobile = np.where(movable, sk.mobility, 0.0)
        self.revolute = np.flatnonzero(~sk.prismatic)
        self.sliders = np.flatnonzero(sk.prismatic)
        self.turning = np.where(sk.prismatic, 0.0, sk.handedness)
        self.sliding = sk.prismatic.astype(float)[:, None]
        # Without limits or ranges a step needs no clipping.
        ranged = self.ranged = problem.ranges is not None and problem.ranges.size > 0
        self.free = not ranged and not np.any(np.isfinite(sk.lower) | np.isfinite(sk.upper))
        self._levers: dict = {}
        self.alpha = 1.0
        self.memory = None  # (gradient, z . gradient, direction) of the last accepted step
        self.costs: list[float] = []  # the cost at the start of each step since the last reset
        self.stuck = False  # the last step found no descent
        self.gain = np.zeros(sk.size)  # the last step's gains

    def _distal(self, joints: np.ndarray, w: np.ndarray):
        """(k, n): 1.0 where joint i moves pair k's point, times the pairs' weights; (n,) each
        joint's total weight; (n,) the least weighted squared lever of a joint that moves.
        Kept while the pairs stay the same."""
        key = (joints.tobytes(), w.tobytes())
        found = self._levers.get(key)
        if found is None:
            weighted = w[:, None] * self.skeleton.ancestors[joints]
            reach = weighted.sum(axis=0)
            found = self._levers[key] = (weighted, reach[self.sliders], MIN_LEVER**2 * reach)
        return found

    def _gain(self, kin, axes2: np.ndarray) -> np.ndarray:
        """K (n,): each joint's mobility over its weighted squared levers on the effectors
        (``axes2``: each world axis's length squared)."""
        sk = self.skeleton
        joints, points, _, w = self.pairs.points(kin, self.weights)
        weighted, sliding_reach, least = self._distal(joints, w)
        if sk.detached.size:
            rel = (kin.lever_points(joints, points) - kin.origins[None, :, :]).transpose(0, 2, 1)
        else:
            rel = points[:, :, None] - np.ascontiguousarray(kin.origins.T)  # (k, 3, n)
        denominator = np.einsum("kn,kin,kin->n", weighted, rel, rel)
        if self.sliders.size:  # a slider's lever is its axis
            denominator[self.sliders] = axes2[self.sliders] * sliding_reach
        d_joints, _, _, d_w = self.pairs.directions(kin, self.weights)
        if d_joints.size:  # a held axis turns with a joint at its length: lever^2 = length^2
            denominator += d_w @ (sk.ancestors[d_joints] & (sk.lever[d_joints] < 0))
        # A joint with no lever on its effectors (a bone's head on its own hinges) has a
        # gradient of round-off: it stays (its gain would be that noise over nothing). One
        # with a lever far shorter than the others' turns as if it were SHORT_LEVER of the
        # longest: its gain would otherwise fill the step's MAX_STEP alone.
        floor = SHORT_LEVER**2 * denominator.max(initial=0.0)
        return np.divide(self.mobile, np.maximum(denominator, max(floor, 1e-300)), out=np.zeros(sk.size),
                         where=denominator > least)

    def cost(self, kin, gaps: np.ndarray | None = None) -> float:
        """The weighted squared error at ``kin`` (``gaps``: the position goals' target minus
        point there, if known)."""
        cost = 0.0
        if self.direct:
            if gaps is None:
                gaps = self.pairs.targets - self.pairs.fixed_points(kin)
            cost += float(np.einsum("k,ki,ki->", self.direct_weights, gaps, gaps))
        if self.rest is not None:
            e = self.rest.residuals(kin)
            cost += float(e @ e)
        return cost

    def _slide(self, q: np.ndarray, d: np.ndarray, gain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``d`` less its part across the boundary of each ball joint's range that it would
        carry out of (``SphericalRanges.rows`` at a step of PROBE), projected in the metric of
        the gains: d - K N^T (N K N^T)^-1 N d, N the boundaries' normals (what stays slides
        along the boundaries and is still a descent direction if ``d`` is K times one); and N."""
        sk = self.skeleton
        normals = np.zeros((0, sk.size))
        out = d
        for _pass in range(SLIDE_PASSES):
            biggest = np.abs(out).max(initial=0.0)
            if biggest == 0.0:
                break
            probe = (PROBE / biggest) * out
            rows, _ = self.problem.ranges.rows(sk, q, q + probe)
            # Only boundaries the direction crosses outward (not those it slides along,
            # whose round-off would find them again).
            rows = rows[rows @ probe > CROSSING * PROBE]
            if not rows.size:
                break
            normals = np.vstack([normals, rows])
            out = _project(d, normals, gain)
        return out, normals

    def reset(self) -> None:
        """Forget the conjugate direction and the costs (the next step is a plain gradient step)."""
        self.memory = None
        self.costs = []
        self.stuck = False

    def stalled(self) -> bool:
        """The cost fell by less than a share STALL_GAIN over the last STALL_SPAN steps."""
        c = self.costs
        return len(c) > STALL_SPAN and c[-1] > (1.0 - STALL_GAIN) * c[-1 - STALL_SPAN]

    def step(self, q: np.ndarray, kin):
        """One accepted step from q: (new q, its kinematics), or None if none helps."""
        sk = self.skeleton
        axes = kin.world_axes
        axes2 = np.einsum("ij,ij->i", axes, axes)
        gain = self.gain = self._gain(kin, axes2)
        m = self.direct
        if m:
            p = self.pairs.fixed_points(kin)
            gaps = self.pairs.targets - p
            cost = self.cost(kin, gaps)
            pulls = self.direct_weights[:, None] * gaps
            signed = axes * (self.turning / np.sqrt(axes2))[:, None]
            screws = np.concatenate((signed, _cross(kin.origins, signed) + self.sliding * axes), axis=1)  # (n, 6)
            # J^T W e: sum over the points p below joint i of its screw . (p x w r, w r)
            wrenches = self.direct_distal.T @ np.concatenate((_cross(p, pulls), pulls), axis=1)
            gradient = np.einsum("ni,ni->n", screws, wrenches)
        else:
            cost, gradient = self.cost(kin), np.zeros(sk.size)
        if self.rest is not None:
            e_rest, jac = self.rest.stack(kin)
            gradient += e_rest @ jac
        self.costs.append(cost)
        self.stuck = False
        z = gain * gradient
        blocked = None
        if not self.free:  # a joint at a limit that the step would push past it stays
            blocked = ((q <= sk.lower) & (z < 0.0)) | ((q >= sk.upper) & (z > 0.0))
            z[blocked] = 0.0
        if self.ranged:
            z, normals = self._slide(q, z, gain)
        zg = float(z @ gradient)
        direction = z
        if self.memory is not None and zg > 0.0:
            # Polak-Ribiere (non-negative): beta = z . (g - g_prev) / (z_prev . g_prev).
            g_prev, zg_prev, d_prev = self.memory
            beta = max(0.0, (zg - float(z @ g_prev)) / zg_prev)
            if beta > 0.0:
                conjugate = z + beta * d_prev
                if blocked is not None:
                    conjugate[blocked] = 0.0
                if self.ranged and normals.size:  # along the boundaries the gradient presses on
                    conjugate = _project(conjugate, normals, gain)
                if float(conjugate @ gradient) > 0.0:
                    direction = conjugate
        slope = float(gradient @ direction)
        spread = 0.0
        if m:
            twist = self.direct_distal @ (direction[:, None] * screws)  # (m, 6): the screws moving each point
            moved = _cross(twist[:, :3], p) + twist[:, 3:]  # J dq at the points
            spread += float(np.einsum("k,ki,ki->", self.direct_weights, moved, moved))
        if self.rest is not None:
            moved = jac @ direction
            spread += float(moved @ moved)
        if spread > 0.0 and slope > 0.0:
            self.alpha = slope / spread
        biggest = np.abs(direction[self.revolute]).max(initial=0.0)
        alpha = self.alpha
        for _h in range(MAX_HALVINGS):
            dq = (alpha if alpha * biggest <= MAX_STEP else MAX_STEP / biggest) * direction
            trial = q + dq if self.free else self.problem.constrain(q + dq)
            if np.abs(trial - q).max(initial=0.0) < 1e-15:
                break
            trial_kin = sk.forward(trial)
            if self.cost(trial_kin) <= cost:
                self.memory = (gradient, zg, direction) if zg > 0.0 else None
                return trial, trial_kin
            alpha *= 0.5
        self.memory = None
        self.stuck = True
        return None


def solve(problem: Problem, q0) -> SolveResult:
    """See the module docstring: one descent on every goal, the first level's penalty raised
    when it stalls with that level unmet, then the first level alone."""
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    movable = problem.movable()
    weights, first_level = level_weights(problem)
    pairs = Pairs(problem.goals)
    goals = problem.goals
    lowest = min((g.priority for g in goals), default=0)
    first = np.array([g.priority == lowest for g in goals], dtype=bool)
    layered = not np.array_equal(weights, first_level)
    tol = problem.tolerance
    penalty = 1.0
    combined = _Descent(problem, weights, pairs, movable)
    alone = _Descent(problem, first_level, pairs, movable) if layered else None
    polish_from = problem.max_iterations - max(3, problem.max_iterations // 10) if layered else np.inf
    settle = False  # after a conflict: the first level alone, then stop
    escapes = 0
    shake = NUDGE * sk.mobility * np.where(sk.prismatic, 0.0, np.random.default_rng(SHAKE_SEED).uniform(-1.0, 1.0, sk.size))
    last = None
    history: list[float] = []
    iterations = 0
    kin = sk.forward(q)
    pull = ReferencePull(problem, kin, pairs.errors)
    keeper = FirstLevelKeeper(problem)
    for _ in range(problem.max_iterations):
        errors = pairs.errors(kin)
        history.append(float(errors.max(initial=0.0)))
        keeper.see(q, kin, errors)
        if np.all(errors <= tol):
            pulled = pull.step(q, kin, errors)
            if pulled is None:
                break
            q, kin = pulled
            last = None
            continue
        if time.perf_counter() > deadline:
            break
        first_met = bool(np.all(errors[first] <= tol))
        if layered and not first_met and (settle or iterations >= polish_from):
            descent = alone
        elif settle:
            break
        else:
            descent = combined
        if descent is not last:
            descent.reset()
        if descent is combined and layered and (descent.stuck or descent.stalled()):
            if escapes < MAX_ESCAPES:
                escapes += 1
                iterations += 1
                q = problem.constrain(q + np.where(descent.gain > 0.0, shake, 0.0))  # the hinges that move goals
                kin = sk.forward(q)
                last = None
                continue
            if first_met:
                break
            if penalty < MAX_PENALTY:
                penalty *= PENALTY_GROWTH
                combined = _Descent(problem, np.where(first, penalty, 1.0) * weights, pairs, movable)
                descent = combined
            else:
                settle = True
                descent = alone
            descent.reset()
        elif descent.stuck:
            break
        iterations += 1
        last = descent
        taken = descent.step(q, kin)
        if taken is not None:
            q, kin = taken
    return conclude(problem, pull, keeper, pairs, q, kin, iterations, history)
