"""Step 3's first pass, frames together: a chunk of the bake's frames sampled, their goals
built, and solved at once with a frame axis (``core.solvers.frames``), before the solve of
each frame in order takes them (``FrameSolver.solve``'s ``batched``).

Each frame of the pass starts from its animated pose and keeps near it (its preferred pose),
with the roots held on their path under 'FOLLOW' (as ``FrameSolver._on_path``): what the
frame-by-frame solve would find with nothing carried over. A frame the pass does not settle
(a contact starting, a limit, a range, a near-singular pose), a frame whose goals are of
another kind, and every frame of a bake the pass does not serve (another solver, a retarget's
goals, a skeleton with shears) is solved frame by frame as before, carrying on from the
frame before it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core import PositionGoal
from ...core.goals.floor import FloorGoal
from ...core.ranges import INSIDE_SLACK
from ...core.solvers.frames import FramesProblem, solve_frames
from .goals import frame_goals
from .sampling import frames_at_once, with_kinematics


class Settled(NamedTuple):
    """A frame the pass settled: its joint values, its goals' errors (in the frame's order) and
    the iterations it took."""

    q: np.ndarray
    errors: np.ndarray
    iterations: int

CHUNK = 256  # frames sampled and solved together (a modal bake's slices take them one by one)
KINDS = (PositionGoal, FloorGoal)


def serves(plan) -> bool:
    """Whether the pass serves the bake of ``plan``: the SR inverse's, of the pins' goals."""
    return plan.settings.solver == "SR_INVERSE" and plan.source is None


class FrameBatch:
    """The frames of ``plan`` solved together, chunk by chunk, as the bake asks for them."""

    def __init__(self, plan, sampling):
        self.plan, self.sampling = plan, sampling
        self.serves = serves(plan)
        self.ready: dict[int, tuple] = {}  # frame -> (sample, goals, ``Settled`` or None)

    def take(self, frame: int) -> tuple | None:
        """(sample, goals, ``Settled`` or None) of ``frame``; None where the
        pass does not serve the bake (the frame is then sampled and solved on its own)."""
        if not self.serves:
            return None
        if frame not in self.ready:
            frames = self.plan.frames
            at = frames.index(frame)
            self._prepare(frames[at:at + CHUNK])
        return self.ready.pop(frame)

    def _prepare(self, frames: list[int]) -> None:
        samples = with_kinematics(frames_at_once(self.sampling, frames))
        goals = [frame_goals(self.plan, sample) for sample in samples]
        solved: list = [None] * len(frames)
        trees: dict[int, list[int]] = {}
        for k, sample in enumerate(samples):
            if goals[k].goals and all(isinstance(g, KINDS) for g in goals[k].goals):
                trees.setdefault(id(sample.tree), []).append(k)
        for members in trees.values():
            for k, q in zip(members, self._solve([samples[k] for k in members], [goals[k] for k in members])):
                solved[k] = q
        for frame, sample, frame_goal, q in zip(frames, samples, goals, solved):
            self.ready[frame] = (sample, frame_goal, q)

    def _solve(self, samples: list, goals: list) -> list:
        """Each of ``samples`` (one tree) as the pass settled it, None where it did not."""
        plan, s = self.plan, self.plan.settings
        tree = samples[0].tree
        skeleton = samples[0].skeleton
        if not skeleton.conformal:
            return [None] * len(samples)
        slots: dict[tuple, int] = {}
        entries = []  # (frame, slot, target, weight)
        order = []  # each frame's goals' slots, in order
        for k, frame_goal in enumerate(goals):
            order.append([])
            for goal in frame_goal.goals:
                floor = isinstance(goal, FloorGoal)
                key = (floor, int(goal.joint[0]), goal.local.tobytes(), goal.priority,
                       goal.normal.tobytes() if floor else b"")
                slot = slots.setdefault(key, len(slots))
                order[-1].append(slot)
                entries.append((k, slot, goal.origin if floor else goal.target, goal.weight))
        count = len(slots)
        frame_of, slot_of, target, weight = zip(*entries)
        targets = np.zeros((len(samples), count, 3))
        weights = np.zeros((len(samples), count))
        targets[frame_of, slot_of] = np.array(target)
        weights[frame_of, slot_of] = weight
        keys = sorted(slots, key=slots.get)
        q0 = np.array([sample.q0 for sample in samples])
        reference = np.zeros_like(q0) if s.reference == "REST" else q0
        active = None
        if plan.root_motion == "FOLLOW":  # the roots held on their path (``FrameSolver._on_path``)
            active = np.ones(skeleton.size, dtype=bool)
            active[tree.root_joints()] = False
        problem = FramesProblem(
            skeleton, np.array([key[1] for key in keys], dtype=np.intp),
            np.array([np.frombuffer(key[2]).reshape(3) for key in keys]), targets, weights,
            np.array([key[3] for key in keys]),
            np.array([np.frombuffer(key[4]) if key[0] else np.zeros(3) for key in keys]).reshape(count, 3),
            reference=reference, active=active, tolerance=plan.tolerance, damping=s.damping,
            reference_weight=s.reference_weight if s.reference in {"START", "REST"} else 0.0,
            lower=np.array([sample.skeleton.lower for sample in samples]),
            upper=np.array([sample.skeleton.upper for sample in samples]))
        result = solve_frames(problem, q0)
        out = []
        for k, sample in enumerate(samples):
            settled = bool(result.converged[k])
            if settled and sample.ranges is not None and sample.ranges.size:
                settled = bool(np.all(sample.ranges.excess(sample.skeleton, result.q[k]) <= INSIDE_SLACK))
            out.append(Settled(result.q[k], result.errors[k, order[k]], int(result.iterations[k])) if settled else None)
        return out
