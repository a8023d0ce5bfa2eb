"""Step 0 of the bake: the plan, what holds over the whole bake, worked out once before the
first frame from the armature, its pins and its settings as they are then. Which pins are in
force on each frame, the bones the tree must hold and those it may move, where each fixed pin holds, and how much of the
corrections each frame takes (falling off toward a range end the action goes on past).
Nothing here changes the pose; a plan that cannot be baked is refused with a message."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...core.contacts import ease
from ..pins.checks import check_goal_bones, check_goal_point, check_pin_bones, rig_reach
from ..pins.following import check_cycles, placed_at, space_tracks
from ..pins.goals import SHAPED_KINDS, SUPPORT_KINDS, check_numbers, check_pin, describe, held_bones, pin_bones
from ..pins.setup import free_controls, movable_bones
from ..rig import keyframes
from ..rig.model import RigError, chain_to_root
from ..rig.targets import follows
from .edit import MotionEdit
from .frames import pins_by_frame, pins_on
from .report import frame_ranges
from .source import GoalSource


def check(obj, frame_start: int, frame_end: int, step: int, edit: MotionEdit | None = None,
          sourced: bool = False) -> None:
    """Refuse what cannot be baked, with a message (nothing changed); ``sourced``: the goals
    come from a source of goals (``BakePlan.source``), not from the pins."""
    if obj is None or obj.type != "ARMATURE":
        raise RigError("The active object is not an armature")
    if frame_end < frame_start:
        raise RigError(f"The frame range ends ({frame_end}) before it starts ({frame_start})")
    if step < 1:
        raise RigError("The step must be at least 1 frame")
    ad = obj.animation_data
    strips = ad is not None and ad.use_nla and any(not track.mute for track in ad.nla_tracks)
    if ad is None or (ad.action is None and (edit is not None or not strips)):
        raise RigError(f"Armature '{obj.name}' has no action to " + ("edit" if edit is not None else "bake"))
    if ad.use_tweak_mode:
        raise RigError("Leave NLA tweak mode first: the bake works on the armature's own action")
    if ad.action is not None and ad.action.library is not None:
        raise RigError(f"Action '{ad.action.name}' is linked from a library and cannot be baked into; "
                       "make it local first")
    if sourced:
        return
    check_pin_bones(obj, [p for p in obj.welman_ik.pins if p.enabled])
    for pin in obj.welman_ik.pins:
        if pin.enabled:
            check_numbers(pin)
        if pin.enabled and pin.kind in SHAPED_KINDS:
            check_pin(obj, pin, obj.welman_ik.solver)
    if edit is not None:
        if edit.bone not in obj.pose.bones:
            raise RigError(f"Bone '{edit.bone}' does not exist in armature '{obj.name}'")
        if not np.all(np.isfinite(edit.displacement)):
            raise RigError("The edit's target is not a number (NaN or infinite)")
        return
    if not any(pins_by_frame(obj.welman_ik, list(range(frame_start, frame_end + 1, step))).values()):
        raise RigError("No enabled pin is in force in the frame range")


@dataclass
class BakePlan:
    """What holds over a whole bake (``make`` works it out and checks it)."""

    context: object
    obj: object
    edit: MotionEdit | None
    frames: list[int]
    pins_by_frame: dict[int, list]  # the pins in force on each frame (an edited bone's give way to the edit)
    pin_index: dict[int, int]  # each pin's place in the settings' list, by its pointer
    names: list[str]  # the bones the tree holds: every bone pinned somewhere in the range, and the edited one
    chains: set[str]  # those bones and their chains to the root: the channels the samples need
    movable: list[str] | None  # the bones the solve may move (``movable_bones``; None: all)
    root_motion: str  # 'KEEP', 'FOLLOW' or 'FREE'
    fixed_goals: dict[int, np.ndarray]  # pin index -> where a fixed pin holds (its location)
    falloff: int  # frames over which a correction fades (``motion_falloff``, taken when the bake begins)
    shares: dict[int, float]  # frame -> the share of the corrections applied there (``range_weights``)
    frame_before: int  # the scene's frame when the bake began
    started: float  # perf_counter() when the bake began
    source: GoalSource | None = None  # each frame's goals from elsewhere, in place of the pins' (a retarget)
    translating: frozenset = frozenset()  # bones whose location channels are joints too
    turn_kept: frozenset = frozenset()  # bones moved by their location only
    tracks: dict = field(default_factory=dict)  # pin pointer -> its target space's world matrix on each frame

    def index(self, frame: int) -> int:
        """``frame``'s place in the range."""
        return self._index[frame]

    def __post_init__(self):
        self._index = {f: i for i, f in enumerate(self.frames)}

    @property
    def settings(self):
        return self.obj.welman_ik

    @property
    def tolerance(self) -> float:
        """[m] how near a goal counts as met: the setting, in the source's own length unit when
        the goals come from one (a retarget onto a character in centimetres asks the same share
        of its size as onto one in metres)."""
        return self.settings.tolerance * (self.source.length_unit if self.source is not None else 1.0)

    @property
    def priorities(self) -> tuple[int, int]:
        """(pins', edit's) priority: an edit is prioritised as its drag is, below the pins
        (they hold, it takes what is left), or with pins_first off, above them."""
        return (0, 1) if self.edit is None or self.settings.pins_first else (1, 0)

    def placed(self, pin, frame: int):
        """Where a pin that follows a target holds on ``frame`` (a world point, another kind's
        fields); None for a pin that follows nothing."""
        track = self.tracks.get(pin.as_pointer())
        return None if track is None else placed_at(pin, track[self._index[frame]])

    def own_target(self, pin, frame: int):
        """What ``pin`` asks on ``frame`` on its own, not eased: its target's place there, else
        a position pin's fixed place, another kind's own fields."""
        found = self.placed(pin, frame)
        if found is not None:
            return found
        return {} if pin.kind in SHAPED_KINDS else self.fixed_goals[self.pin_index[pin.as_pointer()]]

    def pins_in_force(self, frame: int) -> list:
        """The pins in force on ``frame``; an edited bone's own pins give way to the edit."""
        pins = self.pins_by_frame.get(frame)
        if pins is None:
            pins = [p for p in pins_on(self.settings, frame) if self.edit is None or p.bone != self.edit.bone]
        return pins

    @classmethod
    def make(cls, context, obj, frame_start: int, frame_end: int, step: int = 1, move_root: bool | None = None,
             edit: MotionEdit | None = None, source: GoalSource | None = None) -> BakePlan:
        """``move_root``: True as ``root_motion = 'FREE'``, False as 'KEEP'; None: the setting;
        ``source``: the goals come from it (``for_source``), not from the pins."""
        if source is not None:
            return cls.for_source(context, obj, source)
        check(obj, frame_start, frame_end, step, edit)
        started = time.perf_counter()
        settings = obj.welman_ik
        frames = list(range(frame_start, frame_end + 1, step))
        by_frame = {f: [p for p in pins if edit is None or p.bone != edit.bone]
                    for f, pins in pins_by_frame(settings, frames).items()}
        in_force = {p.as_pointer(): p for pins in by_frame.values() for p in pins}.values()
        pinned = set(held_bones(in_force))
        carried = {n for p in in_force if p.kind == "BALANCE" for n in pin_bones(obj, p)}
        names = sorted(pinned | carried | ({edit.bone} if edit is not None else set()))
        bare = [f for f in frames
                if any(p.kind == "BALANCE" and p.use_support for p in by_frame[f])
                and not any(p.kind in SUPPORT_KINDS for p in by_frame[f])]
        if bare:
            raise RigError("The balance pin holds over the support polygon, but no position or pose pin is in force "
                           f"on frame(s) {frame_ranges(bare)}: give the balance pin the frames of the plants, or "
                           "untick Support Polygon")
        check_goal_bones(obj, edit.bone if edit is not None else None, sorted(pinned))
        chains = {pb.name for name in names for pb in chain_to_root(obj.pose.bones[name])}
        # A motion edit moves the edited bone's chain (the chain_length setting), as its drag
        # does, and keeps the root on its path.
        chain_length = settings.chain_length if edit is not None else 0
        root_motion = settings.root_motion if move_root is None else ("FREE" if move_root else "KEEP")
        root_motion = "KEEP" if edit is not None and move_root is None else root_motion
        movable = movable_bones(obj, edit.bone if edit else "", chain_length, keep_root=root_motion == "KEEP")
        reach = rig_reach(obj)
        # Where each fixed pin holds: its ``location`` (Detect Contacts puts a plant's there: the
        # average of its frames).
        fixed = {i: check_goal_point(f"The location of {describe(pin)}", pin.location, reach)
                 for i, pin in enumerate(settings.pins) if pin.enabled and not follows(pin)
                 and ((not pin.follow and pin.bone in names) or pin.kind == "BALANCE")}
        # The targets the pins follow, where Blender evaluates them on each frame.
        check_cycles(obj, in_force)
        tracks = space_tracks(context.scene, in_force, frames)
        # Whether the action goes on before and after the range: a bake in a longer action
        # eases its corrections in and out inside the range, so its ends do not jump.
        open_ends = (False, False) if edit is not None else keyframes.keyed_past(obj, frame_start, frame_end)
        falloff = max(settings.motion_falloff, 0)
        return cls(context, obj, edit, frames, by_frame, {p.as_pointer(): i for i, p in enumerate(settings.pins)},
                   names, chains, movable, root_motion, fixed, falloff, range_weights(frames, open_ends, falloff),
                   context.scene.frame_current, started, translating=frozenset(free_controls(obj, pinned)),
                   tracks=tracks)


    @classmethod
    def for_source(cls, context, obj, source: GoalSource) -> BakePlan:
        """The plan of a bake whose goals come from ``source`` (a retarget): its frames and
        bones, none of the armature's pins, the roots free to move (their path is a goal),
        nothing eased (the action is new)."""
        frames = list(source.frames)
        check(obj, frames[0], frames[-1], 1, sourced=True)
        names = source.bones
        chains = {pb.name for name in names for pb in chain_to_root(obj.pose.bones[name])}
        return cls(context, obj, None, frames, {f: [] for f in frames}, {}, names, chains, source.movable(), "FREE",
                   {}, max(obj.welman_ik.motion_falloff, 0), {f: 1.0 for f in frames}, context.scene.frame_current,
                   time.perf_counter(), source, source.translating(), source.turn_kept())


def range_weights(frames: list[int], open_ends: tuple[bool, bool], falloff: int) -> dict[int, float]:
    """frame -> the share of the corrections applied there: 1, falling as half a cosine to
    nothing over the ``falloff`` frames at a range end the action goes on past."""
    falloff = max(falloff, 0)
    at = np.asarray(frames)
    weight = np.ones(len(frames))
    if open_ends[0]:
        weight *= 1.0 - ease(at - frames[0] + 1, falloff)
    if open_ends[1]:
        weight *= 1.0 - ease(frames[-1] + 1 - at, falloff)
    return {frame: float(w) for frame, w in zip(frames, weight)}
