"""Step 5 of the bake, before the keys are written: the plants eased in. Before a plant takes
hold, its bone's chain comes down onto the correction the plant's first frame needed, in
joint space, as it eases off after the plant's end."""

from __future__ import annotations

import numpy as np

from ...core.contacts import ease


def ease_onto_plants(plan, log, sampling, results: dict) -> None:
    """Before each fixed pin with a frame range (a plant) takes hold, its bone's chain eases
    onto the correction the plant's first frame needed, over ``motion_falloff`` frames
    (half a cosine), in joint space, as it eases off after the plant's end: the foot
    comes down onto its held place instead of jumping there. Joints that move a goal in
    force on a frame are left as solved there, so every pin holds as it did. The frames
    changed are put into ``results`` (frame -> channels)."""
    settings, solved = plan.settings, log.solved
    falloff = plan.falloff
    if plan.edit is not None or falloff == 0:
        return
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
    for frame, q in sorted(changed.items()):
        results[frame] = sampling.at(frame).tree.model.channels(q)
