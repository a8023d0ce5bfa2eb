"""What the pins of one armature share in one draw (``PinScene``), read in bulk once: the
pose bones' evaluated frames and tails, the pins' properties (in the world: a pin that follows
a target has its rows put where the target has them now, ``following``), which pins are in
force on the scene's frame, the support and the centre of mass, and the signature the drawing
is kept by.
"""

from __future__ import annotations

import bpy
import numpy as np

from ...pins.goals import SUPPORT_KINDS, massive_bones
from ...rig import selection
from .following import place_followers

MIN_THRESHOLD = 1e-4  # [m] the least miss drawn as one (as for position pins)


def current_frame() -> int | None:
    """The frame of the context's scene (None without one)."""
    scene = getattr(bpy.context, "scene", None)
    return None if scene is None else int(scene.frame_current)


def pins_in_force(pins, frame: int | None) -> np.ndarray:
    """(k,) bool: which of ``pins`` are in force on ``frame``, ``bake.frames.in_force`` for all
    of them in one bulk read (a draw reads every pin); every one for ``frame`` None."""
    k = len(pins)
    if frame is None:
        return np.ones(k, dtype=bool)
    starts, ends = np.empty(k, dtype=np.int32), np.empty(k, dtype=np.int32)
    pins.foreach_get("frame_start", starts)
    pins.foreach_get("frame_end", ends)
    return ((starts == 0) & (ends == 0)) | ((starts <= frame) & (frame <= ends))


class PinScene:
    """What the pins of one armature share in one draw: its world matrix, the miss threshold,
    every pose bone's evaluated frame and tail (read in bulk once), which pins are in force on
    ``frame`` (the context scene's current frame unless given), the pins that follow a target
    (``followers``), the centre of mass (once)."""

    def __init__(self, obj, frame: int | None = None):
        self.obj = obj
        self.threshold = max(float(obj.welman_ik.tolerance), MIN_THRESHOLD)
        pose_bones = obj.pose.bones
        n = len(pose_bones)
        self.names = pose_bones.keys()
        self.index = {name: i for i, name in enumerate(self.names)}
        matrices = np.empty(16 * n, dtype=np.float32)
        tails = np.empty(3 * n, dtype=np.float32)
        pose_bones.foreach_get("matrix", matrices)  # column by column
        pose_bones.foreach_get("tail", tails)
        world = np.array(obj.matrix_world, dtype=float)
        self._raw = [matrices, tails, world]
        self._frames = None
        self._com = None
        self._support = None
        pins = self.pins = obj.welman_ik.pins
        k = len(pins)
        self.locations, self.directions = (_bulk(pins, name, 3) for name in ("location", "direction"))
        self.rotations = _bulk(pins, "rotation", 4)
        self.anchors, self.target_anchors, self.radii = (_bulk(pins, name, 1) for name in
                                                         ("anchor", "target_anchor", "radius"))
        self.held_axes = np.empty(3 * k, dtype=bool)
        pins.foreach_get("axes", self.held_axes)
        self.held_axes = self.held_axes.reshape(k, 3)
        self.in_force = pins_in_force(pins, current_frame() if frame is None else frame)
        self.followers = place_followers(self)
        self._raw += [self.locations, self.directions, self.rotations, self.anchors, self.target_anchors, self.radii,
                      self.held_axes]

    def signature(self) -> tuple:
        """Everything the pins' drawing depends on: the same signature, the same drawing. The
        scene's frame counts through which pins are in force on it."""
        pins, pose_bones = self.pins, self.obj.pose.bones
        flags = []
        for name, dtype in (("kind", np.int32), ("aim_axis", np.int32), ("enabled", bool), ("use_support", bool)):
            values = np.empty(len(pins), dtype=dtype)
            pins.foreach_get(name, values)
            flags.append(values)
        locks = np.ones(len(pose_bones), dtype=bool)
        for axis in ("lock_ik_x", "lock_ik_y", "lock_ik_z"):
            lock = np.empty(len(pose_bones), dtype=bool)
            pose_bones.foreach_get(axis, lock)
            locks &= lock
        self.locked = [i for i in np.flatnonzero(locks) if not selection.is_hidden(pose_bones[i])]
        masses = None
        if any(p.kind == "BALANCE" for p in pins):
            masses = np.empty(len(pose_bones), dtype=np.float32)
            pose_bones.foreach_get("welman_ik_mass", masses)
            masses = masses.tobytes()
        return (self.obj.as_pointer(), self.threshold, tuple(self.names), tuple(self.locked), masses,
                tuple((p.bone, p.target_bone) for p in pins),
                b"".join(a.tobytes() for a in [*self._raw, *flags, self.in_force]) + self.followers.signature())

    def frames(self) -> tuple:
        """(heads, tails, unit axes (n, 3, 3), lengths) of every pose bone, world."""
        if self._frames is None:
            matrices, tails, world = self._raw[:3]
            frames = world @ matrices.reshape(-1, 4, 4).transpose(0, 2, 1).astype(float)
            heads = frames[:, :3, 3]
            tails = tails.reshape(-1, 3).astype(float) @ world[:3, :3].T + world[:3, 3]
            axes = frames[:, :3, :3] / np.maximum(np.linalg.norm(frames[:, :3, :3], axis=1), 1e-12)[:, None, :]
            self._frames = heads, tails, axes, np.maximum(np.linalg.norm(tails - heads, axis=1), 1e-6)
        return self._frames

    def bone(self, name: str):
        """(head, tail, unit axes 3x3 (columns X Y Z), length) of pose bone ``name``, world."""
        i = self.index[name]
        heads, tails, axes, lengths = self.frames()
        return heads[i], tails[i], axes[i], float(lengths[i])

    def point(self, name: str, anchor: float) -> np.ndarray:
        i = self.index[name]
        heads, tails = self.frames()[:2]
        return heads[i] + float(anchor) * (tails[i] - heads[i])

    def support(self) -> np.ndarray:
        """(k, 3) the locations of the enabled position and pose pins in force on the frame: the
        support polygon's corners."""
        if self._support is None:
            rows = [i for i, p in enumerate(self.pins) if p.enabled and p.kind in SUPPORT_KINDS and self.in_force[i]
                    and i not in self.followers.lost]
            self._support = self.locations[rows].reshape(-1, 3)
        return self._support

    def centre_of_mass(self) -> np.ndarray:
        if self._com is None:
            names, masses, fractions = massive_bones(self.obj)
            if not names:
                raise ValueError("no bone has mass")
            rows = np.array([self.index[name] for name in names])
            heads, tails = self.frames()[:2]
            points = heads[rows] + fractions[:, None] * (tails[rows] - heads[rows])
            self._com = masses @ points / masses.sum()
        return self._com


def _bulk(collection, name: str, size: int) -> np.ndarray:
    """Property ``name`` of every item of ``collection`` (k, size), or (k,) for size 1."""
    values = np.empty(len(collection) * size, dtype=np.float32)
    collection.foreach_get(name, values)
    values = values.astype(float)
    return values if size == 1 else values.reshape(-1, size)
