"""Small skeletons for the core tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from welman_ik.core import OrientationGoal, PositionGoal, Problem, Skeleton
from welman_ik.core.skeleton import axis_angle_matrices
from welman_ik.core.solvers.ccd import goal_cost


def translation(v) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = v
    return m


def chain(lengths, axes, lower=None, upper=None, mobility=None, scale: float = 1.0) -> Skeleton:
    """A serial chain: joint i sits at the end of link i-1 (links along +x)."""
    n = len(axes)
    rest = np.stack([translation([scale * (lengths[i - 1] if i > 0 else 0.0), 0.0, 0.0]) for i in range(n)])
    return Skeleton(
        parent=np.arange(n) - 1,
        prismatic=np.zeros(n, dtype=bool),
        axis=np.asarray(axes, dtype=float),
        rest=rest,
        lower=np.full(n, -np.inf) if lower is None else lower,
        upper=np.full(n, np.inf) if upper is None else upper,
        mobility=np.ones(n) if mobility is None else mobility,
    )


def planar_chain(n: int, length: float = 1.0, scale: float = 1.0, **kw) -> Skeleton:
    return chain([length] * n, [[0, 0, 1]] * n, scale=scale, **kw)


def tip_local(length: float = 1.0, scale: float = 1.0) -> np.ndarray:
    return np.array([scale * length, 0.0, 0.0])


def with_base(skeleton: Skeleton, base: np.ndarray) -> Skeleton:
    """The same tree hung from another base frame."""
    return replace(skeleton, base=np.asarray(base, dtype=float))


def with_mobility(skeleton: Skeleton, mobility: Sequence[float]) -> Skeleton:
    """The same tree with other mobilities (Welman's stiffness factors)."""
    return replace(skeleton, mobility=np.asarray(mobility, dtype=float))


def rotation(axis, angle: float) -> np.ndarray:
    """3x3 rotation by ``angle`` radians about ``axis`` (any length)."""
    a = np.asarray(axis, dtype=float)
    return axis_angle_matrices((a / np.linalg.norm(a))[None], np.array([angle]))[0]


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A random proper 3x3 rotation (QR of a Gaussian matrix, sign-fixed)."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def random_tree(
    rng: np.random.Generator,
    n: int,
    p_prismatic: float = 0.3,
    base: np.ndarray | None = None,
) -> Skeleton:
    """A random tree: random parents (parent[i] < i), hinge or slider joints with random
    axes, rest transforms with random rotations and offsets, no limits, full mobility."""
    parent = np.array([rng.integers(-1, i) for i in range(n)])
    rest = np.stack([np.eye(4)] * n)
    for i in range(n):
        rest[i, :3, :3] = random_rotation(rng)
        rest[i, :3, 3] = rng.uniform(-1.0, 1.0, 3)
    return Skeleton(
        parent=parent,
        prismatic=rng.random(n) < p_prismatic,
        axis=rng.normal(size=(n, 3)),
        rest=rest,
        lower=np.full(n, -np.inf),
        upper=np.full(n, np.inf),
        mobility=np.ones(n),
        base=np.eye(4) if base is None else base,
    )


def affine_base(rng: np.random.Generator) -> np.ndarray:
    """A random affine frame with non-uniform scale and shear (det > 0)."""
    m = np.eye(4)
    scale = np.diag(rng.uniform(0.5, 2.0, 3))
    shear = np.eye(3)
    shear[0, 1], shear[1, 2] = rng.uniform(-0.5, 0.5, 2)
    m[:3, :3] = random_rotation(rng) @ shear @ scale
    m[:3, 3] = rng.uniform(-2.0, 2.0, 3)
    return m


def weighted_error(problem: Problem, q: np.ndarray) -> float:
    """The weighted squared error the CCD and Jacobian-transpose solvers descend (for goals
    of one priority level): sum over goals of weight times squared distance."""
    return goal_cost(problem, problem.skeleton.forward(q), np.array([g.weight for g in problem.goals]))


def tip_position(skeleton: Skeleton, q: np.ndarray, joint: int, local) -> np.ndarray:
    """World position of point ``local`` on ``joint`` at configuration ``q``."""
    kin = skeleton.forward(q)
    return kin.points(np.array([joint]), np.asarray(local, dtype=float).reshape(1, 3))[0]


def finite_difference_jacobian(sk: Skeleton, q: np.ndarray, joints: np.ndarray, local: np.ndarray,
                               h: float = 1e-6) -> np.ndarray:
    """Central differences of the world points (k, 3) with respect to q -> (k, 3, n)."""
    out = np.empty((len(joints), 3, sk.size))
    for j in range(sk.size):
        dq = np.zeros(sk.size)
        dq[j] = h
        plus = sk.forward(q + dq).points(joints, local)
        minus = sk.forward(q - dq).points(joints, local)
        out[:, :, j] = (plus - minus) / (2.0 * h)
    return out


def assert_ccd_sweeps_never_raise_error(problem: Problem, q: np.ndarray, sweeps: int) -> None:
    """CCD takes each joint's exact optimum, so no sweep raises the weighted error."""
    from welman_ik.core import SOLVERS

    cost = weighted_error(problem, q)
    for _ in range(sweeps):
        q = SOLVERS["CCD"](problem, q).q
        new_cost = weighted_error(problem, q)
        assert new_cost <= cost + 1e-10 * max(cost, 1.0)
        cost = new_cost


def rotation_of(kin, joint: int) -> np.ndarray:
    """The frame's rotation with its own stretch divided out (columns: unit axes)."""
    linear = kin.frames[joint, :3, :3]
    return linear / np.linalg.norm(linear, axis=0)


def random_frame(seed: int) -> tuple[Skeleton, np.ndarray, int]:
    """A random tree with sliders (an affine base on odd seeds), a random configuration of it
    and one of its joints: where a goal kind's residual and Jacobian are checked."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    sk = random_tree(rng, n, p_prismatic=0.3, base=affine_base(rng) if seed % 2 else np.eye(4))
    return sk, rng.uniform(-np.pi, np.pi, n), int(rng.integers(0, n))


def residual_jacobian(goal, sk: Skeleton, q: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """-d(residual)/dq of a goal (its feature's Jacobian) by central differences, (rows, n)."""
    columns = []
    for j in range(len(q)):
        dq = np.zeros(len(q))
        dq[j] = h
        columns.append(-(goal.residual(sk.forward(q + dq)) - goal.residual(sk.forward(q - dq))) / (2 * h))
    return np.stack(columns, axis=1)


MIXED_AXES = [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1]]


def tip_problem(seed: int):
    """A 7-hinge chain with mixed axes, its tip frame sent to the pose of a known random
    configuration: position and full orientation together. (skeleton, goals, target rotation)."""
    rng = np.random.default_rng(seed)
    sk = chain([0.4] * 6, MIXED_AXES)
    kin = sk.forward(rng.uniform(-0.8, 0.8, 7))
    tip = np.array([0.2, 0.0, 0.0])
    goals = [PositionGoal(6, tip, kin.points(np.array([6]), tip[None])[0]),
             OrientationGoal(6, rotation_of(kin, 6), length=0.2)]
    return sk, goals, rotation_of(kin, 6)
