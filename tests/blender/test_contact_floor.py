"""Detect Contacts' Floor option: a real mocap clip whose feet dip below its floor on a stretch
of frames (its hips keyed lower there), the floor found from its contacts, floor pins on each
ankle's heel and toe, a bake: on every frame of the new action no foot point is below that
floor (measured on the evaluated pose); the original action untouched. The same clip moved up
by a metre gives the same result against its own floor. The retarget's floor goals follow
its setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import addon_utils
import bpy
import numpy as np
import pytest
import scenes
from conftest import FIXTURES, ROOT, import_clip
from mathutils import Matrix, Vector
from test_bake import _keys

from welman_ik.blender.rig.keyframes import action_fcurves
from welman_ik.cleanup.job import clean
from welman_ik.cleanup.measure import sample

CLIP = "mocapbank_clip.bvh"
FEET = ("LeftAnkle", "RightAnkle")  # (their tails are the toes' ends: the clip has no toe joints)
POINTS = [(bone, anchor) for bone in FEET for anchor in (0.0, 1.0)]
DIP = 0.015  # [m] the hips keyed this much lower ...
DIPPED = (150, 250)  # ... over these frames, eased in and out over RAMP frames on either side
RAMP = 10
BELOW = 1e-4  # [m] a baked foot point below the floor by no more than this


def lower_hips(obj, depth: float, frames: tuple[int, int]) -> None:
    """The root bone's location keys moved ``depth`` down in the world on ``frames`` (half a
    cosine in and out over ``RAMP`` frames on either side), in bulk on each curve."""
    root = obj.pose.bones["Hips"]
    turn = (obj.matrix_world.to_3x3() @ root.bone.matrix_local.to_3x3()).inverted()
    down = np.array(turn @ Vector((0.0, 0.0, -depth)))
    for curve in action_fcurves(obj):
        if curve.data_path != 'pose.bones["Hips"].location':
            continue
        co = np.empty(2 * len(curve.keyframe_points))
        curve.keyframe_points.foreach_get("co", co)
        at = co[0::2]
        outside = np.maximum(frames[0] - at, at - frames[1]).clip(0.0, None)
        share = np.where(outside > RAMP, 0.0, 0.5 * (1.0 + np.cos(np.pi * outside / RAMP)))
        co[1::2] += share * down[curve.array_index]
        curve.keyframe_points.foreach_set("co", co)
        curve.update()


def dipped_clip(lift: float = 0.0):
    """The clip over all its frames, moved ``lift`` up, its hips keyed lower over ``DIPPED``."""
    scenes.empty_scene()
    obj = import_clip(CLIP, whole=True)
    obj.matrix_world = Matrix.Translation((0.0, 0.0, lift)) @ obj.matrix_world
    lower_hips(obj, DIP, DIPPED)
    return obj


def frames() -> range:
    scene = bpy.context.scene
    return range(scene.frame_start, scene.frame_end + 1)


def floor_pins(obj) -> list:
    return [p for p in obj.welman_ik.pins if p.kind == "FLOOR"]


def detect(obj, **options) -> None:
    scenes.select(obj, FEET)
    with scenes.quiet():
        assert bpy.ops.welman_ik.detect_contacts(**options) == {"FINISHED"}


def feet(obj) -> np.ndarray:
    """(frames, points, 3) the foot points on each frame, evaluated."""
    return sample(obj, POINTS, frames())


def lowest_feet(obj) -> np.ndarray:
    """(frames,) the height of the lowest foot point on each frame, evaluated."""
    return feet(obj)[..., 2].min(axis=1)


def bake(obj) -> None:
    original = obj.animation_data.action
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=frames()[0], frame_end=frames()[-1]) == {"FINISHED"}
    assert obj.animation_data.action is not original


@pytest.fixture(scope="module", params=[0.0, 1.0], ids=["on the ground", "a metre up"])
def baked(request):
    """The dipped clip (``lift`` up), its contacts and floor detected and baked: the floor's
    height, the lowest foot point on each frame before and after, the original action's keys
    before and after the bake."""
    obj = dipped_clip(request.param)
    before = feet(obj)
    detect(obj, floor=True)
    pins = floor_pins(obj)
    assert {(p.bone, p.anchor) for p in pins} == set(POINTS)
    height = pins[0].location[2]
    assert all(p.location[2] == height and tuple(p.direction) == (0.0, 0.0, 1.0) and p.frame_start == p.frame_end == 0
               for p in pins)
    original = obj.animation_data.action
    keys = _keys(obj)
    bake(obj)
    last = obj.welman_ik.last_solve
    print(f"\nbake: largest pin error {1000 * last.max_pin_error:.4f} mm; {last.message}")
    assert last.max_pin_error <= 1e-4, last.message  # the plants and the floor held at once
    after = feet(obj)
    obj.animation_data.action = original
    return SimpleNamespace(lift=request.param, height=height, before=before, after=after, keys=keys,
                           keys_after=_keys(obj))


def test_the_floor_is_found_under_the_toes(baked):
    """The floor is where the toes stand while planted (1.9 cm above the clip's own ground,
    its ankles 11 cm above it), a metre higher for the clip moved up a metre."""
    print(f"\nfloor at {baked.height - baked.lift:.4f} m above the clip's ground")
    assert 0.015 <= baked.height - baked.lift <= 0.03


def test_a_bake_keeps_every_foot_point_on_or_above_the_floor(baked):
    """Measured 13.5 mm below the floor before, 0.0002 mm after."""
    lowest_before, lowest_after = baked.before[..., 2].min(axis=1), baked.after[..., 2].min(axis=1)
    below_before, below_after = baked.height - lowest_before.min(), baked.height - lowest_after.min()
    print(f"\nlowest foot point below the floor: before {1000 * below_before:.2f} mm, after "
          f"{1000 * below_after:.4f} mm")
    assert below_before > 0.01  # the dip takes the feet through the floor
    assert below_after <= BELOW, np.flatnonzero(lowest_after < baked.height - BELOW)


@pytest.fixture(scope="module")
def unfloored():
    """The dipped clip's contacts without the floor, baked: the floor it would have found and
    the foot points on each frame after the bake."""
    obj = dipped_clip()
    detect(obj, floor=True)
    height = floor_pins(obj)[0].location[2]
    obj.welman_ik.pins.clear()
    detect(obj, floor=False)
    bake(obj)
    return SimpleNamespace(height=height, after=feet(obj))


def test_without_the_floor_the_bake_leaves_the_dip(unfloored):
    """The same clip, contacts without the floor: the plants are held where they are, and the
    feet still go below the floor (measured 8.4 mm)."""
    below = unfloored.height - unfloored.after[..., 2].min()
    print(f"\nwithout floor pins, lowest foot point below the floor after the bake: {1000 * below:.2f} mm")
    assert below > 0.005


def test_the_floor_makes_no_jump(baked, unfloored):
    """No foot point's step from one frame to the next outgrows the clip's own step there by
    more than 1 mm beyond what the bake without the floor makes it outgrow (where a plant
    takes hold: measured 7.2 mm beyond the clip's with the floor, 9.2 mm without): the
    chains still ease onto their plants, and a floor carries no correction from a plant
    through the swing after it."""

    def outgrown(path):  # (points,) the most a step of each point outgrows the clip's own
        return (np.linalg.norm(np.diff(path, axis=0), axis=-1)
                - np.linalg.norm(np.diff(baked.before, axis=0), axis=-1)).max(axis=0)

    floored, plain = outgrown(baked.after), outgrown(unfloored.after)
    print(f"\na step outgrows the clip's by at most {1000 * floored.max():.2f} mm with the floor, "
          f"{1000 * plain.max():.2f} mm without")
    assert np.all(floored <= plain + 0.001), (floored, plain)


def test_the_original_action_is_untouched(baked):
    assert baked.keys_after == baked.keys


def test_detecting_twice_adds_no_second_floor_pin():
    obj = dipped_clip()
    detect(obj, floor=True)
    pins = floor_pins(obj)
    detect(obj, floor=True)
    again = floor_pins(obj)
    assert len(again) == len(pins) == len(POINTS)
    assert {(p.bone, p.anchor) for p in again} == set(POINTS)


def test_the_floor_setting_is_the_default_and_off_adds_no_floor_pin():
    obj = dipped_clip()
    assert obj.welman_ik.contact_floor is False
    detect(obj)
    assert obj.welman_ik.pins and not floor_pins(obj)
    obj.welman_ik.pins.clear()
    obj.welman_ik.contact_floor = True
    detect(obj)
    assert len(floor_pins(obj)) == len(POINTS)
    obj.welman_ik.pins.clear()
    detect(obj, floor=False)
    assert obj.welman_ik.pins and not floor_pins(obj)


@pytest.mark.parametrize("on", [True, False])
def test_the_retarget_floor_setting_switches_its_floor_goals(on):
    from welman_ik.blender.bake import retarget as retarget_goals
    from welman_ik.blender.rig.retarget_map import fill, retarget_scale

    scenes.empty_scene()
    source = import_clip(CLIP)
    bpy.ops.object.mode_set(mode="OBJECT")
    source.select_set(False)
    target = scenes.basic_human(pins=())
    assert target.welman_ik.retarget_floor is True
    target.welman_ik.retarget_floor = on
    fill(target, source)
    found = retarget_goals.make(bpy.context, target, source, list(range(1, 21)), retarget_scale(target, source), True)
    assert bool(found.floors) is on


# -- the batch clean-up ----------------------------------------------------------------------

CLEANED_FRAMES = 150  # the clip's first frames (the clean-up suite is slow enough)


def dipped_bvh(path) -> None:
    """The clip's first ``CLEANED_FRAMES`` frames as a BVH file, its root's height (Yposition,
    in centimetres) lowered by ``DIP`` over ``DIPPED`` frames of Blender's (from 1) kept in
    range, eased in and out as ``lower_hips`` does."""
    lines = (FIXTURES / CLIP).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Frame Time:")) + 1
    motion = np.array([[float(v) for v in line.split()] for line in lines[start:start + CLEANED_FRAMES]])
    at = np.arange(1, CLEANED_FRAMES + 1)
    first, last = 60, 110
    outside = np.maximum(first - at, at - last).clip(0.0, None)
    motion[:, 1] -= 100.0 * DIP * np.where(outside > RAMP, 0.0, 0.5 * (1.0 + np.cos(np.pi * outside / RAMP)))
    head = [f"Frames:\t{CLEANED_FRAMES}" if line.startswith("Frames:") else line for line in lines[:start]]
    path.write_text("\n".join(head + [" ".join(f"{v:.4f}" for v in row) for row in motion]) + "\n")


def test_the_cleanup_keeps_the_feet_above_the_floor(tmp_path):
    """The clean-up of a clip whose feet dip below its floor: the report's figures (measured
    on the written file) and the written file imported again here: no foot point below the
    floor by more than 0.1 mm on any frame; the plants held as before."""
    source = tmp_path / "dipped.bvh"
    dipped_bvh(source)
    written = tmp_path / "out" / source.name
    written.parent.mkdir()
    entry = clean(source, written)
    print(f"\nclean-up: below the floor before {entry['below_floor_before_mm']} mm, after "
          f"{entry['below_floor_after_mm']} mm; slide {entry['slide_before_mm']} -> {entry['slide_after_mm']} mm")
    assert entry["status"] == "ok", entry
    assert entry["below_floor_before_mm"] > 5.0 and entry["below_floor_after_mm"] <= 1000 * BELOW, entry
    assert entry["slide_after_mm"] < 1.0 and entry["max_pin_error_mm"] < 0.1, entry
    scenes.empty_scene()
    addon_utils.enable("io_anim_bvh", default_set=True)
    assert bpy.ops.import_anim.bvh(filepath=str(written), global_scale=entry["scale"],
                                   update_scene_duration=True) == {"FINISHED"}
    obj = bpy.context.object
    bpy.context.scene.frame_end = bpy.context.scene.frame_start + entry["frames"] - 1
    lowest = lowest_feet(obj)
    assert entry["floor_m"] - lowest.min() <= BELOW + 1e-6, (entry["floor_m"], lowest.min())


def test_the_cleanup_cli_can_leave_the_floor_out(tmp_path):
    """``--no-floor``: no floor pins, so no floor figures; the clip is cleaned all the same."""
    source = tmp_path / "dipped.bvh"
    dipped_bvh(source)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "welman_ik.cleanup", str(source), "--out", str(out), "--workers",
                           "1", "--no-floor", "--quiet"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get(
                              "PYTHONPATH")]))}, check=False)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads((out / "report.json").read_text())
    assert entry["status"] == "ok" and entry["contacts"] > 0, entry
    assert entry["floor_m"] is entry["below_floor_before_mm"] is entry["below_floor_after_mm"] is None, entry
