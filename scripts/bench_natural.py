"""Benchmark: how natural the poses are, with and without the preferred pose and joint ranges.

What it measures
    The Rigify basic human metarig, both feet pinned (position pins on the toes' and heels'
    tails, ``scenes.FEET``), default settings, posed with ``bpy.ops.welman_ik.drag`` as a
    script would. Each solver (SR inverse, CCD, Jacobian transpose) runs in three set-ups:

    * ``NONE``: ``reference = 'NONE'``, no preferred pose (the old behaviour);
    * ``START``: the default, ``reference = 'START'``;
    * ``START+ranges``: ``'START'`` and the human spherical joint ranges that
      ``bpy.ops.welman_ik.joint_ranges(preset='AUTO')`` puts on every bone (the row says
      "n/a" while that operator does not exist).

    CCD and the Jacobian transpose have no null space: their preferred pose is a pull below
    the goals (docs/natural.md says how); their ``NONE`` and ``START`` rows show what it does.

    Figures, every one measured on the pose Blender evaluates:

    * hysteresis: the tail of hand.R dragged 25 cm out (sideways and up; forward and up) and
      back in 1 cm steps, each step one ``drag`` call; the largest angle of any bone's
      ``matrix_basis`` rotation from where it started, over both paths, and the bone. "one
      drag": the same paths as the mouse events of one interactive drag (``DragSession``,
      whose preferred pose is the pose the drag began in);
    * reach, spine and head: the tail of hand.R dragged 15 cm forward and up; the largest
      world-space turn of a spine bone (spine .. spine.005) and the head's (spine.006; it
      carries the spine's turn and adds its own);
    * squat: the root's head dragged 25 cm down: the knees' forward offset from the
      hip-ankle line (cm, the smaller of the two; positive: forward, as knees bend), the angle
      between the way a knee sticks out and straight forward (deg, the larger of the two; 90:
      sideways), the larger world-space turn of the feet (deg; two pins per foot leave it free
      to roll about the line through them), of an arm bone (deg), and the change of the
      head's tilt from vertical (deg);
    * the reach and the squat are made in 1 cm steps, one drag call each, as the mouse events
      of a drag come; a second table has them in one call each (a script's jump);
    * hyperextension: the worst angle by which a forearm or shin bends backward past straight
      over ``--walks`` seeded random walks of ``--trials`` drags each, from the start pose,
      as in an animator's session: a hand's or a foot's tail or the hips (the root's head)
      moved 5 to 20 cm in a random direction from where it is, when that is in reach (else
      the other way; else the trial is skipped); a foot's pins are off while it is dragged
      and put where it lands. Forward is the way the joint bends in the rest pose, measured
      in the upper bone's frame;
    * accuracy: the worst ``last_solve`` drag and pin errors over every drag of the row, and
      how many drags converged. Pins must hold within 1e-4 m: a miss is listed; the exit
      status is 1 when a drag did not finish or the default solver (SR inverse) missed.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench_natural.py
    .venv/bin/python scripts/bench_natural.py --solvers SR_INVERSE --json out/natural.json
    .venv/bin/python scripts/bench_natural.py --verbose     # every drag's last_solve figures
    .venv/bin/python scripts/bench_natural.py --budget 120  # more seconds per solver and set-up (default 45)
    .venv/bin/python scripts/bench_natural.py --reaches     # the reaches of bench_reaches.py, every solver
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scenes

SOLVERS = ("SR_INVERSE", "CCD", "JACOBIAN_TRANSPOSE")
CONFIGS = {  # name -> (reference, human joint ranges)
    "NONE": ("NONE", False),
    "START": ("START", False),
    "START+ranges": ("START", True),
}
PIN_TOLERANCE = 1e-4  # m
HYPEREXTENDED = 5.0  # deg: a joint bent back more than this counts as hyperextended
STEP = 0.01  # m per scripted drag step
HAND = "hand.R"
HYSTERESIS_PATHS = {  # world offsets of the hand's tail, 25 cm each (the rig faces -Y)
    "sideways": np.array([-0.15, 0.0, 0.20]),
    "forward": np.array([0.0, -0.15, 0.20]),
}
REACH = np.array([0.0, -0.09, 0.12])  # 15 cm forward and up
SQUAT_DROP = 0.25  # m
SPINE = ("spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005")  # the head apart
HEAD = "spine.006"
ARMS = tuple(f"{b}.{s}" for s in "LR" for b in ("shoulder", "upper_arm", "forearm", "hand"))
HINGES = tuple((f"upper_arm.{s}", f"forearm.{s}") for s in "LR") + tuple((f"thigh.{s}", f"shin.{s}") for s in "LR")
FORWARD = np.array([0.0, -1.0, 0.0])
UP = np.array([0.0, 0.0, 1.0])


@dataclass
class Drag:
    scenario: str
    bone: str
    target: list
    finished: bool
    iterations: int
    drag_error: float  # m, last_solve (evaluated)
    max_pin_error: float  # m, last_solve (evaluated)
    converged: bool
    message: str


@dataclass
class Row:
    solver: str
    config: str
    available: bool = True
    hysteresis: float = math.nan  # deg, scripted 1 cm drags
    hysteresis_bone: str = ""  # the bone that turned most
    hysteresis_session: float = math.nan  # deg, one interactive drag
    hysteresis_session_bone: str = ""
    reach_spine: float = math.nan  # deg
    reach_head: float = math.nan  # deg
    hyperextension: float = math.nan  # deg
    hyperextended: int = 0  # drags of the random walk after which a joint bends back more than HYPEREXTENDED
    walked: int = 0  # drags of the random walk made (out-of-reach moves are skipped)
    squat_knee_forward: float = math.nan  # cm, the smaller of the two knees
    squat_knee_aside: float = math.nan  # deg off straight forward, the larger of the two knees
    squat_feet: float = math.nan  # deg, the larger world-space turn of the two feet
    squat_arms: float = math.nan  # deg
    squat_head_tilt: float = math.nan  # deg
    one_call: dict = field(default_factory=dict)  # the reach and the squat figures, each move in one drag call
    seconds: float = 0.0
    out_of_time: bool = False  # the budget ran out: the figures left NaN were not measured
    drags: list = field(default_factory=list)

    @property
    def worst_pin(self) -> float:
        return max((d.max_pin_error for d in self.drags), default=math.nan)

    @property
    def worst_drag(self) -> float:
        return max((d.drag_error for d in self.drags), default=math.nan)

    @property
    def converged(self) -> int:
        return sum(d.converged for d in self.drags)


# --- measuring ------------------------------------------------------------------------------

def update() -> None:
    bpy.context.view_layer.update()


def point(obj, bone: str, anchor: float = 1.0) -> np.ndarray:
    pb = obj.pose.bones[bone]
    return np.array(obj.matrix_world @ pb.head.lerp(pb.tail, anchor))


def world_rotations(obj) -> dict:
    update()
    return {pb.name: (obj.matrix_world @ pb.matrix).to_quaternion() for pb in obj.pose.bones}


def basis_rotations(obj) -> dict:
    return {pb.name: pb.matrix_basis.to_quaternion() for pb in obj.pose.bones}


def degrees(a, b) -> float:
    """The angle of the rotation between two orientations, whatever the quaternions' signs."""
    return math.degrees(2.0 * math.acos(min(1.0, abs(a.normalized().dot(b.normalized())))))


def largest_turn(before: dict, after: dict, names=None) -> float:
    return max(degrees(before[n], after[n]) for n in (names or before))


def turned_most(before: dict, after: dict) -> tuple[float, str]:
    """The largest turn (deg) and the bone that made it."""
    return max((degrees(before[n], after[n]), n) for n in before)


def bend_axes(obj) -> dict:
    """Per hinge joint (elbow, knee): the axis it bends about in the rest pose, in the upper
    bone's own frame, oriented so that the rest bend is positive (forward)."""
    axes = {}
    for upper, lower in HINGES:
        u, l_ = obj.data.bones[upper], obj.data.bones[lower]
        p, c = u.matrix_local.col[1].xyz, l_.matrix_local.col[1].xyz
        n = p.cross(c)
        if n.length < 1e-6:
            raise RuntimeError(f"{lower} is straight in the rest pose: no bend direction to measure from")
        axes[upper, lower] = u.matrix_local.to_3x3().inverted() @ n.normalized()
    return axes


def hyperextension(obj, axes: dict) -> float:
    """The largest angle (deg) by which a lower bone bends backward past straight: the signed
    angle from the upper bone's Y axis to the lower bone's, about the rest bend axis."""
    update()
    worst = 0.0
    for (upper, lower), local_axis in axes.items():
        u, l_ = obj.pose.bones[upper], obj.pose.bones[lower]
        n = (u.matrix.to_3x3() @ local_axis).normalized()
        p, c = u.matrix.col[1].xyz.normalized(), l_.matrix.col[1].xyz.normalized()
        bend = math.degrees(math.atan2(p.cross(c).dot(n), p.dot(c)))
        worst = max(worst, -bend)
    return worst


def knee_offset(obj, side: str) -> tuple[float, float]:
    """How far (m) the knee is in front of the line from hip to ankle, and the angle (deg)
    between the way it sticks out of that line and straight forward (0: forward, 90: sideways)."""
    hip, knee, ankle = point(obj, f"thigh.{side}", 0.0), point(obj, f"shin.{side}", 0.0), point(obj, f"shin.{side}")
    axis = (ankle - hip) / np.linalg.norm(ankle - hip)
    off = knee - hip - ((knee - hip) @ axis) * axis
    forward = FORWARD - (FORWARD @ axis) * axis
    forward /= np.linalg.norm(forward)
    aside = np.linalg.norm(off - (off @ forward) * forward)
    return float(off @ forward), math.degrees(math.atan2(aside, float(off @ forward)))


def head_tilt(obj) -> float:
    """Degrees between the head bone and world up."""
    pb = obj.pose.bones[HEAD]
    y = np.array((obj.matrix_world.to_3x3() @ pb.matrix.col[1].xyz).normalized())
    return math.degrees(math.acos(float(np.clip(y @ UP, -1.0, 1.0))))


class OutOfTime(Exception):
    """A set-up's time budget ran out."""


# --- acting ----------------------------------------------------------------------------------

class Bench:
    def __init__(self, verbose: bool):
        scenes.empty_scene()
        self.obj = scenes.basic_human(pins=())
        self.obj.welman_ik.keyframes = "NEVER"
        update()
        with scenes.quiet():
            scenes.pin_bones(self.obj, scenes.FEET)
        self.verbose = verbose
        self.start = {pb.name: (pb.matrix_basis.copy(), pb.rotation_mode) for pb in self.obj.pose.bones}
        self.pins = [(p.bone, tuple(p.location), p.enabled) for p in self.obj.welman_ik.pins]
        self.axes = bend_axes(self.obj)
        self.has_ranges = hasattr(bpy.types.PoseBone, "welman_ik_range") and hasattr(bpy.ops.welman_ik, "joint_ranges")
        try:
            bpy.ops.welman_ik.joint_ranges.get_rna_type()
        except (AttributeError, KeyError):
            self.has_ranges = False
        self.row: Row | None = None
        self.deadline = math.inf

    def reset(self) -> None:
        """The start pose and the pins as they were."""
        for pb in self.obj.pose.bones:
            pb.matrix_basis = self.start[pb.name][0]
        for pin, (bone, location, enabled) in zip(self.obj.welman_ik.pins, self.pins, strict=True):
            pin.bone, pin.location, pin.enabled = bone, location, enabled
        update()

    def configure(self, solver: str, config: str) -> bool:
        reference, ranges = CONFIGS[config]
        settings = self.obj.welman_ik
        settings.solver, settings.reference = solver, reference
        if hasattr(bpy.types.PoseBone, "welman_ik_range"):
            for pb in self.obj.pose.bones:
                pb.welman_ik_range.use = False
        if ranges:
            if not self.has_ranges:
                return False
            scenes.select(self.obj, ())
            with scenes.quiet():
                result = bpy.ops.welman_ik.joint_ranges(preset="AUTO")
            if result != {"FINISHED"} or not any(pb.welman_ik_range.use for pb in self.obj.pose.bones):
                print(f"note: joint_ranges(preset='AUTO') gave {result} and no range; {config} skipped")
                return False
        return True

    def drag(self, scenario: str, bone: str, target, anchor: float = 1.0) -> Drag:
        if time.perf_counter() > self.deadline:
            raise OutOfTime
        with scenes.quiet():
            result = bpy.ops.welman_ik.drag(bone=bone, target=tuple(map(float, target)), anchor=anchor)
        update()
        last = self.obj.welman_ik.last_solve
        record = Drag(scenario, bone, [float(x) for x in target], result == {"FINISHED"}, last.iterations,
                      last.drag_error, last.max_pin_error, last.converged, last.message)
        self.row.drags.append(record)
        if self.verbose:
            print(f"  {self.row.solver:<18} {self.row.config:<13} {scenario:<14} {bone:<8} it {record.iterations:>3} "
                  f"drag {record.drag_error:.2e} m  pins {record.max_pin_error:.2e} m "
                  f"{'' if record.converged else 'NOT CONVERGED '}{record.message}")
        return record

    # --- the scenarios ---

    def hysteresis(self) -> tuple[float, str]:
        worst = (0.0, "")
        for name, offset in HYSTERESIS_PATHS.items():
            self.reset()
            start = basis_rotations(self.obj)
            origin = point(self.obj, HAND)
            n = round(np.linalg.norm(offset) / STEP)
            for i in [*range(1, n + 1), *range(n - 1, -1, -1)]:
                self.drag(f"hysteresis {name}", HAND, origin + offset * i / n)
            worst = max(worst, turned_most(start, basis_rotations(self.obj)))
        return worst

    def hysteresis_session(self) -> tuple[float, str]:
        from welman_ik.blender.drag.session import DragSession

        worst = (0.0, "")
        for offset in HYSTERESIS_PATHS.values():
            self.reset()
            start = basis_rotations(self.obj)
            origin = point(self.obj, HAND)
            session = DragSession(self.obj, HAND, anchor=1.0, event_budget=1.0)  # the pose, not the machine
            n = round(np.linalg.norm(offset) / STEP)
            for i in [*range(1, n + 1), *range(n - 1, -1, -1)]:
                if time.perf_counter() > self.deadline:
                    session.cancel()
                    raise OutOfTime
                session.goal = origin + offset * i / n
                session.figures = session.solver.apply(session.solver.solve(session.goal, time_budget=1.0))
            with scenes.quiet():
                session.confirm(bpy.context)
            update()
            last = self.obj.welman_ik.last_solve
            self.row.drags.append(Drag("hysteresis one drag", HAND, list(origin), True, last.iterations,
                                       last.drag_error, last.max_pin_error, last.converged, last.message))
            worst = max(worst, turned_most(start, basis_rotations(self.obj)))
        return worst

    def move(self, scenario: str, bone: str, offset: np.ndarray, anchor: float, steps: bool) -> None:
        """Move ``bone``'s point by ``offset``: in 1 cm steps, one drag call each, as the
        mouse events of a drag come (``steps``), or in one call."""
        origin = point(self.obj, bone, anchor)
        n = max(1, round(np.linalg.norm(offset) / STEP)) if steps else 1
        for i in range(1, n + 1):
            self.drag(scenario if steps else f"{scenario}, one call", bone, origin + offset * i / n, anchor)

    def reach(self, steps: bool) -> dict:
        self.reset()
        before = world_rotations(self.obj)
        self.move("reach 15 cm", HAND, REACH, 1.0, steps)
        after = world_rotations(self.obj)
        return {"reach_spine": largest_turn(before, after, SPINE), "reach_head": degrees(before[HEAD], after[HEAD])}

    def random_drags(self, walks: list) -> float:
        """Random walks, as in an animator's session, each from the start pose: each trial
        moves its point by its offset from wherever the point is now, when that is within
        reach (else by the opposite offset, else not at all). A foot's pins are off while it
        is dragged and put where it lands."""
        worst = 0.0
        for walk in walks:
            worst = max(worst, self.random_walk(walk))
        return worst

    def random_walk(self, trials: list) -> float:
        self.reset()
        worst = 0.0
        for kind, offset in trials:
            target = next((t for t in (in_reach(self.obj, kind, offset), in_reach(self.obj, kind, -offset))
                           if t is not None), None)
            if target is None:
                continue
            bone, anchor = ("spine", 0.0) if kind == "hips" else (kind, 1.0)
            foot = [p for p in self.obj.welman_ik.pins if kind.startswith("foot.") and p.bone.endswith(kind[-2:])]
            for pin in foot:
                pin.enabled = False
            self.drag("random", bone, target, anchor)
            for pin in foot:
                pin.location, pin.enabled = point(self.obj, pin.bone, pin.anchor), True
            bend = hyperextension(self.obj, self.axes)
            worst = max(worst, bend)
            self.row.hyperextended += bend > HYPEREXTENDED
            self.row.walked += 1
        return worst

    def squat(self, steps: bool) -> dict:
        self.reset()
        before, tilt = world_rotations(self.obj), head_tilt(self.obj)
        self.move("squat", "spine", -SQUAT_DROP * UP, 0.0, steps)
        after = world_rotations(self.obj)
        knees = [knee_offset(self.obj, s) for s in "LR"]
        return {"squat_knee_forward": 100.0 * min(k[0] for k in knees),
                "squat_knee_aside": max(k[1] for k in knees),
                "squat_feet": largest_turn(before, after, ("foot.L", "foot.R")),
                "squat_arms": largest_turn(before, after, ARMS),
                "squat_head_tilt": abs(head_tilt(self.obj) - tilt)}

    def run(self, solver: str, config: str, walks: list, session: bool, budget: float) -> Row:
        """Every scenario, most telling first, until ``budget`` seconds are spent."""
        self.row = row = Row(solver, config)
        started = time.perf_counter()
        self.deadline = started + budget
        if not self.configure(solver, config):
            row.available = False
            return row
        try:
            row.hysteresis, row.hysteresis_bone = self.hysteresis()
            for name, value in self.reach(steps=True).items():
                setattr(row, name, value)
            for name, value in self.squat(steps=True).items():
                setattr(row, name, value)
            row.hyperextension = self.random_drags(walks)
            if session:
                row.hysteresis_session, row.hysteresis_session_bone = self.hysteresis_session()
            row.one_call = self.reach(steps=False)
            row.one_call |= self.squat(steps=False)
        except OutOfTime:
            row.out_of_time = True
        row.seconds = time.perf_counter() - started
        self.reset()
        return row


def random_walks(walks: int, count: int, seed: int) -> list:
    """``walks`` lists of ``count`` moves (what, world offset), the same for every set-up: a
    hand's or a foot's tail or the hips (the root's head), 5 to 20 cm in a random direction."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(walks):
        trials = []
        for _ in range(count):
            kind = ("hand.L", "hand.R", "foot.L", "foot.R", "hips")[rng.integers(5)]
            offset = rng.normal(size=3)
            trials.append((kind, offset * rng.uniform(0.05, 0.20) / np.linalg.norm(offset)))
        out.append(trials)
    return out


def in_reach(obj, kind: str, offset: np.ndarray) -> np.ndarray | None:
    """Where ``kind``'s point goes when moved by ``offset`` from where it is now, if that is
    within reach of the body as it stands (None if not): a hand or foot 40 to 95 % of its
    limb's length from the limb's root and above the floor; the hips with both legs still
    reaching their ankles (97 %)."""
    bones = obj.pose.bones

    def length(*names):
        return sum(bones[n].bone.length for n in names)

    if kind == "hips":
        ok = all(np.linalg.norm(point(obj, f"thigh.{s}", 0.0) + offset - point(obj, f"shin.{s}"))
                 <= 0.97 * length(f"thigh.{s}", f"shin.{s}") for s in "LR")
        return point(obj, "spine", 0.0) + offset if ok else None
    side = kind[-1]
    limb = ("upper_arm", "forearm", "hand") if kind.startswith("hand.") else ("thigh", "shin", "foot")
    target = point(obj, kind) + offset
    distance = np.linalg.norm(target - point(obj, f"{limb[0]}.{side}", 0.0))
    reach = length(*(f"{b}.{side}" for b in limb))
    return target if 0.4 * reach <= distance <= 0.95 * reach and target[2] >= 0.0 else None


# --- reporting ---------------------------------------------------------------------------------

COLUMNS = (  # (header, attribute, format); a bone name beside the figure when there is an attribute <name>_bone
    ("hysteresis, 1 cm drags (°)", "hysteresis", "{:.1f}"),
    ("hysteresis, one drag (°)", "hysteresis_session", "{:.1f}"),
    ("15 cm reach: spine (°)", "reach_spine", "{:.1f}"),
    ("head (°)", "reach_head", "{:.1f}"),
    ("worst hyperextension (°)", "hyperextension", "{:.1f}"),
    ("squat: knees forward (cm)", "squat_knee_forward", "{:+.1f}"),
    ("knees off forward (°)", "squat_knee_aside", "{:.0f}"),
    ("feet turn (°)", "squat_feet", "{:.1f}"),
    ("arms turn (°)", "squat_arms", "{:.1f}"),
    ("head tilt (°)", "squat_head_tilt", "{:.1f}"),
)
MOVES = ("reach_spine", "reach_head", "squat_knee_forward", "squat_knee_aside", "squat_feet", "squat_arms",
         "squat_head_tilt")


def cell(value: float, form: str) -> str:
    return "–" if value is None or math.isnan(value) else form.format(value)


def markdown(rows: list[Row], walks: int, trials: int) -> str:
    head = ["solver", "set-up", *(c[0] for c in COLUMNS), "worst pin (mm)", "worst drag (mm)", "converged"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for r in rows:
        if not r.available:
            lines.append(f"| {r.solver} | {r.config} | " + " | ".join(["n/a"] * (len(head) - 2)) + " |")
            continue
        cells = [cell(getattr(r, a), f) + (f" ({getattr(r, a + '_bone')})" if getattr(r, a + "_bone", "")
                                           and getattr(r, a) >= 0.05 else "") for _, a, f in COLUMNS]
        if r.walked:
            at = [a for _, a, _ in COLUMNS].index("hyperextension")
            cells[at] += f" ({r.hyperextended}/{r.walked})"
        cells += [f"{1000 * r.worst_pin:.4f}", f"{1000 * r.worst_drag:.4f}", f"{r.converged}/{len(r.drags)}"]
        config = f"{r.config} (out of time)" if r.out_of_time else r.config
        lines.append(f"| {r.solver} | {config} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"The reach and the squat in 1 cm steps; hyperextension over {walks} seeded random walks of "
                 f"{trials} in-reach drags of hands, feet and hips (in brackets: the drags after which a joint was "
                 f"bent back more than {HYPEREXTENDED:g}°, of those made); errors are `last_solve`'s, on the "
                 "evaluated pose, worst over every drag of the row; –: not measured (the set-up ran out of its time "
                 "budget, `--budget`).")
    return "\n".join(lines)


def markdown_one_call(rows: list[Row]) -> str:
    """The reach and the squat as one drag call each (a script's jump, not a mouse drag)."""
    columns = [c for c in COLUMNS if c[1] in MOVES]
    head = ["solver", "set-up", *(c[0] for c in columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for r in rows:
        if r.available:
            cells = [cell(r.one_call.get(a, math.nan), f) for _, a, f in columns]
            lines.append(f"| {r.solver} | {r.config} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def accuracy(rows: list[Row]) -> str:
    lines = [(f"{'solver':<19}{'set-up':<14}{'scenario':<22}{'drags':>6}{'worst drag (m)':>16}{'worst pin (m)':>15}"
              f"{'converged':>11}{'max it':>8}")]
    for r in rows:
        scenarios = {}
        for d in r.drags:
            scenarios.setdefault(d.scenario, []).append(d)
        for name, drags in scenarios.items():
            lines.append(f"{r.solver:<19}{r.config:<14}{name:<22}{len(drags):>6}"
                         f"{max(d.drag_error for d in drags):>16.2e}{max(d.max_pin_error for d in drags):>15.2e}"
                         f"{sum(d.converged for d in drags):>7}/{len(drags):<3}{max(d.iterations for d in drags):>8}")
    return "\n".join(lines)


def problems(rows: list[Row]) -> tuple[list[str], list[str]]:
    """(failures, misses), one line per row: drags that did not finish, or whose pins the SR
    inverse missed; pins the other solvers missed (they converge linearly and may run out of
    iterations). ``--verbose`` prints every drag."""
    failures, misses = [], []
    for r in rows:
        unfinished = [d for d in r.drags if not d.finished]
        if unfinished:
            failures.append(f"{r.solver} {r.config}: {len(unfinished)} drags did not finish "
                            f"(first: {unfinished[0].scenario}, {unfinished[0].bone})")
        missed = [d for d in r.drags if d.finished and d.max_pin_error > PIN_TOLERANCE]
        if missed:
            worst = max(missed, key=lambda d: d.max_pin_error)
            scenarios = sorted({d.scenario for d in missed})
            (failures if r.solver == "SR_INVERSE" else misses).append(
                f"{r.solver} {r.config}: {len(missed)} of {len(r.drags)} drags left a pin more than "
                f"{1000 * PIN_TOLERANCE:g} mm off ({', '.join(scenarios)}); worst {1000 * worst.max_pin_error:.3f} mm "
                f"({worst.scenario}, {worst.bone}): {worst.message}")
    return failures, misses


def no_nan(value):
    """``value`` with every NaN (a figure not measured) as None: JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [no_nan(v) for v in value]
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated, of " + ", ".join(SOLVERS))
    parser.add_argument("--walks", type=int, default=3, help="random walks for the hyperextension figure")
    parser.add_argument("--trials", type=int, default=20, help="random drags per walk")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-session", action="store_true", help="skip the one-interactive-drag hysteresis")
    parser.add_argument("--budget", type=float, default=45.0,
                        help="seconds per solver and set-up; what is left when they run out is not measured")
    parser.add_argument("--json", type=Path, help="also write every figure and every drag's errors here")
    parser.add_argument("--verbose", action="store_true", help="print every drag's last_solve figures")
    parser.add_argument("--reaches", action="store_true",
                        help="instead: the reaches in five directions and out of reach, every solver, the trunk's and "
                             "the head's turn and the limb's share (bench_reaches.py)")
    args = parser.parse_args(argv)
    if args.reaches:
        import bench_reaches

        return bench_reaches.main(["--solvers", ",".join(bench_reaches.SOLVERS)]
                                  + (["--json", str(args.json)] if args.json else []))
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    if unknown := set(solvers) - set(SOLVERS):
        parser.error(f"unknown solvers {sorted(unknown)}")

    started = time.perf_counter()
    bench = Bench(args.verbose)
    walks = random_walks(args.walks, args.trials, args.seed)
    if not bench.has_ranges:
        print("note: bpy.ops.welman_ik.joint_ranges is not there yet: no START+ranges rows")
    rows = []
    for solver in solvers:
        for config in CONFIGS:
            rows.append(bench.run(solver, config, walks, session=not args.no_session, budget=args.budget))
            r = rows[-1]
            print(f"{solver} {config}: " + (f"{r.seconds:.1f} s" if r.available else "n/a")
                  + (f" (out of time after {len(r.drags)} drags: the rest is not measured)" if r.out_of_time else ""),
                  flush=True)

    print()
    print(markdown(rows, args.walks, args.trials))
    print()
    print("The same reach and squat, each in one drag call:")
    print()
    print(markdown_one_call(rows))
    print()
    print(accuracy(rows))
    failures, misses = problems(rows)
    for miss in misses:
        print(f"miss: {miss}")
    for failure in failures:
        print(f"FAIL: {failure}")
    print(f"{'FAILED' if failures else 'OK'} in {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(no_nan({
            "walks": [[{"what": k, "offset": [float(x) for x in o]} for k, o in walk] for walk in walks],
            "rows": [asdict(r) | {"worst_pin": r.worst_pin, "worst_drag": r.worst_drag, "converged": r.converged}
                     for r in rows],
        }), indent=1, default=str))
        print(f"Wrote {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    code = main()
    os._exit(code)  # the bpy module can hang at exit with Rigify's classes registered
