"""Step 3's first pass, frames together: a chunk of the bake's frames sampled, their goals
built, and solved at once with a frame axis (``core.solvers.frames``), before the solve of
each frame in order takes them (``FrameSolver.solve``'s ``batched``).

Each frame of the pass starts from its animated pose and keeps near it (its preferred pose),
with the roots held on their path under 'FOLLOW' (as ``FrameSolver._on_path``): what the
frame-by-frame solve would find with nothing carried over. A frame the pass does not settle
(a contact starting, a limit, a range, a near-singular pose), a frame whose goals are of
another kind than position, floor, together and orientation, and every frame of a bake the
pass does not serve (another solver, a retarget onto limbs the rig's own IK bends, a skeleton
with shears) is solved frame by frame as before, carrying on from the frame before it. A
retarget's frames each start from their lined-up pose and keep near it, as the pass's do.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core import FloorGoal, OrientationGoal, PositionGoal, TogetherGoal
from ...core.ranges import INSIDE_SLACK
from ...core.solvers.frames import FramesProblem, solve_frames
from .goals import frame_goals
from .sampling import frames_at_once, with_kinematics


class Settled(NamedTuple):
    """A frame the pass settled: its joint values, its goals' errors (in the frame's order), the
    iterations it took, whether it met every goal (else it stalled, its first level held), and
    where it started when that start carried the corrections of the frames before (a run's)."""

    q: np.ndarray
    errors: np.ndarray
    iterations: int
    converged: bool
    start: np.ndarray | None = None

CHUNK = 256  # frames sampled together, a run of them solved together (a modal bake's slices take them one by one)
PENDING = "pending"  # a frame whose run is solved together when the frames in order reach it (``FrameBatch.again``)
NONE = np.zeros(3)


def _position(goal: PositionGoal) -> tuple:
    joint, local = int(goal.joint[0]), goal.local[0]
    return ("P", joint, local.tobytes(), goal.priority), [(joint, local, -1, NONE, NONE, 0.0, False)], [goal.target]


def _floor(goal: FloorGoal) -> tuple:
    joint, local = int(goal.joint[0]), goal.local[0]
    return (("F", joint, local.tobytes(), goal.normal.tobytes(), goal.priority),
            [(joint, local, -1, NONE, goal.normal, 0.0, False)], [goal.origin])


def _together(goal: TogetherGoal) -> tuple:
    (a, b), (local_a, local_b) = goal.joints.tolist(), goal.local
    return (("T", a, local_a.tobytes(), b, local_b.tobytes(), goal.priority),
            [(a, local_a, b, local_b, NONE, 0.0, False)], [goal.offset])


def _orientation(goal: OrientationGoal) -> tuple:
    joint, key = int(goal.joint[0]), ("O", int(goal.joint[0]), goal.held.tobytes(), goal.length, goal.priority)
    if len(goal.held) == 3:  # the whole orientation: one turn (its rotation as the target)
        return key, [(joint, NONE, -1, NONE, NONE, goal.length, True)], [goal.target.T]
    return key, [(joint, point, joint, NONE, NONE, goal.length, False) for point in goal.local[1:]], list(goal.target)


# Each kind the pass takes: (its structure, the same on every frame it is in force; its rows, each
# (joint, point, second joint or -1, second point, a floor's normal, a direction's length, whether
# a whole orientation); their targets on the frame: a point or direction, a whole orientation's
# rotation), as ``FramesProblem`` takes them.
SHAPES = {PositionGoal: _position, FloorGoal: _floor, TogetherGoal: _together, OrientationGoal: _orientation}


def takes(goals) -> bool:
    """Whether the pass takes a frame's goals (``FrameGoals``): some, each of a kind in ``SHAPES``."""
    return bool(goals.goals) and all(type(goal) in SHAPES for goal in goals.goals)


def serves(plan) -> bool:
    """Whether the pass serves the bake of ``plan``: the SR inverse's, of the pins' goals or of
    a source's whose frames start from and keep near their animated pose (a retarget's)."""
    return plan.settings.solver == "SR_INVERSE" and (plan.source is None or plan.source.prefers_animated)


class FrameBatch:
    """The frames of ``plan`` solved together, chunk by chunk, as the bake asks for them."""

    def __init__(self, plan, sampling):
        self.plan, self.sampling = plan, sampling
        self.serves = serves(plan)
        # The pins' bake carries each frame's corrections on to the next: a run of frames with the
        # same goals is solved together once the frames in order reach it, from the correction the
        # frame before it hands on. A retarget's frames keep near their own lined-up poses: each
        # chunk is solved together as it is sampled.
        self.lazy = plan.source is None
        self.ready: dict[int, tuple] = {}  # frame -> (sample, goals, ``Settled`` or None)
        self.taken = None  # (frame, its entry) last taken

    def take(self, frame: int) -> tuple | None:
        """(sample, goals, ``Settled`` or None) of ``frame``; None where the
        pass does not serve the bake (the frame is then sampled and solved on its own)."""
        if not self.serves:
            return None
        if frame not in self.ready:
            frames = self.plan.frames
            at = frames.index(frame)
            self._prepare(frames[at:at + CHUNK])
        self.taken = (frame, self.ready.pop(frame))
        return self.taken[1]

    def _prepare(self, frames: list[int]) -> None:
        samples = with_kinematics(frames_at_once(self.sampling, frames))
        goals = [frame_goals(self.plan, sample) for sample in samples]
        solved: list = [PENDING if self.lazy and takes(frame_goal) else None for frame_goal in goals]
        if not self.lazy:
            trees: dict[int, list[int]] = {}
            for k, sample in enumerate(samples):
                if takes(goals[k]):
                    trees.setdefault(id(sample.tree), []).append(k)
            for members in trees.values():
                for k, q in zip(members, self._solve([samples[k] for k in members], [goals[k] for k in members])):
                    solved[k] = q
        for frame, sample, frame_goal, q in zip(frames, samples, goals, solved):
            self.ready[frame] = (sample, frame_goal, q)

    def again(self, frame: int, ahead):
        """``frame`` and the frames after it in its chunk with the same goals in force, solved
        together, each keeping near its animated pose plus the corrections the frame by frame
        solve would carry onto it (``ahead``: the frames' range weights (k,) -> those
        corrections (k, n), ``Continuity.ahead``) and starting there: a pins' bake's run, when
        the frames in order reach it (``PENDING``). ``frame``'s ``Settled``, or None."""
        if self.taken is None or self.taken[0] != frame:
            return None
        sample, goals, _ = self.taken[1]
        if not takes(goals):
            return None
        frames = self.plan.frames
        run = [(sample, goals)]
        for later in frames[frames.index(frame) + 1:]:
            entry = self.ready.get(later)
            if entry is None or entry[0].tree is not sample.tree or entry[1].moving_key != goals.moving_key:
                break
            run.append(entry[:2])
        corrections = ahead(np.array([entry[1].share for entry in run]))
        solved = self._solve([entry[0] for entry in run], [entry[1] for entry in run], corrections)
        for (later_sample, later_goals), settled in zip(run[1:], solved[1:]):
            self.ready[later_sample.frame] = (later_sample, later_goals, settled)
        return solved[0]

    def _solve(self, samples: list, goals: list, correction: np.ndarray | None = None) -> list:
        """Each of ``samples`` (one tree) as the pass settled it, None where it did not;
        ``correction`` (frames, n): added to each frame's animated pose, where it starts and what
        it keeps near."""
        plan, s = self.plan, self.plan.settings
        tree = samples[0].tree
        skeleton = samples[0].skeleton
        if not skeleton.conformal:
            return [None] * len(samples)
        shapes: dict[tuple, tuple[int, int]] = {}  # a goal's structure -> (its owner, its first row)
        rows, entries, order = [], [], []  # each row; (frame, row, target, weight); each frame's goals' owners
        for k, frame_goal in enumerate(goals):
            order.append([])
            for goal in frame_goal.goals:
                key, goal_rows, targets = SHAPES[type(goal)](goal)
                found = shapes.get(key)
                if found is None:
                    found = shapes[key] = (len(shapes), len(rows))
                    rows += [(*row, goal.priority, found[0]) for row in goal_rows]
                order[-1].append(found[0])
                entries += [(k, found[1] + r, target, goal.weight) for r, target in enumerate(targets)]
        count = len(rows)
        joints, local, joints_b, local_b, normals, lengths, turns, priority, owner = (np.array(column)
                                                                                      for column in zip(*rows))
        targets = np.zeros((len(samples), count, 3))
        rotations = np.zeros((len(samples), count, 3, 3)) if turns.any() else None
        weights = np.zeros((len(samples), count))
        for k, row, target, weight in entries:
            if turns[row]:
                rotations[k, row] = target
            else:
                targets[k, row] = target
            weights[k, row] = weight
        q0 = np.array([sample.q0 for sample in samples])
        start = q0 if correction is None else q0 + correction
        reference = np.zeros_like(q0) if s.reference == "REST" else start
        active = None
        if plan.root_motion == "FOLLOW":  # the roots held on their path (``FrameSolver._on_path``)
            active = np.ones(skeleton.size, dtype=bool)
            active[tree.root_joints()] = False
        problem = FramesProblem(
            skeleton, joints.astype(np.intp), local.reshape(count, 3), targets, weights, priority,
            normals.reshape(count, 3), reference=reference, active=active, tolerance=plan.tolerance,
            damping=s.damping, reference_weight=s.reference_weight if s.reference in {"START", "REST"} else 0.0,
            lower=np.array([sample.skeleton.lower for sample in samples]),
            upper=np.array([sample.skeleton.upper for sample in samples]), joints_b=joints_b.astype(np.intp),
            local_b=local_b.reshape(count, 3), lengths=lengths.astype(float), owner=owner.astype(np.intp),
            turns=turns.astype(bool), rotations=rotations)
        result = solve_frames(problem, start)
        # A frame the pass leaves stalled with its first level held is as the frame by frame
        # solve would leave it where that solve has no rescues (a retarget's): it polishes the
        # first level and stops there too.
        stops = plan.source is not None and not plan.source.rescue
        out = []
        for k, sample in enumerate(samples):
            settled = bool(result.converged[k] or (stops and result.stalled[k] and result.first_met[k]))
            if settled and sample.ranges is not None and sample.ranges.size:
                settled = bool(np.all(sample.ranges.excess(sample.skeleton, result.q[k]) <= INSIDE_SLACK))
            out.append(Settled(result.q[k], result.errors[k, order[k]], int(result.iterations[k]),
                               bool(result.converged[k]), None if correction is None else start[k]) if settled
                       else None)
        return out
