"""Benchmark: one interactive drag step of Welman IK against Blender's own IK.

What it measures
    The Rigify basic human metarig (``scenes.basic_human()``: position pins on both toes,
    both heels and the left hand's tail) has the tail of ``hand.R`` dragged along a path
    of 1 cm steps, as mouse events would move it: first straight toward a point in front
    of the chest, then along an arc around that point. Every target is reachable.

    Welman IK, for each of its solvers (CCD, Jacobian transpose, SR inverse, quasi-Newton): one
    ``DragSolver`` built once per drag (the hinge-tree model is cached, as in a modal
    drag), then per step ``solve(target)`` and ``apply(figures)``, which writes the pose,
    lets Blender evaluate it (``view_layer.update()``, what the viewport needs to redraw
    anyway) and measures the goals there. Each solve starts from the previous step's
    solution.

    Blender, on a fresh copy of the scene: one IK constraint per pinned bone and one on
    ``hand.R`` (``chain_count=0``: up to the root bone, ``use_tail=True``, no stretch),
    each aiming at an empty. Per step the drag empty moves and the depsgraph is evaluated
    once (``view_layer.update()``). Blender's IK does not write the pose channels: it
    solves again from the unposed rig at every evaluation. The Standard (legacy) solver
    is the reference; iTaSC (animation mode, reiterating every frame) is shown for
    comparison.

    Per method: step time (median and mean, ms; warm-up step not counted), the ratio of
    medians to Blender's Standard IK, mean iterations per step (not exposed by Blender),
    and the largest drag error and pin error over all steps. Errors are measured the
    same way for every method: from the evaluated pose bones (world tail against target).
    For Welman IK the solve-only time (the numpy solver, without writing the pose and
    without the depsgraph update) is shown too.

Differences to keep in mind: Welman IK also moves the root bone's location and holds
the pins before the drag (task priority); Blender's Standard IK only rotates bones,
and weighs all goals alike. Tolerances: Welman IK stops at ``settings.tolerance``
(1e-5 m by default); Standard IK runs its own convergence test up to ``iterations``.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench_drag.py                  # the table
    .venv/bin/python scripts/bench_drag.py --steps 30       # a shorter drag
    .venv/bin/python scripts/bench_drag.py --profile SR_INVERSE   # plus cProfile of our loop
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scenes

from welman_ik.blender.drag.solver import DragSolver

DRAGGED = "hand.R"
ANCHOR = 1.0  # the tail
STEP = 0.01  # metres per mouse event
LINE_STEPS = 40  # straight toward the chest point, then an arc around it
CHEST_POINT = np.array([-0.15, -0.30, 1.35])  # in front of the chest (the rig faces -Y)
OUR_SOLVERS = ("CCD", "JACOBIAN_TRANSPOSE", "SR_INVERSE", "QUASI_NEWTON")
BLENDER_ITERATIONS = 500  # the IK constraint's default


@dataclass
class Run:
    """Per-step figures of one method over the whole drag."""

    name: str
    step_ms: list[float] = field(default_factory=list)
    solve_ms: list[float] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)
    drag_errors: list[float] = field(default_factory=list)
    pin_errors: list[float] = field(default_factory=list)
    unconverged: int = 0
    note: str = ""


# -- scene and path ------------------------------------------------------------------


def demo_scene(pins=scenes.DEMO_PINS):
    """A fresh factory scene with the basic human, position pins on ``pins`` (default: both
    feet and the left hand); returns the armature."""
    scenes.empty_scene()
    return scenes.basic_human(pins=pins)


def drag_path(start: np.ndarray, steps: int) -> np.ndarray:
    """Targets (steps, 3), 1 cm apart: toward ``CHEST_POINT``, then an arc around it."""
    distance = float(np.linalg.norm(CHEST_POINT - start))
    return line_then_arc(start, CHEST_POINT, min(steps, LINE_STEPS, int(distance / STEP) - 5), steps)


def line_then_arc(start: np.ndarray, centre: np.ndarray, line: int, steps: int) -> np.ndarray:
    """Targets (steps, 3), ``STEP`` apart: ``line`` of them straight from ``start`` toward
    ``centre``, the rest along an arc around ``centre`` in the plane of the radius and world
    up, sweeping upward."""
    direction = (centre - start) / float(np.linalg.norm(centre - start))
    targets = [start + STEP * (i + 1) * direction for i in range(line)]
    radial = (targets[-1] if targets else start) - centre
    radius = float(np.linalg.norm(radial))
    u = radial / radius
    up = np.array([0.0, 0.0, 1.0])
    v = up - (up @ u) * u
    v /= np.linalg.norm(v)
    for k in range(1, steps - line + 1):
        angle = k * STEP / radius
        targets.append(centre + radius * (np.cos(angle) * u + np.sin(angle) * v))
    return np.array(targets)


def world_tail(obj, bone: str, anchor: float = 1.0) -> np.ndarray:
    """World position of a point along an evaluated pose bone (0 head, 1 tail)."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    pb = evaluated.pose.bones[bone]
    return np.array(evaluated.matrix_world @ (pb.head + anchor * (pb.tail - pb.head)))


def evaluated_errors(obj, target: np.ndarray, pins: list[tuple[str, float, np.ndarray]],
                     dragged: str = DRAGGED) -> tuple[float, float]:
    """(drag error, largest pin error) [m] of the evaluated pose."""
    drag = float(np.linalg.norm(world_tail(obj, dragged, ANCHOR) - target))
    pin = max((float(np.linalg.norm(world_tail(obj, b, a) - loc)) for b, a, loc in pins), default=0.0)
    return drag, pin


def pin_list(obj, dragged: str = DRAGGED) -> list[tuple[str, float, np.ndarray]]:
    return [(p.bone, p.anchor, np.array(p.location)) for p in obj.welman_ik.pins if p.enabled and p.bone != dragged]


def snapshot(obj) -> dict:
    return {pb.name: (tuple(pb.location), tuple(pb.rotation_quaternion), tuple(pb.rotation_euler),
                      tuple(pb.rotation_axis_angle), tuple(pb.scale)) for pb in obj.pose.bones}


def restore(obj, channels: dict) -> None:
    for pb in obj.pose.bones:
        pb.location, pb.rotation_quaternion, pb.rotation_euler, pb.rotation_axis_angle, pb.scale = channels[pb.name]
    bpy.context.view_layer.update()


# -- Welman IK -------------------------------------------------------------------------


def drag_step(solver: DragSolver, target: np.ndarray, frame: float):
    """One mouse event of a modal drag: solve, write the pose, let the depsgraph update."""
    started = time.perf_counter()
    figures = solver.solve(target)
    solved = time.perf_counter()
    figures = solver.apply(figures)  # writes, evaluates and measures
    done = time.perf_counter()
    return figures, 1000.0 * (solved - started), 1000.0 * (done - started)


def run_ours(obj, solver_name: str, path: np.ndarray, rest: dict) -> tuple[Run, float, DragSolver]:
    """Drag with one of our solvers; returns the run, the model build time [ms] and the solver."""
    settings = obj.welman_ik
    settings.solver = solver_name
    frame = bpy.context.scene.frame_current
    pins = pin_list(obj)

    # Warm-up: a throw-away drag of one step, then back to the unposed rig.
    restore(obj, rest)
    drag_step(DragSolver(obj, settings, DRAGGED, ANCHOR), path[0], frame)
    restore(obj, rest)

    started = time.perf_counter()
    solver = DragSolver(obj, settings, DRAGGED, ANCHOR)
    build_ms = 1000.0 * (time.perf_counter() - started)
    run = Run(solver_name)
    for target in path:
        figures, solve_ms, step_ms = drag_step(solver, target, frame)
        run.step_ms.append(step_ms)
        run.solve_ms.append(solve_ms)
        run.iterations.append(figures.result.iterations)
        run.unconverged += not figures.result.converged
        drag, pin = evaluated_errors(obj, target, pins)
        run.drag_errors.append(drag)
        run.pin_errors.append(pin)
    return run, build_ms, solver


def run_scripted(obj, solver_name: str, path: np.ndarray, rest: dict, dragged: str = DRAGGED) -> Run:
    """Drag ``dragged`` with one of our solvers by scripted calls, as a script or a farm job
    does: one ``bpy.ops.welman_ik.drag`` per step (everything from the armature to the
    evaluated, measured pose in each call), no keys."""
    settings = obj.welman_ik
    settings.solver, keyed = solver_name, settings.keyframes
    settings.keyframes = "NEVER"
    pins = pin_list(obj, dragged)
    restore(obj, rest)
    bpy.ops.welman_ik.drag(bone=dragged, target=tuple(path[0]), anchor=ANCHOR)  # warm-up
    restore(obj, rest)
    run = Run(f"{solver_name} (scripted call)")
    try:
        for target in path:
            started = time.perf_counter()
            bpy.ops.welman_ik.drag(bone=dragged, target=tuple(target), anchor=ANCHOR)
            run.step_ms.append(1000.0 * (time.perf_counter() - started))
            run.iterations.append(settings.last_solve.iterations)
            drag, pin = evaluated_errors(obj, target, pins, dragged)
            run.drag_errors.append(drag)
            run.pin_errors.append(pin)
    finally:
        settings.keyframes = keyed
    return run


def profile_ours(obj, solver_name: str, path: np.ndarray, rest: dict, top: int = 25) -> str:
    """cProfile of the timed per-step loop of one of our solvers (cumulative and own time)."""
    settings = obj.welman_ik
    settings.solver = solver_name
    restore(obj, rest)
    solver = DragSolver(obj, settings, DRAGGED, ANCHOR)
    frame = bpy.context.scene.frame_current

    def loop():
        for target in path:
            drag_step(solver, target, frame)

    return scenes.profiled(loop, top)


# -- Blender's IK ----------------------------------------------------------------------


def blender_rig(ik_solver: str, pinned=scenes.DEMO_PINS):
    """A fresh scene whose IK constraints hold the same pins (on ``pinned``) and follow the drag empty."""
    obj = demo_scene(pinned)
    pins = pin_list(obj)
    collection = bpy.context.scene.collection
    obj.pose.ik_solver = ik_solver
    if ik_solver == "ITASC":
        param = obj.pose.ik_param
        param.mode = "ANIMATION"
        param.reiteration_method = "ALWAYS"  # converge at every evaluation, not only the first
        param.precision = obj.welman_ik.tolerance
        param.iterations = obj.welman_ik.max_iterations
        # translate_root_bones stays off: on, the drag ends 15 cm off its target in this scene.

    def constrain(bone: str, location) -> bpy.types.Object:
        empty = bpy.data.objects.new(f"IK target {bone}", None)
        empty.location = tuple(location)
        collection.objects.link(empty)
        ik = obj.pose.bones[bone].constraints.new("IK")
        ik.target = empty
        ik.chain_count = 0  # up to the root bone: all chains form one tree
        ik.use_tail = True
        ik.use_stretch = False
        ik.iterations = BLENDER_ITERATIONS
        ik.weight = 1.0
        return empty

    for bone, _anchor, location in pins:
        constrain(bone, location)
    start = world_tail(obj, DRAGGED, ANCHOR)
    drag_empty = constrain(DRAGGED, start)
    return obj, drag_empty, pins


def run_blender(ik_solver: str, label: str, path: np.ndarray, pinned=scenes.DEMO_PINS) -> Run:
    obj, empty, pins = blender_rig(ik_solver, pinned)
    bpy.context.view_layer.update()  # warm-up: the first evaluation with the constraints
    run = Run(label, note="iterations not exposed")
    for target in path:
        started = time.perf_counter()
        empty.location = tuple(target)
        bpy.context.view_layer.update()
        run.step_ms.append(1000.0 * (time.perf_counter() - started))
        drag, pin = evaluated_errors(obj, target, pins)
        run.drag_errors.append(drag)
        run.pin_errors.append(pin)
    return run


# -- report ----------------------------------------------------------------------------


def table(runs: list[Run], reference: Run) -> str:
    ref = statistics.median(reference.step_ms)
    head = (f"{'method':<36}{'median ms':>10}{'mean ms':>9}{'ratio':>8}{'solve med':>10}{'solve mean':>11}"
            f"{'w+e ratio':>10}{'mean it':>9}{'max drag err':>14}{'max pin err':>13}")
    lines = [head, "-" * len(head)]
    for r in runs:
        med = statistics.median(r.step_ms)
        solve_med = f"{statistics.median(r.solve_ms):10.2f}" if r.solve_ms else f"{'-':>10}"
        solve_mean = f"{statistics.fmean(r.solve_ms):11.2f}" if r.solve_ms else f"{'-':>11}"
        its = f"{statistics.fmean(r.iterations):9.1f}" if r.iterations else f"{'-':>9}"
        rest = (f"{statistics.median(s - v for s, v in zip(r.step_ms, r.solve_ms)) / ref:10.2f}" if r.solve_ms
                else f"{'-':>10}")
        lines.append(f"{r.name:<36}{med:10.2f}{statistics.fmean(r.step_ms):9.2f}{med / ref:8.2f}{solve_med}"
                     f"{solve_mean}{rest}{its}{max(r.drag_errors):14.2e}{max(r.pin_errors):13.2e}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="mouse events in the drag (1 cm each)")
    parser.add_argument("--profile", choices=OUR_SOLVERS, help="also cProfile our per-step loop with this solver")
    args = parser.parse_args(argv)
    began = time.perf_counter()

    obj = demo_scene()
    rest = snapshot(obj)
    bpy.context.view_layer.update()
    path = drag_path(world_tail(obj, DRAGGED, ANCHOR), args.steps)
    settings = obj.welman_ik
    print(f"Drag of {DRAGGED} (tail): {len(path)} steps of {STEP * 100:.0f} cm, from "
          f"{np.round(world_tail(obj, DRAGGED, ANCHOR), 3)} toward {CHEST_POINT} and around it; "
          f"pins: {', '.join(b for b, _a, _l in pin_list(obj))}")
    print(f"Welman IK settings: tolerance {settings.tolerance:.0e} m, max_iterations {settings.max_iterations}, "
          f"chain_length {settings.chain_length}, pins_first {settings.pins_first}")

    runs = []
    for name in OUR_SOLVERS:
        run, build_ms, solver = run_ours(obj, name, path, rest)
        runs.append(run)
        print(f"  {name}: model built in {build_ms:.1f} ms; {run.unconverged}/{len(path)} steps not converged")
    scripted = [run_scripted(obj, name, path, rest) for name in OUR_SOLVERS]
    skeleton = solver.model.skeleton
    print(f"Joints in our model: {skeleton.size} ({int(np.sum(skeleton.mobility > 0))} movable: 3 per bone, "
          f"3 root slides) over {len(solver.model.bones)} bones")
    profile = profile_ours(obj, args.profile, path, rest) if args.profile else ""

    standard = run_blender("LEGACY", "Blender Standard IK", path)
    itasc = run_blender("ITASC", "Blender iTaSC", path)
    runs = [standard, itasc, *runs, *scripted]

    print()
    print(table(runs, standard))
    print()
    print("ms/step: solve + write pose + depsgraph update (Blender: move empty + depsgraph update); a scripted")
    print("call: the whole bpy.ops.welman_ik.drag call (reading the armature, solving, writing, evaluating, measuring);")
    print("ratio: median ms/step over Blender Standard IK's; solve: Welman IK's numpy solve alone;")
    print("w+e ratio: the step without the solve (write the pose, let Blender evaluate it, measure the goals")
    print("there) over Blender Standard IK's step: the least ratio any solver could reach;")
    print("errors [m]: evaluated pose bone tails against their targets, largest over all steps.")
    print(f"Blender constraints: chain_count 0, use_tail, no stretch, iterations {BLENDER_ITERATIONS}; "
          f"iTaSC: animation mode, reiterate always, precision {settings.tolerance:.0e} m, "
          f"{settings.max_iterations} iterations, root bones fixed.")
    if profile:
        print()
        print(f"cProfile of Welman IK's per-step loop ({args.profile}, {len(path)} steps):")
        print(profile)
    print(f"Total time {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the bpy module can hang at exit with add-ons registered
