"""Whether a retarget did what a user asked of it, measured on the pose Blender evaluates from
the written action against the source's own motion (``gates``): the plants held, no foot
through the floor, planted feet on it, knees and elbows bent as the source's, the shoulders
facing as the source's, and no deforming bone stretched. Each gate has its limit; a retarget
that misses one says so (the operator warns, the clean-up CLI marks the clip failed).

Lengths are measured against the target's body: its limits are for a body whose leg (hip to
ankle along its joints) is ``HUMAN_LEG`` long, scaled to the target's own, so that a rig in
centimetres or a child's is held to the same share of its size."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.anatomy.retarget import retarget_roles
from ..rig.body import rest_ends, world_scale
from ..rig.retarget_map import body_unit, bone_tree
from . import retarget_measure
from .retarget import Retarget, unit
from .retarget_pose import measured_bone
from .retarget_twist import shortened

LIMITS = {"plants": 0.001, "floor": 0.002, "planted": 0.005,  # [m] for a ``retarget_map.HUMAN_LEG`` leg
          "bends": math.radians(10.0), "facing": math.radians(15.0), "stretch": 0.01}
ANGLES = frozenset({"bends", "facing"})
LIMBS = (("thigh", "shin", "foot"), ("upper_arm", "forearm", "hand"))
WORDS = {"plants": "plants drift", "floor": "a foot below the floor", "planted": "a planted foot above the floor",
         "bends": "knee or elbow bend off the source's", "facing": "shoulders facing off the source's",
         "stretch": "a deforming bone stretched"}


@dataclass
class Gate:
    """A gate's largest figure over the range ([m], [rad] or a share), its limit, and the frame
    and bone where it is."""

    name: str
    value: float
    limit: float
    frame: int
    bone: str
    remark: str = ""  # what the figure leaves out, for the user

    @property
    def held(self) -> bool:
        return self.value <= self.limit


def _first_by_role(obj, roles: dict | None = None) -> dict[str, str]:
    """role -> the first bone of ``obj`` with it (``roles``: bone -> role, read when not given)."""
    roles = retarget_roles(*bone_tree(obj))[1] if roles is None else roles
    out: dict[str, str] = {}
    for name, role in roles.items():
        out.setdefault(role, name)
    return out


def limb_joints(retarget: Retarget) -> list[tuple[str, tuple[str, str, str], tuple[str, str, str]]]:
    """(label, target's three measured bones, source's three bones) of each knee and elbow both
    rigs have: hip, knee, ankle (shoulder, elbow, wrist) by their heads."""
    target, source = _first_by_role(retarget.target), _first_by_role(None, retarget.source_roles)
    out = []
    for parts in LIMBS:
        for side in ("L", "R"):
            roles = [f"{part}.{side}" for part in parts]
            if all(r in target for r in roles) and all(r in source for r in roles):
                out.append((roles[1], tuple(measured_bone(retarget.target, target[r]) for r in roles),
                            tuple(source[r] for r in roles)))
    return out


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
    return np.arccos(np.clip(np.einsum("...i,...i->...", a, b), -1.0, 1.0))


def gate_bones(retarget: Retarget) -> list[str]:
    """The target bones the gates read: the knees' and elbows' joints, the feet, every
    deforming bone."""
    target = retarget.target
    feet = {measured_bone(target, line.target) for line in retarget.lines if line.group == "feet"}
    return sorted({n for _, bones, _ in limb_joints(retarget) for n in bones} | feet
                  | {b.name for b in target.data.bones if b.use_deform})


def gates(retarget: Retarget, plant_errors: list[tuple[str, np.ndarray]], evaluated: tuple[dict, np.ndarray]
          ) -> list[Gate]:
    """Every gate of ``retarget`` on the evaluated pose of its written action. ``plant_errors``:
    (bone, (frames,) errors) of each plant, as ``retarget_measure.errors`` gives them;
    ``evaluated``: (bone -> column, (frames, bones, 4, 4) world matrices) of the range, holding
    at least ``gate_bones``."""
    target, frames = retarget.target, retarget.frames
    unit_length = body_unit(target)
    out = []

    def worst(name: str, values: np.ndarray, bones: list[str], scale: float = 1.0) -> None:
        """``values`` (frames, bones): the gate's figure on each frame for each bone."""
        if values.size == 0:
            out.append(Gate(name, 0.0, LIMITS[name] * scale, frames[0], ""))
            return
        f, b = np.unravel_index(int(np.argmax(values)), values.shape)
        out.append(Gate(name, float(values[f, b]), LIMITS[name] * scale, frames[f], bones[b]))

    if plant_errors:
        worst("plants", np.stack([e for _, e in plant_errors], axis=1), [b for b, _ in plant_errors], unit_length)
    elif retarget.sought and any(line.group == "feet" and line.place for line in retarget.lines):  # said
        out.append(Gate("plants", 0.0, LIMITS["plants"] * unit_length, frames[0], "",
                        remark="no foot contacts found in the clip (Contact Height and Speed, for a grown person): "
                               "the feet follow it, nothing planted"))
    limbs = limb_joints(retarget)
    feet = sorted({measured_bone(target, line.target) for line in retarget.lines if line.group == "feet"})
    deforming = [b.name for b in target.data.bones if b.use_deform]
    column, posed = evaluated
    heads = posed[..., :3, 3]
    # The feet: each foot's head (ankle) and tail (toe) against its own rest height.
    ends = dict(zip(target.data.bones.keys(), rest_ends(target, world=True)))
    scale = world_scale(target)
    sinks, planted, labels = [], [], []
    for foot in feet:
        m = posed[:, column[foot]]
        tail = m[:, :3, 3] + unit(m[:, :3, :3])[..., 1] * target.data.bones[foot].length * scale
        for point, rest in ((m[:, :3, 3], ends[foot][0]), (tail, ends[foot][1])):
            sinks.append(rest[2] - point[:, 2])
            labels.append(foot)
    worst("floor", np.stack(sinks, axis=1) if sinks else np.zeros((0, 0)), labels, unit_length)
    at = np.arange(len(frames))
    for plant in retarget.plants:
        foot = measured_bone(target, plant.bone)
        if foot not in column:
            continue
        k = 0 if plant.heel else 1
        index = feet.index(foot) * 2 + k
        held = (at >= plant.first) & (at <= plant.last)
        planted.append(np.where(held, -sinks[index], 0.0))
    worst("planted", np.stack(planted, axis=1) if planted else np.zeros((0, 0)),
          [p.bone for p in retarget.plants if measured_bone(target, p.bone) in column], unit_length)
    # Knees and elbows: the bend (the angle between the upper and lower segments) against the source's.
    bends = []
    for _, bones_t, bones_s in limbs:
        t = [heads[:, column[n]] for n in bones_t]
        s = [retarget.source_heads[n] for n in bones_s]
        bends.append(np.abs(_angles(t[1] - t[0], t[2] - t[1]) - _angles(s[1] - s[0], s[2] - s[1])))
    worst("bends", np.stack(bends, axis=1) if bends else np.zeros((0, 0)), [bones[1] for _, bones, _ in limbs])
    # The shoulder line seen from above, against the source's.
    arms = {label: (bones_t[0], bones_s[0]) for label, bones_t, bones_s in limbs}
    if "forearm.L" in arms and "forearm.R" in arms:
        t = heads[:, column[arms["forearm.L"][0]]] - heads[:, column[arms["forearm.R"][0]]]
        s = retarget.source_heads[arms["forearm.L"][1]] - retarget.source_heads[arms["forearm.R"][1]]
        turn = np.angle(np.exp(1j * (np.arctan2(t[:, 1], t[:, 0]) - np.arctan2(s[:, 1], s[:, 0]))))
        worst("facing", np.abs(turn)[:, None], [arms["forearm.L"][0]])
    # Deforming bones: the scale along the bone, the object's own taken out, longer or shorter;
    # of the limbs the rig's own stretching IK bends, only longer (it shortens them as it bends
    # them, for any pose: reported, not counted).
    if deforming:
        along = np.linalg.norm(posed[:, [column[n] for n in deforming]][..., :3, 1], axis=-1) / scale
        bent = shortened(target, retarget.twists)
        own = np.array([any(n == b or n.startswith(b + ".") for b in bent) for n in deforming], dtype=bool)
        worst("stretch", np.where(own, np.maximum(along - 1.0, 0.0), np.abs(along - 1.0)), deforming)
        shorter = np.where(own, np.maximum(1.0 - along, 0.0), 0.0)
        if shorter.max() > LIMITS["stretch"]:
            f, b = np.unravel_index(int(np.argmax(shorter)), shorter.shape)
            out[-1].remark = (f"the rig's own IK shortens its bent limbs up to {100.0 * shorter[f, b]:.1f}% "
                              f"({deforming[b]}, frame {frames[f]}), as for any pose it bends; with the limbs "
                              "switched to FK and the map filled again, they keep their length")
    return out


def evaluate(retarget: Retarget) -> tuple[list, list[Gate]]:
    """Each goal group's largest miss (``retarget_measure.measure``) and every gate, on the
    evaluated pose of the written action."""
    bones = sorted(set(retarget.keyed) | set(gate_bones(retarget)))
    evaluated = retarget_measure.evaluate(retarget.target, bones, retarget.frames)  # one pass over the frames
    found = retarget_measure.errors(retarget, evaluated=evaluated)
    return retarget_measure.worst(retarget, found), gates(retarget, [(b, e) for g, b, e in found if g == "plants"],
                                                          evaluated)


def describe(scene, found: list[Gate], length_text) -> str:
    """'gates missed: knee or elbow bend off the source's 18.2° (limit 10°; shin.R, frame 40), ...';
    or 'gates held' with each figure."""
    def figure(value: float, name: str) -> str:
        if name in ANGLES:
            return f"{math.degrees(value):.1f}\u00b0"
        if name == "stretch":
            return f"{100.0 * value:.1f}%"
        return length_text(scene, value)

    missed = [g for g in found if not g.held]
    remarks = "".join(f"; {g.remark}" for g in found if g.remark)
    if missed:
        return "gates missed: " + ", ".join(
            f"{WORDS[g.name]} {figure(g.value, g.name)} (limit {figure(g.limit, g.name)}; {g.bone}, frame {g.frame})"
            for g in missed) + remarks
    return "gates held: " + ", ".join(f"{g.name} {figure(g.value, g.name)}" for g in found) + remarks
