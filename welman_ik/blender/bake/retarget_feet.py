"""A retarget's feet: the source's foot contacts as plants of the target's feet (``plants``),
each contact held whole from heel strike to toe-off (``whole_contacts``), and every foot
point kept above the target's floor (``above_floor``)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ...core.anatomy import alignment
from ...core.contacts import ease
from ..rig.retarget_map import body_unit
from . import contacts
from .retarget_pose import measured_bone


def unit(rotations: np.ndarray) -> np.ndarray:
    """Rotation parts with their columns made unit length (scale taken out)."""
    return rotations / np.linalg.norm(rotations, axis=-2, keepdims=True)


@dataclass
class Plant:
    """A source contact at a target foot: ``local`` in the frame of target bone ``bone``
    held at world ``point`` over frames ``first``..``last`` (indices into the range)."""

    bone: str
    local: np.ndarray
    point: np.ndarray
    first: int
    last: int
    heel: bool = False  # the source's heel (its foot bone's head), not its toe


PITCH = 0.9  # how far below its ankle a toe goes at most, in its distance from it, as the foot pitches down
CONTACT_GAP = 0.25  # [s] the longest gap between a heel's plant and the toe's that follows it, bridged


def whole_contacts(plants: list[Plant], low: np.ndarray, gap: int) -> list[Plant]:
    """One foot's plants (``plants``) as whole contacts, heel strike to toe-off. Plants follow on
    from each other in one contact where the gap between them is at most ``gap`` frames or the
    source's toe stays down across it (``low``: (frames,) whether it is within the contact
    height of its lowest): the foot flat between them. In each contact the heel is held by its
    first heel plant (a heel that comes down again as the foot rolls over its toe is not planted
    a second time, somewhere else), and the toe from where that heel plant ends to where the
    contact's last toe plant ends (so the foot is never free between the two)."""
    out: list[Plant] = []
    contact: list[Plant] = []

    def close() -> None:
        heels = [p for p in contact if p.heel]
        toes = [p for p in contact if not p.heel]
        if heels:
            out.append(heels[0])
        if toes:
            first = heels[0].last if heels else min(p.first for p in toes)
            last = max(p.last for p in toes)
            if last > first or not heels:
                out.append(Plant(toes[0].bone, toes[0].local, toes[0].point, min(first, last), last))
        elif len(heels) > 1:
            out.extend(heels[1:])
        contact.clear()

    end = -np.inf
    for plant in sorted(plants, key=lambda p: (p.first, not p.heel)):
        if contact and plant.first - end > gap and not low[int(end):plant.first + 1].all():
            close()
        contact.append(plant)
        end = max(end, plant.last)
    if contact:
        close()
    return out


def foot_lines(retarget) -> dict[str, int]:
    """target foot -> the index of its line, for the feet the retarget places and turns."""
    return {line.target: i for i, line in enumerate(retarget.lines)
            if line.group == "feet" and i in retarget.places and i in retarget.turns}


def own_points(retarget, bone: str) -> tuple[np.ndarray, np.ndarray]:
    """The heel (head) and toe (tail) of the foot target bone ``bone`` moves, in its rest world
    frame along its unit axes: its own, or those of the bone that shows it (a generated Rigify
    rig's IK foot control lies along the ground behind the ankle; its deforming foot runs
    from the ankle to the toe)."""
    target = retarget.target
    shown = target.data.bones[measured_bone(target, bone)]
    world = np.array(target.matrix_world, dtype=float)
    rest = retarget.rest[bone]
    axes = unit(rest[:3, :3])
    return tuple(axes.T @ (world[:3, :3] @ np.array(point) + world[:3, 3] - rest[:3, 3])
                 for point in (shown.head_local, shown.tail_local))


def under_the_source(retarget) -> None:
    """Where each plant is held: where the lined-up pose puts its point over the plant, on
    average. (A plant's point is the target foot's own heel or toe, as the source's contact is
    on its heel or toe, not the source's point carried over: a foot longer or shorter than the
    source's would otherwise stand on a point ahead of or behind its toe, and lift its toe off
    the floor as it rolls over it.) A toe taking over from its heel is held where the foot puts
    it as the heel's plant ends, so that nothing moves at the hand-over."""
    feet = foot_lines(retarget)
    lined = {}
    for plant in sorted(retarget.plants, key=lambda p: not p.heel):  # the heels first
        i = feet.get(plant.bone)
        if i is None:
            continue
        points = retarget.places[i] + retarget.turns[i] @ plant.local
        lined[id(plant)] = points
        plant.point = points[plant.first:plant.last + 1].mean(axis=0)
        heel = next((p for p in retarget.plants if p.heel and p.bone == plant.bone and p.last == plant.first), None)
        if not plant.heel and heel is not None:  # taking over from the heel: the toe stays where the heel put it
            plant.point = points[plant.first] + heel.point - lined[id(heel)][plant.first]


def ease_plants(retarget, frames: int, target_roles: dict) -> None:
    """Each placed foot's lined-up place eased toward its plants over the ``frames`` before one
    starts and after one ends (``core.contacts.ease``), across the floor: a plant holds its point
    where the lined-up pose puts it on average, so the foot would otherwise jump by the
    difference as the plant starts or ends. The eased foot stays no further from its hip than
    the lined-up pose has it (its knee bent as the source's, never straightened by the ease)."""
    feet = foot_lines(retarget)
    side_of = {bone: retarget.source_roles.get(retarget.lines[i].source, "").rpartition(".")[2]
               for bone, i in feet.items()}
    thighs = {bone: next((n for n, r in target_roles.items() if r == f"thigh.{side}"), None)
              for bone, side in side_of.items()}
    count = len(retarget.frames)
    at = np.arange(count)
    for bone, i in feet.items():
        shift, share = np.zeros((count, 2)), np.zeros(count)
        for plant in (p for p in retarget.plants if p.bone == bone):
            lined = retarget.places[i] + retarget.turns[i] @ plant.local
            for edge, outside in ((plant.first, at < plant.first), (plant.last, at > plant.last)):
                weight = np.where(outside, ease(np.abs(at - edge), frames), 0.0)
                closer = weight > share
                shift[closer] = (plant.point - lined[edge])[:2]
                share[closer] = weight[closer]
        held = np.zeros(count, dtype=bool)
        for plant in (p for p in retarget.plants if p.bone == bone):
            held[plant.first:plant.last + 1] = True
        place = retarget.places[i]
        eased = place.copy()
        eased[:, :2] += np.where(held, 0.0, share)[:, None] * shift
        hip = retarget.heads.get(thighs[bone])
        if hip is not None:  # within the lined-up leg's reach
            reach = np.linalg.norm(place - hip, axis=1)
            far = np.linalg.norm(eased - hip, axis=1)
            eased = hip + (eased - hip) * np.minimum(1.0, reach / np.maximum(far, 1e-12))[:, None]
        place[:] = eased


def rest_height(retarget, bone: str, local: np.ndarray) -> float:
    """The height of the point ``local`` (in target bone ``bone``'s rest world frame along its
    unit axes) in the target's rest pose: where it is when the foot stands on its floor."""
    rest = retarget.rest[bone]
    return float(rest[2, 3] + (unit(rest[:3, :3]) @ local)[2])


def floor_height(retarget, plant: Plant) -> float:
    """The height of ``plant``'s point when its foot stands at rest on the target's floor, and
    never below that floor (a source's toe end that points down through its sole would
    otherwise plant the whole body lower)."""
    return max(rest_height(retarget, plant.bone, plant.local), floor(retarget))


def floor(retarget) -> float:
    """The target's floor: the lowest of its feet's heels and toes (``own_points``) in its rest
    pose."""
    heights = [rest_height(retarget, line.target, point) for line in retarget.lines if line.group == "feet"
               for point in own_points(retarget, line.target)]
    return float(min(heights)) if heights else -np.inf


def body_lift(retarget, frames: int = 0) -> np.ndarray | None:
    """[m] (frames,) how far the whole body goes up on each frame so that its planted points,
    where the lined-up pose puts them (``retarget.places`` of the feet, not yet lifted), stand
    on the floor: on a frame with plants, the least any of them asks (a foot asking more bends
    its knee further rather than straightening the other), in between a straight line, held
    before the first and after the last. None without plants. The knees then bend as the
    source's where the feet are planted, whatever the two bodies' proportions. A foot planted
    at its toe alone turns about it (or, where the solve keeps its ankle where the lined-up leg
    puts it, pitches about that, ``Retarget.goals``), so its toe asks nothing of its own where
    pitching puts it down: it only bounds the body's height to where pitching still reaches
    the floor (a source whose ankle stands higher above its toe than the target's would
    otherwise bend both knees to put the target's toe down, and the body would bob up and down
    by the difference as the heels and toes take turns); where a heel is planted too, not even
    that (the toe's own leg bends to put it down: a kneel on one toe would otherwise lower the
    whole body and over-bend the other knee). Before the first heel's plant and
    after the last, where there is nothing else to follow, the toes ask as far as pitching
    does not reach, from ``frames`` beyond the heels' on (the body eases to it, never in one
    frame)."""
    feet = foot_lines(retarget)
    count = len(retarget.frames)
    asked = np.full(count, np.inf)
    bound = np.full(count, np.inf)
    own = np.full(count, np.inf)  # what the pitched toes ask of their own: only as far as pitching does not reach
    for plant in retarget.plants:
        i = feet.get(plant.bone)
        if i is None:
            continue
        span = slice(plant.first, plant.last + 1)
        heights = retarget.places[i][span, 2] + (retarget.turns[i][span] @ plant.local)[:, 2]
        floor_at = floor_height(retarget, plant)
        ask = floor_at - heights
        if not plant.heel:  # its toe comes down by the foot pitching about its ankle
            lowest = retarget.places[i][span, 2] - PITCH * float(np.linalg.norm(plant.local))
            bound[span] = np.minimum(bound[span], np.where(ask < 0.0, floor_at - lowest, ask))
            own[span] = np.minimum(own[span], np.where(ask < 0.0, np.minimum(0.0, floor_at - lowest), ask))
            continue
        asked[span] = np.minimum(asked[span], ask)
    at = np.arange(count)
    known = np.isfinite(asked)
    bound[known] = np.inf  # where a heel is planted, a toe planted too comes down by its own leg
    # Before the first heel and after the last, nothing to follow but the toes' own asks, taken
    # from ``frames`` beyond the heels' (the body eases to them, never in one frame).
    outside = ((at < at[known][0] - frames) | (at > at[known][-1] + frames) if known.any()
               else np.ones(count, dtype=bool))
    asked = np.where(outside & np.isfinite(own), own, asked)
    known = np.isfinite(asked)
    if not known.any():
        return None
    return np.minimum(np.interp(at, at[known], asked[known]), bound)


def pitch_toes(retarget, frames: int) -> None:
    """Each foot planted at its toe alone turned down about its ankle, in its lined-up turn,
    as far as its toe needs to stand on its floor where the lined-up (and lifted) ankle is: the
    turn eased in and out over the ``frames`` around the plant (``core.contacts.ease``), and the
    plant held where the turned toe then is (``under_the_source`` again). A source whose ankle
    stands higher above its toe than the target's (a longer foot) lifts the target's toe off
    its floor as it rolls onto it; a foot that pitched only when its plant began would snap."""
    feet = foot_lines(retarget)
    count = len(retarget.frames)
    at = np.arange(count)
    turned = False
    for bone, i in feet.items():
        pitch = np.zeros(count)
        lateral = np.zeros((count, 3))
        for plant in (p for p in retarget.plants if p.bone == bone and not p.heel):
            span = slice(plant.first, plant.last + 1)
            ankle, turn = retarget.places[i][span], retarget.turns[i][span]
            toe = turn @ plant.local  # from the ankle
            side = np.cross(toe, [0.0, 0.0, 1.0])
            side /= np.maximum(np.linalg.norm(side, axis=1, keepdims=True), 1e-12)
            # The toe turned by φ about ``side`` through the ankle: its height a sin φ + b cos φ
            # (a: how far ahead of the ankle it is, b: how far above).
            along = np.cross([0.0, 0.0, 1.0], side)
            a, b = np.einsum("fi,fi->f", toe, along), toe[:, 2]
            reach = np.maximum(np.hypot(a, b), 1e-12)
            floor_at = floor_height(retarget, plant)
            want = np.clip(floor_at - ankle[:, 2], -reach, reach)
            phi = np.arcsin(want / reach) - np.arctan2(b, a)
            phi = (phi + np.pi) % (2.0 * np.pi) - np.pi
            needed = np.where(toe[:, 2] + ankle[:, 2] > floor_at, phi, 0.0)
            pitch[span], lateral[span] = needed, side
            for edge, outside in ((plant.first, at < plant.first), (plant.last, at > plant.last)):
                weight = np.where(outside, ease(np.abs(at - edge), frames), 0.0)
                closer = outside & (np.abs(weight * needed[edge - plant.first]) > np.abs(pitch))
                pitch[closer] = (weight * needed[edge - plant.first])[closer]
                lateral[closer] = side[edge - plant.first]
        moved = np.abs(pitch) > 1e-9
        if moved.any():
            turned = True
            retarget.turns[i][moved] = alignment.along(lateral[moved], pitch[moved]) @ retarget.turns[i][moved]
    if turned:
        under_the_source(retarget)


def toes_from_heels(plants: list[Plant]) -> None:
    """A toe plant held while its foot's heel plant holds too is put where the foot can put it:
    as far from the heel's point as the two points are apart on the foot, at its own height,
    toward where it was (two points held at once must be the foot's length apart)."""
    for toe in (p for p in plants if not p.heel):
        heel = next((p for p in plants if p.heel and p.bone == toe.bone and p.first <= toe.last
                     and toe.first <= p.last), None)
        if heel is None:
            continue
        length = float(np.linalg.norm(toe.local - heel.local))
        rise = toe.point[2] - heel.point[2]
        across = toe.point[:2] - heel.point[:2]
        norm = float(np.linalg.norm(across))
        if norm < 1e-9 or abs(rise) >= length:
            continue
        toe.point = np.array([*(heel.point[:2] + across / norm * np.sqrt(length * length - rise * rise)),
                              toe.point[2]])


def above_floor(retarget) -> None:
    """Each foot's place raised, frame by frame, so that none of its points (its heel, its toe,
    its plants' points) is below where that point is when the foot stands at rest on the
    target's floor."""
    for i in foot_lines(retarget).values():
        line = retarget.lines[i]
        turn = retarget.turns[i]
        points = [*own_points(retarget, line.target)] + [p.local for p in retarget.plants if p.bone == line.target]
        floors = np.array([rest_height(retarget, line.target, local) for local in points])
        lowest = np.max(floors[None] - np.einsum("fj,pj->fp", turn[:, 2], np.array(points)), axis=1)
        place = retarget.places[i]
        place[:, 2] = np.maximum(place[:, 2], lowest)


def floor_points(retarget) -> list[tuple[str, np.ndarray, float]]:
    """Each placed foot's heel and toe (``own_points``), as (bone, point in its rest world frame
    along its unit axes, its height when the foot stands at rest): the points the solve keeps on or above the
    target's floor on every frame, planted or not (a foot swinging through, or rolling over its
    toe, would otherwise dip its heel or toe into the floor)."""
    bones = [retarget.lines[i].target for i in foot_lines(retarget).values()]
    return [(bone, local, rest_height(retarget, bone, local)) for bone in bones for local in own_points(retarget, bone)]


def _tail(matrices: np.ndarray, length: float) -> np.ndarray:
    """The tail of a bone ``length`` long (rest length) whose world matrices are ``matrices``
    (..., 4, 4): its head plus its Y axis, the matrix's scale included."""
    rotations = matrices[..., :3, :3]
    scale = np.cbrt(np.abs(np.linalg.det(rotations)))[..., None]
    return matrices[..., :3, 3] + unit(rotations)[..., 1] * length * scale


def plants(context, retarget, legs: dict, column: dict, posed: np.ndarray, scaled) -> list[Plant]:
    """The source's foot contacts, each a plant of the target foot that follows it, at the
    target foot's own heel (its head) or toe (its tail). They are found (``contacts.plants``
    under the target's contact settings, its lengths for a grown person scaled to the
    target's body, ``retarget_map.body_unit``) on the source's heel and toe paths scaled onto
    the target (``scaled``), so that a clip finds the same contacts in any units and onto a
    character of any size. ``legs``: foot ->
    (thigh, shin) or None; ``posed``: the sampled source, its bones at ``column``."""
    source, own = retarget.source, retarget.target.welman_ik
    # The contact settings are for a grown person in metres: as many times larger as the
    # target's body is (a character in centimetres, a child).
    size = body_unit(retarget.target)
    settings = SimpleNamespace(contact_height=own.contact_height * size, contact_speed=own.contact_speed * size,
                               contact_drift=own.contact_drift * size, contact_min_frames=own.contact_min_frames,
                               contact_knee_bend=own.contact_knee_bend)
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    gap = round(CONTACT_GAP * fps)
    out = []
    for line in (line for line in retarget.lines if line.source in legs):
        k, leg = column[line.source], legs[line.source]
        length = source.data.bones[line.source].length
        paths = {(line.source, contacts.HEEL): scaled(posed[:, k, :3, 3]),
                 (line.source, contacts.TOE): scaled(_tail(posed[:, k], length))}
        paths.update({(name, 0.0): scaled(posed[:, column[name], :3, 3]) for name in leg or ()})
        points = [contacts.Point(line.source, contacts.HEEL, leg), contacts.Point(line.source, contacts.TOE, leg)]
        found = contacts.plants(settings, points, paths, fps)
        ends = own_points(retarget, line.target)  # the target foot's own heel and toe
        foot = [Plant(line.target, ends[point.anchor == contacts.TOE], np.asarray(plant.point, dtype=float),
                      plant.first, plant.last, point.anchor == contacts.HEEL)
                for point, held in found.items() for plant in held]
        toe = paths[(line.source, contacts.TOE)][:, 2]
        out += whole_contacts(foot, toe - toe.min() <= settings.contact_height, gap)
    return out
