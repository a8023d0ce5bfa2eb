"""Armature to hinge tree and back.

Each participating pose bone becomes three hinges at its head, one per Euler angle of
its rotation relative to rest in ``HINGE_ORDER``, so Blender's per-axis IK locks, limits
and stiffness map onto single joints. The hinges are the same whatever the rotation mode
(which only decides how the result is stored, by ``channels``), so every mode gives the
same pose; only an Euler bone with a locked rotation channel or an IK limit gets hinges
in its own order, so that the lock or limit holds exactly on its channel. The root bone's
location channels become three sliding joints along its rest axes, and so do a
translating dragged bone's. Bones and axes the solver must not move stay in the tree as
frozen joints, which keeps every bone's frame (and every pin) exact.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...core import Skeleton
from ...core.ranges import SphericalRanges
from ...core.threads import single_threaded
from . import driven
from .channels import BoneChannels, PoseArrays, bone_order, bone_quaternion
from .fingerprint import fingerprint
from .joints import BoneJoints, Carriers, fixed_channels, inherited_scale, rel_linear_before
from .joints import as_array as _np
from .rotations import AXES
from .writeback import WriteBack


class RigError(ValueError):
    """A rig the solver cannot take, with a message for the user."""


def chain_to_root(pose_bone) -> list:
    chain = []
    while pose_bone is not None:
        chain.append(pose_bone)
        pose_bone = pose_bone.parent
    return chain


class RigModel:
    """The hinge tree of the bones that take part in one solve, and the way back."""

    @single_threaded  # a small LAPACK solve per bone: threaded BLAS would only wait on busy cores
    def __init__(self, obj, bone_names, movable_names=None, translating=(), keep_free=(), fixed_roots=False,
                 keep_turn=()):
        """``bone_names``: pinned and dragged bones; every bone between them and their root
        takes part. ``movable_names``: the bones the solver may move (None: all of them).
        ``translating``: bones (not connected to their parent) whose location channels are
        joints too, as the root's are (``fixed_roots``: the roots' location is then held,
        the translating bone moves instead). Bones the rig drives by constraints or drivers, and
        bones hidden from the user (rig mechanics), stay in the tree but never move, except
        hidden ones in ``keep_free``. Bones in ``keep_turn`` keep their rotation (their
        location channels may still move).

        A parentless bone that a constraint re-parents rigidly (an Armature constraint with
        one bone at full weight, or a Child Of), as Rigify's parent-switch bones are, hangs
        from that bone in the tree, so moving it moves the bone as Blender will."""
        if obj is None or obj.type != "ARMATURE":
            raise RigError("The active object is not an armature")
        pose_bones = obj.pose.bones
        missing = [n for n in bone_names if n not in pose_bones]
        if missing:
            raise RigError(f"Bone '{missing[0]}' does not exist in armature '{obj.name}'")
        carriers = Carriers(obj)
        wanted = set()
        for name in bone_names:
            wanted.update(carriers.chain(name))
        # Parents first: sort by depth, then by name for stable joint numbering.
        ordered = sorted(wanted, key=lambda n: (len(carriers.chain(n)), n))
        drives = driven.drives(obj, ordered)
        held = driven.frozen_bones(obj, ordered) - (set(keep_free) - set(drives))
        # A bone whose rotation the rig drives keeps the orientation Blender gave it, whatever
        # moves above it (a world-space copy, an IK chain): the tree holds it as a bone that
        # does not inherit rotation.
        turned = {name for name, found in drives.items() if found.rotation}
        world = _np(obj.matrix_world)
        if not np.all(np.isfinite(world)) or abs(np.linalg.det(world[:3, :3])) < 1e-12:
            raise RigError(f"Armature '{obj.name}' has a degenerate transform (zero scale?)")

        tree, self.bones = build_tree(obj, ordered, carriers, held, turned, movable_names, translating, fixed_roots,
                                      keep_turn)

        self.object = obj
        self.translating = frozenset(translating)
        # Driven orientations are built into the tree: a new one (another frame) needs a new tree.
        self.turned = {name: tuple(map(tuple, pose_bones[name].matrix)) for name in turned}
        self.limits = np.array(tree["lower"], dtype=float), np.array(tree["upper"], dtype=float)  # Blender's own
        self.skeleton = Skeleton(
            parent=np.array(tree["parent"]), prismatic=np.array(tree["prismatic"]), axis=np.array(tree["axis"]),
            rest=np.array(tree["rest"]), lower=self.limits[0], upper=self.limits[1],
            mobility=np.array(tree["mobility"]), base=world, inherits=np.array(tree["inherits"]),
        )
        self.declared_ranges = self._declared_ranges()
        self.back = WriteBack(obj, self.bones, self.skeleton.size)  # the way between the tree and the pose bones
        # The channels built into the fixed transforms (``fixed_channels``): every bone's scale,
        # and the location of those whose head it places; the tree fits while they hold.
        shapes = [b.shape for b in self.bones.values()]
        placed = np.array([location is not None for _, location in shapes], dtype=bool)
        self._fixed = (np.array([scale for scale, _ in shapes], dtype=np.float32).reshape(-1, 3), placed,
                       np.array([location for _, location in shapes if location is not None],
                                dtype=np.float32).reshape(-1, 3))
        self._start(self.back.read())

    def _declared_ranges(self) -> SphericalRanges | None:
        """The spherical ranges (``pose_bone.welman_ik_range``) in use on bones that may turn
        (None: none)."""
        pose_bones = self.object.pose.bones
        sk = self.skeleton
        rows = []
        for name, b in self.bones.items():
            r = getattr(pose_bones[name], "welman_ik_range", None)
            joints = sorted(b.hinges.values())  # chain order: the Euler product's order
            if r is None or not r.use or not np.any(sk.mobility[joints] > 0.0):
                continue
            bounds = [(r.swing_x_min, r.swing_x_max), (r.swing_z_min, r.swing_z_max), (r.twist_min, r.twist_max)]
            if not all(math.isfinite(v) for pair in bounds for v in pair) or any(lo > hi for lo, hi in bounds):
                raise RigError(f"Bone '{name}' has a joint range with a minimum above its maximum "
                               "or a value that is not a number: fix it in the Joint Range panel")
            rows.append((joints, *bounds, r.roll))
        if not rows:
            return None
        joints, swing_x, swing_z, twist, roll = zip(*rows)
        return SphericalRanges(np.array(joints), np.array(swing_x), np.array(swing_z), np.array(twist),
                               np.array(roll))

    # -- reading the pose ------------------------------------------------------------

    def read(self) -> np.ndarray:
        """Joint values of the pose bones' current channels, as a new model reads them."""
        return self.back.read()

    def _start(self, q: np.ndarray, pose: PoseArrays | None = None) -> None:
        """Take joint values ``q`` (what the pose bones hold) as the start of a solve."""
        self.q0 = q
        self.originals = self.back.start(q, pose)  # each bone's channels as read
        # A bone posed past its limits by hand is not snapped back; it may only move back
        # toward them.
        lower, upper = np.minimum(self.limits[0], q), np.maximum(self.limits[1], q)
        sk = self.skeleton
        if not (np.array_equal(lower, sk.lower) and np.array_equal(upper, sk.upper)):
            self.skeleton = dataclasses.replace(sk, lower=lower, upper=upper)
        # Likewise a ball joint posed outside its range: the range widens just to hold it.
        declared = self.declared_ranges
        self.ranges = declared.containing(self.skeleton, q) if declared is not None else None

    def refresh(self, continuous: bool = True) -> bool:
        """Take the pose bones' current channels as the new start (a bake does this on every
        frame instead of building the tree again). False, and nothing changed, when the
        tree itself no longer fits: a scale, an unconnected bone's location, the armature's
        transform or an orientation the rig drives changed. Build a new model then."""
        pose_bones = self.object.pose.bones
        pose = PoseArrays(pose_bones)
        if not self._fits(pose["scale"], pose["location"]):
            return False
        if any(tuple(map(tuple, pose_bones[name].matrix)) != matrix for name, matrix in self.turned.items()):
            return False
        self._start(self.back.read(near=self.q0 if continuous else None, pose=pose), pose)
        return True

    def frames(self, arrays: dict, modes: np.ndarray) -> list[tuple] | None:
        """``refresh`` for every frame of a clip at once, from its channels ``arrays`` (channel ->
        (F, bones, width), ``pose.bones`` order) and the bones' rotation ``modes``, without
        putting them on the bones: (q0, originals, skeleton, ranges) of each frame, the model
        left at the last. None, and nothing changed, where the tree does not fit every frame
        (as ``refresh``) or the rig drives an orientation."""
        if self.turned or not self._fits(arrays["scale"], arrays["location"]):
            return None
        q = self.back.read_frames(arrays, modes, self.q0)
        rows = self.back.rows
        originals = self.back.start_frames(q, {channel: arrays[channel][:, rows] for channel in BoneChannels.CHANNELS},
                                           modes)
        # ``_start`` of each frame: the limits widened to hold it, a new skeleton where they
        # change from the frame before's, the ranges widened likewise.
        lower, upper = np.minimum(self.limits[0], q), np.maximum(self.limits[1], q)
        sk = self.skeleton
        alike = np.empty(len(q), dtype=bool)
        alike[0] = np.array_equal(lower[0], sk.lower) and np.array_equal(upper[0], sk.upper)
        alike[1:] = np.all(lower[1:] == lower[:-1], axis=1) & np.all(upper[1:] == upper[:-1], axis=1)
        declared = self.declared_ranges
        out = []
        for k in range(len(q)):
            if not alike[k]:
                sk = dataclasses.replace(sk, lower=lower[k], upper=upper[k])
            ranges = declared.containing(sk, q[k]) if declared is not None else None
            out.append((q[k], originals[k], sk, ranges))
        self.q0, self.originals, self.skeleton, self.ranges = out[-1]
        return out

    def _fits(self, scales: np.ndarray, locations: np.ndarray) -> bool:
        """Whether the tree fits the pose channels ``scales`` and ``locations`` (..., bones, 3):
        the scales and the locations built into its fixed transforms, and the armature's
        transform, are as it was built with."""
        rows = self.back.rows
        scale, placed, location = self._fixed
        return bool(np.all(scales[..., rows, :] == scale) and np.all(locations[..., rows[placed], :] == location)
                    and np.array_equal(_np(self.object.matrix_world), self.skeleton.base))

    @property
    def layout(self) -> tuple:
        """What the joints stand for: two models with the same layout number them alike."""
        return tuple((name, b.order, tuple(b.hinges.items()), tuple(b.slides.items())) for name, b in self.bones.items())

    # -- goals ---------------------------------------------------------------------

    def anchor_local(self, name: str, anchor: float) -> tuple[int, np.ndarray]:
        """(joint, point in its frame) of the point ``anchor`` (0 head, 1 tail) along a bone."""
        b = self.bones[name]
        return b.frame_joint, b.scale * np.array([0.0, anchor * b.length, 0.0])

    def roots(self) -> list[str]:
        """The bones in the tree that hang from nothing (their slides move the body)."""
        sk = self.skeleton
        return [name for name, b in self.bones.items()
                if b.slides and sk.parent[min(b.slides.values())] < 0]

    def moves_point(self, name: str) -> bool:
        """True when some joint that may move carries this bone."""
        sk = self.skeleton
        joint = self.bones[name].frame_joint
        return bool(np.any(sk.ancestors[joint] & (sk.mobility > 0.0)))

    # -- writing back (``WriteBack``) ----------------------------------------------------

    def moved(self, q: np.ndarray, angle: float = 0.0, length: float = 0.0) -> list[str]:
        """Names of the bones whose joint values in ``q`` differ from the start (by more than
        ``angle`` [rad] or ``length`` [m], ``WriteBack.moved``)."""
        return self.back.moved(q, angle, length)

    def translated(self, names) -> set[str]:
        """Of ``names``, the bones whose location channels are joints (to key them too)."""
        return {n for n in names if self.bones[n].slides}

    def write(self, q: np.ndarray) -> list[str]:
        """Put joint values ``q`` onto the pose bones (``WriteBack.write``); returns the
        names of the bones that differ from the start."""
        return self.back.write(q)

    def channels(self, q: np.ndarray) -> dict[str, tuple]:
        """What ``write(q)`` would put on each bone, without touching the pose bones."""
        return self.back.channels(q)


_EYE4 = np.eye(4)  # shared by every joint without a fixed transform of its own (the tree's arrays copy it)
_UNIT = np.eye(3)  # the unit axes X, Y, Z


_MODELS: dict = {}  # armature pointer -> (what the model was asked for, the rig's fingerprint, the model)


def _same_object(kept, obj) -> bool:
    """Whether ``kept`` (a model's armature) is still there and is ``obj`` (an undo or a new
    file frees it; a new object may take its address)."""
    try:
        return kept.as_pointer() == obj.as_pointer() and kept.name == obj.name and kept.data == obj.data
    except ReferenceError:
        return False


def cached_model(obj, bone_names, movable_names=None, translating=(), keep_free=(), fixed_roots=False,
                 keep_turn=()) -> RigModel:
    """``RigModel(...)``, or the model built for the same request on this armature before, at
    the pose the bones hold now, when nothing it was built from has changed since
    (``fingerprint.fingerprint``) and it still fits the pose (``refresh``)."""
    request = (tuple(bone_names), None if movable_names is None else tuple(movable_names), tuple(sorted(translating)),
               tuple(keep_free), bool(fixed_roots), tuple(keep_turn))
    found = fingerprint(obj)
    kept = _MODELS.get(obj.as_pointer())
    if (kept is not None and kept[0] == request and _same_object(kept[2].object, obj) and kept[1] == found
            and kept[2].refresh(continuous=False)):
        return kept[2]  # read as a new model reads the pose: the same model, the same start
    model = RigModel(obj, bone_names, movable_names, translating, keep_free, fixed_roots, keep_turn)
    _MODELS[obj.as_pointer()] = (request, found, model)
    return model


def build_tree(obj, ordered, carriers: Carriers, held: set, turned: set, movable_names, translating, fixed_roots: bool,
               keep_turn) -> tuple[dict, dict[str, BoneJoints]]:
    """The hinge tree of the bones ``ordered`` (parents first): each bone's location channels
    as three slides where they are joints (a root's, a translating bone's), then its three
    hinges in its Euler order at its head, with Blender's IK locks, limits and stiffness;
    ``held`` bones and the axes the solver may not move frozen. Returns the skeleton's
    arrays (parent, prismatic, axis, rest, lower, upper, mobility, inherits) and each bone's
    place in it. ``RigModel`` gives the meaning of the other arguments."""
    pose_bones = obj.pose.bones
    parent, prismatic, axis, rest, lower, upper, mobility, inheriting = [], [], [], [], [], [], [], []
    bones: dict[str, BoneJoints] = {}
    movable_set = None if movable_names is None else set(movable_names)
    frame_scale: dict[str, np.ndarray] = {}  # scale the frame of each bone carries from above

    def add(p, is_slide, ax, rest_m, lo, hi, mob, inherit=True):
        parent.append(p)
        inheriting.append(inherit)
        prismatic.append(is_slide)
        axis.append(ax)
        rest.append(rest_m)
        lower.append(lo)
        upper.append(hi)
        mobility.append(mob)
        return len(parent) - 1

    for name in ordered:
        pb = pose_bones[name]
        bone = pb.bone
        if bone.length < 1e-9:
            raise RigError(f"Bone '{name}' has zero length; it cannot be solved")
        moves = (movable_set is None or name in movable_set) and name not in held
        scale = np.array(pb.scale, dtype=float)
        carrier = carriers.parent(name)
        if carrier is None:
            parent_joint, parent_scale, above = -1, np.ones(3), np.ones(3)
            offset = _np(bone.matrix_local)
        else:
            up = bones[carrier]
            parent_joint, parent_scale = up.frame_joint, up.scale
            offset = carriers.offset(name)
            above = frame_scale[carrier]
        inherits = (pb.parent is None or bone.use_inherit_rotation) and name not in turned
        # The head and the location channels ride on the parent's whole pose (Blender's
        # loc_mat), scale included, whatever the inheritance; the location acts along the
        # bone's rest axes (local location) or the parent's; a connected bone ignores it.
        full = np.diag([*parent_scale, 1.0])
        has_location = pb.parent is None or not bone.use_connect
        local_location = bone.use_local_location or pb.parent is None
        before_location = full @ offset if local_location else full
        after_location = _EYE4 if local_location else offset
        slides = {}
        if has_location and (carrier is None or name in translating):
            hold = fixed_roots and carrier is None and name not in translating
            for i, letter in enumerate(AXES):
                free = moves and not pb.lock_location[i] and not hold
                j = add(parent_joint, True, _UNIT[i], before_location if i == 0 else _EYE4, -np.inf, np.inf,
                        1.0 if free else 0.0)
                slides[letter] = j
                parent_joint = j
            rel = after_location.copy()
        elif has_location:
            loc = np.eye(4)
            loc[:3, 3] = np.array(pb.location, dtype=float)
            rel = before_location @ loc @ after_location
        else:
            rel = full @ offset
        # The orientation and scale the bone's frame takes (Blender's rotscale_mat).
        kept = inherited_scale(bone.inherit_scale if pb.parent is not None else "FULL", above, parent_scale)
        frame_scale[name] = above * kept
        if name in turned:  # as evaluated, less its own channels and scale
            rel[:3, :3] = (_np(pb.matrix)[:3, :3] / scale) @ _np(bone_quaternion(pb).to_matrix()).T
        elif not inherits:  # the rest orientation in armature space, relative to the base
            rel[:3, :3] = _np(bone.matrix_local)[:3, :3] * frame_scale[name]
        else:  # relative to the frame the slides or the parent left
            rel[:3, :3] = np.linalg.solve(rel_linear_before(slides, before_location),
                                          np.diag(kept) @ offset[:3, :3])
        order = bone_order(pb)
        hinges = {}
        for k, letter in enumerate(reversed(order)):  # Euler 'XYZ' is Rz @ Ry @ Rx
            i = AXES.index(letter)
            locked = pb.lock_rotation[i] or getattr(pb, f"lock_ik_{letter.lower()}")
            limited = getattr(pb, f"use_ik_limit_{letter.lower()}")
            lo = getattr(pb, f"ik_min_{letter.lower()}") if limited else -np.inf
            hi = getattr(pb, f"ik_max_{letter.lower()}") if limited else np.inf
            stiffness = getattr(pb, f"ik_stiffness_{letter.lower()}")
            mob = 0.0 if (locked or not moves or name in keep_turn) else min(max(1.0 - stiffness, 0.0), 1.0)
            if mob == 0.0:
                lo, hi = -np.inf, np.inf  # a frozen joint stays where it is, limits or not
            j = add(parent_joint, False, _UNIT[i], rel if k == 0 else _EYE4, lo, hi, mob, inherits or k > 0)
            hinges[letter] = j
            parent_joint = j
        bones[name] = BoneJoints(name, hinges, slides, parent_joint, scale, bone.length, order,
                                      fixed_channels(pb, name in translating))
    arrays = {"parent": parent, "prismatic": prismatic, "axis": axis, "rest": rest, "lower": lower, "upper": upper,
              "mobility": mobility, "inherits": inheriting}
    return arrays, bones
