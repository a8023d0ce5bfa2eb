"""Benchmark summary: the speed aims, each beside Blender's own figure from the same run.

Issue 40's six targets are the rows numbered 1 to 6 in the ``#`` column; the other rows are
the earlier aims. What it measures (every figure from this one run, on this machine; ratios
are our time over Blender's, so below 1 is faster: a bake at 0.5x takes half Blender's time,
twice its frames per second)

    S1, a drag step: the Rigify basic human of ``bench_drag.py`` (feet and left hand pinned,
        ``hand.R``'s tail dragged in 1 cm steps), scripted ``bpy.ops.welman_ik.drag`` calls with
        the SR inverse and the quasi-Newton solver (target 6: at most 1.0x and 1.2x), and the
        modal drag's step (one ``DragSolver``, solve, write, evaluate, measure) with the SR
        inverse; against one step of Blender's Standard IK (move the empty, evaluate). The
        floor beside each: the step without the solve (write the pose, Blender's evaluation,
        the measure there) over Blender's step, the least any solver could reach.
    S2, CCD and the Jacobian transpose: the same scripted calls (target 6: at most 1.5x).
    S3, scale: the tree of ``bench_scaling.py`` (9 branch tips, 8 pinned, 1 dragged) at 50,
        500 and 2000 bones, scripted SR calls against Blender's Standard IK step, and the
        exponent of time against bones fitted over the sizes (1: linear).
    S4, the bakes, each timed ``--repeats`` times (the median):
        target 1, ``bench_bake.py``'s squat (feet held) over frames 1..120 against ``nla.bake``
        of its IK constraints; target 2, ``bench_cleanup.py`` on the longest fixture clip made
        a 1,000-frame take (``bench_cleanup.longer_take``: played forward, back, forward, ...),
        contacts detected, then baked, against a plain ``nla.bake`` of the clip, with the
        clean-up tests' checks (plants within 1 mm, the hips within 1 mm of their path on every
        frame and 0.1 mm on 99 %, no bone end's largest step more than 3 mm over the source's);
        target 3, the clean-up command line (``python -m welman_ik.cleanup TAKE --workers 1``,
        the whole process: start, import, detect, bake, export, read back) on the same take,
        its frames per second per worker against that same ``nla.bake``'s.
    S5, the window: read from a real-window run's report (``tests/e2e/run_e2e.py --mode
        cancel``; ``make bench`` runs one first): the median of solve plus the add-on's overlay
        draw per mouse event, and the 99th percentile of the drag's own time per mouse event
        (``DragSession.milliseconds``, SR inverse; target 5).
    S6, the retarget (target 4): ``welman_ik.retarget`` of the PyMO walk's first 200 frames onto
        the basic human metarig (``retarget_gates.py``'s set-up) against ``compare_retarget.py``'s
        Copy Rotation bake of the same frames onto another metarig (Copy Rotation on every
        mapped bone, Copy Location on the hips, ``nla.bake`` with visual keying); each on a
        fresh metarig, ``--repeats`` times; met when every one of the retarget's gates holds.
    S7, the interactive drag per mouse event (target 5): ``bench_events.py``, every solver,
        without and with the human joint ranges, reaching up and far across, 60 events each
        through ``DragSession.move`` with the drag's time budget; the worst 99th percentile
        against Blender's Standard IK step along the same lines, and the table of every drag.

Each drag takes the median over its steps; a fresh Blender scene per method as the
benchmarks it borrows from do. A shared two-core machine's speed can swing by a factor of
two within minutes: compare figures from one run, not across runs.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench.py                                   # all but S5
    .venv/bin/python scripts/bench.py --window out/bench/e2e_cancel.json  # and S5
    .venv/bin/python scripts/bench.py --only S4,S6 --profile             # some groups; a clean-up bake's profile
    .venv/bin/python scripts/bench.py --page docs/performance.md         # and the table into the page
    make bench                                                           # all of them, into docs/performance.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
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

import bench_bake
import bench_cleanup
import bench_drag
import bench_events
import bench_scaling
import scenes

SIZES = (50, 500, 2000)
CLIPS = ROOT / "tests" / "fixtures"
SQUAT_FRAMES = 120
TAKE_FRAMES = 1000
WALK, WALK_UNITS, WALK_FRAMES = "pymo_walk.bvh", "in", 200
# The clean-up tests' checks (tests/blender/test_cleanup_clips.py; the issue asks plants within 1 mm).
PLANT_MM, HIPS_MM, HIPS_ON_PATH, STEP_MARGIN_MM = 1.0, 1.0, 0.99, 3.0
GROUPS = ("S1", "S2", "S3", "S4", "S5", "S6", "S7")


@dataclass
class Line:
    """One row of the summary."""

    aim: str  # S1 ... S7
    what: str
    blender: str  # Blender's figure, as text
    ours: str
    ratio: float  # ours over Blender (time), nan when there is none
    goal: str  # what the aim asks, as text
    met: bool | None  # None: not measured here
    floor: float = math.nan  # the step without the solve over Blender's step
    target: str = ""  # issue 40's target number, if the row is one

    def text(self) -> str:
        ratio = f"{self.ratio:.2f}x" if math.isfinite(self.ratio) else "-"
        floor = f"{self.floor:.2f}x" if math.isfinite(self.floor) else "-"
        met = {True: "yes", False: "no", None: "-"}[self.met]
        return (f"{self.aim:<4}{self.target:<3}{self.what:<50}{self.blender:>12}{self.ours:>12}{ratio:>8}{floor:>8}"
                f"{self.goal:>11}{met:>6}")


HEAD = (f"{'':<4}{'#':<3}{'what':<50}{'Blender':>12}{'ours':>12}{'ratio':>8}{'floor':>8}{'aim':>11}"
        f"{'met':>6}")


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else math.nan


def drags(steps: int) -> list[Line]:
    """S1 and S2 on the basic human."""
    with scenes.quiet():
        obj = bench_drag.demo_scene()
    rest = bench_drag.snapshot(obj)
    bpy.context.view_layer.update()
    path = bench_drag.drag_path(bench_drag.world_tail(obj, bench_drag.DRAGGED, bench_drag.ANCHOR), steps)
    modal, _build, _solver = bench_drag.run_ours(obj, "SR_INVERSE", path, rest)
    scripted = {name: bench_drag.run_scripted(obj, name, path, rest) for name in bench_drag.OUR_SOLVERS}
    with scenes.quiet():
        blender = bench_drag.run_blender("LEGACY", "Blender Standard IK", path)
    reference = median(blender.step_ms)
    floor = median([s - v for s, v in zip(modal.step_ms, modal.solve_ms)]) / reference
    lines = []
    for aim, name, what, goal in (("S1", "SR_INVERSE", "drag call, SR inverse (human, 5 pins)", 1.0),
                                  ("S1", "QUASI_NEWTON", "drag call, quasi-Newton", 1.2),
                                  ("S2", "CCD", "drag call, CCD", 1.5),
                                  ("S2", "JACOBIAN_TRANSPOSE", "drag call, Jacobian transpose", 1.5)):
        run = scripted[name]
        ratio = median(run.step_ms) / reference
        held = max(run.drag_errors) <= 1e-4 and max(run.pin_errors) <= 1e-4
        lines.append(Line(aim, what, f"{reference:.2f} ms", f"{median(run.step_ms):.2f} ms", ratio, f"<={goal:.1f}x",
                          ratio <= goal and held, floor, "6"))
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


def squat(repeats: int, frames: int) -> Line:
    """Target 1: the squat bake against nla.bake of its IK constraints."""
    with scenes.quiet():
        obj = bench_bake.build_scene(frames)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench_bake.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)  # before our bake: the same keys for Blender's
        with scenes.quiet():  # (the operators' reports)
            ours, _profile = bench_bake.run_ours(obj, repeats, False)
            blender = bench_bake.run_blender(path, repeats)
    share = blender.fps / ours.fps  # time ratio: ours over Blender's
    print(f"  squat: {ours.frames} frames, ours {ours.seconds:.3f} s (feet within {ours.foot_error * 1000:.4f} mm), "
          f"nla.bake {blender.seconds:.3f} s", flush=True)
    return Line("S4", f"bake, squat, {ours.frames} frames, feet held", f"{blender.fps:.0f} f/s", f"{ours.fps:.0f} f/s",
                share, "<=0.5x", share <= 0.5 and ours.foot_error <= 1e-4, target="1")


def cleanup(take: Path, scale_: float, repeats: int, profile: bool) -> tuple[Line, bench_cleanup.Result]:
    """Target 2: the clean-up bake of a long take against a plain nla.bake of it."""
    with scenes.quiet():  # (the importer's and the operators' reports)
        result = bench_cleanup.run_clip(take, None, repeats=repeats, scale=scale_, profile=profile)
    held = (result.slide_after_mm <= PLANT_MM and result.hips_max_mm <= HIPS_MM
            and result.hips_on_path_share >= HIPS_ON_PATH and result.step_growth_mm <= STEP_MARGIN_MM)
    print(f"  {take.name}: {result.contacts} contacts, slide {result.slide_before_mm:.1f} -> "
          f"{result.slide_after_mm:.3f} mm, hips at most {result.hips_max_mm:.2f} mm off their path "
          f"({result.hips_on_path_share:.0%} of frames within 0.1 mm), a bone end's largest step "
          f"{result.step_growth_mm:.2f} mm over its source's (same frame: {result.step_excess_mm:.2f} mm, "
          f"{result.step_excess_at}); bake {result.bake_seconds:.2f} s, nla.bake {result.blender_seconds:.3f} s",
          flush=True)
    line = Line("S4", f"clean-up bake, {result.frames}-frame take, {result.contacts} contacts",
                f"{result.frames / result.blender_seconds:.0f} f/s", f"{result.baked_fps:.0f} f/s",
                result.ratio, "<=0.5x", result.ratio <= 0.5 and held, target="2")
    return line, result


def command_line(take: Path, frames: int, blender_seconds: float, repeats: int) -> Line:
    """Target 3: the clean-up CLI, one worker, on the take, against the same nla.bake."""
    times, ok = [], True
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "welman_ik.cleanup", str(take), "--out", folder,
                                   "--workers", "1", "--quiet"], check=False, cwd=ROOT, capture_output=True,
                                   text=True)
            times.append(time.perf_counter() - started)
            report = Path(folder) / "report.json"
            entries = json.loads(report.read_text()) if report.is_file() else []
        ok = ok and done.returncode == 0 and bool(entries) and all(e["status"] == "ok" for e in entries)
        inside = entries[0].get("seconds", math.nan) if entries else math.nan
    seconds = median(times)
    print(f"  clean-up CLI, 1 worker: {seconds:.2f} s for the whole process (the job's own last time {inside:.2f} s), "
          f"status {'ok' if ok else 'FAILED: ' + (done.stderr or done.stdout)[-300:]}", flush=True)
    ratio = seconds / blender_seconds
    return Line("S4", "clean-up CLI, same take, 1 worker (per worker)", f"{frames / blender_seconds:.0f} f/s",
                f"{frames / seconds:.0f} f/s", ratio, "<=1.0x", ratio <= 1.0 and ok, target="3")


def bakes(repeats: int, cli_repeats: int, profile: bool) -> tuple[list[Line], str]:
    """S4: targets 1, 2 and 3; and the clean-up bake's cProfile when asked for."""
    lines = [squat(repeats, SQUAT_FRAMES)]
    clip = max(CLIPS.glob("*.bvh"), key=lambda p: p.stat().st_size)
    with tempfile.TemporaryDirectory() as folder:
        take = bench_cleanup.longer_take(clip, TAKE_FRAMES, Path(folder) / f"{clip.stem}_{TAKE_FRAMES}.bvh")
        line, result = cleanup(take, bench_cleanup.SCALES.get(clip.name, bench_cleanup.DEFAULT_SCALE), repeats,
                               profile)
        lines += [line, command_line(take, result.frames, result.blender_seconds, cli_repeats)]
    return lines, result.profile


def window(report: Path | None) -> list[Line]:
    """S5, from a real-window run's report."""
    what = "window: solve + overlay per mouse event"
    if report is None or not report.is_file():
        return [Line("S5", what, "", "not run", math.nan, "<=6 ms", None)]
    result = json.loads(report.read_text()).get("result", {})
    summary = result.get("mouse_event_summary") or {}
    p4 = summary.get("p4_cpu") or summary.get("p4")  # the main thread's CPU time where measured, as the e2e gate
    if not p4:
        return [Line("S5", what, "", "no events", math.nan, "<=6 ms", None)]
    clock = "CPU" if summary.get("p4_cpu") else "wall"
    lines = [Line("S5", f"window: solve + overlay, {summary.get('n_overlay', 0)} events ({clock})", "",
                  f"{p4['median']:.1f} ms", math.nan, "<=6 ms", p4["median"] <= 6.0)]
    latencies = result.get("latencies_ms") or []
    if latencies:
        p99 = float(np.percentile(latencies, 99))
        lines.append(Line("S5", f"window: drag per mouse event, p99 of {len(latencies)} ({result.get('solver', '')})",
                          "", f"{p99:.1f} ms", math.nan, "p99<=33ms", p99 <= bench_events.REFRESH_MS, target="5"))
    return lines


def discard(obj) -> None:
    """Take a target rig and its action out of the file, so later frames do not evaluate it."""
    action = obj.animation_data.action if obj.animation_data else None
    data = obj.data
    bpy.data.objects.remove(obj)
    bpy.data.armatures.remove(data)
    if action is not None:
        bpy.data.actions.remove(action)


def retarget(repeats: int, frames: int = WALK_FRAMES) -> list[Line]:
    """S6 (target 4): the retarget of the walk against a Copy Rotation bake of the same frames."""
    import compare_retarget
    import retarget_gates

    from welman_ik.blender.rig.retarget_map import retarget_scale

    with scenes.quiet():
        scenes.empty_scene()
        source = retarget_gates.import_clip(CLIPS / WALK, WALK_UNITS, "Y")
    span = list(range(1, frames + 1))

    def target():
        if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        with scenes.quiet():
            rig = retarget_gates.make_target("metarig")
            bpy.ops.welman_ik.retarget_map_fill(source=source.name)
        return rig

    ours, copies, held, message = [], [], True, ""
    for _ in range(repeats):
        rig = target()
        started = time.perf_counter()
        with scenes.quiet():
            result = bpy.ops.welman_ik.retarget(source=source.name, frame_start=span[0], frame_end=span[-1])
        ours.append(time.perf_counter() - started)
        held = held and result == {"FINISHED"} and rig.welman_ik.last_solve.converged
        message = rig.welman_ik.last_solve.message
        discard(rig)
        rig = target()
        with scenes.quiet():
            copies.append(compare_retarget.rotation_copy(source, rig, span, retarget_scale(rig, source)))
        discard(rig)
    seconds, copy = median(ours), median(copies)
    print(f"  retarget: {seconds:.2f} s, Copy Rotation bake {copy:.3f} s; {message}", flush=True)
    return [Line("S6", f"retarget, walk, {frames} frames, metarig", f"{frames / copy:.0f} f/s",
                 f"{frames / seconds:.1f} f/s", seconds / copy, "<=3x", seconds / copy <= 3.0 and held, target="4")]


def events(count: int) -> tuple[list[Line], str]:
    """S7 (target 5): every drag's per-event times; the worst 99th percentile as the row."""
    ours = bench_events.run_ours(events=count)
    blender = bench_events.run_blender(events=count)
    worst = max(ours, key=lambda r: r.percentile(99))
    theirs = max(r.percentile(99) for r in blender)
    p99 = worst.percentile(99)
    line = Line("S7", f"drag per mouse event, worst p99 of {len(ours)} drags", f"{theirs:.1f} ms", f"{p99:.1f} ms",
                p99 / theirs, "p99<=33ms", p99 <= bench_events.REFRESH_MS, target="5")
    print(f"  worst: {worst.solver}, ranges {'on' if worst.ranges else 'off'}, {worst.reach}", flush=True)
    return [line], bench_events.table(blender + ours)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="mouse events in the human's drag (1 cm each)")
    parser.add_argument("--tree-steps", type=int, default=12, help="mouse events in each tree's drag")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each bake and retarget (the median)")
    parser.add_argument("--cli-repeats", type=int, default=5, help="timed runs of the clean-up command line")
    parser.add_argument("--events", type=int, default=bench_events.EVENTS, help="mouse events per drag in S7")
    parser.add_argument("--window", type=Path, help="a real-window run's e2e_cancel.json, for S5")
    parser.add_argument("--profile", action="store_true", help="S4: print a cProfile of one more clean-up bake")
    parser.add_argument("--page", type=Path, help="write the run's table into this page, between its markers "
                        "(make bench: docs/performance.md)")
    parser.add_argument("--only", default=",".join(g for g in GROUPS if g != "S2"),
                        help=f"which groups to run, of {', '.join(GROUPS)} (S1 runs S2 too)")
    args = parser.parse_args(argv)
    only = {s.strip().upper() for s in args.only.split(",")}
    began = time.perf_counter()
    lines, tables, profile = [], [], ""
    if "S1" in only or "S2" in only:
        lines += drags(args.steps)
    if "S3" in only:
        lines += scale(args.tree_steps)
    if "S4" in only:
        found, profile = bakes(args.repeats, args.cli_repeats, args.profile)
        lines += found
    if "S5" in only:
        lines += window(args.window)
    if "S6" in only:
        lines += retarget(args.repeats)
    if "S7" in only:
        found, table = events(args.events)
        lines += found
        tables.append(table)
    print()
    print(HEAD)
    print("-" * len(HEAD))
    for line in lines:
        print(line.text())
    print()
    print("#: issue 40's target; ratio: our time over Blender's (below 1: faster; a bake at <=0.5x runs at >=2x")
    print("Blender's frames per second), median of the repeats; floor: the modal step without the solve (write the")
    print("pose, Blender's evaluation, the measure there) over Blender's step, the least ratio any solver could reach;")
    print("met: the aim holds with every goal within 1e-4 m on the evaluated pose (the bakes: bench_bake.py's and the")
    print("clean-up tests' checks; the command line: its report's status ok; the retarget: every gate held); a drag")
    print("call is a whole bpy.ops.welman_ik.drag, from the armature to the evaluated, measured pose; p99: numpy's")
    print("linear 99th percentile of a drag's per-event times (DragSession.move).")
    for table in tables:
        print()
        print(table)
    if profile:
        print()
        print("cProfile of one more clean-up bake of the take:")
        print(profile)
    print(f"Total time {time.perf_counter() - began:.0f} s")
    if args.page is not None:
        write_page(args.page, lines, tables)
        print(f"Wrote the run's table into {args.page}")
    return 0


PAGE_START, PAGE_END = "<!-- make bench: start -->", "<!-- make bench: end -->"


def page_table(lines: list[Line], tables: list[str]) -> str:
    """The run's rows as the performance page shows them (markdown), with when and where."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    when = (f"One run of `make bench` on {time.strftime('%Y-%m-%d')} at commit {commit} (Blender "
            f"{bpy.app.version_string}, {os.cpu_count()} cores); ratios are our time over Blender's from this run.")
    out = [when, "", "| group | # | what | Blender | Welman IK | ratio | aim | met |", "|---|---|---|---|---|---|---|---|"]
    for line in lines:
        ratio = f"{line.ratio:.2f}x" if math.isfinite(line.ratio) else "-"
        met = {True: "yes", False: "no", None: "-"}[line.met]
        out.append(f"| {line.aim} | {line.target} | {line.what} | {line.blender} | {line.ours} | {ratio} | "
                   f"{line.goal} | {met} |")
    for table in tables:
        out += ["", "```", table, "```"]
    return "\n".join(out)


def write_page(path: Path, lines: list[Line], tables: list[str]) -> None:
    """Put the run's table between the page's markers (added at its end where it has none)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{PAGE_START}\n{page_table(lines, tables)}\n{PAGE_END}"
    if PAGE_START in text and PAGE_END in text:
        head, rest = text.split(PAGE_START, 1)
        text = head + block + rest.split(PAGE_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the bpy module can hang at exit with add-ons registered
