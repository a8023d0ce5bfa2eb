"""Benchmark: a drag step on a generated Rigify rig against the same drag on its metarig.

What it measures
    The Rigify basic human metarig, and the rig Rigify generates from it (222 bones, 81
    drivers, constraints on every ORG, DEF and MCH bone). On each, the feet are pinned
    (the metarig's toes and heels; the rig's IK foot controls) and one hand is dragged
    along the same path of 1 cm steps, as mouse events would move it: the metarig's
    ``hand.R`` tail, the rig's ``hand_ik.R`` control (which translates, and the arm
    follows by the rig's own IK constraint); then the rig's ``torso`` control straight down
    by the same number of steps (a squat, the feet held by the rig's IK).

    Per step, for each: ``DragSolver.solve`` and ``apply`` (write the pose, let Blender
    evaluate it, measure the goals there and take the gap as the next step's correction),
    as a modal drag does on every mouse event. Errors are measured on the evaluated pose.

    The ratio is the rig's median ms per step over the metarig's: the cost of real rigs
    (the depsgraph evaluating 222 bones with their constraints and drivers, and the
    correction rounds the rig's constraints ask for).

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench_rigify.py
    .venv/bin/python scripts/bench_rigify.py --steps 30
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import bpy  # noqa: F401 - first: it puts Blender's own modules (addon_utils) on the path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scenes
from bench_drag import STEP, drag_path

from welman_ik.blender.drag.solver import DragSolver
from welman_ik.blender.rig.evaluated import anchor_points, update


def point(obj, bone: str, anchor: float) -> np.ndarray:
    update()
    return anchor_points(obj, [bone], [anchor])[0]


def run(obj, bone: str, anchor: float, path: np.ndarray) -> dict:
    """One drag along ``path``: ms per step, iterations, and the evaluated errors."""
    solver = DragSolver(obj, obj.welman_ik, bone, anchor)
    steps, drag_errors, pin_errors, iterations = [], [], [], []
    for target in path:
        started = time.perf_counter()
        figures = solver.apply(solver.solve(target))
        steps.append(1000.0 * (time.perf_counter() - started))
        drag_errors.append(figures.drag_error)
        pin_errors.append(figures.max_pin_error)
        iterations.append(figures.result.iterations)
    return {"median": statistics.median(steps[1:]), "mean": statistics.fmean(steps[1:]),
            "drag": max(drag_errors[len(path) // 4:]), "pins": max(pin_errors), "it": statistics.fmean(iterations)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="mouse events per drag (1 cm each)")
    args = parser.parse_args(argv)

    scenes.empty_scene()
    meta = scenes.basic_human(pins=scenes.FEET)
    rows = {"metarig hand.R": run(meta, "hand.R", 1.0, drag_path(point(meta, "hand.R", 1.0), args.steps))}

    scenes.empty_scene()
    rig = scenes.generated_rigify(pins=("foot_ik.L", "foot_ik.R"))
    # The same path, carried to the IK hand control's head (the wrist).
    start = point(rig, "hand_ik.R", 0.0)
    rows["rigify hand_ik.R"] = run(rig, "hand_ik.R", 0.0, drag_path(start, args.steps))
    down = point(rig, "torso", 0.0) - np.outer(np.arange(1, args.steps // 3 + 1), [0.0, 0.0, STEP / 2])
    rows["rigify torso (squat)"] = run(rig, "torso", 0.0, down)

    reference = rows["metarig hand.R"]["median"]
    head = f"{'drag':<24}{'median ms':>10}{'mean ms':>9}{'ratio':>7}{'mean it':>9}{'max drag err':>14}{'max pin err':>13}"
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        print(f"{name:<24}{r['median']:10.2f}{r['mean']:9.2f}{r['median'] / reference:7.2f}{r['it']:9.1f}"
              f"{r['drag']:14.2e}{r['pins']:13.2e}")
    print("ms/step: solve + write + evaluate + measure, as one mouse event of a modal drag;")
    print("ratio: median over the metarig drag's; errors [m] on the evaluated pose (the drag's from a")
    print("quarter of the way in: the first steps catch up with the path).")
    return 0


if __name__ == "__main__":
    code = main()
    import os

    os._exit(code)  # the bpy module can hang at exit with Rigify's classes registered
