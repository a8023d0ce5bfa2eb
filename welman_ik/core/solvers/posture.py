"""The arm's posture for a reach: the hand along the forearm, the elbow hanging.

A person reaching for a point keeps the wrist near neutral and lets the elbow hang; the
shoulder and the elbow place the hand (Soechting & Flanders 1989). A least-norm step does
not: it shares the reach among every joint of the arm, the wrist's with the rest, and the
elbow rises wherever the start pose happens to turn it. So, when the limbs reach alone
(``limbs_first``), each arm that must carry its hand to a target is first placed by a rule,
and the solver refines from there, with that placement as the arm's preferred pose:

1. **The wrist** keeps its preferred bend (the hand along the forearm as the pose had it), so
   the hand is rigid on the forearm and the arm is two links: shoulder to elbow, elbow to
   the goal's point.
2. **The elbow** bends (along the way its joints change the shoulder-to-hand distance most,
   within its range) until the goal's point lies as far from the shoulder as the target.
3. **The shoulder** turns the arm by the least rotation that carries the point onto the
   target, then about the shoulder-target line (the swivel) toward where the elbow hangs
   lowest: fully once the target is a forearm's length from where the hand hangs at the
   preferred pose, in proportion before (so a drag starts where the pose is, and the same
   target always gives the same arm). Of a few swivels from there back to none, the first
   that the joint ranges leave within ``NEAR`` of the target is taken.

An arm here is what the tree's shape says: the goal's joint and the two ball or hinge joints
above it (the wrist, the elbow, the shoulder; joints at one point are one ball), in a limb
that hangs from the top of the trunk (a trunk joint with no trunk below it: the chest, not
the pelvis) and has at most one more joint (a collarbone) above the shoulder; the shoulder a
ball of three movable hinges about its frame's axes; no other goal on the arm. Anything else
(a leg, a finger, a locked shoulder, a pose goal on the hand) is left to the solver as it is.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..goals import PositionGoal
from ..problem import Problem
from ..ranges import euler_angles
from ..skeleton import Skeleton, axis_angle_matrices, cross

NEAR = 0.05  # of the arm's length: a swivel the ranges leave this close to the target is taken
SWIVELS = (1.0, 0.75, 0.5, 0.25, 0.0)  # the shares of the lowest elbow's swivel tried, in order
BEND_ITERATIONS = 12
BEND_TOLERANCE = 1e-7  # of the arm's length: the elbow's bend is done within this
KICK = 0.1  # [rad] the first bend of an elbow held straight
GIRDLE = 1  # joints (balls) a limb may have above its shoulder
WRIST_MOBILITY = 0.1  # the wrist's share of its mobility while the solver refines a placed arm


def place(problem: Problem, limbs: np.ndarray, q: np.ndarray, held: float) -> tuple[np.ndarray, np.ndarray] | None:
    """``q`` with each arm that reaches for a target (a position goal farther than ``held``
    from it) placed by the rule of the module docstring, within the joint ranges, and (n,)
    bool the wrists' joints; None when no arm was placed. ``limbs``: (n,) bool, the joints of
    the limbs' stage."""
    sk = problem.skeleton
    reference = q if problem.reference is None else np.asarray(problem.reference, dtype=float)
    placed = None
    wrists = np.zeros(sk.size, dtype=bool)
    for goal in problem.goals:
        if type(goal) is not PositionGoal or goal.weight <= 0.0:
            continue
        arm = arm_groups(problem, limbs, int(goal.joint[0]))
        if arm is None:
            continue
        start = q if placed is None else placed
        point = sk.forward(start).points(goal.joint, goal.local)[0]
        if np.linalg.norm(goal.target - point) <= held:
            continue
        found = _place_arm(problem, arm, goal, start, reference)
        if found is not None:
            placed = found
            wrists[arm[0]] = True
    return None if placed is None else (placed, wrists)


@functools.lru_cache(maxsize=16)  # per skeleton (compared by identity) and wrists: a drag solves one model many times
def stiff_wrists(sk: Skeleton, wrists: bytes) -> Skeleton:
    """``sk`` with the mobility of the joints ``wrists`` (an (n,) bool array's bytes) times
    ``WRIST_MOBILITY``: the solvers refine a placed arm with its shoulder and elbow, the wrist
    bending only for what they cannot do."""
    mobility = sk.mobility.copy()
    mobility[np.frombuffer(wrists, dtype=bool)] *= WRIST_MOBILITY
    return dataclasses.replace(sk, mobility=mobility)


def arm_groups(problem: Problem, limbs: np.ndarray, joint: int) -> tuple[np.ndarray, ...] | None:
    """(wrist, elbow, shoulder) joints of the arm that carries ``joint``, each a ball (joints at
    one point) or a hinge, or None when that is no arm (module docstring)."""
    sk = problem.skeleton
    if problem.tiers is None or not limbs[joint]:
        return None
    arm = _arm_shape(sk, np.asarray(problem.tiers), np.asarray(limbs, dtype=bool), joint)
    if arm is None:
        return None
    wrist, elbow, shoulder = arm
    movable = problem.movable()
    if not (movable[elbow].any() and movable[shoulder].all()):
        return None
    arm = np.concatenate([shoulder, elbow, wrist])
    others = [g for g in problem.goals if g.weight > 0.0 and getattr(g, "joint", None) is not None
              and int(np.asarray(g.joint).reshape(-1)[0]) != joint]
    if any(sk.ancestors[np.asarray(g.joint).reshape(-1)][:, arm].any() for g in others):
        return None  # another goal rides on the arm
    if any(g is not None and int(np.asarray(getattr(g, "joint", [-1])).reshape(-1)[0]) == joint
           and type(g) is not PositionGoal for g in problem.goals):
        return None  # an orientation of the hand is asked for too
    return wrist, elbow, shoulder


def _arm_shape(sk: Skeleton, tiers: np.ndarray, limbs: np.ndarray, joint: int) -> tuple[np.ndarray, ...] | None:
    """``arm_groups``' part that the tree alone decides (its structure, the tiers, the limbs):
    worked out once per skeleton, tiers, limbs and joint (a drag asks it on every solve)."""
    kept = sk.__dict__.get("_arm_shapes")
    if kept is None:
        kept = {}
        object.__setattr__(sk, "_arm_shapes", kept)
    key = (tiers.tobytes(), limbs.tobytes(), joint)
    if key not in kept:
        kept[key] = _find_arm(sk, tiers, limbs, joint)
    return kept[key]


def _find_arm(sk: Skeleton, tiers: np.ndarray, limbs: np.ndarray, joint: int) -> tuple[np.ndarray, ...] | None:
    chain = np.flatnonzero(sk.ancestors[joint] & limbs)  # parents first
    if chain.size == 0 or sk.prismatic[chain].any():
        return None
    top = int(chain[0])
    if not np.array_equal(chain, np.flatnonzero(sk.ancestors[joint] & sk.ancestors[:, top])):
        return None  # the limb's joints are not one run down to the goal
    hangs = sk.parent[top]
    if hangs < 0 or tiers[hangs] == tiers[joint]:
        return None
    below = sk.ancestors[:, hangs].copy()
    below[hangs] = False
    if (below & (tiers == tiers[hangs])).any():
        return None  # it hangs where more trunk goes on (the pelvis): a leg
    at_parent = np.linalg.norm(sk.rest[chain, :3, 3], axis=1) <= 1e-12
    at_parent[0] = False
    starts = np.flatnonzero(~at_parent)
    groups = np.split(chain, starts[1:])
    if not 3 <= len(groups) <= 3 + GIRDLE or groups[-1][-1] != joint:
        return None
    wrist, elbow, shoulder = groups[-1], groups[-2], groups[-3]
    if not _ball(sk, shoulder):
        return None
    for group in (wrist, elbow, shoulder):
        group.flags.writeable = False  # (kept and shared: ``_arm_shape``)
    return wrist, elbow, shoulder


def _ball(sk, joints: np.ndarray) -> bool:
    """Three hinges about the coordinate axes of one frame (the later two without a turn)."""
    if len(joints) != 3:
        return False
    axes = sk.axis[joints]
    order = np.argmax(np.abs(axes), axis=1)
    return (np.allclose(axes, np.eye(3)[order]) and len(set(order.tolist())) == 3
            and np.allclose(sk.rest[joints[1:], :3, :3], np.eye(3)) and sk.inherits[joints[1:]].all()
            and sk.handedness[joints[0]] > 0.0)


def _place_arm(problem: Problem, arm, goal: PositionGoal, q: np.ndarray, reference: np.ndarray) -> np.ndarray | None:
    sk = problem.skeleton
    _, elbow, shoulder = arm
    target = goal.target
    posed = q.copy()
    posed[np.concatenate(arm)] = reference[np.concatenate(arm)]  # the arm as the preferred pose has it
    posed = problem.constrain(posed)
    kin = sk.forward(posed)
    rest_point = kin.points(goal.joint, goal.local)[0]
    s, e = kin.origins[shoulder[0]], kin.origins[elbow[0]]
    upper, lower = float(np.linalg.norm(e - s)), float(np.linalg.norm(rest_point - e))
    length = upper + lower
    if upper < 1e-9 or lower < 1e-9:
        return None
    distance = float(np.linalg.norm(target - s))
    posed = _bend(problem, posed, elbow[problem.movable()[elbow]], goal, s, np.clip(distance, abs(upper - lower),
                                                                                         length), length)
    kin = sk.forward(posed)
    point = kin.points(goal.joint, goal.local)[0]
    if distance < 1e-9 * length or np.linalg.norm(point - s) < 1e-9 * length:
        return None
    way = (target - s) / distance
    first = _between((point - s) / np.linalg.norm(point - s), way)
    # The swivel: about the shoulder-target line, toward the elbow hanging lowest.
    arm_e = first @ (kin.origins[elbow[0]] - s)
    radial = arm_e - (arm_e @ way) * way
    e1 = radial / max(np.linalg.norm(radial), 1e-300)
    e2 = cross(way, e1)
    lowest = float(np.arctan2(-e2[2], -e1[2])) if np.hypot(e1[2], e2[2]) > 1e-6 else 0.0
    share = min(1.0, float(np.linalg.norm(target - rest_point)) / lower)
    frame = kin.frames[sk.parent[shoulder[0]]] if sk.parent[shoulder[0]] >= 0 else sk.base
    carried = frame[:3, :3] @ sk.rest[shoulder[0], :3, :3]  # the shoulder's frame at zero, world
    order = np.argmax(np.abs(sk.axis[shoulder]), axis=1)
    turned = _joint_turn(posed, shoulder, order)
    best, best_miss = None, np.inf
    for fraction in SWIVELS:
        swivel = axis_angle_matrices(way[None], np.array([share * lowest * fraction]))[0]
        world = swivel @ first
        local = np.linalg.solve(carried, world @ carried) @ turned
        trial = posed.copy()
        trial[shoulder] = euler_angles(local[None], order[None], posed[shoulder][None])[0]
        trial = problem.constrain(trial)
        miss = float(np.linalg.norm(sk.forward(trial).points(goal.joint, goal.local)[0] - target))
        if miss < best_miss:
            best, best_miss = trial, miss
        if miss <= NEAR * length:
            return trial
    return best


def _joint_turn(q: np.ndarray, joints: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The rotation R_a(q_a) R_b(q_b) R_c(q_c) of a ball's hinges about the axes ``order``."""
    axes = np.eye(3)[order]
    turns = axis_angle_matrices(axes, q[joints])
    return turns[0] @ turns[1] @ turns[2]


def _between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The least rotation carrying unit ``a`` onto unit ``b``."""
    axis = cross(a, b)
    sine, cosine = float(np.linalg.norm(axis)), float(a @ b)
    if sine < 1e-12:
        if cosine > 0.0:
            return np.eye(3)
        helper = np.eye(3)[int(np.argmin(np.abs(a)))]
        axis = cross(a, helper)
        sine = float(np.linalg.norm(axis))
        return axis_angle_matrices((axis / sine)[None], np.array([np.pi]))[0]
    return axis_angle_matrices((axis / sine)[None], np.array([np.arctan2(sine, cosine)]))[0]


def _bend(problem: Problem, q: np.ndarray, elbow: np.ndarray, goal: PositionGoal, shoulder: np.ndarray,
          distance: float, length: float) -> np.ndarray:
    """``q`` with the elbow's joints moved (Newton along the gradient, within the ranges) until
    the goal's point lies ``distance`` from the shoulder."""
    sk = problem.skeleton
    if elbow.size == 0:
        return q
    for _ in range(BEND_ITERATIONS):
        kin = sk.forward(q)
        point = kin.points(goal.joint, goal.local)[0]
        gap = distance ** 2 - float((point - shoulder) @ (point - shoulder))
        if abs(np.sqrt(max(distance ** 2 - gap, 0.0)) - distance) <= BEND_TOLERANCE * length:
            return q
        slope = 2.0 * (point - shoulder) @ kin.point_jacobian(goal.joint, point[None])[0][:, elbow]
        if slope @ slope <= (1e-6 * length) ** 2:  # held straight: the first bend its range allows
            q = _kick(problem, q, elbow, goal, shoulder)
            continue
        step = q.copy()
        step[elbow] += np.clip(slope * gap / (slope @ slope), -0.5, 0.5)
        q = problem.constrain(step)
    return q


def _kick(problem: Problem, q: np.ndarray, elbow: np.ndarray, goal: PositionGoal, shoulder: np.ndarray) -> np.ndarray:
    """Of ``KICK`` either way on each of the elbow's joints, the one (within the ranges) that
    brings the goal's point nearest the shoulder."""
    sk = problem.skeleton
    best, nearest = q, np.inf
    for j in elbow:
        for sign in (1.0, -1.0):
            trial = q.copy()
            trial[j] += sign * KICK
            trial = problem.constrain(trial)
            far = float(np.linalg.norm(sk.forward(trial).points(goal.joint, goal.local)[0] - shoulder))
            if far < nearest - 1e-12:
                best, nearest = trial, far
    return best
