"""The way between a hinge tree and the pose bones: the bones' channels read as joint values
(``read``), and joint values turned into each bone's channels in its own rotation mode,
continuous with the values the bones held, written in bulk (``write``) or only worked out
(``channels``). A bone that did not move keeps its channels exactly as they were read."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .channels import BoneChannels, PoseArrays, rotation_path
from .reading import read_eulers, read_eulers_frames
from .rotations import AXES, EULER_ORDERS, ROTATION_VALUES, order_axes


class Originals(Mapping):
    """Each bone's channels as read (name -> ``BoneChannels``), made when asked for: a bake
    keeps every frame's, a drag none."""

    def __init__(self, index: dict[str, int], channels: dict[str, np.ndarray]):
        self._index = index  # name -> its row in ``channels`` (shared by the frames of a clip)
        self._channels = channels

    def __getitem__(self, name: str) -> BoneChannels:
        i = self._index[name]
        return BoneChannels(values=tuple(tuple(values[i].tolist()) for values in self._channels.values()))

    def array(self, channel: str) -> np.ndarray:
        """One channel of every bone (bones, width), in this mapping's order, as read."""
        return self._channels[channel]

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


class WriteBack:
    """The channels of ``bones`` (name -> ``BoneJoints``) of ``obj``, from joint values of a
    tree of ``size`` joints; ``start`` takes what the pose bones hold as the values to
    compare with and to give back."""

    def __init__(self, obj, bones: dict, size: int):
        self.object = obj
        pose_bones = obj.pose.bones
        # Each bone's row in ``pose.bones``, its joints (the hinges in AXES order, then the
        # slides, or a joint one past the last, which reads as 0) and the axes of its hinges'
        # Euler order.
        row = {pb.name: i for i, pb in enumerate(pose_bones)}  # ``find`` is a linear search
        self.bones = bones
        self.rows = np.array([row[name] for name in bones], dtype=np.intp)
        none = [size] * 3
        self._joints = np.array([[*(b.hinges[a] for a in AXES), *((b.slides[a] for a in AXES) if b.slides else none)]
                                 for b in bones.values()], dtype=np.intp).reshape(-1, 6)
        self._orders = np.array([b.order for b in bones.values()], dtype=str).reshape(-1)
        self._axes = order_axes(self._orders)
        self.size = size
        self._names = list(bones)
        self._index = {name: i for i, name in enumerate(self._names)}  # a bone's row in the channels read
        self._modes = None  # the rotation modes ``start`` last saw

    def read(self, near: np.ndarray | None = None, pose: PoseArrays | None = None) -> np.ndarray:
        """Joint values of the pose bones' channels (``pose``: as read already), all bones at
        once; with ``near``, the Euler angles of a bone not stored in its hinges' order are
        the equivalent ones closest to those values (no jumps between equivalent angles from
        one frame to the next)."""
        pose = PoseArrays(self.object.pose.bones) if pose is None else pose
        hinges, slides = self._joints[:, :3], self._joints[:, 3:]
        q = np.empty(self.size + 1)  # the last: where the slides of a bone without any go
        q[hinges] = read_eulers(pose, self.rows, self._orders, self._axes,
                                None if near is None else np.append(near, 0.0)[hinges])
        q[slides] = pose["location"][self.rows]
        return q[:-1]

    def read_frames(self, arrays: dict, modes: np.ndarray, near: np.ndarray) -> np.ndarray:
        """``read`` of every frame of ``arrays`` (channel -> (F, bones, width): the pose's channels
        on F frames; ``modes`` the bones' rotation modes) at once: (F, n), each frame's Euler
        angles nearest the frame's before (the first: ``near``)."""
        hinges, slides = self._joints[:, :3], self._joints[:, 3:]
        q = np.empty((len(arrays["location"]), self.size + 1))  # the last: where slides of a bone without any go
        q[:, hinges] = read_eulers_frames(arrays, modes, self.rows, self._orders, self._axes,
                                          np.append(near, 0.0)[hinges])
        q[:, slides] = arrays["location"][:, self.rows]
        return q[:, :-1]

    def start(self, q: np.ndarray, pose: PoseArrays | None = None, originals: dict | None = None) -> dict:
        """Take joint values ``q`` as what the pose bones hold now (``pose``: as read already;
        ``originals``: its channels of this tree's bones, channel -> (bones, width), where picked
        out already); returns each bone's channels as read (name -> ``BoneChannels``)."""
        self._at_start = self._held = self.values(q)  # by bone: at the start, and as the pose bones hold them
        pose = PoseArrays(self.object.pose.bones) if pose is None else pose
        self._originals = originals or {channel: pose[channel][self.rows] for channel in BoneChannels.CHANNELS}
        originals = Originals(self._index, self._originals)
        modes = pose.modes[self.rows]
        if self._modes is None or not np.array_equal(modes, self._modes):  # (a bake's frames: the same modes)
            self._modes = modes
            self._paths = np.array([rotation_path(mode) for mode in modes.tolist()], dtype=str)
            self._by_path = {path: self._paths == path for path in ROTATION_VALUES if path in self._paths}
            # An Euler bone's own order (the others': their hinges').
            self._mode_axes = order_axes([m if m in EULER_ORDERS else b.order
                                          for m, b in zip(modes.tolist(), self.bones.values())])
        return originals

    def start_frames(self, q: np.ndarray, picked: dict, modes: np.ndarray) -> list[Originals]:
        """``start`` of every frame of a clip at once: joint values ``q`` (F, n), the tree's
        bones' channels ``picked`` (channel -> (F, bones, width)), every pose bone's rotation
        ``modes``; each frame's channels as read, the last frame's taken as the start."""
        last = {channel: values[-1] for channel, values in picked.items()}
        self.start(q[-1], PoseArrays.held(self.object.pose.bones, {}, modes), last)
        return [Originals(self._index, {channel: values[k] for channel, values in picked.items()})
                for k in range(len(q))]

    def values(self, q: np.ndarray) -> np.ndarray:
        """Each bone's joint values (n, 6): its hinges in AXES order, then its slides (0 when
        it has none)."""
        return np.append(q, 0.0)[self._joints]

    def moved(self, q: np.ndarray, angle: float = 0.0, length: float = 0.0) -> list[str]:
        """Names of the bones whose joint values in ``q`` differ from the start: by more than
        ``angle`` [rad] about a hinge or ``length`` [m] along a slide."""
        change = np.abs(self.values(q) - self._at_start)
        moved = (change[:, :3].max(axis=1) > angle) | (change[:, 3:].max(axis=1) > length)
        return [self._names[i] for i in np.flatnonzero(moved)]

    def _rotations(self, turned: np.ndarray, angles: np.ndarray, pose: PoseArrays) -> dict[str, tuple]:
        """The rotation channels of the bones ``turned`` (n,) bool turned to their hinge
        ``angles`` (n, 3), each in its own mode, continuous with the values ``pose`` holds:
        data path -> (bones (n,) bool, values)."""
        out = {}
        for path, kept in self._by_path.items():
            which = turned & kept
            if which.any():
                out[path] = which, ROTATION_VALUES[path](angles[which], self._axes[which], self._mode_axes[which],
                                                         pose[path][self.rows[which]])
        return out

    def write(self, q: np.ndarray) -> list[str]:
        """Put joint values q onto the pose bones, each in its own rotation mode.

        Bones whose values differ from the last written are written (a bone back at its
        start values gets its original channels back exactly); returns the names of the
        bones that differ from the start.
        """
        now = self.values(q)
        moved = np.any(now != self._at_start, axis=1)
        changed = now != self._held
        back = changed.any(axis=1) & ~moved
        pose = PoseArrays(self.object.pose.bones)
        if back.any():
            for channel, values in self._originals.items():
                pose.set(channel, self.rows[back], values[back])
        slid = changed[:, 3:].any(axis=1) & moved
        if slid.any():
            pose.set("location", self.rows[slid], now[slid, 3:])
        for path, (which, values) in self._rotations(changed[:, :3].any(axis=1) & moved, now[:, :3], pose).items():
            pose.set(path, self.rows[which], values)
        if pose.flush():
            self.object.update_tag(refresh={"DATA"})  # what setting a channel through RNA tags
        self._held = now
        return [self._names[i] for i in np.flatnonzero(moved)]

    def channels(self, q: np.ndarray) -> dict[str, tuple]:
        """What ``write(q)`` would put on each bone, without touching the pose bones:
        name -> (rotation data path, rotation values, location or None for a non-root)."""
        now = self.values(q)
        turned = np.any(now[:, :3] != self._at_start[:, :3], axis=1)
        slid = np.any(now[:, 3:] != self._at_start[:, 3:], axis=1)
        rotations = {path: self._originals[path].astype(float) for path in ROTATION_VALUES}
        for path, (which, values) in self._rotations(turned, now[:, :3], PoseArrays(self.object.pose.bones)).items():
            rotations[path][which] = values
        locations = np.where(slid[:, None], now[:, 3:], self._originals["location"])
        out = {}
        for i, (name, b) in enumerate(self.bones.items()):
            path = str(self._paths[i])
            out[name] = (path, tuple(rotations[path][i].tolist()), tuple(locations[i].tolist()) if b.slides else None)
        return out
