"""Step 5 of the bake, before the keys are written: the plants eased in. Before a plant takes
hold, its bone's chain comes down onto the correction the plant's first frame needed, in
joint space, as it eases off after the plant's end; never through a floor (a one-sided pin in
force there)."""

from __future__ import annotations

import numpy as np

from ...core import SOLVERS, Problem
from ...core.contacts import ease
from ...core.problem import goal_errors
from ..pins.setup import preferred_pose


def ease_onto_plants(plan, log, sampling) -> dict:
    """Before each fixed pin with a frame range (a plant) takes hold, its bone's chain eases
    onto the correction the plant's first frame needed, over ``motion_falloff`` frames
    (half a cosine), in joint space, as it eases off after the plant's end: the foot
    comes down onto its held place instead of jumping there. Joints that move a goal in
    force on a frame are left as solved there, so every pin holds as it did; a frame whose
    ease takes a point through a one-sided pin in force there (a floor, which steers no
    joint: ``solve.asking``) is solved again from the eased pose (``_above``). Returns the
    frames changed (frame -> channels), made with the solutions of the current tree's frames
    (``Solutions.channels_of``: call it before they are collected)."""
    settings, solved = plan.settings, log.solved
    falloff = plan.falloff
    if plan.edit is not None or falloff == 0:
        return {}
    tree = sampling.tree
    changed: dict[int, np.ndarray] = {}
    for i in sorted(plan.fixed_goals, key=lambda k: settings.pins[k].frame_start):
        pin = settings.pins[i]
        if pin.kind not in {"POSITION", "POSE"}:
            continue  # (the other kinds hold in full from their first frame)
        start = pin.frame_start
        if (pin.frame_start == 0 and pin.frame_end == 0) or start not in solved or start == plan.frames[0]:
            continue
        first = solved[start]
        if tree.layout != first.layout:
            continue
        chain = tree.model.skeleton.ancestors[tree.anchor(pin.bone, pin.anchor)[0]]
        # After another plant of the bone, the ease spans the frames between the two.
        ended = [p.frame_end for k, p in enumerate(settings.pins)
                 if k in plan.fixed_goals and p.bone == pin.bone and p.frame_start != 0 and p.frame_end < start]
        window = min(falloff, start - max(ended) - 1) if ended else falloff
        for frame in range(start - window, start):
            if frame not in solved or solved[frame].layout != first.layout:
                continue
            q0, steering = solved[frame].q0, solved[frame].steering
            q = changed.get(frame, solved[frame].q)
            mask = chain & ~steering
            weight = float(ease(start - frame, window))
            changed[frame] = np.where(mask, q + weight * (q0 + (first.q - first.q0) - q), q)
    for frame, q in changed.items():
        changed[frame] = _above(plan, log, sampling, frame, q, tree.layout)
    ours = tree.solutions.index.keys() & changed.keys()  # (the frames eased are this tree's, but for a rebuilt one)
    results = tree.solutions.channels_of({frame: changed[frame] for frame in sorted(ours)})
    for frame in sorted(changed.keys() - ours):
        results[frame] = sampling.at(frame).tree.model.channels(changed[frame])
    return results


def _above(plan, log, sampling, frame: int, q: np.ndarray, layout) -> np.ndarray:
    """``q``, a frame's pose eased onto a plant; where that takes a point through a one-sided
    pin in force on the frame (a floor) more than the solve left it, the frame's goals solved
    again from it, keeping to it: the foot turns up off the floor (or the leg gives back that
    much of the ease) instead of going through it."""
    if not log.shaped.get(frame, ([], None))[0]:
        return q
    sample = sampling.at(frame)
    model = sample.tree.model
    if sample.tree.layout != layout:
        return q
    built = log.shaped_goals(sample.tree, frame)
    sided = [goal for goal in built if goal.one_sided]
    if not sided:
        return q
    allowed = np.maximum(goal_errors(sided, sample.skeleton.forward(log.solved[frame].q)), plan.tolerance)
    if np.all(goal_errors(sided, sample.skeleton.forward(q)) <= allowed):
        return q
    s = plan.settings
    problem = Problem(sample.skeleton, log.position_goals(model, frame) + built, tolerance=plan.tolerance, max_iterations=s.max_iterations,
                      damping=s.damping, reference=preferred_pose(s.reference, q), reference_weight=s.reference_weight,
                      ranges=sample.ranges)
    result = SOLVERS[s.solver](problem, q)
    return result.q if np.all(np.isfinite(result.q)) else q
