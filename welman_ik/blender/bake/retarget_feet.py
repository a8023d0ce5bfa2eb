"""A retarget's feet: the source's foot contacts as plants of the target's feet (``plants``),
each contact held whole from heel strike to toe-off (``whole_contacts``), and every foot
point kept above the target's floor (``above_floor``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import contacts


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


CONTACT_GAP = 0.25  # [s] the longest gap between a heel's plant and the toe's that follows it, bridged


def whole_contacts(plants: list[Plant], gap: int) -> None:
    """A contact whole, from heel strike to toe-off: a foot's toe plant that starts within ``gap``
    frames after its heel plant ends starts where that one ends (the foot flat between them is
    held by its toe), so the foot is never free between the two."""
    for plant in plants:
        if plant.heel:
            continue
        before = [p.last for p in plants if p.heel and p.bone == plant.bone and 0 <= plant.first - p.last <= gap]
        if before:
            plant.first = min(plant.first, max(before))


def foot_lines(retarget) -> dict[str, int]:
    """target foot -> the index of its line, for the feet the retarget places and turns."""
    return {line.target: i for i, line in enumerate(retarget.lines)
            if line.group == "feet" and i in retarget.places and i in retarget.turns}


def under_the_source(retarget) -> None:
    """Each plant's point on its target foot and where it is held: the source's point (its heel
    or toe) from its ankle on the reference frame, scaled, in the lined-up target foot's axes
    (the target's point under the source's, whatever the two rests), held where that point is
    over the plant, on average."""
    feet = foot_lines(retarget)
    for plant in retarget.plants:
        i = feet.get(plant.bone)
        if i is None:
            continue
        turn = retarget.turns[i]
        plant.local = turn[retarget.reference].T @ (plant.local * retarget.scale)
        points = retarget.places[i] + turn @ plant.local
        plant.point = points[plant.first:plant.last + 1].mean(axis=0)


def floor_height(retarget, plant: Plant) -> float:
    """The height of ``plant``'s point when its foot stands at rest on the target's floor, and
    never below that floor (a source's toe end that points down through its sole would
    otherwise plant the whole body lower)."""
    rest = retarget.rest[plant.bone]
    return max(float(rest[2, 3] + (unit(rest[:3, :3]) @ plant.local)[2]), floor(retarget))


def floor(retarget) -> float:
    """The target's floor: the lowest of its feet's heads and tails in its rest pose."""
    bones = retarget.target.data.bones
    heights = []
    for line in retarget.lines:
        if line.group == "feet":
            rest = retarget.rest[line.target]
            heights += [rest[2, 3], rest[2, 3] + rest[2, 1] * bones[line.target].length]
    return float(min(heights)) if heights else -np.inf


def body_lift(retarget) -> np.ndarray | None:
    """[m] (frames,) how far the whole body goes up on each frame so that its planted points,
    where the lined-up pose puts them (``retarget.places`` of the feet, not yet lifted), stand
    on the floor: on a frame with plants, the least any of them asks (a foot asking more bends
    its knee further rather than straightening the other), in between a straight line, held
    before the first and after the last. None without plants. The knees then bend as the
    source's where the feet are planted, whatever the two bodies' proportions."""
    feet = foot_lines(retarget)
    count = len(retarget.frames)
    asked = np.full(count, np.inf)
    for plant in retarget.plants:
        i = feet.get(plant.bone)
        if i is None:
            continue
        span = slice(plant.first, plant.last + 1)
        heights = retarget.places[i][span, 2] + (retarget.turns[i][span] @ plant.local)[:, 2]
        asked[span] = np.minimum(asked[span], floor_height(retarget, plant) - heights)
    known = np.isfinite(asked)
    if not known.any():
        return None
    at = np.arange(count)
    return np.interp(at, at[known], asked[known])


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
    """Each foot's place raised, frame by frame, so that none of its points (its head, its tail,
    its plants' points) is below where that point is when the foot stands at rest on the
    target's floor."""
    for i in foot_lines(retarget).values():
        line = retarget.lines[i]
        rest, turn = retarget.rest[line.target], retarget.turns[i]
        length = np.linalg.norm(rest[:3, 1]) * retarget.target.data.bones[line.target].length
        points = [np.zeros(3), np.array([0.0, length, 0.0])] + [p.local for p in retarget.plants if p.bone == line.target]
        floors = np.array([rest[2, 3] + (unit(rest[:3, :3]) @ local)[2] for local in points])
        lowest = np.max(floors[None] - np.einsum("fj,pj->fp", turn[:, 2], np.array(points)), axis=1)
        place = retarget.places[i]
        place[:, 2] = np.maximum(place[:, 2], lowest)


def _tail(matrices: np.ndarray, length: float) -> np.ndarray:
    """The tail of a bone ``length`` long (rest length) whose world matrices are ``matrices``
    (..., 4, 4): its head plus its Y axis, the matrix's scale included."""
    rotations = matrices[..., :3, :3]
    scale = np.cbrt(np.abs(np.linalg.det(rotations)))[..., None]
    return matrices[..., :3, 3] + unit(rotations)[..., 1] * length * scale


def plants(context, retarget, legs: dict, column: dict, posed: np.ndarray, scaled) -> list[Plant]:
    """The source's foot contacts, each a plant of the target foot that follows it, at the
    target foot's own heel (its head) or toe (its tail). They are found (``contacts.plants``
    under the target's contact settings) on the source's heel and toe paths scaled onto the
    target (``scaled``), so that a clip finds the same contacts in any units. ``legs``: foot ->
    (thigh, shin) or None; ``posed``: the sampled source, its bones at ``column``."""
    source, settings = retarget.source, retarget.target.welman_ik
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    out = []
    for line in (line for line in retarget.lines if line.source in legs):
        k, leg = column[line.source], legs[line.source]
        length = source.data.bones[line.source].length
        paths = {(line.source, contacts.HEEL): scaled(posed[:, k, :3, 3]),
                 (line.source, contacts.TOE): scaled(_tail(posed[:, k], length))}
        paths.update({(name, 0.0): scaled(posed[:, column[name], :3, 3]) for name in leg or ()})
        points = [contacts.Point(line.source, contacts.HEEL, leg), contacts.Point(line.source, contacts.TOE, leg)]
        found = contacts.plants(settings, points, paths, fps)
        ankle = posed[retarget.reference, k, :3, 3]
        for point, held in found.items():
            # (world, source units) the point from the source's ankle on the reference frame
            local = (posed[retarget.reference, k, :3, 3] if point.anchor == contacts.HEEL
                     else _tail(posed[retarget.reference, k], length)) - ankle
            for plant in held:
                out.append(Plant(line.target, local, np.asarray(plant.point, dtype=float), plant.first, plant.last,
                                 point.anchor == contacts.HEEL))
    return out
