"""Benchmark: mocap clean-up; foot contacts detected and held by a bake, on the fixture clips.

What it measures
    Every clip in ``tests/fixtures/*.bvh`` (``--clips``: a subset), each in a fresh scene
    (``bpy.ops.wm.read_homefile(use_empty=True)``), imported with Blender's BVH importer
    (``io_anim_bvh``; ``global_scale`` from ``SCALES``: centimetres 0.01, inches 0.0254;
    the scene's fps and range from the file, the range ending on the action's last key). The
    feet are the bones ``welman_ik.core.anatomy.recognise`` calls 'foot.L' and 'foot.R'; with
    exactly those selected, ``bpy.ops.welman_ik.detect_contacts()`` (its defaults: heel and
    toe) adds a POSITION pin per plant: a bone, a point on it (anchor 0: head, the heel;
    1: tail, the toe), a frame range and the place it is held at. Then
    ``bpy.ops.welman_ik.bake(frame_start, frame_end)`` at the armature's default settings
    (root_motion 'FOLLOW': the hips keep to their animated path below the pins), timed with
    ``time.perf_counter`` as one call.

    Blender's own bake of the same frames, for the time ratio, runs BEFORE ours, on the
    source action: ``bpy.ops.nla.bake(only_selected=False, visual_keying=True,
    bake_types={'POSE'}, use_current_action=False)`` keys every bone's location, rotation
    and scale on every frame into a new action; that action is then deleted and the source
    action put back. The source action's F-curves (every key's frame and value) are
    compared before and after, and the script stops if they differ, so our bake starts from
    exactly the animation the "before" figures were sampled from.

    Every figure is measured on the pose Blender evaluates (``scene.frame_set``, the
    evaluated armature's pose-bone heads and tails, through its ``matrix_world``), sampled
    on every frame before and after our bake, never taken from the pins' targets:

    * slide before / after [mm]: the largest drift of a planted foot. For each plant, the
      extent of its point over the plant's frames (the largest distance between any two of
      its positions); the clip's figure is the largest over its plants;
    * hips [mm]: the largest distance of the root bone's head from its source position,
      and the share of frames on which it is within 0.1 mm of it;
    * pin err [mm]: ``obj.welman_ik.last_solve.max_pin_error`` as the bake left it;
    * step after / source [mm]: a jump check; the largest move from one frame to the next of
      any plant point or the hips after the bake, against the largest in the source (the
      lines below the table: the most any one step grew over the source's step of the same
      point and frames, and where; in the JSON ``step_excess_mm`` and ``step_excess_at``);
      and the Blender tests' own check (``tests/blender/test_cleanup_clips.py``): every bone's
      head and tail, its largest step over the clip after the bake against its largest in
      the source (``step_growth_mm``, the most any grew; the tests allow 3 mm);
    * bake [s], baked frames per second, and the ratio of our bake's time to nla.bake's
      (below 1: ours is faster).

    A plot per clip, ``<images>/cleanup_<clip stem>.png`` (1000 x 600 px): the height of each
    plant point before (thin, light) and after (solid) with its planted frames shaded, and
    the drift, inside each plant, of its point from where it was on the plant's first frame.

    ``--stretch FIRST LAST``: detect and bake only frames FIRST..LAST of each clip, a stretch
    inside it that the clip goes on past on both sides (plants cut by the range's ends
    included); the samples then take one frame of the clip beyond each end, so the step
    figures include the steps into and out of the baked range.

    ``--frames N``: each clip made an N-frame take first (``longer_take``): played forward,
    then backward from its last frame, then forward again and so on (a palindrome loop), written
    as a BVH of the same skeleton and frame time. Every step from one frame to the next is one
    of the source's own, so the take has no seam and no jump; the mocapbank clip (a person
    standing goes down, the hips about half a metre lower, and comes back up; quiet at both
    ends, where the loop turns) so becomes a take of the same movement done again and again.
    ``--repeats R``: both bakes timed R times (the median; our bakes each from the source
    action again).

How to run (from the repository root, with the bpy-module virtual environment and
matplotlib; ``make bench-cleanup`` installs it)::

    .venv/bin/python scripts/bench_cleanup.py
    .venv/bin/python scripts/bench_cleanup.py --clips pymo_walk.bvh --no-plots
    .venv/bin/python scripts/bench_cleanup.py --output /tmp/bench --images /tmp/bench
    .venv/bin/python scripts/bench_cleanup.py --clips mocapbank_clip.bvh --stretch 101 300 --no-plots
    .venv/bin/python scripts/bench_cleanup.py --clips mocapbank_clip.bvh --frames 1000 --repeats 5 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import addon_utils
import bvh_variants
import scenes

from welman_ik.blender.rig import keyframes
from welman_ik.cleanup.job import find_feet, select_only
from welman_ik.cleanup.measure import extent, sample

FIXTURES = ROOT / "tests" / "fixtures"
SCALES = {  # metres per BVH unit, by file name
    "mocapbank_clip.bvh": 0.01,  # centimetres
    "mixamo_clip.bvh": 0.01,  # centimetres
    "pymo_walk.bvh": 0.0254,  # inches
}
DEFAULT_SCALE = 0.01
FEET = ("foot.L", "foot.R")  # the roles detect_contacts is run on
ON_PATH = 1e-4  # m: the hips are "on their path" within 0.1 mm
MM = 1000.0
POINT_NAMES = {0.0: "heel", 1.0: "toe"}
LANE = 0.035  # plot: the height of a point's lane of planted frames (axes fraction)


@dataclass
class Plant:
    """One pin of detect_contacts: ``bone``'s point ``anchor`` held over frames ``first``..``last``."""

    bone: str
    anchor: float
    first: int
    last: int
    location: tuple[float, float, float]
    slide_before: float = 0.0  # m: the point's extent over the plant, source
    slide_after: float = 0.0  # m: the same, baked

    @property
    def point(self) -> tuple[str, float]:
        return self.bone, self.anchor


@dataclass
class Result:
    """One clip: one row of the table, and the JSON's entry."""

    clip: str
    scale: float
    solver: str = "SR_INVERSE"
    naming: str = ""
    feet: list[str] = field(default_factory=list)
    frames: int = 0
    fps: float = 0.0
    contacts: int = 0
    slide_before_mm: float = float("nan")
    slide_after_mm: float = float("nan")
    hips_max_mm: float = float("nan")
    hips_on_path_share: float = float("nan")
    max_pin_error_mm: float = float("nan")
    step_after_mm: float = float("nan")
    step_source_mm: float = float("nan")
    step_excess_mm: float = float("nan")  # the largest step's growth over the source's, same point and frame
    step_excess_at: str = ""  # its point and frames
    step_growth_mm: float = float("nan")  # the tests' check: a bone end's largest step over its largest in the source
    bake_seconds: float = float("nan")
    blender_seconds: float = float("nan")
    message: str = ""
    image: str = ""
    error: str = ""
    plants: list[dict] = field(default_factory=list)
    profile: str = ""  # cProfile of one more of our bakes, when asked for

    @property
    def baked_fps(self) -> float:
        return self.frames / self.bake_seconds if self.bake_seconds > 0 else float("nan")

    @property
    def ratio(self) -> float:
        return self.bake_seconds / self.blender_seconds if self.blender_seconds > 0 else float("nan")


# -- scene -----------------------------------------------------------------------------


def fresh_scene() -> None:
    """An empty file, the BVH importer enabled and Welman IK registered (once)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    addon_utils.enable("io_anim_bvh", default_set=True)
    import welman_ik

    if not hasattr(bpy.types.Object, "welman_ik"):
        welman_ik.register()


def import_clip(path: Path, scale: float):
    """The clip as a new armature in pose mode; the scene's fps from the file, its range
    ending on the action's last key (the importer sets it one frame past)."""
    with scenes.quiet():  # the importer prints its progress
        result = bpy.ops.import_anim.bvh(filepath=str(path), global_scale=scale, update_scene_fps=True,
                                         update_scene_duration=True)
    if result != {"FINISHED"}:
        raise RuntimeError(f"import_anim.bvh: {result}")
    obj = bpy.context.object
    scene = bpy.context.scene
    first, last = obj.animation_data.action.frame_range
    scene.frame_start, scene.frame_end = round(first), round(last)
    bpy.ops.object.mode_set(mode="POSE")
    scene.frame_set(scene.frame_start)
    return obj


def root_bone(obj) -> str:
    return next(b.name for b in obj.data.bones if b.parent is None)


def plants_of(obj, frame_start: int) -> list[Plant]:
    """The pins detect_contacts made, as plants with frame indices from ``frame_start``."""
    return [Plant(p.bone, float(p.anchor), p.frame_start - frame_start, p.frame_end - frame_start,
                  tuple(float(v) for v in p.location)) for p in obj.welman_ik.pins]


def longer_take(source: Path, frames: int, output: Path) -> Path:
    """``source`` played on to ``frames`` frames as one take, written to ``output``: forward,
    then backward from its last frame, then forward again, ... (each end frame once), so every
    frame-to-frame step is one of the source's own and no seam jumps. Returns ``output``."""
    clip = bvh_variants.read(source)
    count = len(clip.motion)
    cycle = np.r_[np.arange(count), np.arange(count - 2, 0, -1)]  # 0 .. n-1 .. 1, then 0 again
    order = np.resize(cycle, frames) if count > 1 else np.zeros(frames, dtype=int)
    output.write_text(bvh_variants.format_clip(replace(clip, motion=clip.motion[order])), encoding="utf-8")
    return output


# -- sampling --------------------------------------------------------------------------


def steps(paths: np.ndarray) -> np.ndarray:
    """How far (frames - 1, k) [m] each point of paths (frames, k, 3) moves from one frame to the next."""
    return np.linalg.norm(np.diff(paths, axis=0), axis=-1)


# -- bakes -----------------------------------------------------------------------------


def fcurve_values(obj) -> dict[tuple[str, int], np.ndarray]:
    """Every key (frame, value and handles) of the assigned action, by channel."""
    values = {}
    for curve in keyframes.action_fcurves(obj):
        keys = curve.keyframe_points
        co = np.empty(len(keys) * 6)
        keys.foreach_get("co", co[: len(keys) * 2])
        keys.foreach_get("handle_left", co[len(keys) * 2: len(keys) * 4])
        keys.foreach_get("handle_right", co[len(keys) * 4:])
        values[(curve.data_path, curve.array_index)] = co
    return values


def same_keys(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def blender_bake(obj, frames: range) -> float:
    """Seconds of Blender's visual bake of every bone over ``frames`` into a new action; the
    new action is deleted and the source action put back, unchanged (checked)."""
    source = obj.animation_data.action
    before = fcurve_values(obj)
    select_only(obj, [pb.name for pb in obj.pose.bones])
    started = time.perf_counter()
    result = bpy.ops.nla.bake(frame_start=frames[0], frame_end=frames[-1], only_selected=False, visual_keying=True,
                              bake_types={"POSE"}, use_current_action=False)
    seconds = time.perf_counter() - started
    made = obj.animation_data.action
    keyframes.assign_action(obj, source)
    if made is not None and made != source:
        bpy.data.actions.remove(made)
    if result != {"FINISHED"}:
        raise RuntimeError(f"nla.bake: {result}")
    if made == source:
        raise RuntimeError("nla.bake keyed the source action instead of a new one")
    if not same_keys(before, fcurve_values(obj)):
        raise RuntimeError("nla.bake changed the source action's keys")
    bpy.context.scene.frame_set(frames[0])
    return seconds


def our_bake(obj, frames: range) -> float:
    """Seconds of ``welman_ik.bake`` over ``frames`` at the armature's settings."""
    source = obj.animation_data.action
    started = time.perf_counter()
    result = bpy.ops.welman_ik.bake(frame_start=frames[0], frame_end=frames[-1])
    seconds = time.perf_counter() - started
    if result != {"FINISHED"}:
        raise RuntimeError(f"welman_ik.bake: {result}")
    if obj.animation_data.action == source:
        raise RuntimeError("welman_ik.bake left the source action on the armature")
    return seconds


# -- one clip --------------------------------------------------------------------------


def run_clip(path: Path, images: Path | None, solver: str = "SR_INVERSE",
             stretch: tuple[int, int] | None = None, repeats: int = 1, scale: float | None = None,
             profile: bool = False) -> Result:
    """Import, detect, bake with ``solver`` and measure one clip (see the module's docstring);
    ``stretch``: only those frames (first, last), sampled one frame beyond each end; ``repeats``:
    timed bakes of each kind (the median); ``scale``: metres per BVH unit (default: by the
    clip's name); ``profile``: cProfile one more of our bakes (``Result.profile``)."""
    result = Result(path.name, scale or SCALES.get(path.name, DEFAULT_SCALE), solver)
    fresh_scene()
    obj = import_clip(path, result.scale)
    scene = bpy.context.scene
    clip = range(scene.frame_start, scene.frame_end + 1)
    sampled = clip
    if stretch is not None:
        scene.frame_start, scene.frame_end = stretch
        sampled = range(max(stretch[0] - 1, clip[0]), min(stretch[1] + 1, clip[-1]) + 1)
    frames = range(scene.frame_start, scene.frame_end + 1)
    result.frames = len(frames)
    result.fps = scene.render.fps / scene.render.fps_base
    result.naming, result.feet = find_feet(obj)
    print(f"{path.name}: {result.frames} frames at {result.fps:.2f} fps, global_scale {result.scale}, "
          f"naming {result.naming or '(none)'}, feet {', '.join(result.feet) or '(none)'}")
    if len(result.feet) != 2:
        raise RuntimeError(f"expected two feet (foot.L, foot.R), found {result.feet}")

    select_only(obj, result.feet)
    obj.welman_ik.solver = solver
    if bpy.ops.welman_ik.detect_contacts() != {"FINISHED"}:
        raise RuntimeError("welman_ik.detect_contacts did not finish")
    plants = plants_of(obj, sampled[0])
    result.contacts = len(plants)
    points = list(dict.fromkeys(p.point for p in plants)) + [(root_bone(obj), 0.0)]  # the hips last
    ends = [(pb.name, anchor) for pb in obj.pose.bones for anchor in (0.0, 1.0)]  # every bone's head and tail
    before = sample(obj, points + ends, sampled)
    before, before_ends = before[:, :len(points)], before[:, len(points):]

    result.blender_seconds = statistics.median(blender_bake(obj, frames) for _ in range(repeats))
    source_action = obj.animation_data.action
    times = []
    for k in range(repeats + profile):
        if k:  # again from the source action: the last bake's deleted
            made = obj.animation_data.action
            keyframes.assign_action(obj, source_action)
            bpy.data.actions.remove(made)
            scene.frame_set(frames[0])
        select_only(obj, result.feet)
        if k == repeats:
            result.profile = scenes.profiled(lambda: our_bake(obj, frames), 15)
        else:
            times.append(our_bake(obj, frames))
    result.bake_seconds = statistics.median(times)
    last = obj.welman_ik.last_solve
    result.max_pin_error_mm = last.max_pin_error * MM
    result.message = last.message
    after = sample(obj, points + ends, sampled)
    after, after_ends = after[:, :len(points)], after[:, len(points):]

    column = {point: k for k, point in enumerate(points)}
    for plant in plants:
        span = slice(plant.first, plant.last + 1)
        plant.slide_before = extent(before[span, column[plant.point]])
        plant.slide_after = extent(after[span, column[plant.point]])
    result.plants = [asdict(p) | {"frame_start": sampled[p.first], "frame_end": sampled[p.last]} for p in plants]
    result.slide_before_mm = max((p.slide_before for p in plants), default=0.0) * MM
    result.slide_after_mm = max((p.slide_after for p in plants), default=0.0) * MM
    hips = np.linalg.norm(after[:, -1] - before[:, -1], axis=-1)
    result.hips_max_mm = float(hips.max()) * MM
    result.hips_on_path_share = float(np.mean(hips <= ON_PATH))
    if len(sampled) > 1:
        moved, source = steps(after), steps(before)
        result.step_after_mm = float(moved.max()) * MM
        result.step_source_mm = float(source.max()) * MM
        growth = moved - source
        i, k = np.unravel_index(int(np.argmax(growth)), growth.shape)
        result.step_excess_mm = float(growth[i, k]) * MM
        where = point_label(points[k]) if k < len(points) - 1 else "hips"
        result.step_excess_at = f"{where}, frame {sampled[i]} -> {sampled[i + 1]}"
        result.step_growth_mm = float((steps(after_ends).max(axis=0) - steps(before_ends).max(axis=0)).max()) * MM
    if images is not None:
        result.image = str(plot(result, plants, points, column, sampled, before, after, images))
    return result


# -- plot ------------------------------------------------------------------------------


def point_label(point: tuple[str, float]) -> str:
    bone, anchor = point
    return f"{bone} {POINT_NAMES.get(anchor, f'@{anchor:g}')}"


def plot(result: Result, plants: list[Plant], points, column, frames: range, before, after, images: Path) -> Path:
    """The clip's figure: plant points' heights and drifts, before and after; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    x = np.asarray(frames)
    colours = plt.get_cmap("tab10").colors
    planted = points[:-1]  # the hips are not plotted
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), dpi=100, sharex=True, constrained_layout=True)
    for k, point in enumerate(planted):
        c = colours[k % len(colours)]
        top.plot(x, before[:, column[point], 2] * 100, color=c, lw=0.8, alpha=0.45)
        top.plot(x, after[:, column[point], 2] * 100, color=c, lw=1.6)
    # The planted frames: a shaded lane per point along the bottom, under the curves.
    heights = np.concatenate([before[:, :-1, 2], after[:, :-1, 2]]).ravel() * 100
    low, high = (float(heights.min()), float(heights.max())) if heights.size else (0.0, 1.0)
    base = LANE * len(planted) + 0.03  # axes fraction below the curves
    total = max(high - low, 1e-6) / (0.97 - base)
    top.set_ylim(low - base * total, low - base * total + total)
    for plant in plants:
        k = planted.index(plant.point)
        c = colours[k % len(colours)]
        top.axvspan(x[plant.first] - 0.5, x[plant.last] + 0.5, ymin=k * LANE, ymax=(k + 1) * LANE, color=c,
                    alpha=0.55, lw=0)
        span = slice(plant.first, plant.last + 1)
        for paths, style in ((before, {"lw": 0.8, "alpha": 0.45}), (after, {"lw": 1.6})):
            path = paths[span, column[plant.point]]
            bottom.plot(x[span], np.linalg.norm(path - path[0], axis=-1) * MM, color=c, **style)
    top.set_title(f"{result.clip}: {result.contacts} plants ({result.naming} naming); "
                  f"slide {result.slide_before_mm:.1f} mm before, {result.slide_after_mm:.2f} mm after the bake")
    top.set_ylabel("height (world Z) [cm]")
    bottom.set_title("drift inside each plant: distance of its point from where it was on the plant's first frame")
    bottom.set_ylabel("drift [mm]")
    bottom.set_xlabel(f"frame ({result.fps:.0f} fps)")
    bottom.set_ylim(bottom=0)
    bottom.set_xlim(x[0], x[-1])
    handles = [Line2D([], [], color=colours[k % len(colours)], lw=1.6, label=point_label(p))
               for k, p in enumerate(planted)]
    handles += [Line2D([], [], color="grey", lw=0.8, alpha=0.45, label="before (source)"),
                Line2D([], [], color="grey", lw=1.6, label="after (baked)"),
                Patch(color="grey", alpha=0.55, lw=0, label="planted frames (lanes)")]
    top.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    for axes in (top, bottom):
        axes.grid(alpha=0.3)
    images.mkdir(parents=True, exist_ok=True)
    path = images / f"cleanup_{Path(result.clip).stem}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


# -- report ----------------------------------------------------------------------------


def markdown(results: list[Result]) -> str:
    head = ("| clip | solver | frames | fps | contacts | slide before [mm] | slide after [mm] | hips max [mm] "
            "| hips on path [%] | max pin err [mm] | step after / source [mm] | bake [s] | baked frames/s "
            "| time / nla.bake |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in results:
        if r.error:
            lines.append(f"| {r.clip} | {r.solver} | {r.frames} | {r.fps:.0f} | {r.contacts} | failed: {r.error} |"
                         + " |" * 8)
            continue
        lines.append(f"| {r.clip} | {r.solver} | {r.frames} | {r.fps:.0f} | {r.contacts} | {r.slide_before_mm:.1f} "
                     f"| {r.slide_after_mm:.3f} | {r.hips_max_mm:.2f} | {r.hips_on_path_share * 100:.1f} "
                     f"| {r.max_pin_error_mm:.4f} | {r.step_after_mm:.1f} / {r.step_source_mm:.1f} "
                     f"| {r.bake_seconds:.2f} | {r.baked_fps:.0f} | {r.ratio:.2f} |")
    return "\n".join(lines)


def finite(value):
    """NaN as null for JSON."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", nargs="+", metavar="NAME",
                        help="file names in tests/fixtures (default: every *.bvh there)")
    parser.add_argument("--output", type=Path, default=Path("out"), help="folder for bench_cleanup.json")
    parser.add_argument("--images", type=Path, default=Path("docs/images"), help="folder for the plots")
    parser.add_argument("--no-plots", action="store_true", help="skip the plots")
    parser.add_argument("--solvers", nargs="+", default=["SR_INVERSE"], metavar="SOLVER",
                        choices=["SR_INVERSE", "CCD", "JACOBIAN_TRANSPOSE"],
                        help="bake each clip with each of these (the plots: the first one's)")
    parser.add_argument("--stretch", nargs=2, type=int, metavar=("FIRST", "LAST"),
                        help="detect and bake only these frames of each clip (a stretch the clip goes on past)")
    parser.add_argument("--frames", type=int, help="make each clip a take of this many frames first (looped)")
    parser.add_argument("--repeats", type=int, default=1, help="timed bakes of each kind per clip (the median)")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one more of our bakes")
    args = parser.parse_args(argv)
    began = time.perf_counter()

    paths = [FIXTURES / name for name in args.clips] if args.clips else sorted(FIXTURES.glob("*.bvh"))
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such clip in {FIXTURES}: {', '.join(missing)}")
    results = []
    takes = tempfile.TemporaryDirectory()
    for source in paths:
        scale = SCALES.get(source.name, DEFAULT_SCALE)
        path = (longer_take(source, args.frames, Path(takes.name) / f"{source.stem}_{args.frames}.bvh")
                if args.frames else source)
        for k, solver in enumerate(args.solvers):
            try:
                results.append(run_clip(path, None if args.no_plots or k else args.images, solver,
                                        tuple(args.stretch) if args.stretch else None, args.repeats, scale,
                                        args.profile and not k))
            except Exception as error:  # noqa: BLE001 - one clip's failure is reported, the others still run
                results.append(Result(path.name, SCALES.get(path.name, DEFAULT_SCALE), solver,
                                      error=f"{type(error).__name__}: {error}"))
                print(f"{path.name} ({solver}): FAILED: {results[-1].error}")
            print()
    takes.cleanup()

    print(markdown(results))
    print()
    print("slide: the largest extent of a plant point over its plant's frames (measured on the evaluated pose); "
          "hips: the root's head against its source")
    print(f"position (on path: within {ON_PATH * MM:g} mm); step: the largest frame-to-frame move of any plant "
          "point or the hips; time / nla.bake: our bake's seconds")
    print("over Blender's visual nla.bake of every bone on the same frames.")
    for r in results:
        if not r.error:
            print(f"{r.clip}: largest step growth over the source's: {r.step_excess_mm:.1f} mm ({r.step_excess_at}); "
                  f"a bone end's largest step over its largest in the source (the tests' check): "
                  f"{r.step_growth_mm:.1f} mm")
        if r.message:
            print(f"{r.clip}: last_solve: {r.message}")
        if r.image:
            print(f"{r.clip}: plot {r.image}")
        if r.profile:
            print(f"{r.clip}: cProfile of one more of our bakes ({r.frames} frames):\n{r.profile}")

    args.output.mkdir(parents=True, exist_ok=True)
    out = args.output / "bench_cleanup.json"
    out.write_text(json.dumps(finite([asdict(r) | {"baked_fps": r.baked_fps, "ratio": r.ratio} for r in results]),
                              indent=1))
    print(f"Wrote {out}")
    print(f"Total time {time.perf_counter() - began:.1f} s")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the bpy module can hang at exit with add-ons registered
