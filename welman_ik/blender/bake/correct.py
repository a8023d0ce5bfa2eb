"""Step 6 of the bake, closing the loop after the keys are written: where constraints, drivers or NLA move a
goal's bone off its goal in the pose Blender evaluates, those frames are solved again from
the written pose and written again, while frames still miss."""

from __future__ import annotations

import numpy as np

from ...core import SOLVERS, Problem
from ..pins.setup import preferred_pose
from ..rig.evaluated import Measured
from .keys import write_keys
from .retarget_measure import missed_frames

CORRECTION_PASSES = 4  # re-solves of the frames the evaluated pose misses (constrained rigs)
IMPROVED = 0.8  # a frame is solved again while each pass takes at least a fifth off its miss


def close_loop(plan, log, sampling, measure, results: dict) -> dict[int, Measured]:
    """Solve the frames the evaluated pose misses again from the baked pose, with the tree
    built there (so it holds the driven orientations as Blender evaluated them), and write
    them again into ``results`` and the action: at most ``CORRECTION_PASSES`` times, while
    frames still miss. Returns the last measurements."""
    s = plan.settings
    for _ in range(CORRECTION_PASSES):
        measured = measure.frames()
        missed = [frame for frame, m in measured.items() if not m.converged]
        if not missed:
            return measured
        for frame in missed:
            sample = sampling.at(frame)  # the baked pose: the scene samples the written action
            model = sample.tree.model
            goals = log.position_goals(model, frame) + log.shaped_goals(sample.tree, frame)
            problem = Problem(sample.skeleton, goals, tolerance=plan.tolerance, max_iterations=s.max_iterations,
                              damping=s.damping, reference=preferred_pose(s.reference, sample.q0),
                              reference_weight=s.reference_weight, ranges=sample.ranges)
            result = SOLVERS[s.solver](problem, sample.q0)
            if np.all(np.isfinite(result.q)):
                results[frame] = model.channels(result.q)
        write_keys(plan.obj, results)
    return measure.frames()


def close_retarget_loop(plan, sampling, results: dict, passes: int = CORRECTION_PASSES) -> None:
    """A retarget's own loop: the frames whose evaluated pose misses a plant, the hips or a placed
    end solved again from the baked pose with the tree built there, and written again, at most
    ``passes`` times while frames miss and each pass gets them closer."""
    s, retarget = plan.settings, plan.source
    frames = missed_frames(retarget, plan.tolerance)
    for _ in range(passes):
        if not frames:
            return
        for frame in frames:
            sample = sampling.at(frame)
            model = sample.tree.model
            problem = Problem(sample.skeleton, retarget.goals(sample.tree, retarget.index(frame)), tolerance=plan.tolerance,
                              max_iterations=s.max_iterations, damping=s.damping,
                              reference=preferred_pose(s.reference, sample.q0), reference_weight=s.reference_weight,
                              ranges=sample.ranges, rescue=False)
            result = SOLVERS[s.solver](problem, sample.q0)
            if np.all(np.isfinite(result.q)):
                results[frame] = {name: value for name, value in model.channels(result.q).items()
                                  if name in results[frame]}
        write_keys(plan.obj, results)
        before, frames = frames, missed_frames(retarget, plan.tolerance, list(frames))
        # A frame whose miss the last pass did not shrink (a goal the rig cannot meet as the
        # tree models it) is not solved again.
        frames = {f: miss for f, miss in frames.items() if miss < IMPROVED * before[f]}
