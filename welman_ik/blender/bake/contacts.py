"""Foot contacts of an armature's animation: sampled paths, the legs above them, and the
plants ``core.contacts`` finds in them, as pins with frame ranges (Detect Contacts); the
clip's floor found from them, and floor pins on it (Detect Contacts' Floor option)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import anatomy, contacts
from ..rig import targets
from ..rig.evaluated import EndsReader, points_at

HEEL, TOE = 0.0, 1.0  # a foot bone's head (the heel strikes) and tail (the ball pushes off)
UP = 2  # the world's up axis: a clip's floor is level


@dataclass(frozen=True)
class Point:
    """A point that may touch down: ``anchor`` along ``bone``; ``leg``: (thigh, shin), the
    limb above it whose knee must stay bent (None: no such limb)."""

    bone: str
    anchor: float
    leg: tuple[str, str] | None


def leg_of(obj, name: str, roles: dict[str, str]) -> tuple[str, str] | None:
    """(thigh, shin) above bone ``name``: by the roles of a recognised naming, else its
    grandparent and parent; None when it has no grandparent."""
    chain, bone = [], obj.pose.bones[name].parent
    while bone is not None:
        chain.append(bone.name)
        bone = bone.parent
    shin = next((b for b in chain if roles.get(b, "").startswith("shin")), None)
    thigh = next((b for b in chain if roles.get(b, "").startswith("thigh")), None)
    if shin is not None and thigh is not None and chain.index(thigh) == chain.index(shin) + 1:
        return thigh, shin
    return (chain[1], chain[0]) if len(chain) >= 2 else None


def points_of(obj, bones, heel_toe: bool, anchor: float) -> list[Point]:
    """The points of the selected ``bones`` that may plant: each bone's head and tail
    (``heel_toe``), else its point at ``anchor``. A head that is a selected parent's
    connected tail is that parent's toe already and is left out."""
    names = [b.name for b in obj.data.bones]
    parents = {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones}
    _, roles = anatomy.recognise(names, parents)
    selected = {pb.name for pb in bones}
    out = []
    for pb in bones:
        leg = leg_of(obj, pb.name, roles)
        if not heel_toe:
            out.append(Point(pb.name, anchor, leg))
            continue
        if not (pb.parent is not None and pb.parent.name in selected and pb.bone.use_connect):
            out.append(Point(pb.name, HEEL, leg))
        out.append(Point(pb.name, TOE, leg))
    return out


def sample(scene, obj, points: list[Point], frames) -> dict:
    """World paths (frames, 3) of each point and of its leg's hip and knee joints."""
    bones, anchors = [], []
    for p in points:
        bones.append(p.bone)
        anchors.append(p.anchor)
        if p.leg is not None:
            bones += list(p.leg)
            anchors += [0.0, 0.0]
    keys = list(dict.fromkeys(zip(bones, anchors)))
    names = [k[0] for k in keys]
    current = scene.frame_current
    readings, read = [], EndsReader(obj)
    try:
        for frame in frames:
            scene.frame_set(frame)
            readings.append(read(names))  # read raw, every frame's points worked out at once
    finally:
        scene.frame_set(current)
    points = points_at(readings, [k[1] for k in keys]) if readings else np.empty((0, len(keys), 3))
    return {key: points[:, k] for k, key in enumerate(keys)}


SPEED_FPS = 30.0  # the frame rate a clip is sampled at when none is given


def plants(settings, points: list[Point], paths: dict, fps: float = SPEED_FPS,
           open_ends: tuple[bool, bool] = (False, False),
           floor: float | None = None) -> dict[Point, list[contacts.Plant]]:
    """Each point's plants under the settings' thresholds, sampled at ``fps`` (the speed,
    metres a second, is a quarter as far per frame at 120 fps as at 30); plants cut
    by an ``open_ends`` end (start, end) of the sampled range held there
    (``core.contacts.held_at_ends``);
    a bone's tail plants agree with its head plants where both hold at once. With a
    ``floor`` height (world Z), no plant is held below it (a toe turned about its heel
    onto it), so that floor pins and plants can hold at once."""
    return paired_plants(settings, points, paths, held_plants(settings, points, paths, fps, open_ends), floor)


def held_plants(settings, points: list[Point], paths: dict, fps: float = SPEED_FPS,
                open_ends: tuple[bool, bool] = (False, False)) -> dict[Point, list[contacts.Plant]]:
    """Each point's plants on its own (``plants`` before a bone's two ends agree)."""
    found = {}
    speed = settings.contact_speed / max(fps, 1e-6)  # [m/s] to a distance per frame
    for p in points:
        path = paths[(p.bone, p.anchor)]
        ranges = contacts.planted_ranges(path, settings.contact_height, speed,
                                         settings.contact_min_frames, drift=settings.contact_drift)
        knee = {}
        if p.leg is not None and settings.contact_knee_bend > 0.0:
            hip, knee_joint = paths[(p.leg[0], 0.0)], paths[(p.leg[1], 0.0)]
            knee = {"hips": hip, "upper": float(np.median(np.linalg.norm(knee_joint - hip, axis=1))),
                    "lower": np.linalg.norm(path - knee_joint, axis=1), "bend": settings.contact_knee_bend}
        found[p] = contacts.held_at_ends(path, contacts.held(path, ranges, settings.contact_min_frames, **knee),
                                         *open_ends)
    return found


def paired_plants(settings, points: list[Point], paths: dict, held: dict[Point, list[contacts.Plant]],
                  floor: float | None = None) -> dict[Point, list[contacts.Plant]]:
    """The points' ``held`` plants (``held_plants``) with a bone's tail plants made to agree
    with its head plants, none below ``floor`` (``plants``)."""
    found = {p: held[p] if floor is None else contacts.raised(held[p], floor, UP) for p in points}
    for p in points:
        heel = next((q for q in points if q.bone == p.bone and q.anchor < p.anchor), None)
        if heel is not None:
            length = float(np.median(np.linalg.norm(paths[(p.bone, p.anchor)] - paths[(heel.bone, heel.anchor)],
                                                    axis=1)))
            found[p] = contacts.paired(found[heel], found[p], length, settings.contact_min_frames, floor, UP)
    return found


def floor_of(paths: dict, found: dict[Point, list[contacts.Plant]]) -> float | None:
    """The clip's floor (world Z) under the points' plants (``core.contacts.floor_height``): one
    level plane for every foot; None without plants."""
    return contacts.floor_height([paths[(p.bone, p.anchor)][:, UP] for p in found], list(found.values()))


def floor_pins(pins, points: list[Point], paths: dict, height: float) -> tuple[int, int]:
    """A FLOOR pin on each point, in force on every frame: on or above the level plane at
    ``height``, under the middle of the point's path. A bone's floor pin at the same anchor
    on the world is replaced (Detect Contacts run again adds none; one that follows a target,
    a table top, is another floor and stays); returns (added, replaced)."""
    added = 0
    for p in points:
        pin = next((q for q in pins if q.kind == "FLOOR" and q.bone == p.bone and abs(q.anchor - p.anchor) < 1e-6
                    and not targets.follows(q)), None)
        if pin is None:
            pin = pins.add()
            added += 1
        middle = paths[(p.bone, p.anchor)].mean(axis=0)
        pin.bone, pin.kind, pin.anchor, pin.enabled, pin.follow = p.bone, "FLOOR", p.anchor, True, False
        pin.location, pin.direction = (middle[0], middle[1], height), (0.0, 0.0, 1.0)
        pin.frame_start = pin.frame_end = 0
    return added, len(points) - added

