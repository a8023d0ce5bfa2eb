"""A bake inside a longer clip: plants cut by the range's ends hold like every other plant and
nothing jumps where the baked range meets the animation; where goals were eased toward the
animation, the figures say so and keep each pin's distance from its own location apart from
the error against the eased goal. Measured on the evaluated pose of real mocap."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
import scenes
from conftest import import_clip, world_point

from welman_ik.blender.rig.units import length_text

HELD = 1e-3  # [m] a plant's drift over its frames, and its distance from its place
STEP_SLACK = 5e-3  # [m] a step at a range end may exceed the source's largest step by this
# (clip, feet, a stretch well inside the clip)
STRETCHES = [("mocapbank_clip.bvh", ("LeftAnkle", "RightAnkle"), 101, 300),
             ("pymo_walk.bvh", ("LeftFoot", "RightFoot"), 41, 240)]


def points_on(obj, points, frames) -> np.ndarray:
    """(frames, points, 3): world positions of (bone, anchor) points, evaluated."""
    scene = bpy.context.scene
    out = np.empty((len(frames), len(points), 3))
    for i, frame in enumerate(frames):
        scene.frame_set(frame)
        out[i] = [world_point(obj, bone, anchor) for bone, anchor in points]
    return out


@pytest.mark.parametrize(("clip", "feet", "first", "last"), STRETCHES)
def test_plants_hold_up_to_open_range_ends(clip, feet, first, last):
    """Detect Contacts and bake at the defaults on a stretch inside a longer clip: every plant,
    those cut by the range's first or last frame included, stays within 1 mm of its place on
    each of its frames; the steps into and out of the range are no larger than the source's
    own largest step + 5 mm; and the bake's reported largest pin error is what the evaluated
    pose shows."""
    scenes.empty_scene()
    obj = import_clip(clip)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    scenes.select(obj, feet)
    assert bpy.ops.welman_ik.detect_contacts() == {"FINISHED"}
    pins = [(p.bone, p.anchor, p.frame_start, p.frame_end, np.array(p.location)) for p in obj.welman_ik.pins]
    assert any(start == first for *_, start, _, _ in pins), "no plant is cut by the range start"
    assert any(end == last for *_, end, _ in pins), "no plant is cut by the range end"
    points = list(dict.fromkeys((bone, anchor) for bone, anchor, *_ in pins))
    frames = range(first - 1, last + 2)  # a frame of the animation on either side
    before = points_on(obj, points, frames)
    for bone, anchor, start, end, place in pins:  # a cut plant is held where the clip has it on the end
        ends = [before[at, points.index((bone, anchor))] for at, cut in ((1, start == first), (-2, end == last)) if cut]
        if len(ends) == 1 and not (anchor == 1.0 and any(p[:2] == (bone, 0.0) for p in pins)):
            assert np.linalg.norm(place - ends[0]) < 1e-5, (bone, anchor, start, end)  # (a toe follows its heel)
        elif len(ends) == 2 and anchor == 0.0:
            assert np.linalg.norm(place - np.mean(ends, axis=0)) < 1e-5, (bone, anchor, start, end)
    assert bpy.ops.welman_ik.bake(frame_start=first, frame_end=last) == {"FINISHED"}
    assert obj.animation_data.action.name.endswith(".welman_bake")
    after = points_on(obj, points, frames)
    worst = 0.0
    for bone, anchor, start, end, place in pins:
        path = after[start - frames[0]:end - frames[0] + 1, points.index((bone, anchor))]
        drift = float(np.linalg.norm(path[:, None] - path[None], axis=-1).max())
        off = float(np.linalg.norm(path - place, axis=1).max())
        assert drift <= HELD and off <= HELD, (bone, anchor, start, end, drift, off)
        worst = max(worst, off)
    steps = np.linalg.norm(np.diff(after, axis=0), axis=-1)  # (frames - 1, points)
    largest = float(np.linalg.norm(np.diff(before, axis=0), axis=-1).max())
    for at in (0, -1):  # into the range and out of it
        assert steps[at].max() <= largest + STEP_SLACK, (at, steps[at], largest)
    last_solve = obj.welman_ik.last_solve
    assert last_solve.eased_frames == 0  # plants hold in full: nothing was eased
    assert abs(last_solve.max_pin_error - worst) < 1e-4, (last_solve.max_pin_error, worst)


def unreachable_pin(frames: tuple[int, int], ranged: bool, falloff: int = 10):
    """The Biovision clip, its left toe pinned 30 cm beyond the straight leg's reach from the
    hip on the first frame of ``frames`` (with those frames as the pin's, or always), baked
    over ``frames`` only with the root kept on its path: (armature, pin location,
    evaluated distances of the toe from it on each frame)."""
    scenes.empty_scene()
    obj = import_clip("mocapbank_clip.bvh")
    obj.welman_ik.motion_falloff = falloff
    obj.welman_ik.root_motion = "KEEP"
    scene = bpy.context.scene
    scene.frame_set(frames[0])
    hip = world_point(obj, "LeftHip", 0.0)
    toe = world_point(obj, "LeftAnkle", 1.0)
    reach = sum(obj.pose.bones[n].length for n in ("LeftHip", "LeftKnee", "LeftAnkle"))
    target = hip + (toe - hip) / np.linalg.norm(toe - hip) * (reach + 0.3)
    scenes.select(obj, ["LeftAnkle"])
    assert bpy.ops.welman_ik.pin(kind="POSITION") == {"FINISHED"}
    pin = obj.welman_ik.pins[0]
    pin.location = target
    if ranged:
        pin.frame_start, pin.frame_end = frames
    assert bpy.ops.welman_ik.bake(frame_start=frames[0], frame_end=frames[1]) == {"FINISHED"}
    span = range(frames[0], frames[1] + 1)
    distances = np.linalg.norm(points_on(obj, [("LeftAnkle", 1.0)], span)[:, 0] - target, axis=1)
    return obj, target, distances


def test_an_unreachable_pin_with_its_own_frames_is_held_and_reported_as_it_is():
    """A pin with its own frames holds in full (nothing eased): the reported largest pin error
    is the evaluated distance from the pin's location, and every frame is listed as missed."""
    obj, _, distances = unreachable_pin((200, 209), ranged=True)
    last = obj.welman_ik.last_solve
    assert distances.min() > 0.25  # out of reach on every frame
    assert abs(last.max_pin_error - distances.max()) < 1e-3, (last.max_pin_error, distances.max())
    assert last.eased_frames == 0 and "eased" not in last.message
    assert not last.converged
    misses = obj.welman_ik.bake_misses
    assert sorted(m.frame for m in misses) == list(range(200, 210))
    for m in misses:
        assert abs(m.error - distances[m.frame - 200]) < 1e-3 and not m.eased


def test_an_eased_pin_reports_both_figures():
    """A pin in force always, baked over a stretch inside the clip: near the range's open ends
    the goal is eased toward the animation. The largest pin error is still each frame's
    evaluated distance from the pin's own location; the error against the eased goals is
    reported beside it, and the message names the easing, its frames and both figures."""
    obj, _, distances = unreachable_pin((200, 209), ranged=False)
    last = obj.welman_ik.last_solve
    assert abs(last.max_pin_error - distances.max()) < 1e-3, (last.max_pin_error, distances.max())
    assert last.eased_frames == 10  # a 10-frame falloff at both ends covers the whole stretch
    assert last.eased_pin_error < last.max_pin_error - 0.1
    assert "eased toward the animation" in last.message and "range start (200-204)" in last.message
    scene = bpy.context.scene
    assert length_text(scene, last.max_pin_error) in last.message
    assert length_text(scene, last.eased_pin_error) in last.message
    misses = {m.frame: m for m in obj.welman_ik.bake_misses}
    assert sorted(misses) == list(range(200, 210))
    for frame, m in misses.items():
        assert m.eased and abs(m.error - distances[frame - 200]) < 1e-3 and m.eased_error < m.error


def test_without_a_falloff_nothing_is_eased():
    """``motion_falloff = 0``: the same pin is asked for in full on every frame, and the
    figures are the evaluated distances, with nothing said of easing."""
    obj, _, distances = unreachable_pin((200, 209), ranged=False, falloff=0)
    last = obj.welman_ik.last_solve
    assert last.eased_frames == 0 and "eased" not in last.message
    assert abs(last.max_pin_error - distances.max()) < 1e-3
    assert abs(last.eased_pin_error - last.max_pin_error) < 1e-9
