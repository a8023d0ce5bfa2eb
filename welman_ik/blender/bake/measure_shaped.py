"""The bake's pins of other kinds than POSITION measured on the pose Blender evaluates
(``BakeMeasure.frames``): frame by frame on the model with the pins' bones as Blender
evaluated them (``ShapedMeasure``), and the floor pins on every frame at once (``FloorFrames``:
each frame's pose matrices read raw with one ``foreach_get``, the pins' points and their depths
below the floor worked out for all frames together, as ``pins.goals.evaluated_kinematics``
(``evaluated_frames``) and ``FloorGoal.errors`` work them out frame by frame)."""

from __future__ import annotations

import numpy as np

from ...core import FloorGoal
from ..pins import goals as shaped_goals
from ..pins.goals import pin_bones
from ..rig.evaluated import Measured
from ..rig.evaluated import slack as evaluated_slack
from .tree import FIXED_KINDS


class ShapedMeasure:
    """The other kinds' pins of a bake (``plan``, its ``log``, its ``sampling``, whose current
    tree gives the structure they are measured on) measured on the evaluated pose."""

    def __init__(self, plan, log, sampling):
        self.plan, self.log, self.sampling = plan, log, sampling
        self._base = None  # (the model, its start, its kinematics there): what the pins are measured on
        self._parts: dict[tuple, tuple] = {}  # the pins that hold where they say: ``parts``

    def measure(self, frame: int, entries: list, tolerance: float) -> Measured:
        """The other kinds' pins of ``frame`` (``entries``) measured on the evaluated pose (the
        scene set on the frame)."""
        model = self.sampling.tree.model
        built, names, allowed, counted = self.parts(frame, entries, tolerance)
        kin = shaped_goals.evaluated_kinematics(self.plan.obj, model, model.q0, names, self.base_kinematics())
        errors = shaped_goals.goal_errors(built, kin)
        return Measured(errors, errors <= allowed, counted)

    def base_kinematics(self):
        """The model's kinematics at its start: the frames the pins are measured on where
        Blender's are not read (the same on every frame)."""
        model = self.sampling.tree.model
        if self._base is None or self._base[0] is not model or not np.array_equal(self._base[1], model.q0):
            self._base = (model, model.q0.copy(), model.skeleton.forward(model.q0))
        return self._base[2]

    def floors_key(self, entries: list) -> tuple | None:
        """What groups frames whose other kinds' pins are all floor pins that hold where they
        say (measured on all frames at once, ``FloorFrames``); None for any other pins."""
        if not all(pin.kind == "FLOOR" and not fields for pin, fields, _ in entries):
            return None
        return (self.sampling.tree, tuple((pin.as_pointer(), priority) for pin, _, priority in entries))

    def floor_frames(self, frame: int, entries: list, tolerance: float) -> FloorFrames:
        """The frames of the floor pins ``entries`` (``floors_key``), to read one by one."""
        return FloorFrames(self.plan.obj, self.sampling.tree.model, self.base_kinematics(),
                           self.parts(frame, entries, tolerance))

    def parts(self, frame: int, entries: list, tolerance: float) -> tuple:
        """(goals, the bones they are measured on, each goal's allowed error, whether each
        counts) of ``frame``'s other kinds' pins; the same on every frame for pins that hold
        where they say (``tree.FIXED_KINDS``), so worked out once for those."""
        tree = self.sampling.tree
        key = None
        if all(not fields and pin.kind in FIXED_KINDS for pin, fields, _ in entries):
            key = (tree, tuple((pin.as_pointer(), priority) for pin, _, priority in entries))
            found = self._parts.get(key)
            if found is not None:
                return found
        model = tree.model
        built = self.log.shaped_goals(tree, frame, entries)
        names = sorted({n for pin, *_ in entries for n in pin_bones(self.plan.obj, pin) if n in model.bones})
        places = np.array([fields.get("location", pin.location) for pin, fields, _ in entries]).reshape(-1, 3)
        counted = np.array([pin.weight > 0.0 for pin, *_ in entries], dtype=bool)
        parts = (built, names, tolerance + evaluated_slack(places), counted)
        if key is not None:
            self._parts[key] = parts
        return parts


class FloorFrames:
    """The frames of a bake whose other kinds' pins are all floor pins of the same goals
    (``parts``: ``ShapedMeasure.parts``' goals, bones, allowed errors and counted)."""

    def __init__(self, obj, model, base, parts):
        self.obj, self.parts = obj, parts
        built, names = parts[0], parts[1]
        index = {pb.name: i for i, pb in enumerate(obj.pose.bones)}
        by_joint = {model.bones[name].frame_joint: name for name in names}
        # each goal's bone (its frame as Blender evaluates it) or -1 (the model's frame at its start)
        bones = [by_joint.get(int(goal.joint[0])) for goal in built]
        self.rows = np.array([-1 if name is None else index[name] for name in bones], dtype=np.intp)
        self.scales = np.array([np.ones(3) if name is None else model.bones[name].scale for name in bones], dtype=float)
        self.fixed = np.array([base.frames[int(goal.joint[0])] for goal in built])  # (k, 4, 4)
        self.local = np.vstack([goal.local for goal in built])  # (k, 3)
        self.count = len(index)
        self.frames: list[int] = []
        self.matrices: list[np.ndarray] = []
        self.worlds: list = []

    def read(self, frame: int, world) -> None:
        """The pose as Blender evaluated it on ``frame`` (the scene set there) and the
        armature's world matrix ``world`` (rows) read there."""
        matrices = np.empty(16 * self.count, dtype=np.float32)
        self.obj.pose.bones.foreach_get("matrix", matrices)  # each bone's column by column
        self.frames.append(frame)
        self.matrices.append(matrices)
        self.worlds.append(world)

    def measured(self) -> dict[int, Measured]:
        built, _, allowed, counted = self.parts
        pose = np.array(self.matrices).reshape(len(self.frames), self.count, 4, 4).transpose(0, 1, 3, 2)
        world = np.array(self.worlds, dtype=float)  # (F, 4, 4)
        frames = np.broadcast_to(self.fixed, (len(self.frames), *self.fixed.shape)).copy()  # (F, k, 4, 4)
        evaluated = self.rows >= 0
        if evaluated.any():
            frames[:, evaluated] = shaped_goals.evaluated_frames(world[:, None], pose[:, self.rows[evaluated]].astype(float),
                                                                 self.scales[evaluated][None])
        points = np.einsum("fkij,kj->fki", frames[..., :3, :3], self.local) + frames[..., :3, 3]
        errors = FloorGoal.point_errors(built, points)  # (F, k)
        return {frame: Measured(e, e <= allowed, counted) for frame, e in zip(self.frames, errors)}
