"""A cleaned clip against its source, as a user would compare them: both imported with the
importer's default settings.

What it prints
    * frames: each file's first and last frame once imported, and its frame rate;
    * size per axis: the skeleton's extent along world X, Y and Z (every bone's head and
      tail, evaluated) on each frame, and the largest difference over the frames, in the
      file's units (the BVH importer's default reads one unit as a metre);
    * for BVH files, from their text: whether the HIERARCHY is the same (joint names,
      hierarchy, offsets, channel layout and rotation orders) and each file's channel count
      per joint on the first joints;
    * with ``--report``: every plant of the clean-up's report entry for the cleaned file,
      measured on its evaluated pose (imported at the report's ``scale``), against the
      report: its drift over its frames and its distance from where it is held.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python -m welman_ik.cleanup tests/fixtures/pymo_walk.bvh --out /tmp/cleaned
    .venv/bin/python scripts/compare_clips.py tests/fixtures/pymo_walk.bvh /tmp/cleaned/pymo_walk.bvh \\
        --report /tmp/cleaned/report.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import addon_utils

from welman_ik.cleanup import bvh
from welman_ik.cleanup.clips import quiet
from welman_ik.cleanup.measure import extent, walk

ANCHORS = {"heel": 0.0, "toe": 1.0}


def imported(path: Path, **options):
    """``path`` in an empty scene through Blender's importer with ``options`` (else its
    defaults): the armature with the most bones and its action's frames."""
    bpy.ops.wm.read_homefile(use_empty=True)
    for module in ("io_anim_bvh", "io_scene_fbx"):
        addon_utils.enable(module, default_set=True)
    with quiet():
        if path.suffix.lower() == ".bvh":
            done = bpy.ops.import_anim.bvh(filepath=str(path), **options)
        else:
            done = bpy.ops.import_scene.fbx(filepath=str(path), **options)
    if done != {"FINISHED"}:
        raise RuntimeError(f"could not import {path}: {done}")
    obj = max((o for o in bpy.context.scene.objects if o.type == "ARMATURE"), key=lambda o: len(o.data.bones))
    first, last = (round(v) for v in obj.animation_data.action.frame_range)
    return obj, range(first, last + 1)


def fps() -> float:
    return bpy.context.scene.render.fps / bpy.context.scene.render.fps_base


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("cleaned", type=Path)
    parser.add_argument("--report", type=Path, help="the clean-up's report.json (its entry for the cleaned file)")
    args = parser.parse_args(argv)

    obj, frames = imported(args.source)
    source_rate, source_sizes = fps(), walk(obj, [], frames)[1]
    obj, cleaned_frames = imported(args.cleaned)
    cleaned_sizes = walk(obj, [], cleaned_frames)[1]
    print(f"frames: source {frames[0]}-{frames[-1]} at {source_rate:g} fps, cleaned "
          f"{cleaned_frames[0]}-{cleaned_frames[-1]} at {fps():g} fps")
    shared = min(len(frames), len(cleaned_sizes))
    print(f"size per axis on the first frame: source {np.round(source_sizes[0], 3)}, cleaned "
          f"{np.round(cleaned_sizes[0], 3)}")
    print("largest difference per axis over the frames: "
          f"{np.round(np.abs(source_sizes[:shared] - cleaned_sizes[:shared]).max(axis=0), 4)} (file units)")
    if args.source.suffix.lower() == ".bvh":
        was, now = bvh.parse(args.source.read_text()), bvh.parse(args.cleaned.read_text())
        same = (was.names == now.names and was.parents == now.parents and was.channels == now.channels
                and np.array_equal(was.offsets, now.offsets))
        print(f"hierarchy, offsets and channels the same: {same}; channels per joint (first 4): source "
              f"{[len(c) for c in was.channels[:4]]}, cleaned {[len(c) for c in now.channels[:4]]}; "
              f"frames {len(was.motion)} and {len(now.motion)}, frame time {was.frame_time:g} and {now.frame_time:g}")
    if args.report:
        entry = next(e for e in json.loads(args.report.read_text()) if e["file"] == args.cleaned.name)
        options = {"global_scale": entry["scale"]} if args.cleaned.suffix.lower() == ".bvh" else {}
        obj, _ = imported(args.cleaned, **options)
        worst = [0.0, 0.0, 0.0, 0.0]  # drift and distance measured, and their differences from the report
        for plant in entry.get("plants", []):
            span = range(plant["frame_start"], plant["frame_end"] + 1)
            path = walk(obj, [(plant["bone"], ANCHORS.get(plant["point"], plant["point"]))], span)[0][:, 0]
            drift = extent(path) * 1000.0
            off = float(np.linalg.norm(path - np.array(plant["held_at_m"]), axis=1).max()) * 1000.0
            worst = [max(worst[0], drift), max(worst[1], off), max(worst[2], abs(drift - plant["slide_after_mm"])),
                     max(worst[3], abs(off - plant["pin_error_mm"]))]
        print(f"plants measured on the cleaned file: largest drift {worst[0]:.4f} mm (report "
              f"{entry['slide_after_mm']}), largest distance from the held place {worst[1]:.4f} mm (report "
              f"{entry['max_pin_error_mm']}); the report's figures within {max(worst[2:]):.4f} mm of these")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the bpy module can hang at exit with add-ons registered
