"""One sweep of cyclic coordinate descent with several goals (Welman 1993, sections 4.2 and
5.4); the solve around it is ``ccd``.

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
per sweep suffices; effector points are moved along. A ball joint with a spherical range
is projected onto it as soon as the sweep has passed its three hinges.

Below a joint h that does not inherit its parent's rotation, a hinge j above h only
translates: a goal point p on h's subtree moves as h's head x_h does, p = x_h + c with
c fixed, so for j the effector is x_h and the target d - c (``Skeleton.lever``); the
heads are moved along with the points.

A visit touches only the few points distal to its joint, so the sweep works on Python
floats: which points each joint moves is listed once for a tree and its goals
(``Sweeps.plan``, kept across solves), and a visit is a handful of sums and one rotation
over those points, where array calls on three-vectors would cost more than the
arithmetic. The position goals' points come from one product per sweep (``Pairs``).
"""

from __future__ import annotations

import math
import time
import weakref

import numpy as np

from ..problem import Problem
from ..range_check import InsideTest, one_ball
from .ccd_plan import sweep_plan
from .pairs import Pairs

NEGLIGIBLE = 1e-4  # a hinge turn that gains less than this share of the tolerance squared is skipped
AXIAL = 0.05  # a hinge whose points lie within this share of their distance from its axis does not turn

MAX_PLANS = 32  # sweep plans kept per skeleton
_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # skeleton -> {pairs: plan}, across solves


class Sweeps:
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
        """``sweep_plan``, kept with the skeleton for the next solves (the same goals on the same
        tree, as at every step of a drag)."""
        key = (self.order.tobytes(), joints.tobytes(), w.tobytes(), d_joints.tobytes(), d_w.tobytes(),
               None if lower is None else (lower[0].tobytes(), lower[1].tobytes()))
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        if len(self._plans) >= MAX_PLANS:
            self._plans.clear()
        plan = self._plans[key] = sweep_plan(self.skeleton, self.order, self.movable, joints, w, d_joints, d_w, lower)
        return plan

    def _project(self, qs: list, pending: int, upto: int, weights: np.ndarray, place: bool = True):
        """Project the ranged ball joints whose hinges the sweep has all passed (the first
        ``pending`` are done); returns the new ``pending`` and, if a joint moved and
        ``place``, the riders' points and the directions placed again (the frames above are
        unchanged)."""
        sk, balls = self.skeleton, self.balls
        moved = False
        while pending < len(balls) and balls[pending][0] > upto:
            _, ranges, inside = balls[pending]
            pending += 1
            if inside.inside(qs):  # (clearly inside: the projection would leave it as it is)
                continue
            q = np.array(qs)
            projected = ranges.project(sk, q, self.movable)
            if projected is not q and np.any(projected != q):
                qs[:] = projected.tolist()
                moved = True
        if not moved or not place:
            return pending, None
        now = sk.forward(np.array(qs))
        points = self.pairs.points(now, weights)[1]
        if self.levered:
            points = np.vstack([points, now.heads[sk.detached]])
        return pending, (points.tolist(), self.pairs.directions(now, weights)[1].tolist())

    def sweep(self, q: np.ndarray, kin, weights: np.ndarray,
              lower: np.ndarray | None = None, deadline: float = math.inf) -> tuple[np.ndarray, list[int]]:
        """One sweep from the leaves to the root; returns the new joint values and the hinges
        that could not turn toward a goal they fall short of (no lever: a stall).
        ``lower``: the goals' weights with the first priority level's at 0, which tell the
        joints shared between levels (``plan``). Past ``deadline`` (a drag's time per mouse
        event) the sweep stops where it is: each turn it made is a step of its own."""
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
        clock = time.perf_counter
        for j, total, weighted, goal, groups, turned in plan:
            if clock() > deadline:
                break
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


def ranged_balls(problem: Problem, order: np.ndarray) -> list:
    """(first hinge, ranges of that ball joint alone, its quick inside test) for each ranged
    ball joint with a hinge in the sweep, the sweep's last-visited first (joints are visited in
    ``order``, from the leaves to the root, so a ball's hinges are all passed once the sweep
    goes below its lowest-numbered one)."""
    ranges = problem.ranges
    if ranges is None or not ranges.size:
        return []
    swept = np.zeros(problem.skeleton.size, dtype=bool)
    swept[order] = True
    out = []
    for b in np.flatnonzero(swept[ranges.joints].any(axis=1)):
        one = one_ball(ranges, b)
        out.append((int(ranges.joints[b].min()), one, InsideTest(one, problem.skeleton)))
    return sorted(out, key=lambda item: -item[0])
