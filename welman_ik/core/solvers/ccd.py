"""Cyclic coordinate descent with several goals (Welman 1993, sections 4.2 and 5.4).

Joints are visited from the leaves to the root. At a revolute joint with world axis a
at o, each goal distal to it contributes its effector p and target d (relative to o)
with weight w, and the rotation maximising sum w d . R(phi) p, i.e. minimising the
weighted squared distance, is

    phi = atan2(k3, k2 - k1),  k1 = sum w (d.a)(p.a),  k2 = sum w d.p,  k3 = a . sum w (p x d).

A prismatic joint steps by the weighted mean of (d - p) . a. Each step is scaled by the
joint's mobility (Welman's stiffness) and clipped to the limits, so the weighted error
never grows. The frames proximal to a joint do not change while the sweep works down
to it, so one forward pass per sweep suffices; effector points are moved along.

Below a joint h that does not inherit its parent's rotation, a hinge j above h only
translates: a goal point p on h's subtree moves as h's head x_h does, p = x_h + c with
c fixed, so for j the effector is x_h and the target d - c (``Skeleton.lever``); the
heads are moved along with the points.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..problem import FirstLevelKeeper, Problem, SolveResult, check_start, finish, goal_errors, level_weights
from ..ranges import SphericalRanges
from ..skeleton import cross
from .preference import ReferencePull

NEGLIGIBLE = 1e-4  # a hinge turn that gains less than this share of the tolerance squared is skipped
NUDGE = 0.5  # [rad] the turn out of a stall
AXIAL = 0.05  # a hinge whose points lie within this share of their distance from its axis does not turn


def _pairs(problem: Problem, kin, weights):
    joints, points, targets, w = [], [], [], []
    for goal, weight in zip(problem.goals, weights):
        j, p, t = goal.point_pairs(kin)
        joints.append(j)
        points.append(p)
        targets.append(t)
        w.append(np.full(len(j), weight))
    if not joints:
        return np.zeros(0, dtype=np.intp), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0)
    return np.concatenate(joints), np.vstack(points), np.vstack(targets), np.concatenate(w)


def _directions(problem: Problem, kin, weights):
    """Direction pairs of the goals that hold a frame's axes (``Goal.direction_pairs``):
    joints (k,), unit directions now (k, 3), target directions (k, 3), and weights (k,)
    times each pair's length squared, so that they weigh as points at that length would."""
    joints, units, targets, w = [], [], [], []
    for goal, weight in zip(problem.goals, weights):
        j, u, t, length = goal.direction_pairs(kin)
        if len(j):
            joints.append(j)
            units.append(u)
            targets.append(t)
            w.append(weight * np.asarray(length, dtype=float) ** 2)
    if not joints:
        return np.zeros(0, dtype=np.intp), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0)
    return np.concatenate(joints), np.vstack(units), np.vstack(targets), np.concatenate(w)


def weighted_cost(points: np.ndarray, targets: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * np.sum((targets - points) ** 2, axis=1)))


def goal_cost(problem: Problem, kin, weights: np.ndarray) -> float:
    """What a sweep minimises: the weighted squared distances of the point pairs and of the
    direction pairs (at their lengths)."""
    _, points, targets, w = _pairs(problem, kin, weights)
    _, units, d_targets, d_w = _directions(problem, kin, weights)
    return weighted_cost(points, targets, w) + weighted_cost(units, d_targets, d_w)


def _sweep(problem: Problem, q: np.ndarray, kin, weights: np.ndarray, order: np.ndarray, balls: list,
           movable: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """One sweep from the leaves to the root; returns the new joint values and the hinges
    that could not turn toward a goal they fall short of (no lever: a stall). ``balls``: the
    ranged ball joints (``_ranged_balls``); ``movable``: the problem's movable joints."""
    sk = problem.skeleton
    q = q.copy()
    joints, points, targets, w = _pairs(problem, kin, weights)
    k = len(joints)
    # Directions (held axes) turn with a hinge above them unless a joint that does not
    # inherit its parent's rotation lies between (Welman 1993, section 5.4: orientation).
    d_joints, units, d_targets, d_w = _directions(problem, kin, weights)
    turns = sk.ancestors[d_joints] & (sk.lever[d_joints] < 0)  # (k_d, n)
    # Riders: the effector points, then the heads of the non-inheriting joints (points on
    # their parents). A hinge moves rider r through source[r, j]: r itself, or the head of
    # the first non-inheriting joint below the hinge (below it only translation passes).
    detached = sk.detached
    levered = detached.size > 0
    riders = joints
    if levered:
        riders = np.concatenate([joints, sk.parent[detached]])
        points = np.vstack([points, kin.heads[detached]])
        lever = sk.lever[riders]
        slot = np.empty(sk.size, dtype=np.intp)
        slot[detached] = k + np.arange(detached.size)
        source = np.where(lever >= 0, slot[lever], np.arange(len(riders))[:, None])
    distal = sk.ancestors[riders]  # (r, n): rider r moves with joint j
    origins = kin.origins
    world_axes = kin.world_axes
    handedness = sk.handedness  # a mirrored frame turns a positive angle into a negative rotation
    # Ball joints with a spherical range are projected onto it as soon as the sweep has
    # passed all three of their hinges, so that the joints above take up what the range
    # refuses in the same sweep.
    pending = 0
    # The least improvement of the weighted squared error per unit weight a turn must make.
    tolerance2 = problem.tolerance**2
    negligible = NEGLIGIBLE * tolerance2
    idle: list[int] = []

    def project_passed(upto: int) -> None:
        nonlocal pending, points, units
        moved = False
        while pending < len(balls) and balls[pending][0] > upto:
            ranges = balls[pending][1]
            projected = ranges.project(sk, q, movable)
            if projected is not q and np.any(projected != q):
                q[:] = projected
                moved = True
            pending += 1
        if moved:  # the riders below moved: place them again (frames above are unchanged)
            now = sk.forward(q)
            _, fresh, _, _ = _pairs(problem, now, weights)
            points = np.vstack([fresh, now.heads[detached]]) if levered else fresh
            units[:] = _directions(problem, now, weights)[1]

    for j in order:
        project_passed(j)
        sel = distal[:, j]
        goal_sel = sel[:k]
        ww = w[goal_sel]
        d_sel = turns[:, j] if not sk.prismatic[j] else np.zeros(len(d_joints), dtype=bool)
        dw = d_w[d_sel]
        total = float(ww.sum()) + float(dw.sum())
        if (not goal_sel.any() and not d_sel.any()) or total <= 0.0:
            continue
        o = origins[j]
        if levered:  # p = x + (p - x) with p - x fixed: aim x at target - (p - x)
            lever_points = points[source[sel, j]]
            p = lever_points[: len(ww)] - o
            d = targets[goal_sel] - (points[:k][goal_sel] - lever_points[: len(ww)]) - o
        else:
            lever_points = points[sel]
            p = lever_points - o
            d = targets[sel] - o
        if sk.prismatic[j]:
            v = world_axes[j]
            step = float(ww @ ((d - p) @ v)) / (total * float(v @ v)) if ww.size else 0.0
        else:
            a = world_axes[j] / np.linalg.norm(world_axes[j])
            pa, da = p @ a, d @ a
            k1 = float(ww @ (da * pa))
            k2 = float(ww @ np.einsum("ij,ij->i", d, p))
            k3 = float(a @ (ww @ cross(p, d)))
            across = float(ww @ (np.linalg.norm(p - np.outer(pa, a), axis=1) * np.linalg.norm(d - np.outer(da, a), axis=1)))
            spread = float(ww @ (np.linalg.norm(p, axis=1) * np.linalg.norm(d, axis=1)))
            if d_sel.any():  # held axes: the same sums over unit directions
                u, t = units[d_sel], d_targets[d_sel]
                ua, ta = u @ a, t @ a
                k1 += float(dw @ (ta * ua))
                k2 += float(dw @ np.einsum("ij,ij->i", t, u))
                k3 += float(a @ (dw @ cross(u, t)))
                across += float(dw @ (np.linalg.norm(u - np.outer(ua, a), axis=1)
                                      * np.linalg.norm(t - np.outer(ta, a), axis=1)))
                spread += float(dw.sum())
            if math.hypot(k3, k2 - k1) - (k2 - k1) <= negligible * total or across < AXIAL * spread:
                # No turn brings its points measurably closer, or they lie along its axis (a
                # bone's head on its own hinges, a tail on its twist): the angle would be
                # atan2 of round-off or a large turn for next to nothing (a foot flipped).
                if (np.any(np.sum((targets[goal_sel] - points[:k][goal_sel]) ** 2, axis=1) > tolerance2)
                        or np.any(d_w[d_sel] * np.sum((d_targets[d_sel] - units[d_sel]) ** 2, axis=1)
                                  > tolerance2 * (d_w[d_sel] > 0))):
                    idle.append(j)  # stuck short of a goal: the solve may nudge it
                continue
            step = handedness[j] * math.atan2(k3, k2 - k1)
        step *= sk.mobility[j]
        new = min(max(q[j] + step, sk.lower[j]), sk.upper[j])
        step = new - q[j]
        if step == 0.0:
            continue
        q[j] = new
        if sk.prismatic[j]:
            points[sel] += step * world_axes[j]
        else:
            c, s = math.cos(handedness[j] * step), math.sin(handedness[j] * step)
            r = lever_points - o if levered else p
            rotated = r * c + cross(a, r) * s + a * (r @ a)[:, None] * (1.0 - c)
            if levered:
                points[sel] += rotated - r
            else:
                points[sel] = o + rotated
            if d_sel.any():
                u = units[d_sel]
                units[d_sel] = u * c + cross(a, u) * s + a * (u @ a)[:, None] * (1.0 - c)
    project_passed(-1)
    return q, idle


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


def _cost(problem: Problem, q: np.ndarray, weights: np.ndarray) -> float:
    return goal_cost(problem, problem.skeleton.forward(q), weights)


def _nudge(problem: Problem, q: np.ndarray, idle: list[int]) -> np.ndarray:
    """Out of a stall: turn the hinges that had no lever on a goal they fall short of (a
    chain folded onto its own joint, a straight chain pulled along itself) by ``NUDGE``,
    once per solve, so that the sweeps can go on."""
    nudged = q.copy()
    nudged[np.unique(idle)] += NUDGE
    return problem.constrain(nudged)


def solve(problem: Problem, q0) -> SolveResult:
    """Sweeps until every goal is met, the pose stops changing, or the budget runs out.

    With several priority levels each iteration is two sweeps: one over every goal (by
    its own weight), so the drag can move the joints the pins share, then one over the
    first level alone, so the pins are restored; the first level is what the last sweep
    leaves exact when goals conflict.
    """
    sk = problem.skeleton
    q = check_start(problem, q0)
    deadline = problem.deadline()
    weights, first_level = level_weights(problem)
    phases = [weights] if np.array_equal(weights, first_level) else [weights, first_level]
    movable = problem.movable()
    order = np.flatnonzero(movable)[::-1]
    balls = _ranged_balls(problem, order)  # once per solve, not per sweep
    history: list[float] = []
    sweeps = 0
    previous_cost, previous_q = math.inf, q.copy()
    kin = sk.forward(q)
    pull = ReferencePull(problem, kin)
    keeper = FirstLevelKeeper(problem)
    idle: list[int] = []
    nudged = False
    for _ in range(problem.max_iterations):
        kin = sk.forward(q)
        errors = goal_errors(problem.goals, kin)
        history.append(float(errors.max(initial=0.0)))
        keeper.see(q, kin, errors)
        if np.all(errors <= problem.tolerance):
            pulled = pull.step(q, kin, errors)
            if pulled is None:
                break
            q, previous_cost = pulled[0], math.inf
            continue
        if time.perf_counter() > deadline:
            break
        if len(phases) == 1:
            cost = goal_cost(problem, kin, weights)
            if cost >= previous_cost * (1.0 - 1e-12):
                # A fixed point. Under a sheared or non-uniformly scaled frame a hinge is
                # not a rigid world rotation and a sweep can overshoot: keep the better pose.
                if cost > previous_cost:
                    q = previous_q
                if nudged or not idle:
                    break
                unnudged, nudged, previous_cost = q, True, math.inf
                q = _nudge(problem, q, idle)
                continue
            previous_cost, previous_q = cost, q.copy()
        start = q
        idle = []
        for i, phase in enumerate(phases):
            q, stuck = _sweep(problem, q, kin if i == 0 else sk.forward(q), phase, order, balls, movable)
            idle += stuck
        sweeps += 1
        if np.abs(q - start).max(initial=0.0) < 1e-14:
            if nudged or not idle:
                break
            unnudged, nudged = q, True
            q = _nudge(problem, q, idle)
    if nudged and _cost(problem, q, weights) > _cost(problem, unnudged, weights):
        q = unnudged  # the nudge led nowhere better: no solve ends worse than its stall
    q, kin = pull.finish(q, sk.forward(q))
    q, kin = keeper.choose(q, kin, goal_errors(problem.goals, kin))
    return finish(problem, q, sweeps, history, kin)
