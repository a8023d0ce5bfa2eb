"""The body of an armature: its trunk, neck and the bone that keeps the gaze (``core.body``),
read once per armature and kept while its bones stay the same."""

from __future__ import annotations

import numpy as np

from ...core.body import body_parts

_FOUND: dict = {}  # armature data pointer -> (bone names, (trunk, neck, head))


def parts(obj) -> tuple[frozenset, frozenset, str]:
    """(trunk bones, neck bones, head bone or '') of armature object ``obj``."""
    bones = obj.data.bones
    names = tuple(bones.keys())
    key = obj.data.as_pointer()
    found = _FOUND.get(key)
    if found is None or found[0] != names:
        lengths = np.zeros(len(bones))
        bones.foreach_get("length", lengths)
        parents = {b.name: (b.parent.name if b.parent else None) for b in bones}
        trunk, _girdle, neck, head = body_parts(names, parents, dict(zip(names, lengths.tolist())))
        found = _FOUND[key] = (names, (frozenset(trunk), frozenset(neck), head))
    return found[1]


def tiers(obj, model) -> np.ndarray | None:
    """(n,) each joint of ``model`` (a ``RigModel`` of ``obj``): 0 a limb's (the shoulder
    girdle moves with its arm, as a reach lifts the shoulder), 1 the trunk's and those above
    it (``core.solvers.limbs_first``); None when the rig has no trunk."""
    tier = np.zeros(model.skeleton.size, dtype=np.intp)
    for name in parts(obj)[0] & model.bones.keys():
        joints = model.bones[name]
        tier[[*joints.hinges.values(), *joints.slides.values()]] = 1
    # What carries the trunk (a rig's root bone, a parent-switch bone) is trunk too.
    tier[model.skeleton.ancestors[tier == 1].any(axis=0)] = 1
    return tier if tier.any() else None


def gaze_bone(obj, settings) -> str:
    """The bone whose world orientation the neck keeps: ``settings.gaze_bone`` when it names a
    bone, else the head the rig's naming finds; '' with the gaze off or no head found."""
    if not settings.gaze:
        return ""
    if settings.gaze_bone:
        return settings.gaze_bone if settings.gaze_bone in obj.pose.bones else ""
    return parts(obj)[2]
