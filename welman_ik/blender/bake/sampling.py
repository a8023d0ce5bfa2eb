"""Step 1 of the bake, sampling the clip: the pose the animation gives on a frame, put onto
the pose bones' channels (by evaluating the action's F-curves in bulk where that is all
there is, else by a scene frame change: NLA, drivers, constraints, as Blender evaluates
it), and read into the hinge tree as that frame's joint values and kinematics (``Sample``).
Each frame is sampled once for its solve, in order, as the solve of a frame carries on from
the last one's (the plants' ease-in and the correction sample again the frames they change)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.skeleton import Kinematics
from ..rig import keyframes
from ..rig.channels import PoseArrays
from ..rig.model import RigModel
from .tree import Tree


def direct_sampling(obj) -> bool:
    """True when the object's pose on a frame is simply its action's F-curves there: no
    NLA, drivers, constraints, parent or object-level animation. The bake then evaluates
    the F-curves itself instead of changing the scene's frame."""
    ad = obj.animation_data
    if ad is None or ad.action is None or obj.parent is not None or len(obj.constraints):
        return False
    if ad.use_tweak_mode or (ad.use_nla and any(not track.mute for track in ad.nla_tracks)):
        return False
    if ad.action_influence != 1.0 or ad.action_blend_type != "REPLACE" or len(ad.drivers):
        return False
    render = obj.users_scene[0].render if obj.users_scene else None
    if render is not None and render.frame_map_old != render.frame_map_new:  # time remapping
        return False
    data = obj.data.animation_data
    if data is not None and (data.action is not None or len(data.drivers)):
        return False
    if any(len(pb.constraints) for pb in obj.pose.bones):
        return False
    return all(fc.data_path.startswith("pose.bones[") for fc in keyframes.action_fcurves(obj) if not fc.mute)


class Sampler:
    """Puts the pose the animation gives on a frame onto the pose bones' channels: by
    evaluating the action's F-curves where that is all there is (``direct_sampling``),
    else by a scene frame change (NLA, drivers, constraints: as Blender evaluates it)."""

    WIDTHS = {"location": 3, "rotation_quaternion": 4, "rotation_euler": 3, "rotation_axis_angle": 4, "scale": 3}
    AHEAD = 1024  # frames sampled ahead of those asked for, kept for the next ones

    def __init__(self, scene, obj, bones=None, direct: bool | None = None):
        """``bones``: the names whose channels matter (None: all of them)."""
        self.scene, self.obj = scene, obj
        self.direct = direct_sampling(obj) if direct is None else direct
        self.until = 0  # the last frame the F-curves are sampled ahead to (``_sampled``)
        self._kept = None  # (values, first frame, last frame) sampled already
        # Per channel: every bone's values read at once, the curves' values put in at their
        # places (bone's place times the channel's width plus the curve's index), written at once.
        self.channels: list[tuple[str, np.ndarray, np.ndarray, list]] = []
        if self.direct:
            place = {name: i for i, name in enumerate(obj.pose.bones.keys())}
            connected = {pb.name for pb in obj.pose.bones if pb.bone.use_connect}
            found: dict[str, list] = {}
            for curve in keyframes.action_fcurves(obj):
                owner, _, prop = curve.data_path.rpartition(".")
                if curve.mute or prop not in self.WIDTHS or not (len(curve.keyframe_points) or curve.modifiers):
                    continue  # Blender skips muted curves and empty ones
                name = owner[len('pose.bones["'):-len('"]')]
                if prop == "location" and name in connected:
                    continue  # a connected bone's head is its parent's tail, whatever its location
                if name in place and (bones is None or name in bones) and 0 <= curve.array_index < self.WIDTHS[prop]:
                    found.setdefault(prop, []).append((place[name] * self.WIDTHS[prop] + curve.array_index, curve))
            for prop, entries in found.items():
                buffer = np.empty(len(place) * self.WIDTHS[prop])
                self.channels.append((prop, buffer, np.array([i for i, _ in entries], dtype=np.intp),
                                      [curve for _, curve in entries]))

    def values(self, frames: list[int]) -> dict[str, np.ndarray]:
        """Every pose channel on each of ``frames`` as ``apply`` would put it on the bones
        (direct sampling): channel -> (F, bones, width) float32, as the bones hold them."""
        pose_bones = self.obj.pose.bones
        out = {}
        for prop, width in self.WIDTHS.items():
            held = np.empty(len(pose_bones) * width, dtype=np.float32)
            pose_bones.foreach_get(prop, held)
            out[prop] = np.repeat(held[None], len(frames), axis=0)
        every, first = self._sampled(frames)
        column = 0
        for prop, _buffer, places, curves in self.channels:
            out[prop][:, places] = every[np.asarray(frames) - first, column:column + len(curves)]
            column += len(curves)
        return {prop: values.reshape(len(frames), len(pose_bones), self.WIDTHS[prop]) for prop, values in out.items()}

    def _sampled(self, frames: list[int]) -> tuple[np.ndarray | None, int]:
        """(every curve of ``channels`` on every frame from the first of ``frames`` on, the frame
        of its first row): sampled by Blender at once (``keyframes.sample_fcurves``), up to
        ``until`` (the bake's last frame) at most ``AHEAD`` frames past the last of ``frames``,
        and kept for the frames asked for next (a bake's chunks, one after another)."""
        curves = [c for *_, group in self.channels for c in group]
        if not curves or not frames:
            return None, frames[0] if frames else 0
        kept = self._kept
        if kept is not None and kept[1] <= frames[0] and frames[-1] <= kept[2]:
            return kept[0], kept[1]
        last = max(frames[-1], min(self.until, frames[-1] + self.AHEAD))
        every = keyframes.sample_fcurves(self.obj, curves, frames[0], last)
        self._kept = (every, frames[0], last)
        return every, frames[0]

    def apply(self, frame: int) -> None:
        if not self.direct:
            self.scene.frame_set(frame)
            return
        pose_bones = self.obj.pose.bones
        for prop, buffer, places, curves in self.channels:
            pose_bones.foreach_get(prop, buffer)
            buffer[places] = [curve.evaluate(frame) for curve in curves]
            pose_bones.foreach_set(prop, buffer)


class Sample(NamedTuple):
    """A frame's animated pose: the tree it fits, its joint values and their kinematics, the
    tree's skeleton and ball-joint ranges on that frame (widened to hold a pose past them),
    and each bone's channels as the animation gives them."""

    frame: int
    tree: Tree
    q0: np.ndarray
    animated: object  # Kinematics of ``q0``
    skeleton: object  # Skeleton
    ranges: object  # SphericalRanges or None
    originals: dict  # bone -> BoneChannels


class ClipSampler:
    """The samples of a bake's frames (``plan``: the bones and joints the tree holds). One
    tree serves every frame its animated pose fits; a new one is built where it does not
    (a scale, an unconnected bone's location or a driven orientation changed)."""

    def __init__(self, plan, direct: bool | None = None):
        self.plan = plan
        self.sampler = Sampler(plan.context.scene, plan.obj, plan.chains, direct)
        self.sampler.until = plan.frames[-1] if plan.frames else 0
        self.trees: list[Tree] = []

    @property
    def tree(self) -> Tree | None:
        return self.trees[-1] if self.trees else None

    def at(self, frame: int, kinematics: bool = True) -> Sample:
        """The animated pose on ``frame``, put on the bones and read into the tree
        (``kinematics`` False: its kinematics left to the caller, ``with_kinematics``)."""
        self.sampler.apply(frame)
        tree = self.tree
        if tree is None or not tree.model.refresh():
            tree = Tree(RigModel(self.plan.obj, self.plan.names, self.plan.movable, self.plan.translating,
                                 keep_turn=self.plan.turn_kept))
            self.trees.append(tree)
        model = tree.model
        return Sample(frame, tree, model.q0, model.skeleton.forward(model.q0) if kinematics else None, model.skeleton,
                      model.ranges, model.originals)


def frames_at_once(sampling: ClipSampler, frames: list[int]) -> list[Sample]:
    """The samples of ``frames`` (in order), without their kinematics: read at once from the
    action's F-curves where the sampling is direct and the tree fits them all
    (``RigModel.frames``), else frame by frame."""
    if sampling.tree is None:  # (the first frame builds the tree)
        return [sampling.at(frames[0], kinematics=False), *frames_at_once(sampling, frames[1:])] if frames else []
    sampler = sampling.sampler
    if sampler.direct and frames:
        model = sampling.tree.model
        read = model.frames(sampler.values(frames), PoseArrays(sampler.obj.pose.bones).modes)
        if read is not None:
            return [Sample(frame, sampling.tree, q0, None, skeleton, ranges, originals)
                    for frame, (q0, originals, skeleton, ranges) in zip(frames, read)]
    return [sampling.at(frame, kinematics=False) for frame in frames]


def with_kinematics(samples: list[Sample]) -> list[Sample]:
    """``samples`` with their animated kinematics, each tree's frames worked out at once."""
    out = list(samples)
    trees: dict[int, list[int]] = {}
    for k, sample in enumerate(samples):
        trees.setdefault(id(sample.tree), []).append(k)
    for members in trees.values():
        frames = samples[members[0]].skeleton.forward_frames(np.array([samples[k].q0 for k in members]))
        frames.flags.writeable = False  # (shared, as ``Skeleton.forward``'s kept results are)
        for k, kin in zip(members, frames):
            out[k] = samples[k]._replace(animated=Kinematics(samples[k].skeleton, samples[k].q0, kin))
    return out
