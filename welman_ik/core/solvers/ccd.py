"""Cyclic coordinate descent with several goals (Welman 1993, sections 4.2 and 5.4).

A sweep visits the joints one at a time, from the leaves to the root. At a revolute joint
with world axis a at o, each goal distal to it contributes its effector p and target d
(relative to o) with weight w, and the rotation maximising sum w d . R(phi) p, i.e.
minimising the weighted squared distance, is

    phi = atan2(k3, k2 - k1),  k1 = sum w (d.a)(p.a),  k2 = sum w d.p,  k3 = a . sum w (p x d).

Held axes (orientation goals, section 5.4) add their unit directions to the same sums,
each weighted as a point at the goal's length would be. A prismatic joint steps by the
weighted mean of (d - p) . a. Each step is scaled by the joint's mobility (Welman's
stiffness) and clipped to the limits, so the weighted error never grows. The frames
proximal to a joint do not change while the sweep works down to it, so one forward pass
per sweep suffices; effector points are moved along.

Priority levels (pins at 0, a drag below): each iteration is two sweeps, one over every
goal and one over the first level alone, which the last sweep leaves exact when the goals
conflict. In the sweep over every goal, a joint that moves a lower level's goal (a shared
joint: the root's sliders under pinned feet and a dragged hip) leaves out of its sums the
first level's goals that an own joint of the first level also moves, one that moves no
lower level's goal (the legs under the pins; ``_Sweeps.plan``). Weighed together with
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

Below a joint h that does not inherit its parent's rotation, a hinge j above h only
translates: a goal point p on h's subtree moves as h's head x_h does, p = x_h + c with
c fixed, so for j the effector is x_h and the target d - c (``Skeleton.lever``); the
heads are moved along with the points.

A visit touches only the few points distal to its joint, so the sweep works on Python
floats: which points each joint moves is listed once for a tree and its goals
(``_Sweeps.plan``, kept across solves), and a visit is a handful of sums and one rotation
over those points, where array calls on three-vectors would cost more than the
arithmetic. The position goals' points come from one product per sweep (``Pairs``).
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Sequence

import numpy as np

from ..goals import Goal, PositionGoal
from ..problem import FirstLevelKeeper, GoalBatch, Problem, SolveResult, check_start, finish, level_weights
from ..ranges import SphericalRanges
from .preference import ReferencePull

NEGLIGIBLE = 1e-4  # a hinge turn that gains less than this share of the tolerance squared is skipped
NUDGE = 0.5  # [rad] the turn out of a stall
AXIAL = 0.05  # a hinge whose points lie within this share of their distance from its axis does not turn
ANDERSON = 3  # past iterations mixed with the last one (``_accelerate``)
COHERENT = 0.9  # a change is extrapolated when its cosine with the one before is above this
MAX_LEAP = 128.0  # the most changes an extrapolation jumps
STALL = 8  # iterations of several levels without a new least error before the first level goes alone
PROGRESS = 1e-3  # the share by which the weighted squared error must fall to make a new least

MAX_PLANS = 32  # sweep plans kept per skeleton
_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # skeleton -> {pairs: plan}, across solves
_NO_PAIRS = (np.zeros(0, dtype=np.intp), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
for _empty in _NO_PAIRS:
    _empty.flags.writeable = False


class Pairs:
    """The point pairs (``Goal.point_pairs``) and direction pairs (``Goal.direction_pairs``)
    of one solve's goals, each set in one array. Position goals' joints, local points and
    targets are gathered once (their targets are fixed during a solve), so their points
    are one product for all; goals of other kinds are asked each time (their targets may
    follow the pose). Point pairs come grouped: the position goals', then the others'."""

    def __init__(self, goals: Sequence[Goal]):
        self.goals = list(goals)
        fixed = [i for i, g in enumerate(self.goals) if type(g) is PositionGoal]
        self.fixed = np.array(fixed, dtype=np.intp)
        self.others = [i for i, g in enumerate(self.goals) if type(g) is not PositionGoal]
        self.joints = np.array([self.goals[i].joint[0] for i in fixed], dtype=np.intp)
        self.local = np.array([self.goals[i].local[0] for i in fixed], dtype=float).reshape(-1, 3)
        self.targets = np.array([self.goals[i].target for i in fixed], dtype=float).reshape(-1, 3)
        self.directed = [i for i, g in enumerate(self.goals) if type(g).direction_pairs is not Goal.direction_pairs]
        self._kin, self._fixed_points = None, np.zeros((0, 3))
        self._batch: GoalBatch | None = None

    def fixed_points(self, kin) -> np.ndarray:
        """The position goals' world points (m, 3), in the order of ``fixed``; kept for the
        last kinematics asked (not to be modified)."""
        if kin is not self._kin and len(self.joints):
            self._kin, self._fixed_points = kin, kin.points(self.joints, self.local)
        return self._fixed_points

    def errors(self, kin) -> np.ndarray:
        """Each goal's distance from being met (``GoalBatch.errors``); when every goal is a
        position goal, from the points kept for ``kin``."""
        if self.others or not len(self.joints):
            if self._batch is None:
                self._batch = GoalBatch(self.goals, np.ones(len(self.goals)))
            return self._batch.errors(kin)
        gaps = self.targets - self.fixed_points(kin)
        return np.sqrt(np.einsum("ij,ij->i", gaps, gaps))

    def points(self, kin, weights: np.ndarray):
        """Joints (k,), world points (k, 3), targets (k, 3) and weights (k,) of every point pair;
        ``point_goals`` keeps the goal of each (k,)."""
        weights = np.asarray(weights, dtype=float)
        points = self.fixed_points(kin)
        if not self.others:
            self.point_goals = self.fixed
            return self.joints, points, self.targets, weights[self.fixed]
        joints, world, targets, goals = [self.joints], [points], [self.targets], [self.fixed]
        for i in self.others:
            j, p, t = self.goals[i].point_pairs(kin)
            joints.append(j)
            world.append(p)
            targets.append(t)
            goals.append(np.full(len(j), i, dtype=np.intp))
        self.point_goals = np.concatenate(goals)
        return np.concatenate(joints), np.vstack(world), np.vstack(targets), weights[self.point_goals]

    def directions(self, kin, weights: np.ndarray):
        """Direction pairs of the goals that hold a frame's axes: joints (k,), unit
        directions now (k, 3), target directions (k, 3), and weights (k,) times each pair's
        length squared, so that they weigh as points at that length would."""
        weights = np.asarray(weights, dtype=float)
        joints, units, targets, goals, scale = [], [], [], [], []
        for i in self.directed:
            j, u, t, length = self.goals[i].direction_pairs(kin)
            if len(j):
                joints.append(j)
                units.append(u)
                targets.append(t)
                goals.append(np.full(len(j), i, dtype=np.intp))
                scale.append(np.asarray(length, dtype=float) ** 2 * np.ones(len(j)))
        if not joints:
            self.direction_goals, self.direction_scale = _NO_PAIRS[0], _NO_PAIRS[3]
            return _NO_PAIRS
        self.direction_goals, self.direction_scale = np.concatenate(goals), np.concatenate(scale)
        return (np.concatenate(joints), np.vstack(units), np.vstack(targets),
                weights[self.direction_goals] * self.direction_scale)

    def cost(self, kin, weights: np.ndarray) -> float:
        """What a sweep minimises: the weighted squared distances of the point pairs and of
        the direction pairs (at their lengths)."""
        _, points, targets, w = self.points(kin, weights)
        _, units, d_targets, d_w = self.directions(kin, weights)
        return weighted_cost(points, targets, w) + weighted_cost(units, d_targets, d_w)


def weighted_cost(points: np.ndarray, targets: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * np.sum((targets - points) ** 2, axis=1)))


def goal_cost(problem: Problem, kin, weights: np.ndarray) -> float:
    """What a sweep minimises (``Pairs.cost``) for ``problem``'s goals."""
    return Pairs(problem.goals).cost(kin, weights)


class _Sweeps:
    """The sweeps of one solve: the joints' fixed values as Python lists, and for each set
    of pairs the plan of a sweep (``plan``), kept with the skeleton for the next solves
    (an interactive drag solves the same goals on the same tree at every step)."""

    def __init__(self, problem: Problem, order: np.ndarray, balls: list, movable: np.ndarray, pairs: Pairs):
        sk = problem.skeleton
        self.problem = problem
        self.skeleton = sk
        self.order = order
        self.balls = balls
        self.movable = movable
        self.pairs = pairs
        self.levered = sk.detached.size > 0
        self.prismatic = sk.prismatic.tolist()
        self.handedness = sk.handedness.tolist()  # a mirrored frame turns a positive angle into a negative rotation
        self.mobility = sk.mobility.tolist()
        self.lower = sk.lower.tolist()
        self.upper = sk.upper.tolist()
        self._plans = _PLANS.setdefault(sk, {})

    def plan(self, joints: np.ndarray, w: np.ndarray, d_joints: np.ndarray, d_w: np.ndarray,
             lower: tuple[np.ndarray, np.ndarray] | None = None) -> list:
        """For each joint of the sweep, in order, that has a weighted pair distal to it:
        (joint, total weight, [(goal point r, lever source s, weight) if weighted],
        [every goal point r], [(s, [riders moved as s is])], [(direction i, weight) if weighted]).

        ``lower``: the weights (point pairs', directions') of the goals below the first
        priority level alone. A joint that moves pairs of a lower level (a shared joint:
        the root under pinned feet and a dragged hip) then leaves out of its weighing the
        first level's pairs that have an own joint, one that moves no lower level's pair
        (the legs under the pins): those joints take up what the shared joint moves such
        a pair by, and the sweep over the first level that follows gives back through the
        shared joints what they cannot. So the pins do not stop the drag halfway.

        Riders are the goal points, then (with joints that do not inherit their parent's
        rotation) the heads of those joints, points on their parents. The joint moves rider
        r through s: r itself, or the head of the first non-inheriting joint below it on
        the way to r (below it only translation passes). Directions (held axes) turn with a
        hinge above them unless a non-inheriting joint lies between (Welman 1993, section
        5.4: orientation); a sliding joint does not turn them."""
        key = (self.order.tobytes(), joints.tobytes(), w.tobytes(), d_joints.tobytes(), d_w.tobytes(),
               None if lower is None else (lower[0].tobytes(), lower[1].tobytes()))
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        if len(self._plans) >= MAX_PLANS:
            self._plans.clear()
        sk = self.skeleton
        k = len(joints)
        riders = joints
        sources = None
        if self.levered:
            detached = sk.detached
            riders = np.concatenate([joints, sk.parent[detached]])
            lever = sk.lever[riders]
            slot = np.empty(sk.size, dtype=np.intp)
            slot[detached] = k + np.arange(detached.size)
            sources = np.where(lever >= 0, slot[lever], np.arange(len(riders))[:, None]).T.tolist()
        moved: list[list[int]] = [[] for _ in range(sk.size)]  # moved[j]: the riders joint j moves
        for r, row in enumerate(sk.ancestors[riders]):
            for j in np.flatnonzero(row).tolist():
                moved[j].append(r)
        turned: list[list[int]] = [[] for _ in range(sk.size)]
        for i in np.flatnonzero(d_w > 0.0).tolist():  # an unweighted direction changes nothing
            for j in np.flatnonzero(sk.ancestors[d_joints[i]] & (sk.lever[d_joints[i]] < 0)).tolist():
                turned[j].append(i)
        all_ws, all_dws = w.tolist(), d_w.tolist()
        shared_ws, shared_dws, shared = all_ws, all_dws, np.zeros(sk.size, dtype=bool)
        if lower is not None:
            above = sk.ancestors[np.concatenate([joints, d_joints])]  # (pairs, n): the joints above each pair
            first = np.concatenate([w > lower[0], d_w > lower[1]])
            shared = above[np.concatenate([lower[0] > 0.0, lower[1] > 0.0])].any(axis=0)
            own = self.movable & above[first].any(axis=0) & ~shared
            kept = ~(first & (above & own).any(axis=1))  # a first-level pair that no own joint moves, or not first
            shared_ws, shared_dws = np.where(kept[:k], w, 0.0).tolist(), np.where(kept[k:], d_w, 0.0).tolist()
        plan = []
        for j in self.order.tolist():
            goal = [r for r in moved[j] if r < k]
            ws, dws = (shared_ws, shared_dws) if shared[j] else (all_ws, all_dws)
            turns = [] if self.prismatic[j] else [(i, dws[i]) for i in turned[j]]
            total = 0.0
            for r in goal:
                total += ws[r]
            for _, weight in turns:
                total += weight
            if total <= 0.0:  # no pair to move it
                continue
            if sources is None:
                plan.append((j, total, [(r, r, ws[r]) for r in goal if ws[r] > 0.0], goal,
                             [(r, (r,)) for r in goal], turns))
                continue
            by_source: dict[int, list[int]] = {}
            for r in moved[j]:
                by_source.setdefault(sources[j][r], []).append(r)
            plan.append((j, total, [(r, sources[j][r], ws[r]) for r in goal if ws[r] > 0.0], goal,
                         list(by_source.items()), turns))
        self._plans[key] = plan
        return plan

    def _project(self, qs: list, pending: int, upto: int, weights: np.ndarray, place: bool = True):
        """Project the ranged ball joints whose hinges the sweep has all passed (the first
        ``pending`` are done); returns the new ``pending`` and, if a joint moved and
        ``place``, the riders' points and the directions placed again (the frames above are
        unchanged)."""
        sk, balls = self.skeleton, self.balls
        moved = False
        while pending < len(balls) and balls[pending][0] > upto:
            q = np.array(qs)
            projected = balls[pending][1].project(sk, q, self.movable)
            if projected is not q and np.any(projected != q):
                qs[:] = projected.tolist()
                moved = True
            pending += 1
        if not moved or not place:
            return pending, None
        now = sk.forward(np.array(qs))
        points = self.pairs.points(now, weights)[1]
        if self.levered:
            points = np.vstack([points, now.heads[sk.detached]])
        return pending, (points.tolist(), self.pairs.directions(now, weights)[1].tolist())

    def sweep(self, q: np.ndarray, kin, weights: np.ndarray,
              lower: np.ndarray | None = None) -> tuple[np.ndarray, list[int]]:
        """One sweep from the leaves to the root; returns the new joint values and the hinges
        that could not turn toward a goal they fall short of (no lever: a stall).
        ``lower``: the goals' weights with the first priority level's at 0, which tell the
        joints shared between levels (``plan``)."""
        sk = self.skeleton
        pairs = self.pairs
        joints, points, targets, w = pairs.points(kin, weights)
        d_joints, units, d_targets, d_w = pairs.directions(kin, weights)
        if lower is not None:
            lower = np.asarray(lower, dtype=float)
            lower = (lower[pairs.point_goals], lower[pairs.direction_goals] * pairs.direction_scale)
        plan = self.plan(joints, w, d_joints, d_w, lower)
        levered = self.levered
        if levered:
            points = np.vstack([points, kin.heads[sk.detached]])
        pts, tgs = points.tolist(), targets.tolist()
        uns, uts = units.tolist(), d_targets.tolist()
        qs = q.tolist()
        origins = kin.origins.tolist()
        world = kin.world_axes
        axes = world.tolist()
        unit_axes = (world / np.sqrt(np.einsum("ij,ij->i", world, world))[:, None]).tolist()
        prismatic, handedness, mobility = self.prismatic, self.handedness, self.mobility
        lower, upper = self.lower, self.upper
        sqrt, hypot, atan2, cos, sin = math.sqrt, math.hypot, math.atan2, math.cos, math.sin
        # Ball joints with a spherical range are projected onto it as soon as the sweep has
        # passed all three of their hinges, so that the joints above take up what the range
        # refuses in the same sweep.
        pending, balls = 0, len(self.balls)
        # The least improvement of the weighted squared error per unit weight a turn must make.
        tolerance2 = self.problem.tolerance**2
        negligible = NEGLIGIBLE * tolerance2
        idle: list[int] = []
        for j, total, weighted, goal, groups, turned in plan:
            if pending < balls and self.balls[pending][0] > j:
                pending, placed = self._project(qs, pending, j, weights)
                if placed is not None:
                    pts, uns = placed
            ox, oy, oz = origins[j]
            if prismatic[j]:
                vx, vy, vz = axes[j]
                gain = 0.0
                for r, _, wr in weighted:
                    tx, ty, tz = tgs[r]
                    px, py, pz = pts[r]
                    gain += wr * ((tx - px) * vx + (ty - py) * vy + (tz - pz) * vz)
                step = gain / (total * (vx * vx + vy * vy + vz * vz))
            else:
                ax, ay, az = unit_axes[j]
                k1 = k2 = k3 = across = spread = 0.0
                for r, s, wr in weighted:
                    lx, ly, lz = pts[s]
                    tx, ty, tz = tgs[r]
                    if s != r:  # p = x + (p - x) with p - x fixed: aim x at target - (p - x)
                        px, py, pz = pts[r]
                        tx, ty, tz = tx - (px - lx), ty - (py - ly), tz - (pz - lz)
                    px, py, pz = lx - ox, ly - oy, lz - oz
                    dx, dy, dz = tx - ox, ty - oy, tz - oz
                    pa = px * ax + py * ay + pz * az
                    da = dx * ax + dy * ay + dz * az
                    pp = px * px + py * py + pz * pz
                    dd = dx * dx + dy * dy + dz * dz
                    k1 += wr * (da * pa)
                    k2 += wr * (dx * px + dy * py + dz * pz)
                    k3 += wr * (ax * (py * dz - pz * dy) + ay * (pz * dx - px * dz) + az * (px * dy - py * dx))
                    across_p, across_d = pp - pa * pa, dd - da * da  # squared distances from the axis
                    if across_p > 0.0 and across_d > 0.0:
                        across += wr * sqrt(across_p * across_d)
                    spread += wr * sqrt(pp * dd)
                for i, wr in turned:  # held axes: the same sums over unit directions
                    px, py, pz = uns[i]
                    dx, dy, dz = uts[i]
                    pa = px * ax + py * ay + pz * az
                    da = dx * ax + dy * ay + dz * az
                    k1 += wr * (da * pa)
                    k2 += wr * (dx * px + dy * py + dz * pz)
                    k3 += wr * (ax * (py * dz - pz * dy) + ay * (pz * dx - px * dz) + az * (px * dy - py * dx))
                    across_p, across_d = px * px + py * py + pz * pz - pa * pa, dx * dx + dy * dy + dz * dz - da * da
                    if across_p > 0.0 and across_d > 0.0:
                        across += wr * sqrt(across_p * across_d)
                    spread += wr
                if hypot(k3, k2 - k1) - (k2 - k1) <= negligible * total or across < AXIAL * spread:
                    # No turn brings its points measurably closer, or they lie along its axis (a
                    # bone's head on its own hinges, a tail on its twist): the angle would be
                    # atan2 of round-off or a large turn for next to nothing (a foot flipped).
                    if _short(goal, pts, tgs, turned, uns, uts, tolerance2):
                        idle.append(j)  # stuck short of a goal: the solve may nudge it
                    continue
                step = handedness[j] * atan2(k3, k2 - k1)
            step *= mobility[j]
            new = qs[j] + step
            if new < lower[j]:
                new = lower[j]
            elif new > upper[j]:
                new = upper[j]
            step = new - qs[j]
            if step == 0.0:
                continue
            qs[j] = new
            if prismatic[j]:
                sx, sy, sz = step * vx, step * vy, step * vz
                for _, riders in groups:
                    for r in riders:
                        px, py, pz = pts[r]
                        pts[r] = [px + sx, py + sy, pz + sz]
                continue
            turn = handedness[j] * step
            c, s = cos(turn), sin(turn)
            versine = 1.0 - c
            for source, riders in groups:
                lx, ly, lz = pts[source]
                rx, ry, rz = lx - ox, ly - oy, lz - oz
                ra = (rx * ax + ry * ay + rz * az) * versine
                nx = rx * c + (ay * rz - az * ry) * s + ax * ra
                ny = ry * c + (az * rx - ax * rz) * s + ay * ra
                nz = rz * c + (ax * ry - ay * rx) * s + az * ra
                if levered:  # every rider moves as its source does
                    ex, ey, ez = nx - rx, ny - ry, nz - rz
                    for r in riders:
                        px, py, pz = pts[r]
                        pts[r] = [px + ex, py + ey, pz + ez]
                else:
                    pts[source] = [ox + nx, oy + ny, oz + nz]
            for i, _ in turned:
                ux, uy, uz = uns[i]
                ua = (ux * ax + uy * ay + uz * az) * versine
                uns[i] = [ux * c + (ay * uz - az * uy) * s + ax * ua, uy * c + (az * ux - ax * uz) * s + ay * ua,
                          uz * c + (ax * uy - ay * ux) * s + az * ua]
        if pending < balls:
            self._project(qs, pending, -1, weights, place=False)
        return np.array(qs), idle


def _short(goal: list, pts: list, tgs: list, turned: list, uns: list, uts: list, tolerance2: float) -> bool:
    """Whether a goal point of ``goal`` or a direction of ``turned`` (each with its weight)
    misses its target by more than the tolerance."""
    for r in goal:
        tx, ty, tz = tgs[r]
        px, py, pz = pts[r]
        if (tx - px) ** 2 + (ty - py) ** 2 + (tz - pz) ** 2 > tolerance2:
            return True
    for i, weight in turned:
        tx, ty, tz = uts[i]
        ux, uy, uz = uns[i]
        if weight * ((tx - ux) ** 2 + (ty - uy) ** 2 + (tz - uz) ** 2) > tolerance2:
            return True
    return False


def _ranged_balls(problem: Problem, order: np.ndarray) -> list:
    """(first hinge, ranges of that ball joint alone) for each ranged ball joint with a hinge
    in the sweep, the sweep's last-visited first (joints are visited in ``order``, from the
    leaves to the root, so a ball's hinges are all passed once the sweep goes below its
    lowest-numbered one)."""
    ranges = problem.ranges
    if ranges is None or not ranges.size:
        return []
    swept = np.zeros(problem.skeleton.size, dtype=bool)
    swept[order] = True
    out = []
    for b in np.flatnonzero(swept[ranges.joints].any(axis=1)):
        one = SphericalRanges(ranges.joints[b:b + 1], ranges.swing_x[b:b + 1], ranges.swing_z[b:b + 1],
                              ranges.twist[b:b + 1], ranges.roll[b:b + 1])
        out.append((int(ranges.joints[b].min()), one))
    return sorted(out, key=lambda item: -item[0])


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
    sweeper = _Sweeps(problem, order, _ranged_balls(problem, order), movable, pairs)
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
            q, stuck = sweeper.sweep(q, kin if i == 0 else sk.forward(q), phase, lower)
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
        if len(memory) > 1:
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
    that tell the shared joints (``_Sweeps.plan``), or None).

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
