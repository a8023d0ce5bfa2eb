"""Benchmark summary: the speed aims S1 to S5, each beside Blender's own figure from the same run.

What it measures (every figure from this one run, on this machine; ratios are ours over
Blender's time, or Blender's frames per second over ours, so below 1 is faster)

    S1, a drag step: the Rigify basic human of ``bench_drag.py`` (feet and left hand pinned,
        ``hand.R``'s tail dragged in 1 cm steps), scripted ``bpy.ops.welman_ik.drag`` calls with
        the SR inverse and the quasi-Newton solver, and the modal drag's step (one
        ``DragSolver``, solve, write, evaluate, measure) with the SR inverse; against one step of
        Blender's Standard IK (move the empty, evaluate). The floor beside each: the step
        without the solve (write the pose, Blender's evaluation, the measure there) over
        Blender's step, the least any solver could reach.
    S2, CCD and the Jacobian transpose: the same scripted calls.
    S3, scale: the tree of ``bench_scaling.py`` (9 branch tips, 8 pinned, 1 dragged) at 50,
        500 and 2000 bones, scripted SR calls against Blender's Standard IK step, and the
        exponent of time against bones fitted over the sizes (1: linear).
    S4, the bake: ``bench_bake.py``'s squat (feet held) in frames per second against
        ``nla.bake``'s, and ``bench_cleanup.py`` on the longest fixture clip (contacts detected,
        then baked) with its plants' slide, the hips' distance from their path and the largest
        step's growth over the source's, measured on the evaluated pose.
    S5, the window: the median of solve plus the add-on's overlay draw per mouse event, read
        from a real-window run's report (``tests/e2e/run_e2e.py --mode cancel``;
        ``make bench`` runs one first).

Each drag takes the median over its steps; a fresh Blender scene per method as the
benchmarks it borrows from do. A shared two-core machine's speed can swing by a factor of
two within minutes: compare figures from one run, not across runs.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench.py                                   # S1 to S4
    .venv/bin/python scripts/bench.py --window out/bench/e2e_cancel.json  # and S5
    make bench                                                           # all of them
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import bench_bake
import bench_cleanup
import bench_drag
import bench_scaling

SIZES = (50, 500, 2000)
CLIPS = ROOT / "tests" / "fixtures"
# The margin tests/blender/test_cleanup_clips.py allows a step over the source's. The test takes each
# point's largest step over the whole clip; ``bench_cleanup``'s growth on the same frame is stricter.
STEP_MARGIN_MM = 3.0


@dataclass
class Line:
    """One row of the summary."""

    aim: str  # S1 ... S5
    what: str
    blender: str  # Blender's figure, as text
    ours: str
    ratio: float  # ours over Blender (time), nan when there is none
    goal: str  # what the aim asks, as text
    met: bool | None  # None: not measured here
    floor: float = math.nan  # the step without the solve over Blender's step

    def text(self) -> str:
        ratio = f"{self.ratio:.2f}x" if math.isfinite(self.ratio) else "-"
        floor = f"{self.floor:.2f}x" if math.isfinite(self.floor) else "-"
        met = {True: "yes", False: "no", None: "-"}[self.met]
        return (f"{self.aim:<4}{self.what:<46}{self.blender:>12}{self.ours:>12}{ratio:>8}{floor:>8}"
                f"{self.goal:>10}{met:>6}")


HEAD = f"{'':<4}{'what':<46}{'Blender':>12}{'ours':>12}{'ratio':>8}{'floor':>8}{'aim':>10}{'met':>6}"


def median(values) -> float:
    return statistics.median(values) if values else math.nan


def drags(steps: int) -> list[Line]:
    """S1 and S2 on the basic human."""
    obj = bench_drag.demo_scene()
    rest = bench_drag.snapshot(obj)
    bpy.context.view_layer.update()
    path = bench_drag.drag_path(bench_drag.world_tail(obj, bench_drag.DRAGGED, bench_drag.ANCHOR), steps)
    modal, _build, _solver = bench_drag.run_ours(obj, "SR_INVERSE", path, rest)
    scripted = {name: bench_drag.run_scripted(obj, name, path, rest) for name in bench_drag.OUR_SOLVERS}
    blender = bench_drag.run_blender("LEGACY", "Blender Standard IK", path)
    reference = median(blender.step_ms)
    floor = median([s - v for s, v in zip(modal.step_ms, modal.solve_ms)]) / reference
    lines = []
    for aim, name, what, goal in (("S1", "SR_INVERSE", "drag call, SR inverse (human, 5 pins)", 0.8),
                                  ("S1", "QUASI_NEWTON", "drag call, quasi-Newton", 1.0),
                                  ("S2", "CCD", "drag call, CCD", 2.0),
                                  ("S2", "JACOBIAN_TRANSPOSE", "drag call, Jacobian transpose", 2.0)):
        run = scripted[name]
        ratio = median(run.step_ms) / reference
        held = max(run.drag_errors) <= 1e-4 and max(run.pin_errors) <= 1e-4
        lines.append(Line(aim, what, f"{reference:.2f} ms", f"{median(run.step_ms):.2f} ms", ratio, f"<={goal:g}x",
                          ratio <= goal and held, floor))
    ratio = median(modal.step_ms) / reference
    lines.append(Line("S1", "modal drag step, SR inverse", f"{reference:.2f} ms", f"{median(modal.step_ms):.2f} ms",
                      ratio, "<=0.8x", ratio <= 0.8, floor))
    return lines


def scale(steps: int) -> list[Line]:
    """S3 on the trees of 50, 500 and 2000 bones."""
    ours, theirs, held = {}, {}, {}
    limits = bench_scaling.Limits(budget=1.0, cell_seconds=6.0)
    for bones in SIZES:
        tree = bench_scaling.build_tree(bones)
        rest = bench_drag.snapshot(tree.obj)
        path = bench_scaling.drag_path(tree, steps)
        run = bench_drag.run_scripted(tree.obj, "SR_INVERSE", path, rest, tree.dragged)
        ours[bones], held[bones] = median(run.step_ms), max(run.drag_errors) <= 1e-4 and max(run.pin_errors) <= 1e-4
        theirs[bones] = bench_scaling.run_blender(bones, path, limits).median
        print(f"  {bones} bones: drag call {ours[bones]:.1f} ms, Blender {theirs[bones]:.1f} ms", flush=True)
    logs = np.log(np.array(SIZES, dtype=float))
    growth = float(np.polyfit(logs, np.log([ours[b] for b in SIZES]), 1)[0])
    blender_growth = float(np.polyfit(logs, np.log([theirs[b] for b in SIZES]), 1)[0])
    lines = [Line("S3", f"drag call, SR inverse, {b}-bone tree, 8 pins", f"{theirs[b]:.1f} ms", f"{ours[b]:.1f} ms",
                  ours[b] / theirs[b], "<=1x" if b == 500 else "", ours[b] <= theirs[b] and held[b] if b == 500 else None)
             for b in SIZES]
    lines.append(Line("S3", f"growth, time ~ bones^k, {SIZES[0]} to {SIZES[-1]} bones", f"k {blender_growth:.2f}",
                      f"k {growth:.2f}", math.nan, "k<=1", growth <= 1.05 and all(held.values())))
    return lines


def bakes(repeats: int) -> list[Line]:
    """S4: the squat, and the longest fixture clip cleaned up."""
    obj = bench_bake.build_scene()
    with bench_bake.tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench_bake.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)  # before our bake: the same keys for Blender's
        ours, _profile = bench_bake.run_ours(obj, repeats, False)
        blender = bench_bake.run_blender(path, repeats)
    share = blender.fps / ours.fps  # time ratio: ours over Blender's
    lines = [Line("S4", f"bake, squat, {ours.frames} frames, feet held", f"{blender.fps:.0f} f/s",
                  f"{ours.fps:.0f} f/s", share, "<=0.5x", share <= 0.5 and ours.foot_error <= 1e-4)]
    clip = max(CLIPS.glob("*.bvh"), key=lambda p: p.stat().st_size)
    result = bench_cleanup.run_clip(clip, None)
    # The clean-up tests' checks: plants within 1 mm, the hips within 1 mm of their path, no
    # step more than 3 mm over the source's.
    held = result.slide_after_mm <= 1.0 and result.hips_max_mm <= 1.0 and result.step_excess_mm <= STEP_MARGIN_MM
    lines.append(Line("S4", f"clean-up bake, {clip.stem}, {result.frames} frames",
                      f"{result.frames / result.blender_seconds:.0f} f/s", f"{result.baked_fps:.0f} f/s",
                      result.ratio, "<=0.5x", result.ratio <= 0.5 and held))
    print(f"  {clip.name}: {result.contacts} contacts, slide {result.slide_before_mm:.1f} -> "
          f"{result.slide_after_mm:.2f} mm, hips at most {result.hips_max_mm:.2f} mm off their path, largest step "
          f"growth {result.step_excess_mm:.2f} mm", flush=True)
    return lines


def window(report: Path | None) -> list[Line]:
    """S5, from a real-window run's report."""
    if report is None or not report.is_file():
        return [Line("S5", "window: solve + overlay per mouse event", "", "not run", math.nan, "<=6 ms", None)]
    summary = json.loads(report.read_text()).get("result", {}).get("mouse_event_summary") or {}
    p4 = summary.get("p4_cpu") or summary.get("p4")  # the main thread's CPU time where measured, as the e2e gate
    if not p4:
        return [Line("S5", "window: solve + overlay per mouse event", "", "no events", math.nan, "<=6 ms", None)]
    clock = "CPU" if summary.get("p4_cpu") else "wall"
    return [Line("S5", f"window: solve + overlay, {summary.get('n_overlay', 0)} events ({clock})", "",
                 f"{p4['median']:.1f} ms", math.nan, "<=6 ms", p4["median"] <= 6.0)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="mouse events in the human's drag (1 cm each)")
    parser.add_argument("--tree-steps", type=int, default=12, help="mouse events in each tree's drag")
    parser.add_argument("--repeats", type=int, default=5, help="timed bakes of the squat per method")
    parser.add_argument("--window", type=Path, help="a real-window run's e2e_cancel.json, for S5")
    parser.add_argument("--only", default="S1,S3,S4,S5", help="which groups to run (S1 runs S2 too)")
    args = parser.parse_args(argv)
    only = {s.strip().upper() for s in args.only.split(",")}
    began = time.perf_counter()
    lines = []
    if "S1" in only or "S2" in only:
        lines += drags(args.steps)
    if "S3" in only:
        lines += scale(args.tree_steps)
    if "S4" in only:
        lines += bakes(args.repeats)
    if "S5" in only:
        lines += window(args.window)
    print()
    print(HEAD)
    print("-" * len(HEAD))
    for line in lines:
        print(line.text())
    print()
    print("ratio: our time over Blender's (below 1: faster); floor: the modal step without the solve (write the pose,")
    print("Blender's evaluation, the measure there) over Blender's step, the least ratio any solver could reach;")
    print("met: the aim holds with every goal within 1e-4 m on the evaluated pose (the bakes: the same checks as")
    print("bench_bake.py and bench_cleanup.py); a drag call is a whole bpy.ops.welman_ik.drag, from the armature")
    print(f"to the evaluated, measured pose. Total time {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
