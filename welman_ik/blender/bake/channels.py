"""A bake's solutions as pose channels, every frame at once.

``RigModel.channels`` turns one solution into what each bone's channels would hold. A bake
has one solution per frame; ``Solutions`` keeps them and turns them all into channels in
one pass of array operations per bone, with the same results: a bone whose hinges did not
move keeps the values the animation gave it on that frame, and a root its location unless
its slides moved. A quaternion bone takes its hinges' Euler angles as a quaternion, on the
hemisphere of its animated value (so keys interpolate cleanly); an Euler bone of the
hinges' own order takes the angles as they are, an Euler bone of another order their
equivalent angles nearest its animated ones (``rotations.euler_values``); an axis-angle bone
goes through ``channels.rotation_channels`` frame by frame, continuous with its animated value.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
from mathutils import Euler, Quaternion

from ..rig.channels import BoneChannels, rotation_channels
from ..rig.keyframes import rotation_path
from ..rig.rotations import AXES, EULER_ORDERS, euler_quaternions, euler_values, order_axes


def _animated(mode: str, original: BoneChannels) -> SimpleNamespace:
    """What ``rotation_channels`` reads of a pose bone, as it held its animated values."""
    _, quaternion, euler, axis_angle = original.values
    return SimpleNamespace(rotation_mode=mode, rotation_quaternion=Quaternion(quaternion),
                           rotation_euler=Euler(euler, mode if mode in EULER_ORDERS else "XYZ"),
                           rotation_axis_angle=axis_angle)


class Solutions:
    """The frames solved with one tree: each frame's solution ``q`` and the animated values
    it started from (``RigModel.q0`` and ``RigModel.originals`` of that frame)."""

    def __init__(self, model):
        pose_bones = model.object.pose.bones
        # name, hinge joints (3,), slide joints (3,) or None, hinge order, rotation mode, data path
        self.bones = [(name, np.array([b.hinges[a] for a in AXES]),
                       np.array([b.slides[a] for a in AXES]) if b.slides else None,
                       b.order, pose_bones[name].rotation_mode, rotation_path(pose_bones[name]))
                      for name, b in model.bones.items()]
        self.frames: list[int] = []
        self.q: list[np.ndarray] = []
        self.q0: list[np.ndarray] = []
        self.originals: list[dict] = []  # bone -> BoneChannels

    def clear(self) -> None:
        self.frames, self.q, self.q0, self.originals = [], [], [], []

    def add(self, frame: int, q: np.ndarray, q0: np.ndarray, originals: dict) -> None:
        self.frames.append(frame)
        self.q.append(q)
        self.q0.append(q0)
        self.originals.append(originals)

    def channels(self) -> dict[int, dict[str, tuple]]:
        """frame -> bone -> (rotation data path, rotation values, location or None for a
        non-root), as ``RigModel.channels`` gives them."""
        return self._channels(self.frames, self.q, self.q0, self.originals)

    @property
    def index(self) -> dict[int, int]:
        """frame -> its place in ``frames``."""
        return {frame: i for i, frame in enumerate(self.frames)}

    def channels_of(self, changed: dict[int, np.ndarray]) -> dict[int, dict[str, tuple]]:
        """``channels`` of some of the frames solved with this tree, each with the joint values
        ``changed`` gives it instead of its solution (the plants' ease-in)."""
        at = self.index
        frames = list(changed)
        rows = [at[frame] for frame in frames]
        return self._channels(frames, [changed[frame] for frame in frames], [self.q0[i] for i in rows],
                              [self.originals[i] for i in rows])

    def _channels(self, frames: list[int], q, q0, originals) -> dict[int, dict[str, tuple]]:
        if not frames:
            return {}
        q, q0 = np.array(q), np.array(q0)
        # Each channel of every frame's animated values at once: (frames, bones, width).
        held = {channel: np.array([o.array(channel) for o in originals]) for channel in BoneChannels.CHANNELS}
        columns = []  # each bone's entry on every frame
        for row, (name, hinges, slides, order, mode, path) in enumerate(self.bones):
            angles = q[:, hinges]
            kept = np.all(angles == q0[:, hinges], axis=1)
            axes = np.repeat(order_axes([order]), len(angles), axis=0)
            if mode == "QUATERNION":
                turned = euler_quaternions(angles, axes)
                animated = held["rotation_quaternion"][:, row].astype(float)
                turned[np.einsum("ij,ij->i", turned, animated) < 0.0] *= -1.0
                rotations = turned.tolist()
            elif mode == order:
                rotations = angles.tolist()
            elif mode in EULER_ORDERS:  # continuous with the animated angles
                rotations = euler_values(angles, axes, np.repeat(order_axes([mode]), len(angles), axis=0),
                                         held["rotation_euler"][:, row].astype(float)).tolist()
            else:
                rotations = [rotation_channels(_animated(mode, o[name]), Euler(a, order))[1] if not k else None
                             for o, a, k in zip(originals, angles.tolist(), kept)]
            animated_rotations = held[path][:, row].tolist()
            chosen = map(tuple, (a if k else r for a, r, k in zip(animated_rotations, rotations, kept.tolist())))
            if slides is None:
                locations = itertools.repeat(None)
            else:
                moved = ~np.all(q[:, slides] == q0[:, slides], axis=1)
                locations = map(tuple, np.where(moved[:, None], q[:, slides], held["location"][:, row]).tolist())
            columns.append(list(zip(itertools.repeat(path), chosen, locations)))
        names = [bone[0] for bone in self.bones]
        return {frame: dict(zip(names, entries)) for frame, entries in zip(frames, zip(*columns))}
