"""Benchmark: time per drag step against the number of bones, Welman IK and Blender's own IK.

What it measures
    A generated tree armature of N bones (``--bones``, 50 to 2000 by default): a trunk
    going up that splits into 9 branches of equal length, fanned out around it and each
    bending down over its length (100 degrees in all, with a small wiggle from bone to
    bone so that no chain is straight); every bone 0.1 m. The trunk holds about 1 %
    of the bones (at least one), the branches share the rest, so that every tip is at most 255
    bones from the root: Blender's IK builds no longer chain (``segcount > 255`` in its
    solver), and a deeper tip would leave its goals unsolved there. Position pins hold
    the tails of 8 branch tips where they are; the 9th tip's tail is dragged in 1 cm
    steps, as mouse events would move it: first straight toward a point 60 % of the way
    from the tip to its branch's start, then along an arc around that point, upward.
    Every target is reachable.

    Welman IK, for each solver (``--solvers``): as ``bench_drag.py`` does, one
    ``DragSolver`` per drag (the hinge-tree model; its build time is shown but not counted
    in a step: a modal drag builds it once, when the drag starts), then per step
    ``solve(target)`` and ``apply(figures)``, which writes the pose, lets Blender evaluate
    it (``view_layer.update()``) and measures the goals there. Each solve starts from the
    previous step's solution. A throw-away drag of one step comes first (warm-up).

    Blender, on a fresh copy of the scene: the Standard (legacy) IK solver, one IK
    constraint on each of the 9 tips (``chain_count=0``: up to the root bone, one tree;
    ``use_tail``, no stretch, 500 iterations), each aiming at an empty at the tip's tail.
    Per step the drag empty moves and the depsgraph is evaluated once
    (``view_layer.update()``); one evaluation before the drag is the warm-up.

    Per size and method: the median and mean step time [ms], Welman IK's solve-only time
    (the numpy solver alone), mean iterations, and the largest drag and pin errors over the
    steps, measured for every method the same way: on the evaluated pose bones (world tail
    against target). Then, per method, the median step time at every size, the ratio to
    Blender's Standard IK at 500 bones (the P2 requirement: at most 1.0), and the growth
    exponent: the slope of log(time) against log(bones), fitted over the sizes (1: time
    grows linearly with the bones, 2: quadratically), and the slope between the two
    largest sizes. The plot (``docs/images/scaling.png``, log-log) has one line per
    method, with lines of slope 1 and 2 for reference.

Limits, so that a default run takes a few minutes even where a solver is slow: each solve
stops after ``--budget`` seconds (1 s; such a solve is "capped" and its step counted as
it ran, unconverged), and a method's drag at one size stops once its timed steps have
taken ``--cell-seconds`` (6 s), after at least 3 steps (one, when the warm-up step alone
took longer): at large sizes a slow method takes fewer steps. A size where most of a method's steps were capped gives only a lower bound
of its time: the table marks it with ``>``, the plot with a hollow marker, and the
exponents leave it out.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench_scaling.py                          # table, exponents, plot
    .venv/bin/python scripts/bench_scaling.py --bones 50,200,500 --steps 10 --no-plot
    .venv/bin/python scripts/bench_scaling.py --solvers SR_INVERSE,QUASI_NEWTON --budget 5
    make bench-scaling                                                 # installs matplotlib first
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np
from mathutils import Matrix, Vector

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scenes
from bench_drag import (
    BLENDER_ITERATIONS,
    OUR_SOLVERS,
    STEP,
    Run,
    evaluated_errors,
    line_then_arc,
    pin_list,
    restore,
    snapshot,
    world_tail,
)

from welman_ik.blender.drag.solver import DragSolver

BONES = (50, 100, 200, 500, 1000, 2000)
BRANCHES = 9  # tips: 8 pinned, the last dragged
BONE_LENGTH = 0.1  # metres
BRANCH_RISE = 0.6  # a branch starts this steep (z of its unnormalised first direction) ...
BRANCH_BEND = math.radians(100.0)  # ... and bends down this much over its length
WIGGLE = math.radians(8.0)  # bone to bone, so that no chain is straight
BLENDER_CHAIN_LIMIT = 255  # bones: Blender's IK chains stop there
ANCHOR = 1.0  # the dragged and pinned point: the tail
CENTRE_FRACTION = 0.6  # the drag turns around the point this far from the tip to its branch's start
REFERENCE_BONES = 500  # the size of the P2 requirement
STANDARD = "Blender Standard IK"
PLOT = ROOT / "docs" / "images" / "scaling.png"


@dataclass
class Cell(Run):
    """One method's drag on the tree of one size."""

    bones: int = 0
    build_ms: float = math.nan
    capped: int = 0  # solves stopped by the time budget

    @property
    def median(self) -> float:
        return statistics.median(self.step_ms)

    @property
    def lower_bound(self) -> bool:
        """Most steps were capped: the median is only a lower bound of the method's time."""
        return 2 * self.capped > len(self.step_ms)


# -- the tree ------------------------------------------------------------------------


@dataclass
class Tree:
    obj: object
    tips: list[str]  # the branches' last bones; the last one is dragged
    starts: list[str]  # the branches' first bones
    depth: int  # bones from a tip to the root, both counted

    @property
    def dragged(self) -> str:
        return self.tips[-1]

    @property
    def pinned(self) -> list[str]:
        return self.tips[:-1]


def shape(bones: int) -> tuple[int, int]:
    """(trunk bones, bones per branch) of a tree of ``bones`` bones: about 1 % in the trunk
    (at least one, and what does not divide evenly among the branches), the rest in the
    branches."""
    per_branch = max(1, (bones - max(1, bones // 100)) // BRANCHES)
    return max(1, bones - BRANCHES * per_branch), per_branch


def build_tree(bones: int) -> Tree:
    """A fresh factory scene with the tree armature in pose mode, 8 tips pinned."""
    scenes.empty_scene()
    trunk, per_branch = shape(bones)
    armature = bpy.data.armatures.new("Tree")
    obj = bpy.data.objects.new("Tree", armature)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit = armature.edit_bones

    def add(name: str, parent, head: Vector, direction: Vector):
        bone = edit.new(name)
        bone.head, bone.tail = head, head + BONE_LENGTH * direction.normalized()
        bone.parent = parent
        bone.use_connect = parent is not None
        return bone

    parent, head = None, Vector((0.0, 0.0, 0.0))
    for j in range(trunk):
        parent = add(f"trunk.{j:03d}", parent, head, Vector((0.15 * math.sin(0.7 * j), 0.15 * math.cos(0.5 * j), 1.0)))
        head = parent.tail.copy()
    top = parent
    tips, starts = [], []
    for i in range(BRANCHES):
        azimuth = 2.0 * math.pi * i / BRANCHES
        first = Vector((math.cos(azimuth), math.sin(azimuth), BRANCH_RISE)).normalized()
        across = Vector((-math.sin(azimuth), math.cos(azimuth), 0.0))  # bending about it turns the branch down
        parent, head = top, top.tail.copy()
        for j in range(per_branch):
            angle = BRANCH_BEND * j / per_branch + WIGGLE * math.sin(1.3 * j + i)
            parent = add(f"branch{i}.{j:03d}", parent, head, Matrix.Rotation(angle, 3, across) @ first)
            head = parent.tail.copy()
            if j == 0:
                starts.append(parent.name)
        tips.append(parent.name)
    bpy.ops.object.mode_set(mode="POSE")
    tree = Tree(obj, tips, starts, trunk + per_branch)
    with scenes.quiet():
        scenes.pin_bones(obj, tree.pinned)
    bpy.context.view_layer.update()
    return tree


def drag_path(tree: Tree, steps: int) -> np.ndarray:
    """Targets (steps, 3), 1 cm apart: half of them (at most) straight toward the point
    ``CENTRE_FRACTION`` of the way from the dragged tip to its branch's start, the rest
    along an arc around that point, in the plane of the radius and world up."""
    obj = tree.obj
    start = world_tail(obj, tree.dragged, ANCHOR)
    base = world_tail(obj, tree.starts[-1], 0.0)
    centre = start + CENTRE_FRACTION * (base - start)
    distance = float(np.linalg.norm(centre - start))
    return line_then_arc(start, centre, max(0, min(steps // 2, int(distance / STEP) - 2)), steps)


# -- the methods -----------------------------------------------------------------------


class Limits:
    """The per-solve time budget and the per-drag wall time (see the module's docstring)."""

    def __init__(self, budget: float, cell_seconds: float, min_steps: int = 3):
        self.budget, self.cell_seconds, self.min_steps = budget, cell_seconds, min_steps

    def done(self, cell: Cell, min_steps: int | None = None) -> bool:
        least = self.min_steps if min_steps is None else min_steps
        return len(cell.step_ms) >= least and sum(cell.step_ms) > 1000.0 * self.cell_seconds


def drag_step(solver: DragSolver, target: np.ndarray, budget: float):
    """One mouse event of a modal drag (``bench_drag.drag_step`` with the time budget):
    solve, write the pose, let the depsgraph update; (figures, solve ms, step ms)."""
    started = time.perf_counter()
    figures = solver.solve(target, time_budget=budget)
    solved = time.perf_counter()
    figures = solver.apply(figures)  # writes, evaluates and measures
    done = time.perf_counter()
    return figures, 1000.0 * (solved - started), 1000.0 * (done - started)


def run_ours(tree: Tree, solver_name: str, path: np.ndarray, rest: dict, limits: Limits) -> Cell:
    obj = tree.obj
    settings = obj.welman_ik
    settings.solver = solver_name
    pins = pin_list(obj, tree.dragged)

    restore(obj, rest)  # warm-up: a throw-away drag of one step, then back to the unposed rig
    _figures, _solve_ms, warm_ms = drag_step(DragSolver(obj, settings, tree.dragged, ANCHOR), path[0], limits.budget)
    restore(obj, rest)
    # A method whose one step outlasts the whole drag's time (one iteration far over the
    # budget) takes a single timed step.
    min_steps = 1 if warm_ms > 1000.0 * limits.cell_seconds else None

    started = time.perf_counter()
    solver = DragSolver(obj, settings, tree.dragged, ANCHOR)
    cell = Cell(solver_name, bones=len(obj.pose.bones), build_ms=1000.0 * (time.perf_counter() - started))
    for target in path:
        figures, solve_ms, step_ms = drag_step(solver, target, limits.budget)
        cell.step_ms.append(step_ms)
        cell.solve_ms.append(solve_ms)
        cell.iterations.append(figures.result.iterations)
        cell.unconverged += not figures.result.converged
        cell.capped += not figures.result.converged and solve_ms >= 1000.0 * limits.budget
        drag, pin = evaluated_errors(obj, target, pins, tree.dragged)
        cell.drag_errors.append(drag)
        cell.pin_errors.append(pin)
        if limits.done(cell, min_steps):
            break
    return cell


def run_blender(bones: int, path: np.ndarray, limits: Limits) -> Cell:
    """Blender's Standard IK on a fresh copy of the tree: one IK constraint per tip."""
    tree = build_tree(bones)
    obj = tree.obj
    obj.pose.ik_solver = "LEGACY"
    collection = bpy.context.scene.collection
    empties = {}
    for bone in tree.tips:
        empty = bpy.data.objects.new(f"IK target {bone}", None)
        empty.location = tuple(world_tail(obj, bone, ANCHOR))
        collection.objects.link(empty)
        ik = obj.pose.bones[bone].constraints.new("IK")
        ik.target = empty
        ik.chain_count = 0  # up to the root bone: all chains form one tree
        ik.use_tail = True
        ik.use_stretch = False
        ik.iterations = BLENDER_ITERATIONS
        empties[bone] = empty
    pins = pin_list(obj, tree.dragged)
    drag_empty = empties[tree.dragged]
    bpy.context.view_layer.update()  # warm-up: the first evaluation with the constraints
    cell = Cell(STANDARD, bones=len(obj.pose.bones), note="iterations not exposed")
    for target in path:
        started = time.perf_counter()
        drag_empty.location = tuple(target)
        bpy.context.view_layer.update()
        cell.step_ms.append(1000.0 * (time.perf_counter() - started))
        drag, pin = evaluated_errors(obj, target, pins, tree.dragged)
        cell.drag_errors.append(drag)
        cell.pin_errors.append(pin)
        if limits.done(cell):
            break
    return cell


# -- report ----------------------------------------------------------------------------


def time_text(cell: Cell | None, width: int = 10) -> str:
    if cell is None:
        return f"{'-':>{width}}"
    return f"{('>' if cell.lower_bound else '') + f'{cell.median:.1f}':>{width}}"


def cell_table(cells: list[Cell]) -> str:
    head = (f"{'bones':>6}  {'method':<20}{'steps':>6}{'median ms':>10}{'mean ms':>9}{'solve med':>10}"
            f"{'mean it':>8}{'capped':>7}{'build ms':>9}{'max drag err':>13}{'max pin err':>12}")
    lines = [head, "-" * len(head)]
    for c in cells:
        solve = f"{statistics.median(c.solve_ms):10.1f}" if c.solve_ms else f"{'-':>10}"
        its = f"{statistics.fmean(c.iterations):8.1f}" if c.iterations else f"{'-':>8}"
        build = f"{c.build_ms:9.0f}" if math.isfinite(c.build_ms) else f"{'-':>9}"
        capped = f"{c.capped:7d}" if c.solve_ms else f"{'-':>7}"
        lines.append(f"{c.bones:6d}  {c.name:<20}{len(c.step_ms):6d}{time_text(c)}{statistics.fmean(c.step_ms):9.1f}"
                     f"{solve}{its}{capped}{build}{max(c.drag_errors):13.2e}{max(c.pin_errors):12.2e}")
    return "\n".join(lines)


def growth(cells: list[Cell]) -> tuple[str, str]:
    """(fitted slope of log time against log bones, slope between the two largest sizes),
    each with its sizes, over the sizes whose time is not a lower bound; '-' with fewer
    than two."""
    kept = sorted((c.bones, c.median) for c in cells if not c.lower_bound)
    if len(kept) < 2:
        return "-", "-"
    x, y = np.log([b for b, _ in kept]), np.log([t for _, t in kept])
    fit = float(np.polyfit(x, y, 1)[0])
    last = float((y[-1] - y[-2]) / (x[-1] - x[-2]))
    return (f"{fit:.2f} ({kept[0][0]}-{kept[-1][0]}, {len(kept)})",
            f"{last:.2f} ({kept[-2][0]}-{kept[-1][0]})")


def summary(methods: list[str], sizes: list[int], cells: dict[tuple[str, int], Cell]) -> str:
    reference = min(sizes, key=lambda n: abs(n - REFERENCE_BONES))
    standard = cells.get((STANDARD, reference))
    head = (f"{'method':<20}" + "".join(f"{n:>9}" for n in sizes)
            + f"{f'ratio@{reference}':>11}   {'exponent (sizes, n)':<24}{'last slope':<18}").rstrip()
    lines = [head, "-" * len(head)]
    for m in methods:
        row = [cells.get((m, n)) for n in sizes]
        own = cells.get((m, reference))
        ratio = own.median / standard.median if own is not None and standard is not None else math.nan
        bound = ">" if own is not None and own.lower_bound else ""
        fit, last = growth([c for c in row if c is not None])
        lines.append(f"{m:<20}" + "".join(time_text(c, 9) for c in row) + f"{bound + f'{ratio:.2f}':>11}   "
                     f"{fit:<24}{last}")
    return "\n".join(lines)


def plot(methods: list[str], sizes: list[int], cells: dict[tuple[str, int], Cell], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 5.5), dpi=110)
    for m in methods:
        row = [cells[(m, n)] for n in sizes if (m, n) in cells]
        if not row:
            continue
        x, y = [c.bones for c in row], [c.median for c in row]
        style = {"color": "black", "linewidth": 2.2} if m == STANDARD else {"linewidth": 1.6}
        (line,) = ax.plot(x, y, marker="o", label=m, **style)
        bound = [c for c in row if c.lower_bound]
        if bound:  # hollow: most solves stopped by the time budget, the time is a lower bound
            ax.plot([c.bones for c in bound], [c.median for c in bound], "o", markersize=9,
                    markerfacecolor="white", markeredgecolor=line.get_color(), markeredgewidth=1.6)
    anchor = cells.get((STANDARD, sizes[0]))
    if anchor is not None:
        n = np.array([sizes[0], sizes[-1]], dtype=float)
        for power, label in ((1, "linear"), (2, "quadratic")):
            ax.plot(n, anchor.median * (n / sizes[0]) ** power, linestyle=":", color="grey", linewidth=1.0)
            ax.annotate(label, (n[-1], anchor.median * (n[-1] / sizes[0]) ** power), fontsize=8, color="grey",
                        xytext=(-40, 4), textcoords="offset points")
    ax.axvline(REFERENCE_BONES, color="grey", linewidth=0.6, linestyle="--")
    ax.annotate(f"P2: {REFERENCE_BONES} bones", (REFERENCE_BONES, 0.02), xycoords=("data", "axes fraction"),
                fontsize=8, color="grey", xytext=(4, 0), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(n) for n in sizes])
    ax.set_xlabel("bones (9 tips: 8 pinned, 1 dragged in 1 cm steps)")
    ax.set_ylabel("median time per drag step [ms]")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bones", default=",".join(map(str, BONES)), help="tree sizes, comma-separated")
    parser.add_argument("--steps", type=int, default=20, help="mouse events in each drag (1 cm each)")
    parser.add_argument("--solvers", default=",".join(OUR_SOLVERS), help="Welman IK solvers, comma-separated")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds: a solve stops after this (capped)")
    parser.add_argument("--cell-seconds", type=float, default=6.0,
                        help="seconds: a method's drag at one size stops after its steps took this (3 steps at least)")
    parser.add_argument("--no-plot", action="store_true", help="do not write the plot")
    parser.add_argument("--plot", type=Path, default=PLOT, help="where the plot goes")
    args = parser.parse_args(argv)
    sizes = sorted({int(n) for n in args.bones.split(",") if n.strip()})
    solvers = [s.strip().upper() for s in args.solvers.split(",") if s.strip()]
    unknown = [s for s in solvers if s not in OUR_SOLVERS]
    if unknown or not sizes or min(sizes) < 2 * BRANCHES or args.steps < 3:
        parser.error(f"solvers among {', '.join(OUR_SOLVERS)}; sizes of at least {2 * BRANCHES} bones; 3 steps or more")
    limits = Limits(args.budget, args.cell_seconds)
    began = time.perf_counter()

    cells: dict[tuple[str, int], Cell] = {}
    order: list[Cell] = []
    for bones in sizes:
        tree = build_tree(bones)
        obj = tree.obj
        rest = snapshot(obj)
        path = drag_path(tree, args.steps)
        trunk, per_branch = shape(bones)
        print(f"{len(obj.pose.bones)} bones: trunk {trunk}, {BRANCHES} branches of {per_branch}; tips "
              f"{tree.depth} bones from the root; drag of {tree.dragged} (tail), {len(path)} steps of "
              f"{STEP * 100:.0f} cm; the other {len(tree.pinned)} tips pinned", flush=True)
        if tree.depth > BLENDER_CHAIN_LIMIT:
            print(f"  note: Blender's IK chains stop at {BLENDER_CHAIN_LIMIT} bones; its tips here are {tree.depth} "
                  f"from the root", flush=True)
        size_cells = []
        for name in solvers:
            cell = run_ours(tree, name, path, rest, limits)
            size_cells.append(cell)
            print(f"  {name}: model {cell.build_ms:.0f} ms, {len(cell.step_ms)} steps, median {cell.median:.1f} ms, "
                  f"{cell.capped} capped, {cell.unconverged} not converged", flush=True)
        cell = run_blender(bones, path, limits)
        print(f"  {STANDARD}: {len(cell.step_ms)} steps, median {cell.median:.1f} ms", flush=True)
        size_cells.insert(0, cell)
        for c in size_cells:
            cells[(c.name, bones)] = c
        order += size_cells

    methods = [STANDARD, *solvers]
    print()
    print(cell_table(order))
    print()
    print("ms/step: solve + write pose + depsgraph update (Blender: move the empty + depsgraph update), median over")
    print("the steps; solve med: Welman IK's numpy solve alone; build: the model, once per drag, not in a step;")
    print(f"capped: solves stopped by the {args.budget:g} s budget ('>': most were, the time is a lower bound);")
    print("errors [m]: evaluated pose bone tails against their targets, largest over the steps.")
    print()
    print("Median ms per step by bones, ratio to Blender's Standard IK, growth exponent (slope of log time over log bones):")
    print(summary(methods, sizes, cells))
    print(f"P2: at {REFERENCE_BONES} bones at most 1.0 x Blender's Standard IK per step; time growing linearly "
          f"(exponent about 1), not quadratically (2).")
    print(f"Blender constraints: Standard solver, chain_count 0, use_tail, no stretch, iterations {BLENDER_ITERATIONS}. "
          f"Limits: a solve stops after {args.budget:g} s, a drag after {args.cell_seconds:g} s of steps.")
    if not args.no_plot:
        title = (f"Time per drag step, tree of N bones, 9 tips (8 pinned, 1 dragged); budget {args.budget:g} s "
                 f"per solve\nhollow: lower bound (most solves stopped by the budget); dotted: slope 1 and 2")
        plot(methods, sizes, cells, args.plot, title)
        print(f"Plot: {args.plot}")
    print(f"Total time {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
