"""Welman IK, the main job, headless: reach and squat with each solver.

Builds three Rigify basic human metarigs side by side, one per solver (SR Inverse, CCD,
Jacobian Transpose), each with position pins on both feet and the left hand. Then, as an
animator would, with ``bpy.ops.welman_ik.drag`` in its script form:

* frame 1: the start pose is keyed;
* frame 10, reach: the tail of hand.R is dragged to a point 0.25 m in front of the chest
  (spine.003's tail), feet and left hand held;
* frame 20, squat: the left-hand pin is disabled and the head of the root bone 'spine'
  is dragged 0.25 m straight down, feet held.

Each solve is measured on the evaluated pose (drag error, every enabled pin's error) and
printed as a table with the add-on's own figures (iterations, milliseconds, converged).
The action is played back at frames 1, 10 and 20 to check that the keys reproduce the
solved poses. Writes ``DIR/demo.blend`` and ``DIR/demo.png`` (front and side views).

Exit code 0 on success; 1 if a solver left a pin more than 1 mm away (or a drag failed,
or the keys do not play back the solved poses).

    .venv/bin/python scripts/demo.py --output out      # what `make demo` runs
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import bpy  # before scenes: bpy puts Blender's own modules (addon_utils) on the path
import numpy as np
import scenes
from mathutils import Vector

SOLVERS = (  # (enum value, object name)
    ("SR_INVERSE", "SR Inverse"),
    ("CCD", "CCD"),
    ("JACOBIAN_TRANSPOSE", "Jacobian Transpose"),
)
SPACING = 1.2  # m between the rigs along X
FRAMES = {"start": 1, "reach": 10, "squat": 20}
REACH_BONE, REACH_ANCHOR, REACH_AHEAD = "hand.R", 1.0, 0.25  # tail of hand.R, 0.25 m in front of the chest
CHEST_BONE = "spine.003"
SQUAT_BONE, SQUAT_ANCHOR, SQUAT_DROP = "spine", 0.0, 0.25  # head of the root, 0.25 m down
RELEASED = "hand.L"  # pin disabled for the squat
PIN_TOLERANCE = 1e-3  # m: a larger pin error fails the demo
PLAYBACK_TOLERANCE = 1e-4  # m: keyed pose against solved pose
ROOT_SLACK = 0.1  # m: hips moving this much for the hand reach are worth a note


@dataclass
class Step:
    name: str
    frame: int
    bone: str
    anchor: float
    target: np.ndarray
    start_point: np.ndarray  # where the dragged point was before the solve
    ok: bool = True
    iterations: int = 0
    milliseconds: float = 0.0
    converged: bool = False
    reported_drag_error: float = 0.0
    reported_pin_error: float = 0.0
    drag_error: float = 0.0
    pin_errors: dict = field(default_factory=dict)  # enabled pins only

    @property
    def max_pin_error(self) -> float:
        return max(self.pin_errors.values(), default=0.0)


@dataclass
class Rig:
    solver: str
    obj: object
    poses: dict = field(default_factory=dict)  # step name -> (heads, tails), world space
    pins: dict = field(default_factory=dict)  # bone -> world location
    steps: list = field(default_factory=list)


# --- measuring ------------------------------------------------------------------------

def point(obj, bone: str, anchor: float) -> np.ndarray:
    """World position of the point ``anchor`` (0 head, 1 tail) of an evaluated pose bone."""
    pb = obj.pose.bones[bone]
    return np.array(obj.matrix_world @ pb.head.lerp(pb.tail, anchor))


def pose(obj) -> tuple[np.ndarray, np.ndarray]:
    """World heads and tails of every bone, from the evaluated pose."""
    mw = obj.matrix_world
    heads = np.array([mw @ pb.head for pb in obj.pose.bones])
    tails = np.array([mw @ pb.tail for pb in obj.pose.bones])
    return heads, tails


def pin_errors(obj) -> dict:
    """Distance of every enabled pin's point from its location."""
    return {p.bone: float(np.linalg.norm(point(obj, p.bone, p.anchor) - np.array(p.location)))
            for p in obj.welman_ik.pins if p.enabled}


# --- the job ----------------------------------------------------------------------------

def build_rigs() -> list[Rig]:
    """One pinned metarig per solver, side by side along X."""
    scenes.empty_scene()
    rigs = []
    for i, (solver, label) in enumerate(SOLVERS):
        obj = scenes.basic_human(pins=())
        bpy.ops.object.mode_set(mode="OBJECT")
        obj.name = obj.data.name = label
        obj.location.x = (i - (len(SOLVERS) - 1) / 2) * SPACING
        obj.welman_ik.solver = solver
        obj.welman_ik.keyframes = "ALWAYS"
        bpy.context.view_layer.update()
        # Pins are world space: pin once the rig is in place.
        scenes.select(obj, scenes.DEMO_PINS)
        if bpy.ops.welman_ik.pin() != {"FINISHED"}:
            raise RuntimeError(f"Could not pin {scenes.DEMO_PINS} on {label}")
        scenes.select(obj, ())
        rig = Rig(solver, obj)
        rig.pins = {p.bone: np.array(p.location) for p in obj.welman_ik.pins}
        rigs.append(rig)
    return rigs


def key_pose(obj, frame: int) -> None:
    """Key rotation and location of every pose bone."""
    for pb in obj.pose.bones:
        rotation = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(
            pb.rotation_mode, "rotation_euler")
        pb.keyframe_insert(rotation, frame=frame, group=pb.name)
        pb.keyframe_insert("location", frame=frame, group=pb.name)


def drag(rig: Rig, name: str, bone: str, anchor: float, target) -> Step:
    """Drag with the operator, as a script would, then measure the evaluated pose."""
    obj = rig.obj
    scene = bpy.context.scene
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    step = Step(name, scene.frame_current, bone, anchor, np.array(target), point(obj, bone, anchor))
    result = bpy.ops.welman_ik.drag(bone=bone, target=tuple(target), anchor=anchor)
    step.ok = result == {"FINISHED"}
    bpy.context.view_layer.update()
    last = obj.welman_ik.last_solve
    step.iterations, step.milliseconds, step.converged = last.iterations, last.milliseconds, last.converged
    step.reported_drag_error, step.reported_pin_error = last.drag_error, last.max_pin_error
    step.drag_error = float(np.linalg.norm(point(obj, bone, anchor) - step.target))
    step.pin_errors = pin_errors(obj)
    rig.poses[name] = pose(obj)
    rig.steps.append(step)
    return step


def run(rigs: list[Rig]) -> None:
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES["start"], FRAMES["squat"]

    scene.frame_current = FRAMES["start"]
    bpy.context.view_layer.update()
    for rig in rigs:
        key_pose(rig.obj, FRAMES["start"])
        rig.poses["start"] = pose(rig.obj)

    scene.frame_current = FRAMES["reach"]
    for rig in rigs:
        obj = rig.obj
        bpy.context.view_layer.update()
        front = (obj.matrix_world.to_3x3() @ Vector((0.0, -1.0, 0.0))).normalized()
        chest = point(obj, CHEST_BONE, 1.0)
        drag(rig, "reach", REACH_BONE, REACH_ANCHOR, chest + REACH_AHEAD * np.array(front))

    scene.frame_current = FRAMES["squat"]
    for rig in rigs:
        obj = rig.obj
        for p in obj.welman_ik.pins:
            if p.bone == RELEASED:
                p.enabled = False
        bpy.context.view_layer.update()
        down = (obj.matrix_world.to_3x3() @ Vector((0.0, 0.0, -1.0))).normalized()
        root = point(obj, SQUAT_BONE, SQUAT_ANCHOR)
        drag(rig, "squat", SQUAT_BONE, SQUAT_ANCHOR, root + SQUAT_DROP * np.array(down))


def playback(rigs: list[Rig]) -> dict:
    """Largest distance (m) between the keyed and the solved pose, per rig and step."""
    scene = bpy.context.scene
    gaps = {}
    for name, frame in FRAMES.items():
        scene.frame_set(frame)
        for rig in rigs:
            heads, tails = pose(rig.obj)
            solved_heads, solved_tails = rig.poses[name]
            gaps[rig.obj.name, name] = float(max(np.abs(heads - solved_heads).max(),
                                                 np.abs(tails - solved_tails).max()))
    scene.frame_set(FRAMES["start"])
    return gaps


# --- reporting ----------------------------------------------------------------------------

def table(rigs: list[Rig]) -> str:
    head = f"{'solver':<20} {'step':<6} {'iterations':>10} {'ms':>8} {'drag error (mm)':>16} " \
           f"{'max pin error (mm)':>19} {'converged':>10}"
    lines = [head, "-" * len(head)]
    for rig in rigs:
        for s in rig.steps:
            lines.append(f"{rig.obj.name:<20} {s.name:<6} {s.iterations:>10d} {s.milliseconds:>8.1f} "
                         f"{1000 * s.drag_error:>16.3f} {1000 * s.max_pin_error:>19.3f} "
                         f"{'yes' if s.converged else 'NO':>10}")
    return "\n".join(lines)


def problems(rigs: list[Rig], gaps: dict) -> list[str]:
    found = []
    for rig in rigs:
        for s in rig.steps:
            who = f"{rig.obj.name}, {s.name}"
            if not s.ok:
                found.append(f"{who}: the drag operator did not finish")
            for bone, error in s.pin_errors.items():
                if error > PIN_TOLERANCE:
                    found.append(f"{who}: the pin on {bone} is {1000 * error:.2f} mm off (limit "
                                 f"{1000 * PIN_TOLERANCE:g} mm)")
    for (name, step), gap in gaps.items():
        if gap > PLAYBACK_TOLERANCE:
            found.append(f"{name}, {step}: the keyed pose at frame {FRAMES[step]} is {1000 * gap:.2f} mm "
                         f"from the solved pose")
    return found


def notes(rigs: list[Rig]) -> list[str]:
    """Things worth knowing that do not fail the demo."""
    found = []
    for rig in rigs:
        for s in rig.steps:
            who = f"{rig.obj.name}, {s.name}"
            if not s.converged:
                found.append(f"{who}: not converged after {s.iterations} iterations "
                             f"(drag error {1000 * s.drag_error:.2f} mm)")
            for measured, reported, what in ((s.drag_error, s.reported_drag_error, "drag"),
                                             (s.max_pin_error, s.reported_pin_error, "max pin")):
                if abs(measured - reported) > 1e-4:
                    found.append(f"{who}: {what} error measured {1000 * measured:.3f} mm, "
                                 f"last_solve says {1000 * reported:.3f} mm")
        reach = next(s for s in rig.steps if s.name == "reach")
        moved = np.linalg.norm(rig.poses["reach"][0][0] - rig.poses["start"][0][0])
        if reach.ok and moved > ROOT_SLACK:
            found.append(f"{rig.obj.name}, reach: the hips ({rig.obj.pose.bones[0].name} head) moved "
                         f"{1000 * moved:.0f} mm for a hand reach")
    return found


# --- picture ------------------------------------------------------------------------------

COLOURS = {"start": "#c8c8c8", "reach": "#1f77b4", "squat": "#e8710a"}
LABELS = {"start": f"start pose (frame {FRAMES['start']})",
          "reach": f"reach: hand.R to the chest (frame {FRAMES['reach']})",
          "squat": f"squat: root 0.25 m down, hand.L released (frame {FRAMES['squat']})"}
WIDTHS = {"start": 5.0, "reach": 3.2, "squat": 1.6}  # reach under squat: both show where they coincide
ZORDERS = {"start": 1, "reach": 2, "squat": 3}
VIEWS = (("front", 0, "X (m)"), ("side", 1, "Y (m)  (front is −Y, to the right)"))


def picture(rigs: list[Rig], path: Path) -> None:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(15, 12), dpi=110, layout="constrained")
    axes = fig.subplots(2, len(rigs), sharey=True)
    everything = np.concatenate([np.concatenate(p) for r in rigs for p in r.poses.values()])
    zmin, zmax = everything[:, 2].min() - 0.08, everything[:, 2].max() + 0.45  # room for the figures
    half = 0.1 + max(np.abs(np.concatenate(p)[:, h] - r.obj.matrix_world.translation[h]).max()
                     for r in rigs for p in r.poses.values() for h in (0, 1))
    for col, rig in enumerate(rigs):
        centre = np.array(rig.obj.matrix_world.translation)
        for row, (view, h, xlabel) in enumerate(VIEWS):
            ax = axes[row, col]
            for name in ("start", "reach", "squat"):
                heads, tails = rig.poses[name]
                for a, b in zip(heads, tails, strict=True):
                    ax.plot([a[h], b[h]], [a[2], b[2]], color=COLOURS[name], solid_capstyle="round",
                            lw=WIDTHS[name], zorder=ZORDERS[name])
                ax.scatter(heads[:, h], heads[:, 2], s=7, color=COLOURS[name], zorder=ZORDERS[name])
            for bone, where in rig.pins.items():
                released = bone == RELEASED
                ax.scatter(where[h], where[2], s=110, marker="o", zorder=5, linewidths=1.8,
                           facecolors="none" if released else "black", edgecolors="black")
            for s in rig.steps:
                ax.annotate("", xy=(s.target[h], s.target[2]), xytext=(s.start_point[h], s.start_point[2]),
                            arrowprops={"arrowstyle": "->", "color": COLOURS[s.name], "lw": 1.2, "ls": "--"},
                            zorder=4)
                ax.scatter(s.target[h], s.target[2], s=260, marker="*", color=COLOURS[s.name],
                           edgecolors="black", linewidths=0.8, zorder=6)
            ax.set_xlim(centre[h] - half, centre[h] + half)
            ax.set_ylim(zmin, zmax)
            ax.set_aspect("equal")
            ax.grid(True, color="#eeeeee", lw=0.6)
            ax.set_axisbelow(True)
            ax.set_xlabel(xlabel)
            if col == 0:
                ax.set_ylabel("Z (m)")
            if view == "side":
                ax.invert_xaxis()
            title = f"{rig.obj.name}: {view} view"
            ax.set_title(title, fontsize=13, fontweight="bold" if row == 0 else "normal")
            if row == 0:
                rows = [f"{'':<6}{'it':>4}{'ms':>8}{'drag mm':>9}{'pins mm':>9}  converged"]
                rows += [f"{s.name:<6}{s.iterations:>4d}{s.milliseconds:>8.1f}{1000 * s.drag_error:>9.2f}"
                         f"{1000 * s.max_pin_error:>9.2f}  {'yes' if s.converged else 'NO'}" for s in rig.steps]
                ax.text(0.5, 0.985, "\n".join(rows), transform=ax.transAxes, va="top", ha="center",
                        multialignment="left", fontsize=8.5, family="monospace", zorder=7,
                        bbox={"boxstyle": "round", "fc": "white", "ec": "#bbbbbb"})
    handles = [Line2D([], [], color=COLOURS[n], lw=WIDTHS[n], label=LABELS[n])
               for n in ("start", "reach", "squat")]
    handles += [
        Line2D([], [], ls="", marker="o", ms=9, mfc="black", mec="black", label="foot pins (toe and heel tails)"),
        Line2D([], [], ls="", marker="o", ms=9, mfc="none", mec="black", mew=1.8,
               label="hand.L pin: held for the reach, off for the squat"),
        Line2D([], [], ls="", marker="*", ms=15, mfc=COLOURS["reach"], mec="black", label="reach target"),
        Line2D([], [], ls="", marker="*", ms=15, mfc=COLOURS["squat"], mec="black", label="squat target"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=10, frameon=False)
    fig.suptitle("Welman IK on the Rigify basic human: reach, then squat, with each solver "
                 "(dashed arrows: the drags)", fontsize=15)
    fig.savefig(path)


# --- main ------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("out"), help="directory for demo.blend and demo.png")
    args = parser.parse_args(argv)
    out = args.output.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    rigs = build_rigs()
    run(rigs)
    gaps = playback(rigs)

    print()
    print(table(rigs))
    print()
    print("Keyed poses against solved poses (largest bone-point distance, mm):")
    for rig in rigs:
        print(f"  {rig.obj.name:<20}" + "  ".join(f"{step} {1000 * gaps[rig.obj.name, step]:.4f}"
                                                 for step in FRAMES))

    bpy.context.view_layer.objects.active = rigs[0].obj
    bpy.ops.object.mode_set(mode="POSE")
    blend, png = out / "demo.blend", out / "demo.png"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    picture(rigs, png)
    print(f"\nWrote {blend}\nWrote {png}")

    for note in notes(rigs):
        print(f"note: {note}")
    failures = problems(rigs, gaps)
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    print(f"{'FAILED' if failures else 'OK'} in {time.perf_counter() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
