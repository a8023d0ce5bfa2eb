"""Real mocap: contacts found on the ankles, foot sliding removed by the bake, no pops."""

from __future__ import annotations

import itertools
import math

import bpy
import numpy as np
import pytest
import scenes
from conftest import import_clip, rotation_angle, world_point

ANKLES = ("LeftAnkle", "RightAnkle")
FRAMES = (1, 200)
# In this clip the hips travel away from a planted ankle until the leg cannot reach it with
# the root on its recorded path: the cleanup lets the root move (the bake's option).
MOVE_ROOT = True


def clip_with_contacts():
    """The Biovision clip over ``FRAMES``, the ankles' contacts found and pinned."""
    scenes.empty_scene()
    obj = import_clip("mocapbank_clip.bvh")
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = FRAMES
    scenes.select(obj, ANKLES)
    assert bpy.ops.welman_ik.detect_contacts() == {"FINISHED"}
    return obj


@pytest.fixture(scope="module")
def baked_mocap():
    obj = clip_with_contacts()
    frames = range(FRAMES[0], FRAMES[1] + 1)
    before = _sample(obj, frames)
    assert bpy.ops.welman_ik.bake(frame_start=FRAMES[0], frame_end=FRAMES[1], move_root=MOVE_ROOT) == {"FINISHED"}
    after = _sample(obj, frames)
    return obj, before, after


def _sample(obj, frames) -> dict:
    """Per frame: the ankles' heads and tails (heel and toe) and every bone's world rotation."""
    out = {}
    for f in frames:
        bpy.context.scene.frame_set(f)
        out[f] = {
            "ankles": {(n, a): world_point(obj, n, a) for n in ANKLES for a in (0.0, 1.0)},
            "rotations": {pb.name: (obj.matrix_world @ pb.matrix).to_quaternion() for pb in obj.pose.bones},
        }
    return out


def _drift(samples, pin) -> float:
    """How far the pin's point wanders over every frame of the pin, up to the end of the baked
    range too: the clip goes on after it, and Detect Contacts places a plant cut there where
    the source has it on the range's last frame, so it is held in full."""
    start = samples[pin.frame_start]["ankles"][pin.bone, pin.anchor]
    return max(np.linalg.norm(samples[f]["ankles"][pin.bone, pin.anchor] - start)
               for f in range(pin.frame_start, pin.frame_end + 1))


def test_contacts_found_on_both_ankles(baked_mocap):
    obj, _, _ = baked_mocap
    bones = {p.bone for p in obj.welman_ik.pins}
    assert bones == set(ANKLES)
    for pin in obj.welman_ik.pins:
        assert FRAMES[0] <= pin.frame_start < pin.frame_end <= FRAMES[1]


def test_plants_stop_sliding(baked_mocap):
    obj, before, after = baked_mocap
    drifts = [(pin.bone, pin.frame_start, pin.frame_end, _drift(before, pin), _drift(after, pin))
              for pin in obj.welman_ik.pins]
    print("\nankle drift per plant, before -> after (mm):")
    for bone, start, end, was, now in drifts:
        print(f"  {bone} {start}-{end}: {1000 * was:.2f} -> {1000 * now:.3f}")
    assert max(was for *_, was, _ in drifts) > 1e-3  # the source slides
    assert all(now < 1e-3 for *_, now in drifts)


def test_no_pops(baked_mocap):
    """Each bone's largest rotation between neighbouring frames stays within a quarter more
    than the source animation's own for that bone, plus 0.1 degree (the bake holds the feet
    without a pop: 1.06 times at most on this clip)."""
    _, before, after = baked_mocap
    frames = sorted(before)

    def largest_step(samples, name):
        return max(rotation_angle(samples[a]["rotations"][name], samples[b]["rotations"][name])
                   for a, b in itertools.pairwise(frames))

    ratios = {}
    for name in before[frames[0]]["rotations"]:
        source, baked = largest_step(before, name), largest_step(after, name)
        assert baked <= 1.25 * source + math.radians(0.1), (name, source, baked)
        ratios[name] = baked / max(source, 1e-9)
    worst = max(ratios, key=ratios.get)
    print(f"\nlargest per-frame rotation, baked over source: at most {ratios[worst]:.3f} ({worst})")


@pytest.fixture(scope="module")
def baked_at_defaults():
    """The same clip baked with every setting at its default: ``root_motion = 'FOLLOW'``."""
    obj = clip_with_contacts()
    assert obj.welman_ik.root_motion == "FOLLOW"
    scene = bpy.context.scene
    frames = range(FRAMES[0], FRAMES[1] + 1)
    hips = {}
    for f in frames:
        scene.frame_set(f)
        hips[f] = world_point(obj, "Hips", 0.0)
    before = _sample(obj, frames)
    assert bpy.ops.welman_ik.bake(frame_start=FRAMES[0], frame_end=FRAMES[1]) == {"FINISHED"}
    after = _sample(obj, frames)
    moved = {}
    for f in frames:
        scene.frame_set(f)
        moved[f] = float(np.linalg.norm(world_point(obj, "Hips", 0.0) - hips[f]))
    return obj, before, after, moved


def test_at_the_defaults_the_hips_follow_their_path(baked_at_defaults):
    """'FOLLOW': the hips leave their recorded path only where a plant needs it, by at most
    2 cm, and stay on it (within 0.1 mm) on most frames; the plants do not slide more than
    with the root free."""
    obj, before, after, moved = baked_at_defaults
    off = np.array(list(moved.values()))
    print(f"\nhips off their path: largest {1000 * off.max():.2f} mm, on path (< 0.1 mm) on "
          f"{np.mean(off < 1e-4):.0%} of frames")
    assert off.max() <= 0.02
    assert np.mean(off < 1e-4) >= 0.5
    drifts = [(pin.bone, _drift(before, pin), _drift(after, pin)) for pin in obj.welman_ik.pins]
    print("ankle drift per plant, before -> after (mm): "
          + ", ".join(f"{bone} {1000 * was:.2f} -> {1000 * now:.3f}" for bone, was, now in drifts))
    assert all(now < 1e-3 for *_, now in drifts)


def test_the_hips_leave_and_rejoin_their_path_smoothly():
    """A pin 8 cm below where the left ankle stands, on frames 20-40, needs the hips off their
    path ('FOLLOW'; mostly sideways, toward the pinned leg: up to 10.8 mm, 4.2 mm while it
    holds, less than 1 mm lower): on frames 1-9 they are on it, over the 10 frames of the
    falloff before the pin takes hold (10-19) they ease off it, further on every frame (0.2
    mm on frame 10, 10.6 on 19); they stay within 14 mm of it, come back onto it afterwards,
    and never move more than 2 mm a frame relative to it (measured 1.54)."""
    scenes.empty_scene()
    obj = import_clip("mocapbank_clip.bvh", whole=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 80
    hips = {}
    for f in range(1, 81):
        scene.frame_set(f)
        hips[f] = world_point(obj, "Hips", 0.0)
    scene.frame_set(20)
    scenes.select(obj, ["LeftAnkle"])
    assert bpy.ops.welman_ik.pin(anchor=0.0) == {"FINISHED"}
    pin = obj.welman_ik.pins[0]
    pin.frame_start, pin.frame_end = 20, 40
    pin.location = world_point(obj, "LeftAnkle", 0.0) - np.array([0.0, 0.0, 0.08])
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=80) == {"FINISHED"}
    off = np.empty((80, 3))
    for f in range(1, 81):
        scene.frame_set(f)
        off[f - 1] = world_point(obj, "Hips", 0.0) - hips[f]
    distance = np.linalg.norm(off, axis=1)
    steps = np.linalg.norm(np.diff(off, axis=0), axis=1)
    print(f"\nhips: at most {1000 * distance.max():.2f} mm off their path, {1000 * steps.max():.2f} mm a frame")
    assert obj.welman_ik.last_solve.max_pin_error <= 1e-4
    assert distance[19:40].min() > 0.002  # the pin needed them off their path
    assert np.all(distance[:9] < 1e-6)  # frames 1-9
    assert 0.0 < distance[9] < 0.001 and distance[18] > 0.005, distance[9:19]  # frames 10 and 19
    assert np.all(np.diff(distance[9:20]) > 0.0), distance[9:20]  # eased off, frame by frame, up to frame 20
    assert distance.max() <= 0.014
    assert np.all(distance[60:] < 1e-6)  # back on the path
    assert steps.max() <= 0.002


def test_a_bake_runs_no_garbage_collection_and_leaves_the_collector_on():
    """A bake's thousands of short-lived objects are freed by reference counting as it goes:
    Python's collector, whose full pass walks every object Blender's Python holds (about
    20 ms), does not run during it, and is on again once it is done."""
    import gc

    scenes.empty_scene()
    obj = import_clip("pymo_walk.bvh")
    scene = bpy.context.scene
    scenes.select(obj, [b.name for b in obj.data.bones if b.name in ("LeftFoot", "RightFoot")])
    assert bpy.ops.welman_ik.detect_contacts() == {"FINISHED"}
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    assert gc.isenabled()
    gc.callbacks.append(count)
    try:
        assert bpy.ops.welman_ik.bake(frame_start=scene.frame_start, frame_end=scene.frame_end) == {"FINISHED"}
    finally:
        gc.callbacks.remove(count)
    assert obj.welman_ik.last_solve.max_pin_error < 1e-4
    # (one young collection may run as the collector comes back on, before the call returns)
    assert len(collections) <= 1 and 2 not in collections, collections
    assert gc.isenabled()
