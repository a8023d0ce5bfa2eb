"""The segment mass model: how heavy each bone is and where along it its centre of mass lies,
for the balance goal (``goals.balance``). Pure numpy; never imports bpy.

Bones whose role ``anatomy.recognise`` finds (Rigify, metarig, Mixamo, BVH naming) take the
segment masses of de Leva (1996), "Adjustments to Zatsiorsky-Seluyanov's segment inertia
parameters", J. Biomech. 29(9) 1223-1230, Table 4, male values: the mass as a share of the
whole body's, and the centre of mass as a share of the segment's length from its proximal
end (the joint a rig's bone starts at):

    segment      mass [%]   centre of mass [% of length]   de Leva's endpoints
    head+neck      6.94        50.02 (from C7: 49.98)        vertex - cervicale (C7)
    trunk         43.46        44.86 from the suprasternale   suprasternale - mid-hips
    upper arm      2.71        57.72                          shoulder - elbow joint centres
    forearm        1.62        45.74                          elbow - wrist joint centres
    hand           0.61        79.00                          wrist - 3rd metacarpale
    thigh         14.16        40.95                          hip - knee joint centres
    shank          4.33        44.59                          knee - lateral malleolus
    foot           1.37        44.15                          heel - toe tip

which add up to 100 % over a whole body (head, trunk, two arms, two legs). Where a rig cuts
a table segment into several bones, they share its mass in proportion to their lengths:

- trunk: the spine bones (with the pelvis or hips bone, and the clavicles, which de Leva's
  upper trunk holds), each with its centre of mass at its middle (a straight trunk's centre
  of mass is then at its middle, 5 % of its length from de Leva's);
- head and neck: the neck and head bones, each at its middle (the combined segment's centre
  of mass at its middle, as de Leva's 50.02 % has it);
- hand: the hand, palm, finger and thumb bones; the hand bone at 79 %, the rest at their
  middles;
- foot: the foot bone at 44.15 % (a rig's foot bone runs from the ankle, not the heel, which
  this ignores) and the toe bone at its middle.

Bones with no role (rig mechanics, props, twist helpers, Rigify's root control 'torso') weigh
nothing when the skeleton is recognised; an unrecognised skeleton gets every bone a mass in
proportion to its length, centred at its middle. ``overrides`` (bone name -> mass) replace
the table's mass of those bones, in the table's unit: a share of the whole body's mass
(a 7.5 kg prop held by a 75 kg figure: 0.1); only ratios matter, so when every bone with
mass is overridden any unit will do. An overridden bone keeps its centre-of-mass share (the
middle for a bone with no role).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .anatomy import recognise

# de Leva (1996), Table 4, males: (share of body mass, centre of mass from the proximal end).
DE_LEVA = {
    "head": (0.0694, 0.5),  # vertex - C7: 50.02 % from the vertex, so 49.98 % from C7
    "trunk": (0.4346, 0.5),  # 44.86 % from the suprasternale; spread over the spine bones
    "upper_arm": (0.0271, 0.5772),
    "forearm": (0.0162, 0.4574),
    "hand": (0.0061, 0.7900),
    "thigh": (0.1416, 0.4095),
    "shin": (0.0433, 0.4459),
    "foot": (0.0137, 0.4415),
}

# Roles (``anatomy.recognise``, without their side) -> (table segment, centre of mass share).
_ROLES = {
    "spine": ("trunk", 0.5), "hips": ("trunk", 0.5), "chest": ("trunk", 0.5), "pelvis": ("trunk", 0.5),
    "clavicle": ("trunk", 0.5),
    "neck": ("head", 0.5), "head": ("head", 0.5),
    "upper_arm": ("upper_arm", 0.5772), "forearm": ("forearm", 0.4574),
    "hand": ("hand", 0.79), "palm": ("hand", 0.5),
    "finger1": ("hand", 0.5), "finger2": ("hand", 0.5), "finger3": ("hand", 0.5),
    "thumb1": ("hand", 0.5), "thumb2": ("hand", 0.5), "thumb3": ("hand", 0.5),
    "thigh": ("thigh", 0.4095), "shin": ("shin", 0.4459),
    "foot": ("foot", 0.4415), "toe": ("foot", 0.5),
}
_PELVIS_NAMES = {"hips", "hip", "pelvis"}  # a root bone no naming gives a role (Mixamo's 'Hips')


def _parent_names(names: Sequence[str], parents) -> dict[str, str | None]:
    """Each bone's parent name from a sequence of parent names, None, or indices (-1: none)."""
    if parents is None:
        return {}
    if isinstance(parents, Mapping):
        return dict(parents)
    out: dict[str, str | None] = {}
    for name, parent in zip(names, parents):
        if parent is None or isinstance(parent, str):
            out[name] = parent
        else:
            index = int(parent)
            out[name] = names[index] if index >= 0 else None
    return out


def _segment_of(role: str) -> tuple[str, float] | None:
    base, _, side = role.partition(".")
    segment = _ROLES.get(base)
    if segment is None:
        return None
    name, com = segment
    return (f"{name}.{side}" if side and name not in ("trunk", "head") else name), com


def segment_masses(names: Sequence[str], parents, lengths, overrides: Mapping[str, float] | None = None,
                   best_guess: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Each bone's mass (n,) (a share of the body's; see the module docstring) and its centre
    of mass as a share of its length from its head (n,).

    names:     the bones' names (n,).
    parents:   each bone's parent: a name, None, or an index into ``names`` (-1: none); or a
               mapping name -> parent name; or None. Used to tell a metarig's neck from its
               spine.
    lengths:   (n,) the bones' lengths [m].
    overrides: bone name -> mass, replacing the table's.
    best_guess: recognise a rig by name fragments too (``anatomy.recognise``).
    """
    names = list(names)
    lengths = np.asarray(lengths, dtype=float).reshape(len(names))
    if not np.all(np.isfinite(lengths)) or np.any(lengths < 0.0):
        raise ValueError("bone lengths must be finite and >= 0")
    naming, roles = recognise(names, _parent_names(names, parents), best_guess=best_guess)
    masses = np.zeros(len(names))
    com = np.full(len(names), 0.5)
    if naming and roles:
        groups: dict[str, list[int]] = {}
        for i, name in enumerate(names):
            role = roles.get(name)
            if role is None and name.rpartition(":")[2].lower() in _PELVIS_NAMES:
                role = "pelvis"
            segment = _segment_of(role) if role else None
            if segment is None:
                continue
            groups.setdefault(segment[0], []).append(i)
            com[i] = segment[1]
        for segment, members in groups.items():
            share = DE_LEVA[segment.partition(".")[0]][0]
            size = lengths[members]
            total = float(size.sum())
            masses[members] = share * (size / total if total > 0.0 else np.full(len(members), 1.0 / len(members)))
    else:
        total = float(lengths.sum())
        masses = lengths / total if total > 0.0 else np.full(len(names), 1.0 / max(len(names), 1))
    for name, mass in (overrides or {}).items():
        if not (np.isfinite(mass) and mass >= 0.0):
            raise ValueError(f"mass override of {name!r} must be finite and >= 0, got {mass}")
        if name in names:
            masses[names.index(name)] = float(mass)
    return masses, com
