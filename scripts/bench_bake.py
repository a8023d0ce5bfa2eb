"""Benchmark: bake frames per second of Welman IK against Blender's own bake of the same problem.

What it measures
    The Fig 6.5 scene of ``tests/blender/test_bake.py``, made longer: the Rigify basic human
    metarig (``scenes.basic_human``) with position pins on the tails of ``toe.L``, ``toe.R``,
    ``heel.02.L`` and ``heel.02.R`` only, the whole pose keyed at six frames evenly from 1 to the
    last (``--frames``, 101 by default: frames 1, 21, 41, 61, 81 and 101; 120: 1, 25, 49, 72, 96
    and 120), the pelvis alternately at rest and 0.25 m lower (the lowered pose is made once with
    ``bpy.ops.welman_ik.drag('spine', ..., anchor=0)``, the feet pinned). Interpolating joint
    angles between the keys lets the planted feet slide and sink; a bake holds them.

    Welman IK: ``bpy.ops.welman_ik.bake(frame_start=1, frame_end=101)`` (the last frame; the
    settings' solver and tolerance, root bone kept on its animated path), timed as one call:
    per frame it evaluates the animation, solves with the pins, and at the end writes a new
    action.

    Blender, on a fresh copy of the same scene (the .blend saved before our bake, reopened:
    the same action, key for key): one IK constraint per pinned bone (``use_tail``,
    ``chain_count`` 4: toe or heel, foot, shin, thigh, so the pelvis keeps its animated path
    as in ours; no stretch; Standard solver) aiming at an empty placed at the pin, then
    ``bpy.ops.nla.bake(frame_start=1, frame_end=101, only_selected=False, visual_keying=True,
    clear_constraints=False, bake_types={'POSE'})`` (the same last frame), timed as one call (visual keying: every
    bone's location, rotation and scale keyed on every frame into a new action).

    Each method runs once untimed on frames 1..3 first (warm-up), then ``--repeats`` times
    (5) on the whole range, each time from the original action (the previous bake's action
    deleted); the median time is shown. Per method: frames, seconds, frames per second, the
    ratio of frames per second to Blender's, and the largest foot error: over all frames of
    the range, ``scene.frame_set`` and the evaluated tails of the four foot bones against the
    pin locations. For Blender the IK constraints are muted first, so the error is the baked
    keys' own. The keys before any bake are shown for reference.

Differences to keep in mind: ours keys only the bones its model moves (the legs' chains),
with their rotation (and the root's location); Blender's visual bake keys every bone's
location, rotation and scale. Welman IK stops at ``settings.tolerance`` (1e-5 m by default);
Blender's Standard IK runs its own convergence test up to ``iterations``.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench_bake.py              # the table
    .venv/bin/python scripts/bench_bake.py --repeats 1  # one timed bake per method
    .venv/bin/python scripts/bench_bake.py --frames 120 # the squat over frames 1..120
    .venv/bin/python scripts/bench_bake.py --profile    # plus cProfile of our bake
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scenes

from welman_ik.blender.rig import keyframes

FEET = scenes.FEET  # toe.L, toe.R, heel.02.L, heel.02.R: pinned at their tails
PELVIS = "spine"  # the root bone; its head is the pelvis
DROP = 0.25  # metres the pelvis is lowered on every other key
FRAMES = 101  # frames 1..101 by default (``--frames``); the scene's range says how many
KEY_COUNT = 6  # keys evenly over the range: at rest, lowered, at rest, ...
FRAME_START = 1
WARMUP_END = FRAME_START + 2  # the untimed warm-up bakes frames 1..3
CHAIN_COUNT = 4  # toe/heel, foot, shin, thigh: up to the thigh, the pelvis not included
BLENDER_ITERATIONS = 500  # the IK constraint's default


@dataclass
class Row:
    """One line of the table."""

    name: str
    frames: int
    seconds: float | None
    foot_error: float | None
    worst: str = ""

    @property
    def fps(self) -> float | None:
        return self.frames / self.seconds if self.seconds else None


# -- scene -----------------------------------------------------------------------------


def channels(obj) -> dict:
    return {pb.name: (tuple(pb.location), tuple(pb.rotation_quaternion), tuple(pb.rotation_euler),
                      tuple(pb.rotation_axis_angle), tuple(pb.scale)) for pb in obj.pose.bones}


def set_channels(obj, values: dict) -> None:
    for pb in obj.pose.bones:
        pb.location, pb.rotation_quaternion, pb.rotation_euler, pb.rotation_axis_angle, pb.scale = values[pb.name]


def key_all(obj, frame: int) -> None:
    for pb in obj.pose.bones:
        pb.keyframe_insert(keyframes.rotation_path(pb), frame=frame, group=pb.name)
        pb.keyframe_insert("location", frame=frame, group=pb.name)


def keys(frames: int = FRAMES) -> tuple[int, ...]:
    """The keyed frames of a squat over frames 1..``frames``: ``KEY_COUNT`` of them, evenly."""
    return tuple(int(f) for f in np.rint(np.linspace(FRAME_START, FRAME_START + frames - 1, KEY_COUNT)))


def frame_end() -> int:
    """The bake's last frame: the scene's (``build_scene`` sets it; the reopened copy keeps it)."""
    return bpy.context.scene.frame_end


def build_scene(frames: int = FRAMES):
    """The long Fig 6.5 scene over frames 1..``frames``; returns the armature (pose mode, feet
    pinned, keys set)."""
    scenes.empty_scene()
    obj = scenes.basic_human(pins=FEET)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAME_START, FRAME_START + frames - 1
    scene.frame_set(FRAME_START)
    rest = channels(obj)
    pelvis = world_point(obj, PELVIS, 0.0)
    result = bpy.ops.welman_ik.drag(bone=PELVIS, target=tuple(float(v) for v in pelvis - [0.0, 0.0, DROP]),
                                    anchor=0.0)
    if result != {"FINISHED"}:
        raise RuntimeError(f"Lowering the pelvis failed: {result}")
    lowered = channels(obj)
    for i, frame in enumerate(keys(frames)):
        set_channels(obj, lowered if i % 2 else rest)
        key_all(obj, frame)
    scene.frame_set(FRAME_START)
    return obj


def pins(obj) -> list[tuple[str, float, np.ndarray]]:
    return [(p.bone, p.anchor, np.array(p.location)) for p in obj.welman_ik.pins if p.enabled]


def world_point(obj, bone: str, anchor: float = 1.0) -> np.ndarray:
    """World position of a point along an evaluated pose bone (0 head, 1 tail)."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    pb = evaluated.pose.bones[bone]
    return np.array(evaluated.matrix_world @ (pb.head + anchor * (pb.tail - pb.head)))


def foot_error(obj, goals) -> tuple[float, str]:
    """Largest distance [m] of a pinned point from its pin over the bake range, and where."""
    scene = bpy.context.scene
    worst, where = 0.0, ""
    for frame in range(FRAME_START, frame_end() + 1):
        scene.frame_set(frame)
        for bone, anchor, location in goals:
            error = float(np.linalg.norm(world_point(obj, bone, anchor) - location))
            if error > worst:
                worst, where = error, f"{bone} @ {frame}"
    scene.frame_set(FRAME_START)
    return worst, where


def reassign(obj, action) -> None:
    """Put ``action`` back on the armature and delete the one a bake made."""
    made = obj.animation_data.action
    keyframes.assign_action(obj, action)
    if made is not None and made != action:
        bpy.data.actions.remove(made)


# -- Welman IK -------------------------------------------------------------------------


def bake_ours(last: int) -> float:
    started = time.perf_counter()
    result = bpy.ops.welman_ik.bake(frame_start=FRAME_START, frame_end=last)
    seconds = time.perf_counter() - started
    if result != {"FINISHED"}:
        raise RuntimeError(f"welman_ik.bake: {result}")
    return seconds


def timed(bake, obj, repeats: int) -> float:
    """Median seconds of ``repeats`` bakes of the whole range, after an untimed warm-up
    on frames 1..3; each from the original action; the last bake's action is left on."""
    original = obj.animation_data.action
    bake(WARMUP_END)
    times = []
    for _ in range(repeats):
        reassign(obj, original)
        bpy.context.scene.frame_set(FRAME_START)
        times.append(bake(frame_end()))
    return statistics.median(times)


def evaluation_alone(obj, repeats: int) -> Row:
    """One ``scene.frame_set`` per frame of the range on the baked action, timed as a bake is
    (median of ``repeats``): what measuring every baked frame on the evaluated pose costs, so
    the most frames per second any bake that reports evaluated figures could reach."""
    scene = bpy.context.scene
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for frame in range(FRAME_START, frame_end() + 1):
            scene.frame_set(frame)
        times.append(time.perf_counter() - started)
    scene.frame_set(FRAME_START)
    return Row("evaluating each frame once", frame_end() - FRAME_START + 1, statistics.median(times), None)


def run_ours(obj, repeats: int, profile: bool) -> tuple[Row, str]:
    original = obj.animation_data.action
    seconds = timed(bake_ours, obj, repeats)
    error, worst = foot_error(obj, pins(obj))
    row = Row(f"Welman IK ({obj.welman_ik.solver})", frame_end() - FRAME_START + 1, seconds, error, worst)
    report = ""
    if profile:
        reassign(obj, original)
        bpy.context.scene.frame_set(FRAME_START)
        report = scenes.profiled(lambda: bake_ours(frame_end()))
    return row, report


# -- Blender's IK ----------------------------------------------------------------------


def blender_rig(path: Path):
    """The saved scene reopened, its pins held by IK constraints aiming at empties."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.context.view_layer.objects.active
    if obj is None or obj.type != "ARMATURE":
        raise RuntimeError("The reopened scene has no active armature")
    goals = pins(obj)
    obj.pose.ik_solver = "LEGACY"
    constraints = []
    for bone, _anchor, location in goals:
        empty = bpy.data.objects.new(f"IK target {bone}", None)
        empty.location = tuple(location)
        bpy.context.scene.collection.objects.link(empty)
        ik = obj.pose.bones[bone].constraints.new("IK")
        ik.target = empty
        ik.chain_count = CHAIN_COUNT
        ik.use_tail = True
        ik.use_stretch = False
        ik.iterations = BLENDER_ITERATIONS
        constraints.append(ik)
    obj.select_set(True)
    if obj.mode != "POSE":
        bpy.ops.object.mode_set(mode="POSE")
    scenes.select(obj, [pb.name for pb in obj.pose.bones])
    return obj, goals, constraints


def bake_blender(last: int) -> float:
    started = time.perf_counter()
    result = bpy.ops.nla.bake(frame_start=FRAME_START, frame_end=last, only_selected=False,
                              visual_keying=True, clear_constraints=False, bake_types={"POSE"})
    seconds = time.perf_counter() - started
    if result != {"FINISHED"}:
        raise RuntimeError(f"nla.bake: {result}")
    return seconds


def run_blender(path: Path, repeats: int) -> Row:
    obj, goals, constraints = blender_rig(path)
    original = obj.animation_data.action
    seconds = timed(bake_blender, obj, repeats)
    if obj.animation_data.action == original:
        raise RuntimeError("nla.bake did not make a new action")
    for ik in constraints:
        ik.mute = True
    error, worst = foot_error(obj, goals)
    return Row("Blender Standard IK", frame_end() - FRAME_START + 1, seconds, error, worst)


# -- report ----------------------------------------------------------------------------


def table(rows: list[Row], reference: Row) -> str:
    head = f"{'method':<28}{'frames':>7}{'seconds':>9}{'frames/s':>10}{'ratio':>8}{'max foot err (m)':>18}  worst at"
    lines = [head, "-" * (len(head) + 12)]
    for r in rows:
        if r.seconds is None:
            timing = f"{'-':>9}{'-':>10}{'-':>8}"
        else:
            timing = f"{r.seconds:9.3f}{r.fps:10.1f}{r.fps / reference.fps:8.2f}"
        error = f"{r.foot_error:18.2e}" if r.foot_error is not None else f"{'-':>18}"
        lines.append(f"{r.name:<28}{r.frames:7d}{timing}{error}  {r.worst}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed bakes per method (the median is shown)")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of our bake")
    parser.add_argument("--frames", type=int, default=FRAMES, help="the squat's length: frames 1..FRAMES")
    args = parser.parse_args(argv)
    began = time.perf_counter()

    obj = build_scene(args.frames)
    settings = obj.welman_ik
    keys_only = Row("keys only (no bake)", frame_end() - FRAME_START + 1, None, *foot_error(obj, pins(obj)))
    print(f"Fig 6.5, longer: keys at frames {', '.join(map(str, keys(args.frames)))}, pelvis alternately at rest "
          f"and {DROP:.2f} m lower; pins: {', '.join(b for b, _a, _l in pins(obj))} (tails); bake "
          f"{FRAME_START}..{frame_end()}")
    print(f"Welman IK settings: solver {settings.solver}, tolerance {settings.tolerance:.0e} m, "
          f"max_iterations {settings.max_iterations}")

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench_bake.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
        ours, profile = run_ours(obj, args.repeats, args.profile)
        floor = evaluation_alone(obj, args.repeats)
        blender = run_blender(path, args.repeats)

    print()
    print(table([blender, ours, floor, keys_only], blender))
    print()
    print(f"seconds: one bake call (the operator), median of {args.repeats}, warm-up not counted; "
          "ratio: frames/s over Blender's;")
    print("foot error [m]: evaluated tails of the pinned bones against the pins, largest over all frames")
    print(f"(Blender's with its IK constraints muted). Blender: IK on each foot bone, chain_count {CHAIN_COUNT}, "
          f"use_tail, no stretch, iterations {BLENDER_ITERATIONS};")
    print("nla.bake with visual keying of every bone. Ours keys the legs' chains only.")
    print("evaluating each frame once: scene.frame_set on every frame of the baked action, nothing else: what our")
    print("bake spends at least to measure its frames on the evaluated pose, so its highest possible ratio.")
    if profile:
        print()
        print(f"cProfile of Welman IK's bake ({FRAME_START}..{frame_end()}):")
        print(profile)
    print(f"Total time {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the bpy module can hang at exit with add-ons registered
