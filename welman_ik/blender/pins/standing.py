"""The body kept from tipping over while it stands on pinned feet.

A hand dragged past its reach pulls on everything that moves it; with both feet pinned and
nothing else in the way the whole body slants from the ankles like a plank (the pelvis 34 cm
to the side), which no person standing does: they lean the trunk and shift the hips back
over the feet. So the drag of a limb with two or more bones planted (position or pose pins)
keeps the body's centre of mass over what it stands on: the hull of the planted points (both ends of
a bone held whole by a pose pin: the sole of a foot), and the place the centre of mass
started over, so a pose that started off-centre is never pulled back (a one-sided goal,
``core.goals.balance``, asking nothing while inside). ``keep_balance`` turns it off; a
balance pin of the user's own replaces it; the hips or the trunk dragged go where the user
puts them, balanced or not (a lunge, a fall).
"""

from __future__ import annotations

import numpy as np

from ...core import BalanceGoal
from ..rig.model import RigModel
from .goals import ik_limbs, massive_bones

PLANTED = frozenset({"POSITION", "POSE"})


def standing_balance(obj, model: RigModel, pins, priority: int) -> BalanceGoal | None:
    """The one-sided balance over the planted bones (``pins``: (pin, target) pairs in force),
    on ``model`` at its start pose; None where it does not apply: off in the settings, a
    balance pin in force, fewer than two bones planted, no bone with mass in the model, or a
    rig whose masses sit on FK controls while a limb is on IK."""
    if not obj.welman_ik.keep_balance or any(p.kind == "BALANCE" for p, _ in pins):
        return None
    planted = [(p, t) for p, t in pins if p.kind in PLANTED and p.bone in model.bones]
    if len({p.bone for p, _ in planted}) < 2:
        return None
    names, masses, fractions = massive_bones(obj)
    if any("_fk" in n for n in names) and ik_limbs(obj):
        return None  # (the masses are on FK controls an IK limb does not follow, as a balance pin is refused)
    keep = [i for i, n in enumerate(names) if n in model.bones]
    if not keep:
        return None
    kin = model.skeleton.forward(model.q0)
    joints = np.array([model.bones[names[i]].frame_joint for i in keep], dtype=np.intp)
    local = np.array([model.anchor_local(names[i], float(fractions[i]))[1] for i in keep])
    ends = []
    for p, target in planted:
        anchors = (0.0, 1.0) if p.kind == "POSE" else (float(p.anchor),)
        for anchor in anchors:
            joint, point = model.anchor_local(p.bone, anchor)
            ends.append(kin.points(np.array([joint]), point[None])[0])
    weights = masses[keep]
    total = weights.sum()
    ends.append((weights / (total if total > 0.0 else 1.0)) @ kin.points(joints, local))  # where the mass starts
    return BalanceGoal(joints, local, weights, support=np.array(ends), priority=priority)
