"""Pins of every kind as the core's goals, and their errors on the pose Blender evaluates.

A position pin is a point goal: the solve closes its loop on it (``evaluated.GoalSet``).
Every other kind (orientation, pose, line, plane, aim, region, together, balance) is built
here from the pin's fields into one core goal on the rig's model, and measured on the
evaluated pose by the same goal: the model's joint frames that carry the goal's bones are
replaced by the frames Blender evaluated, so a goal's error is the same formula on the
solver's pose and on Blender's.
"""

from __future__ import annotations

import math
import re

import numpy as np
from mathutils import Quaternion

from ...core import (
    AimGoal,
    BalanceGoal,
    FloorGoal,
    Goal,
    Kinematics,
    LineGoal,
    OrientationGoal,
    PlaneGoal,
    PoseGoal,
    PositionGoal,
    RegionGoal,
    TogetherGoal,
)
from ...core.masses import segment_masses
from ...core.problem import goal_errors
from ..rig.evaluated import world_matrix
from ..rig.model import RigError, RigModel
from ..rig.targets import other_bone

POINT_KINDS = frozenset({"POSITION"})
SHAPED_KINDS = frozenset({"ORIENTATION", "POSE", "LINE", "PLANE", "AIM", "REGION", "TOGETHER", "BALANCE", "FLOOR"})
SOLVABLE_PIN_KINDS = POINT_KINDS | SHAPED_KINDS
SUPPORT_KINDS = frozenset({"POSITION", "POSE"})  # the pins whose places make a balance's support polygon
MECHANICS = re.compile(r"^(ORG|DEF|MCH|VIS|WGT|TGT|CTRL)[-_.]", re.IGNORECASE)  # rig mechanics: no mass
_MASSES: dict = {}  # armature -> (its bones' signature, massive_bones of them)
LABELS = {"ORIENTATION": "orientation", "POSE": "pose", "LINE": "line", "PLANE": "plane", "AIM": "aim",
          "REGION": "region", "TOGETHER": "together", "BALANCE": "balance", "POSITION": "position", "FLOOR": "floor"}


def describe(pin) -> str:
    """How a message names a pin: its kind and bone."""
    if pin.kind == "BALANCE":
        return "the balance pin"
    return f"the {LABELS.get(pin.kind, pin.kind.lower())} pin on '{pin.bone}'"


def massive_bones(obj) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(names, masses, centre-of-mass fractions along each bone) of the bones that carry
    mass: the segment-mass table where the naming is recognised, else bone lengths; a bone's
    own ``welman_ik_mass`` (when above 0) overrides either. Rig mechanics (bones named ORG-,
    DEF-, MCH-, ...) carry no mass, so no segment counts twice. What the viewport shows or
    hides changes nothing."""
    pose_bones = obj.pose.bones
    # The table is read once per armature while its bones, their hierarchy and lengths (edit
    # mode) and their masses stay the same: a bake builds its balance goal on every frame,
    # the overlay draws it on every change.
    overridden = np.zeros(len(pose_bones), dtype=np.float32)
    pose_bones.foreach_get("welman_ik_mass", overridden)
    bone_lengths = np.zeros(len(obj.data.bones), dtype=np.float32)
    obj.data.bones.foreach_get("length", bone_lengths)
    hierarchy = tuple(pb.parent.name if pb.parent else "" for pb in pose_bones)  # (no bulk read of a pointer)
    signature = (tuple(pose_bones.keys()), hierarchy, overridden.tobytes(), bone_lengths.tobytes())
    key = (obj.as_pointer(), obj.data.as_pointer())
    found = _MASSES.get(key)
    if found is None or found[0] != signature:
        if len(_MASSES) > 16:
            _MASSES.clear()
        names = [pb.name for pb in pose_bones]
        parents = {pb.name: (pb.parent.name if pb.parent else None) for pb in pose_bones}
        lengths = np.array([pb.bone.length for pb in pose_bones], dtype=float)
        overrides = {pb.name: float(pb.welman_ik_mass) for pb in pose_bones if pb.welman_ik_mass > 0.0}
        masses, fractions = segment_masses(names, parents, lengths, overrides)  # (the naming needs every bone)
        mechanics = [bool(MECHANICS.match(name)) and name not in overrides for name in names]
        masses = np.where(mechanics, 0.0, masses)
        keep = np.flatnonzero(np.asarray(masses) > 0.0)
        found = _MASSES[key] = (signature, ([names[i] for i in keep], np.asarray(masses, dtype=float)[keep],
                                            np.asarray(fractions, dtype=float)[keep]))
    names, masses, fractions = found[1]
    return list(names), masses.copy(), fractions.copy()


def ik_limbs(obj) -> list[str]:
    """The bones whose Rigify IK/FK switch (the ``IK_FK`` property) puts their limb on IK."""
    return [pb.name for pb in obj.pose.bones
            if isinstance(pb.get("IK_FK"), (int, float)) and float(pb.get("IK_FK")) < 0.999]


def centre_of_mass(obj) -> np.ndarray:
    """The body's centre of mass [m, world] as Blender evaluated the pose."""
    from ..rig.evaluated import anchor_points

    names, masses, fractions = massive_bones(obj)
    if not names:
        raise RigError("No bone has mass; give some bones a mass (Bone > Welman IK)")
    points = anchor_points(obj, names, fractions)
    return masses @ points / masses.sum()


def held_bones(pins) -> list[str]:
    """The bones pins hold: each pin's own and a together pin's other bone (a balance pin
    holds none: its bones are the ones with mass, ``pin_bones``)."""
    names = [p.bone for p in pins if p.kind != "BALANCE"]
    return names + [p.target_bone for p in pins if p.kind == "TOGETHER" and not other_bone(p)]


def pin_bones(obj, pin) -> list[str]:
    """The bones a pin's goal needs in the model."""
    if pin.kind == "BALANCE":
        return massive_bones(obj)[0]
    return held_bones([pin])


def check_pin(obj, pin, solver: str | None = None) -> None:
    """Refuse a pin whose fields cannot make a goal, with the reason and the fix."""
    what = describe(pin)
    if pin.kind not in SOLVABLE_PIN_KINDS:
        raise RigError(f"{what[0].upper() + what[1:]} is of an unknown kind '{pin.kind}'")
    if pin.kind != "BALANCE" and pin.bone not in obj.pose.bones:
        raise RigError(f"A pin holds bone '{pin.bone}', which no longer exists; unpin or clear it")
    check_numbers(pin)
    vectors = {"location": pin.location, "rotation": pin.rotation, "direction": pin.direction}
    for name, value in vectors.items():
        if not all(math.isfinite(v) for v in value):
            raise RigError(f"The {name} of {what} is not a number (NaN or infinite)")
    if pin.kind in {"ORIENTATION", "POSE"}:
        if Quaternion(pin.rotation).magnitude < 1e-6:
            raise RigError(f"The rotation of {what} is zero; pin it again to record the bone's orientation")
        if not any(pin.axes):
            raise RigError(f"{what[0].upper() + what[1:]} holds none of the bone's axes; tick at least one")
    if pin.kind in {"LINE", "PLANE", "FLOOR"} and np.linalg.norm(np.array(pin.direction)) < 1e-9:
        raise RigError(f"The direction of {what} is zero; give the line's direction or the plane's normal")
    if pin.kind == "REGION" and not (math.isfinite(pin.radius) and pin.radius >= 0.0):
        raise RigError(f"The radius of {what} must be a number of at least 0")
    if pin.kind == "TOGETHER" and other_bone(pin):
        if pin.target_object.type != "ARMATURE" or pin.target_bone not in pin.target_object.pose.bones:
            raise RigError(f"{what[0].upper() + what[1:]} meets bone '{pin.target_bone}' of "
                           f"'{pin.target_object.name}', which it does not have; name one of its bones")
    elif pin.kind == "TOGETHER":
        if pin.target_bone not in obj.pose.bones:
            raise RigError(f"{what[0].upper() + what[1:]} has no other bone ('{pin.target_bone}' does not exist); "
                           "pin two bones together again")
        if pin.target_bone == pin.bone:
            raise RigError(f"{what[0].upper() + what[1:]} names the same bone twice; pin two different bones")
    if pin.kind == "BALANCE":
        if np.linalg.norm(np.array(pin.direction)) < 1e-9:
            raise RigError("The balance pin's vertical direction is zero; set it to (0, 0, 1)")
        names = massive_bones(obj)[0]
        if not names:
            raise RigError("Balance needs bones with mass; give some bones a mass (Bone > Welman IK)")
        switched = ik_limbs(obj) if any("_fk" in n for n in names) else []
        if switched:
            raise RigError(f"Balance weighs the rig's FK controls, but '{switched[0]}' has its limb on IK "
                           "(IK_FK below 1), so the body does not follow them: switch the limbs to FK for "
                           "balance, or pin balance on the metarig")
    if solver is not None:
        refused = getattr(_goal_class(pin.kind), "refused_by", {})
        if solver in refused:
            raise RigError(f"The {_solver_label(solver)} solver cannot hold {what}: {refused[solver]}")


def check_numbers(pin) -> None:
    """Refuse a pin whose weight or anchors are not numbers (a script can store NaN)."""
    for name in ("weight", "anchor", "target_anchor"):
        if not math.isfinite(getattr(pin, name)):
            raise RigError(f"The {name.replace('_', ' ')} of {describe(pin)} is not a number (NaN or infinite)")


def _solver_label(solver: str) -> str:
    return {"CCD": "CCD", "JACOBIAN_TRANSPOSE": "Jacobian transpose", "SR_INVERSE": "SR inverse",
            "QUASI_NEWTON": "quasi-Newton"}.get(solver, solver)


def _goal_class(kind: str) -> type[Goal]:
    return {"ORIENTATION": OrientationGoal, "POSE": PoseGoal, "LINE": LineGoal, "PLANE": PlaneGoal,
            "AIM": AimGoal, "REGION": RegionGoal, "TOGETHER": TogetherGoal, "BALANCE": BalanceGoal,
            "FLOOR": FloorGoal}.get(kind, Goal)


def rotation_matrix_of(quaternion) -> np.ndarray:
    """The 3x3 rotation of a (w, x, y, z) quaternion, normalised."""
    return np.array(Quaternion(quaternion).normalized().to_matrix(), dtype=float)


def world_length(model: RigModel, kin: Kinematics, name: str) -> float:
    """A bone's length as posed in the world [m] (the length an orientation is measured at);
    ``kin``: the model's kinematics at its start."""
    joint = model.bones[name].frame_joint
    head, tail = kin.points(np.array([joint, joint]), np.array([np.zeros(3), model.anchor_local(name, 1.0)[1]]))
    return max(float(np.linalg.norm(tail - head)), 1e-6)


def support_points(pins) -> np.ndarray:
    """(k, 3) where (pin, target) pairs of position and pose pins hold: the support polygon's
    corners. A target is a position pin's point, or a pose pin's fields (``location`` when
    it moves: a follow pin in a bake), else the pin's own ``location``."""
    points = []
    for pin, target in pins:
        if pin.kind == "POSITION":
            points.append(np.asarray(target, dtype=float))
        elif pin.kind == "POSE":
            fields = target if isinstance(target, dict) else {}
            points.append(np.asarray(fields.get("location", pin.location), dtype=float))
    return np.array(points, dtype=float).reshape(-1, 3)


def build(obj, model: RigModel, kin: Kinematics, pin, priority: int, support=None, location=None,
          rotation_matrix=None, direction=None) -> Goal:
    """The core goal of one pin (any kind but POSITION) on ``model``, ``kin`` its kinematics
    at its start; ``support``: the support polygon's corners (``support_points``) for a
    balance over it; ``location``, ``rotation_matrix``: in place of the pin's own (a bake's
    follow pin, or one eased in, or one that follows a target: ``direction`` too)."""
    kind, weight = pin.kind, float(pin.weight)
    direction = np.array(pin.direction if direction is None else direction, dtype=float)
    location = np.array(pin.location if location is None else location, dtype=float)
    rotation = rotation_matrix if rotation_matrix is not None else rotation_matrix_of(pin.rotation)
    if kind == "BALANCE":
        names, masses, fractions = massive_bones(obj)
        names_in = [n for n in names if n in model.bones]
        keep = [i for i, n in enumerate(names) if n in model.bones]
        joints = np.array([model.bones[n].frame_joint for n in names_in], dtype=np.intp)
        local = np.array([model.anchor_local(n, float(fractions[i]))[1] for n, i in zip(names_in, keep)])
        support = (np.zeros((0, 3)) if support is None else np.asarray(support)) if pin.use_support else None
        if support is not None and not len(support):
            raise RigError("The balance pin holds over the support polygon, but no position or pose pin is in "
                           "force: pin the feet first, or untick Support Polygon")
        return BalanceGoal(joints, local, masses[keep], location, direction=direction,
                           support=support, weight=weight, priority=priority)
    joint, local = model.anchor_local(pin.bone, pin.anchor)
    if kind == "ORIENTATION":
        return OrientationGoal(joint, rotation, tuple(pin.axes), world_length(model, kin, pin.bone),
                               weight=weight, priority=priority)
    if kind == "POSE":
        return PoseGoal(joint, local, location, rotation, tuple(pin.axes),
                        world_length(model, kin, pin.bone), weight=weight, priority=priority)
    if kind == "LINE":
        return LineGoal(joint, local, location, direction, weight=weight,
                        priority=priority)
    if kind == "PLANE":
        return PlaneGoal(joint, local, location, direction, weight=weight,
                         priority=priority)
    if kind == "AIM":
        return AimGoal(joint, location, pin.aim_axis, world_length(model, kin, pin.bone), weight=weight,
                       priority=priority)
    if kind == "REGION":
        return RegionGoal(joint, local, location, float(pin.radius), weight=weight, priority=priority)
    if kind == "FLOOR":
        return FloorGoal(joint, local, location, direction, weight=weight,
                         priority=priority)
    if kind == "TOGETHER" and other_bone(pin):  # another armature's bone: where it is on the frame
        return PositionGoal(joint, local, location, weight=weight, priority=priority)
    if kind == "TOGETHER":
        other, other_local = model.anchor_local(pin.target_bone, pin.target_anchor)
        return TogetherGoal(joint, local, other, other_local, weight=weight, priority=priority)
    raise RigError(f"{describe(pin)} is of a kind the solver does not know ('{kind}')")


def goal_joints(goal: Goal) -> np.ndarray:
    """The joints whose frames carry a goal's points (the joints that move it are their
    ancestors)."""
    found = [np.atleast_1d(np.asarray(getattr(goal, name), dtype=np.intp))
             for name in ("joint", "joints", "joint_a", "joint_b") if getattr(goal, name, None) is not None]
    return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.intp)


def evaluated_kinematics(obj, model: RigModel, q: np.ndarray, names=None, base: Kinematics | None = None) -> Kinematics:
    """The model at ``q`` with the frames of the bones ``names`` (None: all of the model's)
    as Blender evaluated them: a goal measured on it is measured on Blender's pose (call
    ``evaluated.update`` first after a change). ``base``: the model's kinematics at ``q``,
    when already worked out (a bake measures every frame on the model's start)."""
    kin = model.skeleton.forward(q) if base is None else base
    frames = kin.frames.copy()
    world = world_matrix(obj)
    pose_bones = obj.pose.bones
    for name in (model.bones if names is None else names):
        b = model.bones[name]
        frames[b.frame_joint] = evaluated_frames(world, np.array([row[:] for row in pose_bones[name].matrix]), b.scale)
    return Kinematics(model.skeleton, kin.q, frames)


def evaluated_frames(world: np.ndarray, pose: np.ndarray, scales) -> np.ndarray:
    """A model joint's world frames (..., 4, 4) from the armature's world matrices ``world``
    and its bone's pose matrices ``pose`` as Blender evaluated them (broadcast against each
    other): each linear column divided by the bone's ``scales`` (..., 3) in the model (its
    frame carries no scale of its own)."""
    frames = world @ pose
    frames[..., :3, :3] /= np.where(np.abs(scales) > 1e-12, scales, 1.0)[..., None, :]
    return frames


class ShapedPins:
    """The pins of every kind but POSITION in one solve: their goals on the model and their
    errors on the evaluated pose."""

    def __init__(self, obj, model: RigModel, pins, priority: int, support=None):
        """``pins``: (pin, fields) pairs (fields: ``build``'s overrides, usually none)."""
        self.obj, self.model = obj, model
        self.pins = [p for p, _ in pins]
        self.pairs = list(pins)
        kin = model.skeleton.forward(model.q0) if self.pins else None
        self.goals = [build(obj, model, kin, p, priority, support, **fields) for p, fields in pins]
        self.names = sorted({n for p in self.pins for n in pin_bones(obj, p) if n in model.bones})

    def __len__(self) -> int:
        return len(self.goals)

    def measure(self, q: np.ndarray) -> np.ndarray:
        """Each goal's error [m] on the pose Blender evaluated (already updated)."""
        if not self.goals:
            return np.zeros(0)
        return goal_errors(self.goals, evaluated_kinematics(self.obj, self.model, q, self.names))

    def labels(self) -> list[str]:
        return [describe(p) for p in self.pins]
