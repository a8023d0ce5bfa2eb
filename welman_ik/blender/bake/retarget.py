"""Retarget: the motion of a source armature baked onto the active one (the target) by goals,
a step at the start of the bake's pipeline. ``Retarget`` samples the source once over the
range (every mapped bone's evaluated pose, in bulk) and its feet's contacts, scales both
onto the target, and gives each frame's goals to the bake (``goals``), in priority:

0. the plants (the source's contacts, ``contacts.plants`` on its feet, at the target's
   feet, each held whole from heel strike to toe-off), the hips' path, and every foot's heel
   and toe on or above the target's floor (``FloorGoal``; unless ``retarget_floor`` is off),
   on every frame;
1. the hands' (from their shoulders), the unplanted feet's and the head's places, the
   ends' orientations, and the trunk's orientations (the hips, spine, chest, neck and
   clavicles): the limbs do what the limbs can;

below them the lined-up pose (``retarget_pose``, keyed first): each frame's preferred pose and
the solve's start as it is, not with the last frame's correction carried on, so that the
knees and elbows bend as the source's wherever no goal needs them otherwise, and a twist (or
a knee bent backwards) one frame needed is not kept by the next. The plants' corrections ease
in and out on the feet's places instead (``retarget_feet.ease_plants``). Every goal can be
met, so each frame's solve converges in a few iterations.
``measure`` reads the written action back on the evaluated pose and gives each goal group's
largest miss.

Scaling: a source point x goes to the target's world as t + s (x - o), ``t`` and ``o`` the
two objects' places and ``s`` the scale. The hips and feet keep the target's own offset from
the scaled source in the rest pose (so the target's hips keep their height and its feet
their stance), the body lifted, frame by frame, so that the planted heels stand at their
rest height on the target's floor (``Retarget.lifts``); the hands are held from their shoulders and the
head follows relative to the hips. An orientation follows the source bone's turn from its rest, applied to the target
bone's rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ...core import FloorGoal, OrientationGoal, PositionGoal, TogetherGoal
from ...core.anatomy.retarget import retarget_roles
from ..rig.body import pose_matrices, rest_ends, rest_matrices, world_scale
from ..rig.model import RigError, chain_to_root
from ..rig.retarget_map import body_unit, bone_tree
from . import contacts, retarget_feet, retarget_pose, retarget_twist
from . import retarget_limbs as limbs
from .retarget_feet import Plant, unit

PLANTS, ENDS, LINED = 0, 1, 2  # the goals' priorities (the lined-up pose below them, as the preferred pose)
GROUPS = ("plants", "hips", "hands", "feet", "head", "orientations")


LIMB_PARTS = frozenset({"thigh", "shin", "foot", "upper_arm", "forearm", "hand"})  # the source bones the gates read
TRUNK_ROLES = ("spine", "chest", "neck", "clavicle", "hips", "pelvis", "torso")


END = "\N{RIGHTWARDS ARROW}end"  # after a source bone's name: the end of that bone (a hand the source lacks)


def _group(source_role: str) -> str:
    for word, group in (("hand", "hands"), ("foot", "feet"), ("head", "head")):
        if source_role.startswith(word):
            return group
    return ""


@dataclass
class Line:
    """One map line as the retarget uses it: the target bone, its source bone, what it follows
    (``place``, ``turn``), its weight and its group ('hips', 'hands', 'feet', 'head', or ''
    for an orientation alone)."""

    target: str
    source: str
    place: bool
    turn: bool
    weight: float
    group: str
    base: str = ""  # a hand's: the target bone at whose head its limb starts (its place is kept from there)
    trunk: bool = False  # the spine, chest, neck, clavicles or the hips' turn: held with the ends, above the limbs


@dataclass
class Retarget:
    """What a retarget holds over the range: the map's ``lines``, the ``frames``, and per frame
    (index) each line's goal place (``places``: line -> (frames, 3)) and orientation
    (``turns``: line -> (frames, 3, 3)), all in the target's world; the ``plants``."""

    target: object
    source: object
    scale: float
    frames: list[int]
    lines: list[Line]
    places: dict[int, np.ndarray] = field(default_factory=dict)
    turns: dict[int, np.ndarray] = field(default_factory=dict)
    plants: list[Plant] = field(default_factory=list)
    rest: dict[str, np.ndarray] = field(default_factory=dict)  # target bone -> its rest world matrix (4, 4)
    offsets: dict[int, np.ndarray] = field(default_factory=dict)  # a hand's line -> its place from its base (frames, 3)
    reference: int = 0  # the frame (index) on which the target was lined up with the source
    source_heads: dict[str, np.ndarray] = field(default_factory=dict)  # source bone -> its head (frames, 3), world
    source_roles: dict[str, str] = field(default_factory=dict)  # source bone -> its role (as the naming says)
    carriers: dict[str, str | None] = field(default_factory=dict)  # turned bone -> the turned bone that carries it
    heads: dict[str, np.ndarray] = field(default_factory=dict)  # target bone -> (frames, 3) its head lined up, world
    # Each foot's points held on or above the target's floor on every frame: (bone, point in its
    # rest world frame, the height it has when the foot stands at rest).
    floors: list[tuple[str, np.ndarray, float]] = field(default_factory=list)
    # The lined-up pose (keyed first) is each frame's preferred pose where it is what Blender
    # evaluates; on a rig whose controls move other bones by constraints (a Rigify rig's IK
    # limbs) its channels do not follow them, and the last frame's correction is carried on.
    prefers_animated: bool = True
    # The rig's controls move the bones that show the body by constraints (a generated Rigify
    # rig's: its trunk's controls carry the limbs otherwise than their parents say).
    constrained: bool = False
    sought: bool = False  # whether the source's foot contacts were looked for (and planted)
    length_unit: float = 1.0  # the target's body against a grown person's (``retarget_map.body_unit``)
    twists: list = field(default_factory=list)  # the limbs the rig's own IK bends (``retarget_twist.Limb``)

    @property
    def keyed(self) -> list[str]:
        """Every bone the retarget keys in its lined-up pose and measures."""
        return sorted({line.target for line in self.lines} | {line.base for line in self.lines if line.base}
                      | {p.bone for p in self.plants})

    @property
    def bones(self) -> list[str]:
        """The bones the solve's tree holds: those it has goals for (a placed bone, a turned bone
        of the trunk, a hand's base, a planted foot). A finger or toe that only turns as lined
        up stays as keyed, out of the solve (thirty fingers in the tree would change how it
        shares a correction among the joints it may move)."""
        return sorted({line.target for line in self.lines if line.place or (line.turn and line.trunk)}
                      | {line.base for line in self.lines if line.base} | {p.bone for p in self.plants})

    # As a source of goals on the bake's pipeline (``source.GoalSource``).
    rescue = False  # each frame starts from the lined-up pose: no rescue from a start far off
    keys_mechanism = False  # the rig's driven and hidden bones are not keyed

    def frame_key(self, index: int) -> tuple:
        """Frames alike (the same plants in force) move the same joints."""
        return ("retarget", self.plants_on(index))

    def close_loop(self, plan, sampling, results: dict) -> None:
        from .correct import close_retarget_loop

        close_retarget_loop(plan, sampling, results)
        retarget_twist.twist(plan.obj, self, self.frames)  # the limbs the rig's IK bends, in the source's plane

    def hips(self) -> int | None:
        return next((i for i, line in enumerate(self.lines) if line.group == "hips"), None)

    def movable(self) -> list[str]:
        """The bones the solve may move: every bone but the parentless ones the map leaves
        alone (a generated Rigify rig's 'root' stays where it is); on a rig whose controls
        carry the body by constraints, only the mapped ones (a Rigify rig's FK spine and tweak
        controls, between its torso and its legs, turn them through constraints that mix
        in other controls: the solve's model cannot follow them, and the animator did not
        ask for them)."""
        mapped = {line.target for line in self.lines}
        return [pb.name for pb in self.target.pose.bones
                if (pb.parent is not None or pb.name in mapped) and pb.name not in self.kept
                and (pb.name in mapped or not self.constrained)]

    @cached_property
    def kept(self) -> frozenset[str]:
        """The trunk's turned-only bones, and a head placed by the trunk below it, kept as lined
        up on a rig whose controls carry the body by constraints (a generated Rigify rig's hips
        and its chest, shoulders and head, which its constraints carry otherwise than their
        parents say): keyed as the source turns them, they hold there as Blender evaluates
        them, and the IK corrects with the rest."""
        if not self.constrained:
            return frozenset()
        translating = self.translating()
        return frozenset({line.target for line in self.lines if line.turn and line.group != "hips"
                and (line.trunk and not line.place or line.group == "head" and line.target not in translating)})

    def turn_kept(self) -> frozenset[str]:
        """The body's root (a generated Rigify rig's torso), on a rig whose controls carry the
        body by constraints: placed by the solve, turned as lined up. The rig carries the limbs
        from it by constraints (its legs follow the hips under it), which the solve's model holds
        at the turn they had, so a turn of it there would not turn them."""
        hips = self.hips()
        if not self.constrained or hips is None or not self.lines[hips].turn:
            return frozenset()
        return frozenset({self.lines[hips].target})

    def translating(self) -> frozenset[str]:
        """The mapped bones that follow a place and can move by their location (not connected,
        location free): a Rigify rig's torso and IK hands and feet. The head is placed by the
        trunk below it, never by its location (a neck that stretches to a moved head is not the
        source's)."""
        pose_bones = self.target.pose.bones
        return frozenset(line.target for line in self.lines if line.place and line.group in {"hips", "hands", "feet"}
                         and pose_bones[line.target].parent is not None
                         and not pose_bones[line.target].bone.use_connect
                         and not all(pose_bones[line.target].lock_location))

    def lifts(self) -> dict[str, np.ndarray]:
        """[m] (frames,) per target foot with heel plants: how far up it goes on each frame for its
        heel to be planted at its rest height on the target's floor: at each plant's middle frame
        the plant's own height, in between a straight line (held before the first and after the
        last). A clip planted lower or higher than its rest pose stands (its rest pose above or
        below its floor, a floor that is not level, a drift along the take) would otherwise sink
        the target's feet into its floor or float them (a BVH's rest pose has its root at the
        origin, its feet under the floor). The rest of the body goes up by the feet's mean.
        Without plants, each foot's lowest is where it stands."""
        heels: dict[str, list[tuple[float, float]]] = {}
        for p in self.plants:
            if p.heel:
                heels.setdefault(p.bone, []).append(((p.first + p.last) / 2.0, self.rest[p.bone][2, 3] - p.point[2]))
        at = np.arange(len(self.frames), dtype=float)
        out = {bone: np.interp(at, *np.array(sorted(values)).T) for bone, values in heels.items()}
        if not out:  # no plants: the lowest each ankle goes is where it stands
            for i, line in enumerate(self.lines):
                if line.group == "feet" and i in self.places:
                    out[line.target] = np.full(len(at), self.rest[line.target][2, 3] - self.places[i][:, 2].min())
        return out

    def index(self, frame: int) -> int:
        """``frame``'s place in the range."""
        return frame - self.frames[0]

    def plants_on(self, index: int) -> tuple[int, ...]:
        return tuple(k for k, p in enumerate(self.plants) if p.first <= index <= p.last)

    def goals(self, tree, index: int) -> list:
        """The goals of the range's ``index``-th frame on ``tree`` (``bake.tree.Tree``)."""
        model = tree.model
        out = []
        on = self.plants_on(index)
        planted = [self.plants[k].bone for k in on]
        # A foot planted at its heel and toe stands where its plants put it; planted at one, it
        # turns about it as the lined-up pose turns it where that is the solve's start and
        # preferred pose; else its ankle is kept where the lined-up leg puts it, below its
        # plant, and its turn below that (the foot pitches to put its toe down, and nothing
        # else would hold it from spinning about the two).
        placed = set(planted)
        turned = placed if self.prefers_animated else {bone for bone in placed if planted.count(bone) > 1}
        pitched = placed - turned
        for bone, local, height in self.floors:  # (the same on every frame: made once per tree)
            out.append(tree.once(("retarget floor", bone, local.tobytes(), height), lambda b=bone, p=local, h=height:
                                 FloorGoal(model.bones[b].frame_joint, self._local(tree, b, p), (0.0, 0.0, h),
                                           priority=PLANTS)))
        for k in on:
            plant = self.plants[k]
            joint = model.bones[plant.bone].frame_joint
            out.append(PositionGoal(joint, self._local(tree, plant.bone, plant.local), plant.point, priority=PLANTS))
        kept = self.kept  # (worked out once, on the first frame: the map and the rig are set by then)
        for i, line in enumerate(self.lines):
            if line.weight <= 0.0 or line.target in turned or line.target in kept or not (line.place or line.trunk):
                continue  # (a finger or toe that only turns: keyed as lined up, out of the solve)
            joint, local = tree.anchor(line.target, 0.0)
            place = line.place and (line.target not in placed or line.target in pitched)
            if place and line.base:
                out.append(TogetherGoal(joint, local, *tree.anchor(line.base, 0.0), weight=line.weight,
                                        priority=ENDS, offset=self.offsets[i][index]))
            elif place:
                priority = PLANTS if line.group == "hips" else ENDS
                out.append(PositionGoal(joint, local, self.places[i][index], weight=line.weight, priority=priority))
            if line.turn:  # the rest: kept near the lined-up pose
                out.append(OrientationGoal(model.bones[line.target].frame_joint,
                                           self._turn(tree, line.target, self.turns[i][index]),
                                           length=self._length(tree, line.target), weight=line.weight,
                                           priority=LINED if line.target in pitched else ENDS))
        return out

    def _turn(self, tree, bone: str, world: np.ndarray) -> np.ndarray:
        """The world rotation the joint frame of ``bone`` takes for the bone to have rotation
        ``world``: the same (a bone's joint frame turns with it, along its own axes)."""
        return world

    def _local(self, tree, bone: str, local: np.ndarray) -> np.ndarray:
        """A point given from ``bone``'s head along its unit axes (``local``, world lengths), in
        the joint frame of the tree: the bone's own axes, scaled as the tree scales it (the
        armature's scale). Not through the tree's rest pose, which is not the rig's where a
        bone above holds a turn its constraints give it (a Rigify rig's FK legs hang from
        spine bones that copy its hips)."""
        frame = tree.rest().frames[tree.model.bones[bone].frame_joint]
        return local / tree.once(("axis scales", bone), lambda: np.linalg.norm(frame[:3, :3], axis=0))

    def _length(self, tree, bone: str) -> float:
        return tree.once(("retarget length", bone), lambda: max(
            float(self.target.data.bones[bone].length * world_scale(self.target)), 1e-3))


def make(context, target, source, frames: list[int], scale: float, plants: bool) -> Retarget:
    """Sample ``source`` over ``frames``, scaled by ``scale`` onto ``target``, by ``target``'s map.
    Nothing here reads the source's rest pose but its bones' lengths and its root's place, so
    a clip laid out in any rest gives the same goals."""
    settings = target.welman_ik
    source_roles = retarget_roles(*bone_tree(source))[1]
    target_roles = retarget_roles(*bone_tree(target))[1]
    lines = []
    ends = {}  # a forearm whose end a hand follows (the source has no hand) -> the name its end goes by
    for item in settings.retarget_map:
        kind = item.kind
        source_bone, role = item.source_bone, source_roles.get(item.source_bone, "")
        if role.startswith("forearm.") and kind in {"POSITION", "POSE"}:  # a hand held at the forearm's end
            source_bone = ends.setdefault(item.source_bone, item.source_bone + END)
            source_roles[source_bone] = "hand." + role.rpartition(".")[2]
        lines.append(Line(item.target_bone, source_bone, kind in {"POSITION", "POSE"},
                          kind in {"ORIENTATION", "POSE"}, float(item.weight), _group(source_roles.get(source_bone, ""))))
    placed = [i for i, line in enumerate(lines) if line.place and not line.group]
    if placed:  # the body's root: the placed line nearest the source's root that is not an end
        depth = {name: len(chain_to_root(source.pose.bones[name])) for name in (lines[i].source for i in placed)}
        lines[min(placed, key=lambda i: depth[lines[i].source])].group = "hips"
    hips_source = next((line.source for line in lines if line.group == "hips"), None)
    for line in lines:
        line.trunk = line.source == hips_source or source_roles.get(line.source, "").startswith(TRUNK_ROLES)
    retarget = Retarget(target, source, scale, frames, lines)
    retarget.constrained = any(retarget_pose.measured_bone(target, line.target) != line.target for line in lines)
    retarget.source_roles = source_roles
    retarget.twists = retarget_twist.limbs(target, lines, source_roles, target_roles)
    retarget.prefers_animated = not (retarget.constrained and retarget.twists)  # (limbs its own IK bends)
    anchors = limbs.anchors(target, source, lines, source_roles, target_roles)
    legs = {line.source: contacts.leg_of(source, line.source, source_roles)
            for line in lines if plants and line.group == "feet" and line.place}
    body_s, body_t = retarget_pose.body_bones(source_roles), retarget_pose.body_bones(target_roles)
    source_bones = sorted(({line.source for line in lines} | {a for a, *_ in anchors.values() if a is not None}
                           | {bone for leg in legs.values() if leg is not None for bone in leg}
                           | {b for b in body_s if b} | set(ends)
                           | {n for n, r in source_roles.items() if r.partition(".")[0] in LIMB_PARTS})
                          - set(ends.values()))
    pose, world = pose_matrices(source, source_bones, frames)
    posed = world[:, None] @ pose  # (frames, bones, 4, 4) in the world
    rest_source = np.array(world[0]) @ rest_matrices(source, source_bones)
    for bone, end in ends.items():  # the forearm's end, turned as the forearm
        k = source_bones.index(bone)
        matrix = posed[:, k].copy()
        matrix[:, :3, 3] = retarget_feet._tail(posed[:, k], source.data.bones[bone].length)
        posed = np.concatenate([posed, matrix[:, None]], axis=1)
        rest_source = np.concatenate([rest_source, rest_source[k][None]])
        source_bones.append(end)
    column = {name: k for k, name in enumerate(source_bones)}
    target_world = np.array(target.matrix_world, dtype=float)
    targets = sorted({line.target for line in lines})
    retarget.rest = dict(zip(targets, target_world @ rest_matrices(target, targets)))
    target_heads = dict(zip(target.data.bones.keys(), rest_ends(target, world=True)[:, 0]))
    origin_s, origin_t = world[0][:3, 3], target_world[:3, 3]

    def scaled(points):
        return origin_t + scale * (points - origin_s)

    heads = posed[..., :3, 3]
    retarget.source_heads = {name: heads[:, k] for name, k in column.items()}
    lined = retarget_pose.line_up(retarget, target_heads, heads, unit(posed[..., :3, :3]), column, body_s, body_t)
    retarget.turns, retarget.reference = lined.turns, lined.reference
    hips = retarget.hips()
    hips_path, shift = None, np.zeros(3)
    if hips is not None:
        k = column[lines[hips].source]
        # The body's place across the floor: the target's own rest place beside the source's
        # root's (both the same whatever the rest); its height comes from the plants (``lifts``).
        shift[:2] = (retarget.rest[lines[hips].target][:3, 3] - scaled(rest_source[k, :3, 3]))[:2]
        hips_path = (scaled(heads[:, k]) + shift, heads[:, k])
        retarget.heads = {name: hips_path[0] + offset for name, offset in lined.offsets.items()}

    for i, line in enumerate(lines):
        k = column[line.source]
        if not line.place:
            continue
        start, trunk, base = anchors.get(line.source, (None, scale, ""))
        if line.group != "hips" and line.target in retarget.heads:  # where the lined-up pose puts it
            retarget.places[i] = retarget.heads[line.target].copy()  # (its own: each is lifted once)
            if base and base in lined.offsets:  # a hand: held from its own shoulder
                line.base = base
                retarget.offsets[i] = lined.offsets[line.target] - lined.offsets[base]
            continue
        if line.group == "feet" and hips_path is not None:
            leg = limbs.leg(retarget, line, heads, column, hips_path[0], target_heads, target_roles)
            if leg is not None:  # from its own hip, the knee bent as the source's
                retarget.places[i] = leg
                continue
        if line.group in {"hips", "feet"} or hips_path is None:
            retarget.places[i] = scaled(heads[:, k]) + shift
            continue
        # Relative to the hips: from the place the limb starts at (the shoulder for a hand), as
        # the target's trunk puts it when it bends as the source's, then as the source's scaled.
        if start is None:
            retarget.places[i] = hips_path[0] + trunk * (heads[:, k] - hips_path[1])
            continue
        shoulder = heads[:, column[start]]
        side = source_roles.get(line.source, "").rpartition(".")[2]
        reach = limbs.reach(heads, column, source_roles, target_roles, target_heads, side, limbs.ARM)
        if reach is None:
            reach = scale * (heads[:, k] - shoulder)
        retarget.places[i] = hips_path[0] + trunk * (shoulder - hips_path[1]) + reach
        # Held from the target's own shoulder, wherever its trunk puts it: the hand points from
        # there as the source's does, as far as the target's arm reaches with its elbow bent as
        # the source's.
        line.base = base
        retarget.offsets[i] = reach
    limbs.within_reach(retarget, target_roles)
    retarget.sought = plants
    retarget.length_unit = body_unit(target)
    if plants:
        retarget.plants = retarget_feet.plants(context, retarget, legs, column, posed, lambda points: scaled(points) + shift)
        retarget_feet.under_the_source(retarget)
        retarget_feet.ease_plants(retarget, max(target.welman_ik.motion_falloff, 0), target_roles)
    lift = retarget_feet.body_lift(retarget, max(target.welman_ik.motion_falloff, 0))
    if lift is None:  # no plants to stand on
        lifts = retarget.lifts()
        lift = np.mean(list(lifts.values()), axis=0) if lifts else np.zeros(len(frames))
    for place in (*retarget.places.values(), *retarget.heads.values()):
        place[:, 2] += lift  # the whole body alike, the lined-up pose kept
    retarget_feet.pitch_toes(retarget, max(target.welman_ik.motion_falloff, 0))
    for plant in retarget.plants:  # on the target's floor, where the point is when its foot stands at rest
        plant.point = np.array([*plant.point[:2], retarget_feet.floor_height(retarget, plant)])
    retarget_feet.toes_from_heels(retarget.plants)
    retarget_feet.above_floor(retarget)
    limbs.within_legs(retarget, target_roles, max(target.welman_ik.motion_falloff, 0))
    retarget.floors = retarget_feet.floor_points(retarget) if target.welman_ik.retarget_floor else []
    return retarget


def check_lines(target, source) -> None:
    """Refuse a map naming bones either rig does not have, or an empty map."""
    lines = target.welman_ik.retarget_map
    if not len(lines):
        raise RigError(f"The retarget map of '{target.name}' is empty: fill it from the source's names first")
    for line in lines:
        if line.target_bone not in target.pose.bones:
            raise RigError(f"The retarget map names bone '{line.target_bone}', which '{target.name}' does not have")
        if line.source_bone not in source.pose.bones:
            raise RigError(f"The retarget map names bone '{line.source_bone}', which the source '{source.name}' "
                           "does not have")
