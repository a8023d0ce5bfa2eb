"""Many frames solved together (``solvers.frames``, a bake's first pass): the SR inverse's
common path with a frame axis gives, frame by frame, what the SR inverse gives each frame on
its own where both settle, holds every goal of every frame it reports converged, and leaves
frames without goals as they start."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from chains import random_tree

from welman_ik.core import FloorGoal, OrientationGoal, PositionGoal, Problem, TogetherGoal, threads
from welman_ik.core.problem import goal_errors
from welman_ik.core.skeleton import level_order, subset
from welman_ik.core.solvers import frames, sr_inverse
from welman_ik.core.solvers.frames import FramesProblem, solve_frames

FRAMES = 60
TOL = 1e-5


def animated_tree(seed: int, prismatic: float = 0.0):
    """A random tree (some joints not inheriting their parent's turn) and a smooth random
    animation of it over FRAMES frames."""
    rng = np.random.default_rng(seed)
    n = 16
    sk = random_tree(rng, n, p_prismatic=prismatic)
    sk = replace(sk, inherits=rng.random(n) > 0.2)
    q0 = np.cumsum(rng.normal(scale=0.02, size=(FRAMES, n)), axis=0)
    return rng, sk, q0


def points(sk, q, joints, local) -> np.ndarray:
    fk = sk.forward_frames(q)[:, joints]
    return np.einsum("fgij,gj->fgi", fk[..., :3, :3], local) + fk[..., :3, 3]


def held_problem(seed: int) -> tuple[FramesProblem, np.ndarray]:
    """Three points held where another animation near this one has them (so that every frame
    can hold them), the third below the others and only on the first half of the frames."""
    rng, sk, q0 = animated_tree(seed)
    joints = rng.choice(np.arange(8, sk.size), 3, replace=False)
    local = rng.normal(size=(3, 3))
    targets = points(sk, q0 + rng.normal(scale=0.1, size=sk.size), joints, local)
    weights = np.ones((FRAMES, 3))
    weights[FRAMES // 2:, 2] = 0.0
    return FramesProblem(sk, joints, local, targets, weights, np.array([0, 0, 1]), np.zeros((3, 3)),
                         reference=q0, tolerance=TOL), q0


@pytest.mark.parametrize("seed", range(6))
def test_forward_frames_is_forward_on_each_frame(seed):
    _, sk, q0 = animated_tree(seed, prismatic=0.3)
    fk = sk.forward_frames(q0)
    for f in range(0, FRAMES, 7):
        kin = sk.forward(q0[f])
        np.testing.assert_allclose(fk[f], kin.frames, atol=1e-12)
        np.testing.assert_allclose(sk.heads_of(fk)[f], kin.heads, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_each_converged_frame_holds_its_goals_as_the_sr_inverse_alone(seed):
    """Goals every frame can hold: the pass settles at least half the frames (the rest are for the per-frame
    solver and its rescues), each at the pose the SR inverse alone finds; every frame it reports
    converged holds its goals."""
    problem, q0 = held_problem(seed)
    result = solve_frames(problem, q0)
    sk = problem.skeleton
    alone = []
    for f in range(FRAMES):
        goals = [PositionGoal(problem.joints[g], problem.local[g], problem.targets[f, g],
                              priority=int(problem.priority[g])) for g in range(3) if problem.weights[f, g] > 0]
        alone.append(sr_inverse.solve(Problem(sk, goals, reference=q0[f], tolerance=TOL, max_iterations=30,
                                              rescue=False), q0[f]))
    settled = np.array([a.converged for a in alone])
    assert result.converged.mean() >= 0.5
    for f in np.flatnonzero(result.converged):
        present = problem.weights[f] > 0
        errors = np.linalg.norm(points(sk, result.q[f:f + 1], problem.joints, problem.local)[0]
                                - problem.targets[f], axis=1)
        assert np.all(errors[present] <= TOL)
        np.testing.assert_allclose(result.errors[f][present], errors[present], atol=1e-12)
        if settled[f]:  # (where it settles too) the same least-norm steps, the same preferred pose
            np.testing.assert_allclose(result.q[f], alone[f].q, atol=1e-3)


def test_frames_without_goals_stay_as_they_start_and_absent_goals_pull_nothing():
    problem, q0 = held_problem(1)
    weights = problem.weights.copy()
    weights[:10] = 0.0
    result = solve_frames(replace(problem, weights=weights), q0)
    assert np.array_equal(result.q[:10], q0[:10])
    assert np.all(result.converged[:10]) and np.all(result.errors[:10] == 0.0)
    # The third point, absent on the second half, is where the other two leave it there.
    two = solve_frames(replace(problem, weights=weights[:, :2].copy(), joints=problem.joints[:2],
                               local=problem.local[:2], targets=problem.targets[:, :2],
                               priority=problem.priority[:2], normals=problem.normals[:2]), q0)
    half = slice(FRAMES // 2, None)
    both = result.converged[half] & two.converged[half]
    np.testing.assert_allclose(result.q[half][both], two.q[half][both], atol=1e-9)


def test_a_floor_lifts_only_what_is_below_it():
    rng, sk, q0 = animated_tree(4)
    joint, local = np.array([sk.size - 1]), rng.normal(size=(1, 3))
    heights = points(sk, q0, joint, local)[:, 0, 2]
    level = float(np.median(heights))
    targets = np.zeros((FRAMES, 1, 3))
    targets[:, 0, 2] = level
    problem = FramesProblem(sk, joint, local, targets, np.ones((FRAMES, 1)), np.zeros(1, dtype=int),
                            np.array([[0.0, 0.0, 1.0]]), reference=q0, tolerance=TOL)
    result = solve_frames(problem, q0)
    above = heights >= level
    assert np.array_equal(result.q[above], q0[above])
    after = points(sk, result.q, joint, local)[:, 0, 2]
    done = result.converged & ~above
    assert done.sum() >= 0.8 * (~above).sum()
    assert np.all(after[done] >= level - TOL)
    floor = FloorGoal(joint[0], local[0], (0.0, 0.0, level))
    for f in np.flatnonzero(done):
        assert abs(floor.error(sk.forward(result.q[f])) - result.errors[f, 0]) <= 1e-12


def test_each_frame_keeps_its_own_limits():
    problem, q0 = held_problem(2)
    lower = np.repeat(q0.min(axis=0, keepdims=True) - 0.05, FRAMES, axis=0)
    upper = q0 + 0.02
    result = solve_frames(replace(problem, lower=lower, upper=upper), q0)
    assert np.all(result.q >= lower - 1e-12) and np.all(result.q <= upper + 1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_the_tree_of_a_goals_joints_moves_them_as_the_whole_tree(seed):
    """``skeleton.subset`` of the joints above some points (what the pass works on): their
    frames as in the whole tree; a subset that leaves out a parent is refused."""
    _, sk, q0 = animated_tree(seed, prismatic=0.3)
    keep = np.flatnonzero(sk.ancestors[[sk.size - 1, sk.size - 3]].any(axis=0))
    part = subset(sk, keep)
    np.testing.assert_allclose(part.forward_frames(q0[:, keep]), sk.forward_frames(q0)[:, keep], atol=1e-12)
    orphan = keep[sk.parent[keep] >= 0][-1:]
    with pytest.raises(ValueError):
        subset(sk, orphan)


@pytest.mark.parametrize("seed", range(4))
def test_the_pass_numbers_its_tree_in_depth_order_and_moves_it_as_the_whole_tree(seed):
    """The pass's tree of a goals' joints is numbered in the order the frames are worked out
    level by level (no reordering per evaluation): every joint after its parent, and the
    same frames, bit for bit, as the tree numbered in ascending order."""
    _, sk, q0 = animated_tree(seed, prismatic=0.3)
    ascending = np.flatnonzero(sk.ancestors[[sk.size - 1, sk.size - 3, sk.size // 2]].any(axis=0))
    keep, tree = frames._subset(sk, ascending)
    assert sorted(keep.tolist()) == ascending.tolist()
    assert np.all(tree.parent < np.arange(tree.size))
    assert np.array_equal(level_order(tree), np.arange(tree.size))
    if not np.array_equal(keep, ascending):
        assert not np.array_equal(level_order(subset(sk, ascending)), np.arange(ascending.size))
    at = np.searchsorted(ascending, keep)
    assert np.array_equal(tree.forward_frames(q0[:, keep]), subset(sk, ascending).forward_frames(q0[:, ascending])[:, at])
    assert frames._subset(sk, ascending)[1] is tree  # kept for the runs that follow


@pytest.mark.parametrize("seed", range(4))
def test_together_and_direction_goals_hold_as_the_sr_inverse_alone(seed):
    """Two points brought together (an offset apart, ``joints_b``) and a frame's two axes held
    along world directions (``lengths``, ``owner``: the orientation goal's rows) on every frame:
    each converged frame holds them as ``TogetherGoal`` and ``OrientationGoal`` measure them, as
    near its preferred pose as the SR inverse alone leaves it."""
    rng, sk, q0 = animated_tree(seed)
    a, turned = sk.size - 1, sk.size - 4
    others = [j for j in range(sk.size) if not sk.ancestors[a, j] and not sk.ancestors[j, a]]
    b = max(others, key=lambda j: sk.ancestors[j].sum())  # the deepest point off a's branch
    local_a, local_b = rng.normal(size=3), rng.normal(size=3)
    other = q0 + rng.normal(scale=0.05, size=sk.size)  # a pose near each frame's that holds them all
    fk = sk.forward_frames(other)
    offset = (np.einsum("fij,j->fi", fk[:, a, :3, :3], local_a) + fk[:, a, :3, 3]
              - np.einsum("fij,j->fi", fk[:, b, :3, :3], local_b) - fk[:, b, :3, 3])
    rotation = fk[:, turned, :3, :3] / np.linalg.norm(fk[:, turned, :3, :3], axis=1, keepdims=True)
    length = 0.7
    problem = FramesProblem(
        sk, np.array([a, turned, turned]), np.vstack([local_a, length * np.eye(3)[[0, 2]]]),
        np.stack([offset, rotation[:, :, 0], rotation[:, :, 2]], axis=1), np.ones((FRAMES, 3)),
        np.array([0, 1, 1]), np.zeros((3, 3)), reference=q0, tolerance=TOL,
        joints_b=np.array([b, turned, turned]), local_b=np.vstack([local_b, np.zeros((2, 3))]),
        lengths=np.array([0.0, length, length]), owner=np.array([0, 1, 1]))
    result = solve_frames(problem, q0)
    assert result.errors.shape == (FRAMES, 2)
    assert result.converged.mean() >= 0.5
    for f in np.flatnonzero(result.converged):
        goals = [TogetherGoal(a, local_a, b, local_b, offset=offset[f]),
                 OrientationGoal(turned, rotation[f], (True, False, True), length, priority=1)]
        kin = sk.forward(result.q[f])
        np.testing.assert_allclose(goal_errors(goals, kin), result.errors[f], atol=1e-9)
        alone = sr_inverse.solve(Problem(sk, goals, reference=q0[f], tolerance=TOL, max_iterations=30,
                                         rescue=False), q0[f])
        if alone.converged:  # about as near the preferred pose (each weighs the joints its own way)
            assert np.linalg.norm(result.q[f] - q0[f]) <= 1.15 * np.linalg.norm(alone.q - q0[f]) + 1e-3


@pytest.mark.parametrize("seed", range(4))
def test_a_whole_orientation_holds_as_the_orientation_goal_measures_it(seed):
    """A frame's whole orientation held on every frame in three rows (``turns``, ``rotations``:
    the rotation vector where its three axes would take nine): each converged frame holds it as
    ``OrientationGoal`` on all three axes measures it, and a position goal beside it."""
    rng, sk, q0 = animated_tree(seed)
    turned, placed = sk.size - 4, sk.size - 1
    local = rng.normal(size=3)
    fk = sk.forward_frames(q0 + rng.normal(scale=0.05, size=sk.size))  # a pose near each frame's that holds both
    rotation = fk[:, turned, :3, :3] / np.linalg.norm(fk[:, turned, :3, :3], axis=1, keepdims=True)
    target = np.einsum("fij,j->fi", fk[:, placed, :3, :3], local) + fk[:, placed, :3, 3]
    length = 0.6
    rotations = np.zeros((FRAMES, 2, 3, 3))
    rotations[:, 1] = rotation
    problem = FramesProblem(sk, np.array([placed, turned]), np.vstack([local, np.zeros(3)]),
                            np.stack([target, np.zeros((FRAMES, 3))], axis=1), np.ones((FRAMES, 2)), np.array([0, 1]),
                            np.zeros((2, 3)), reference=q0, tolerance=TOL, lengths=np.array([0.0, length]),
                            turns=np.array([False, True]), rotations=rotations)
    result = solve_frames(problem, q0)
    assert result.converged.mean() >= 0.5
    for f in np.flatnonzero(result.converged):
        goals = [PositionGoal(placed, local, target[f]), OrientationGoal(turned, rotation[f], length=length, priority=1)]
        np.testing.assert_allclose(goal_errors(goals, sk.forward(result.q[f])), result.errors[f], atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_frames_split_between_threads_solve_as_all_together(seed, monkeypatch):
    """From ``PARALLEL_FRAMES`` frames on, the frames are split between threads: each part is
    solved as the whole would solve it (frames are independent; to rounding, the products'
    batches being other)."""
    problem, q0 = held_problem(seed)
    many = np.tile(np.arange(FRAMES), 3)  # 180 frames
    big, start = frames._frames_of(problem, many), q0[many]
    assert len(start) >= frames.PARALLEL_FRAMES
    monkeypatch.setattr(frames, "PARALLEL_ENTRIES", 0)  # (this tree's Jacobians are small)
    together = frames._solve_frames(big, start)
    for parts in (2, 3):
        monkeypatch.setattr(frames, "workers", lambda parts=parts: parts)
        monkeypatch.setattr(threads, "workers", lambda parts=parts: parts)
        split = solve_frames(big, start)
        for name in ("q", "errors"):
            np.testing.assert_allclose(getattr(split, name), getattr(together, name), rtol=0, atol=1e-10, err_msg=name)
        for name in ("converged", "iterations", "stalled", "first_met"):
            np.testing.assert_array_equal(getattr(split, name), getattr(together, name), err_msg=name)
    assert together.converged.sum() > len(start) // 2  # (a problem that solves)


def test_frames_with_small_jacobians_are_not_split(monkeypatch):
    """Many frames whose Jacobians are small (few goals on few joints) stay on one thread: there
    numpy's calls are mostly the interpreter's, and threads would only queue for its lock."""
    problem, q0 = held_problem(0)
    many = np.tile(np.arange(FRAMES), 3)
    big, start = frames._frames_of(problem, many), q0[many]
    assert frames._entries(big) < frames.PARALLEL_ENTRIES
    monkeypatch.setattr(frames, "workers", lambda: 2)
    monkeypatch.setattr(frames, "in_parallel", lambda *args: pytest.fail("split between threads"))
    assert solve_frames(big, start).converged.any()
    monkeypatch.setattr(frames, "PARALLEL_ENTRIES", 0)
    with pytest.raises(pytest.fail.Exception):
        solve_frames(big, start)
