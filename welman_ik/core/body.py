"""Which bones are the body's trunk, its shoulder girdle and its head: by the skeleton's
naming, else by its shape. Pure numpy; never imports bpy.

The solvers move the limbs first and the trunk only for what the limbs cannot do
(``solvers.limbs_first``), and keep the head's world orientation (the gaze) with the neck:
both need to know which bones those are. A rig with a known naming (``anatomy.recognise``:
Rigify, its metarig, Mixamo, BVH) says it by its bones' roles. Any other tree is read by its
shape: a bone where two or more large parts of the body branch off (the pelvis, where the
legs and the spine part; the chest, where the arms and the neck part) is trunk, and so is
every bone between such a bone and the root. Such a shape has no head the naming names;
``gaze_bone`` names it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from . import anatomy
from .anatomy import depth

TRUNK_ROLES = frozenset({"spine", "hips", "chest", "torso", "pelvis"})
GIRDLE_ROLES = frozenset({"clavicle.L", "clavicle.R"})
NECK_ROLES = frozenset({"neck"})
HEAD_ROLE = "head"
LARGE_PART = 0.1  # a branch carrying at least this share of the tree's bone length is a large part


def trunk_by_shape(parents: Sequence[int], lengths: Sequence[float]) -> np.ndarray:
    """(n,) bool: the bones of the trunk, from the tree's shape alone. ``parents[i]``: the
    index of bone i's parent (-1 for a root), parents before children; ``lengths``: each
    bone's length. A bone with two or more children that each carry at least ``LARGE_PART``
    of the whole tree's length is a branch of the trunk; the trunk is every branch and every
    bone above one."""
    parents = np.asarray(parents, dtype=np.intp)
    n = len(parents)
    carried = np.asarray(lengths, dtype=float).copy()
    for i in range(n - 1, -1, -1):  # children after parents: each adds its load to its parent's
        if parents[i] >= 0:
            carried[parents[i]] += carried[i]
    total = float(carried[parents < 0].sum()) if n else 0.0
    large = np.zeros(n, dtype=np.intp)
    for i in range(n):
        if parents[i] >= 0 and carried[i] >= LARGE_PART * total:
            large[parents[i]] += 1
    trunk = large >= 2
    for i in range(n - 1, -1, -1):  # every bone above a trunk bone is trunk
        if trunk[i] and parents[i] >= 0:
            trunk[parents[i]] = True
    return trunk


def body_parts(names: Sequence[str], parents: Mapping[str, str | None],
               lengths: Mapping[str, float]) -> tuple[set[str], set[str], set[str], str]:
    """(trunk bones, girdle bones, neck bones, the head bone or '') of a skeleton: by its
    naming when ``anatomy.recognise`` knows it (with the bones its shape says carry that
    trunk), else the trunk by its shape (no girdle, neck or head)."""
    naming, roles = anatomy.recognise(list(names), parents)
    shaped = _trunk_by_shape(names, parents, lengths)
    if naming and any(r in TRUNK_ROLES for r in roles.values()):
        # The named trunk, and what the shape says carries it (a generated rig's mechanism
        # and tweak bones between the named controls and the limbs).
        limbs = {n for n, r in roles.items() if r not in TRUNK_ROLES}
        trunk = {n for n, r in roles.items() if r in TRUNK_ROLES} | (shaped - limbs)
        girdle = {n for n, r in roles.items() if r in GIRDLE_ROLES}
        neck = {n for n, r in roles.items() if r in NECK_ROLES}
        heads = [n for n, r in roles.items() if r == HEAD_ROLE]
        return trunk, girdle, neck, heads[0] if len(heads) == 1 else ""
    return shaped, set(), set(), ""


def _trunk_by_shape(names: Sequence[str], parents: Mapping[str, str | None],
                    lengths: Mapping[str, float]) -> set[str]:
    known = set(names)
    ordered = sorted(names, key=lambda n: depth(n, parents))
    index = {name: i for i, name in enumerate(ordered)}
    shape = trunk_by_shape([index[parents[n]] if parents.get(n) in known else -1 for n in ordered],
                           [lengths.get(n, 0.0) for n in ordered])
    return {n for n, t in zip(ordered, shape) if t}

