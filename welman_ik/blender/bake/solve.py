"""Step 3 of the bake, solving the frames: each frame's goals solved from its animated pose,
in order, since each frame hands the next its corrections (``carry.Continuity``) and where
it left the roots' path. A frame the animation already holds is left as it is; under
'FOLLOW' the roots stay on their path where that holds every pin, and leave it only as far
as a pin needs otherwise. A one-sided pin (a floor, a region) is held on every frame but
carries no correction from one frame to the next (``asking``)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from ...core import SOLVERS, PositionGoal, Problem, SolveResult
from ...core.problem import goal_errors
from ..pins.goals import SHAPED_KINDS
from ..pins.setup import preferred_pose
from ..rig.model import RigError
from .batch import PENDING
from .carry import Continuity
from .goals import FrameGoals, off_path, path_goals

JUMPED = "jumped"  # ``_batched``'s answer where the frame's corrections jump from the last frame's: solved alone
CARRY_JUMP = 0.01  # [rad, or m] the largest change of a joint's correction from the last frame a frame solved together may make


class Solved(NamedTuple):
    """A frame's solution: its animated and solved joint values, the solve's outcome, and the
    joints that steer a goal (left as solved when the plants ease in)."""

    layout: tuple
    q0: np.ndarray
    q: np.ndarray
    result: SolveResult
    steering: np.ndarray


class FrameSolver:
    """Solves the frames of ``plan`` one after another (what the last frame hands on kept here)."""

    def __init__(self, plan):
        self.plan = plan
        self.continuity = Continuity()
        self.root_off: dict[tuple[str, float], np.ndarray] = {}  # how far the last frame left the roots' path
        self.last_key = None  # the goals in force on the last frame (``FrameGoals.moving_key``)

    def solve(self, sample, goals: FrameGoals, batched=None, again=None) -> Solved:
        """``batched``: the frame as the frames solved together settled it (``batch.Settled``),
        taken where nothing carried over from the frame before changes it, or ``batch.PENDING``;
        ``again``: called for a pending frame with ``Continuity.ahead`` (what the frame by frame
        solve would carry onto it and the frames after it with the same goals), it gives the
        frame as its run, solved together from there, settles it (``batch.FrameBatch.again``)."""
        tree, s = sample.tree, self.plan.settings
        steered, key, asked = asking(goals)
        # the joints that move a goal's point: once per set of goals in force, as ``Tree.moving``
        steering = tree.once(("steering of", key), lambda: tree.steering(asked.steered(self.plan.obj)))
        moving = tree.moving(key, steered)
        q_start, start = self.continuity.carry(sample.q0, tree.layout, moving, goals.share, self.plan.falloff,
                                               s.solver)
        source = self.plan.source
        animated = source is not None and source.prefers_animated  # its own pose, and the solve starts there
        if batched is not None:
            start_from = sample.q0 if animated else q_start
            if batched is PENDING:  # its run of frames solved together now, carrying on from the last frame
                batched = None if again is None else again(self.continuity.ahead)
            result = None if batched is None else self._batched(sample, goals, batched, steering, start_from)
            if isinstance(result, SolveResult):
                return self._solved(tree, sample, goals, result, steering)
        # The preferred pose of a bake is each frame's own animated pose, with the correction
        # carried over from the last frame (or easing off after a pin's end). The solve starts
        # there, or where the corrections of the last frames lead (``Continuity.carry``).
        preferred = q_start
        if animated:
            preferred = start = sample.q0
        problem = Problem(sample.skeleton, goals.goals, tolerance=self.plan.tolerance, max_iterations=s.max_iterations,
                          damping=s.damping, reference=preferred_pose(s.reference, preferred),
                          reference_weight=s.reference_weight, ranges=sample.ranges,
                          rescue=source is None or source.rescue)
        result = self._met(problem, start, sample)
        if result is None:
            result = self._on_path(tree, sample.q0, problem, start, goals.path)
        if result is None:
            if goals.path and goals.goals:
                problem = dataclasses.replace(problem, goals=goals.goals + path_goals(
                    tree, sample.animated, goals.path, goals.goals, goals.share, self.root_off))
            result = SOLVERS[s.solver](problem, start)
        if not np.all(np.isfinite(result.q)):
            raise RigError(f"The solver failed on frame {sample.frame} (non-finite result)")
        return self._solved(tree, sample, goals, result, steering)

    def _solved(self, tree, sample, goals: FrameGoals, result: SolveResult, steering: np.ndarray) -> Solved:
        """The frame's outcome, handed on to the next frame."""
        q0, q = sample.q0.copy(), result.q.copy()
        self.continuity.solved(tree.layout, q0, q, result.converged)
        self.last_key = goals.moving_key
        self.root_off = off_path(tree, q0, q, goals.path)
        return Solved(tree.layout, q0, q, result, steering)

    def _batched(self, sample, goals: FrameGoals, settled, steering: np.ndarray,
                 q_start: np.ndarray) -> SolveResult | None:
        """The frame as the frames solved together left it (from its animated pose, the roots
        on their path under 'FOLLOW'), with the joints that move no goal's point carrying the
        corrections of the frames before, or easing them off after a pin's end, as the frame
        by frame solve would (``Continuity.carry``: a foot's turn about its held heel once its
        toe is let go); None where what the last frame hands on asks for more: the roots off
        their path, or a goal the carried joints miss; ``JUMPED`` where its corrections jump from
        the last frame's (the frame is then solved alone, carrying on from the last frame)."""
        if self.root_off or (goals.path and not self.continuity.held):
            return None
        q, errors = settled.q, settled.errors
        carried = ~steering & (q_start != sample.q0)
        if settled.start is not None:  # a run that carried the corrections on itself: where they
            # differ from what it carried (a frame before it solved alone), the joints it left as
            # carried take them (the others, a foot kept above the floor, are as it solved them)
            carried &= (q_start != settled.start) & (settled.q == settled.start)
        if carried.any():
            q = q.copy()
            q[carried] = q_start[carried]
        # Continuity: the corrections change little from one frame to the next where the goals
        # go on as they were; where they change (a plant's end while the other holds the foot),
        # the first frame of the run with the new goals, solved together from the last frame's
        # correction, may still lie far from the last frame's pose, which the frame by frame
        # solve carries on from: that frame is then solved alone.
        before = self.continuity.previous
        if (before is not None and before[0] == sample.tree.layout and self.plan.source is None
                and goals.moving_key != self.last_key):  # (within a run of the same goals they are smooth)
            _, animated, solved, _ = before
            if np.abs((q - sample.q0) - (solved - animated)).max(initial=0.0) > CARRY_JUMP:
                return JUMPED
        if carried.any() and not self._points_steered(goals):
            errors = goal_errors(goals.goals, sample.skeleton.forward(q))
            if settled.converged and not np.all(errors <= self.plan.tolerance):
                return None
        return SolveResult(q=q, iterations=settled.iterations, errors=errors, converged=settled.converged)

    def _points_steered(self, goals: FrameGoals) -> bool:
        """Whether the frame's goals are all the pins' points (the log's), whose distances only
        the joints that steer them change: the carried joints then leave them as solved."""
        return (self.plan.source is None and not goals.shaped
                and all(type(goal) is PositionGoal for goal in goals.goals))

    def _met(self, problem: Problem, start: np.ndarray, sample) -> SolveResult | None:
        """Where nothing is carried over and the animated pose already meets every goal (the
        pins, and the roots' path: the roots are on it), the frame as it is: a solve that
        keeps to where it starts would end there."""
        q0 = sample.q0
        if self.root_off or not np.array_equal(start, q0) or (
                problem.reference is not None and not np.array_equal(problem.reference, q0)):
            return None
        errors = goal_errors(problem.goals, sample.animated)
        if not np.all(errors <= problem.tolerance):
            return None
        return SolveResult(q=q0.copy(), iterations=0, errors=errors, converged=True)

    def _on_path(self, tree, q0: np.ndarray, problem: Problem, start: np.ndarray, path: dict):
        """Under 'FOLLOW': the frame solved with the roots held exactly on their path, when
        that holds every pin (the path's goals are then met exactly, and the solve has fewer
        joints and goals); None when it does not. The SR inverse, which holds the path in the
        pins' null space itself, tries it only where the last frame held every goal with the
        roots on the path: where the last frame left the path the roots glide back to it,
        and a goal out of reach stays so with the roots held."""
        if not path or not problem.goals:
            return None
        solver = self.plan.settings.solver
        if solver == "SR_INVERSE" and (not self.continuity.held or any(
                float(np.linalg.norm(off)) > problem.tolerance for off in self.root_off.values())):
            return None
        roots = tree.root_joints()
        active = np.ones(q0.size, dtype=bool)
        active[roots] = False
        start = start.copy()
        start[roots] = q0[roots]
        result = SOLVERS[solver](dataclasses.replace(problem, active=active), start)
        return result if result.converged else None


def asking(goals: FrameGoals) -> tuple[list, tuple, FrameGoals]:
    """What of a frame's goals steers its joints, for the bake's continuity (the corrections
    carried on, the plants' ease): (the goals, the key their moving joints are cached by, the
    frame's goals for the points they steer), every pin's but a one-sided pin's (a floor, a
    region). Such a pin stays in the solve, which holds it on every frame the carried
    corrections or the animation would take its point out; it only carries no correction of
    its own from frame to frame: a floor pin in force always would otherwise keep the last
    plant's correction on its bone's chain through every frame after it, and stop the chain
    easing onto the next plant."""
    first = sum(pin.kind not in SHAPED_KINDS for pin, _ in goals.in_force)  # (the shaped pins' goals follow)
    idle = {first + i for i in range(len(goals.shaped)) if goals.goals[first + i].one_sided}
    if not idle:
        return goals.goals, goals.moving_key, goals
    steered = [goal for i, goal in enumerate(goals.goals) if i not in idle]
    shaped = [item for i, item in enumerate(goals.shaped) if first + i not in idle]
    return steered, (goals.moving_key, tuple(sorted(idle))), dataclasses.replace(goals, shaped=shaped)
