"""The plan of a cyclic coordinate descent sweep (``ccd_sweep``): for a tree and its goals,
which goal points, heads and held directions each joint of the sweep moves, listed once so
that a visit in the sweep is a handful of sums over Python floats."""

from __future__ import annotations

import numpy as np

from ..skeleton import Skeleton


def sweep_plan(sk: Skeleton, order: np.ndarray, movable: np.ndarray, joints: np.ndarray, w: np.ndarray,
               d_joints: np.ndarray, d_w: np.ndarray, lower: tuple[np.ndarray, np.ndarray] | None = None) -> list:
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
    k = len(joints)
    riders = joints
    sources = None
    if sk.detached.size > 0:
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
        own = movable & above[first].any(axis=0) & ~shared
        kept = ~(first & (above & own).any(axis=1))  # a first-level pair that no own joint moves, or not first
        shared_ws, shared_dws = np.where(kept[:k], w, 0.0).tolist(), np.where(kept[k:], d_w, 0.0).tolist()
    prismatic = sk.prismatic.tolist()
    plan = []
    for j in order.tolist():
        goal = [r for r in moved[j] if r < k]
        ws, dws = (shared_ws, shared_dws) if shared[j] else (all_ws, all_dws)
        turns = [] if prismatic[j] else [(i, dws[i]) for i in turned[j]]
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
    return plan

