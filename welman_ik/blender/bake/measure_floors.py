"""The floor pins of a bake measured on every frame at once (``BakeMeasure.frames``): each
frame's pose matrices read raw as Blender evaluated them (one ``foreach_get``), the pins'
points and their depths below the floor worked out for all frames together, as
``pins.goals.evaluated_kinematics`` and ``FloorGoal.errors`` work them out frame by frame."""

from __future__ import annotations

import numpy as np

from ...core import FloorGoal
from ..rig.evaluated import Measured


class FloorFrames:
    """The frames of a bake whose other kinds' pins are all floor pins of the same goals
    (``parts``: ``BakeMeasure._shaped_parts``' goals, bones, allowed errors and counted)."""

    def __init__(self, obj, model, base, parts):
        self.obj, self.parts = obj, parts
        built, names = parts[0], parts[1]
        index = {pb.name: i for i, pb in enumerate(obj.pose.bones)}
        by_joint = {model.bones[name].frame_joint: name for name in names}
        # each goal's bone (its frame as Blender evaluates it) or -1 (the model's frame at its start)
        bones = [by_joint.get(int(goal.joint[0])) for goal in built]
        self.rows = np.array([-1 if name is None else index[name] for name in bones], dtype=np.intp)
        scales = [np.ones(3) if name is None else np.asarray(model.bones[name].scale, dtype=float) for name in bones]
        self.scales = np.where(np.abs(scales) > 1e-12, scales, 1.0)  # (k, 3) each column's
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
            own = world[:, None] @ pose[:, self.rows[evaluated]].astype(float)
            own[:, :, :3, :3] /= self.scales[evaluated][None, :, None, :]
            frames[:, evaluated] = own
        points = np.einsum("fkij,kj->fki", frames[..., :3, :3], self.local) + frames[..., :3, 3]
        errors = FloorGoal.point_errors(built, points)  # (F, k)
        return {frame: Measured(e, e <= allowed, counted) for frame, e in zip(self.frames, errors)}
