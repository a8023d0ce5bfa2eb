"""Welman IK, the main job, headless: reach and squat with each solver.

Builds three Rigify basic human metarigs side by side, one per solver (SR Inverse, CCD,
Jacobian Transpose), each with position pins on both feet and the left hand. Then, as an
animator would, with ``bpy.ops.welman_ik.drag`` in its script form:

* frame 1: the start pose is keyed (and each later pose is keyed whole, as an animator keys
  a key pose);
* frame 10, reach: the tail of hand.R is dragged to a point 0.25 m in front of the chest
  (spine.003's tail), feet and left hand held;
* frame 20, squat: the left-hand pin is disabled and the head of the root bone 'spine'
  is dragged 0.25 m straight down, feet held.

Each solve is measured on the evaluated pose (drag error, every enabled pin's error) and
printed as a table with the add-on's own figures (iterations, milliseconds, converged).
The action is played back at frames 1, 10 and 20 to check that the keys reproduce the
solved poses. Writes ``DIR/demo.blend``.

Then the pictures, rendered by Blender (Workbench) on a mannequin body (``render.py``): the
right hand raised to head height, the same reach and the same squat, made as a mouse drag
makes them (1 cm steps), feet planted (toes, heels and ankles pinned), each as five figures
side by side: the start pose and each solver's result (SR inverse, quasi-Newton, CCD,
Jacobian transpose) with the default preferred pose and the human joint ranges
(``joint_ranges(preset='AUTO')``), captioned with the trunk's and the head's turn.
Writes ``DIR/demo_raise.png``, ``DIR/demo_reach.png``, ``DIR/demo_squat.png`` and all three
in ``DIR/demo.png``.

Exit code 0 on success; 1 if a solver left a pin more than 1 mm away (or a drag failed,
or the keys do not play back the solved poses).

    .venv/bin/python scripts/demo.py --output out      # what `make demo` runs
    .venv/bin/python scripts/demo.py --output out --images docs/images   # and the manual's pictures
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import bpy  # before scenes: bpy puts Blender's own modules (addon_utils) on the path
import numpy as np
import render
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
TRUNK_BONES = ("spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005")  # pelvis to neck
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
    # The drag keys the bones it moved; a key pose is keyed whole, so that what the drag left
    # where it was (the trunk, in a reach) holds here instead of easing toward the next key.
    key_pose(obj, scene.frame_current)
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


# --- pictures ----------------------------------------------------------------------------

# Rendered by Blender (Workbench) on a mannequin body: per move, five metarigs side by side,
# the start pose and the result of each solver, with the default preferred pose ('START', the
# gaze kept) and the human joint ranges (when the add-on has them). The moves are made as a
# mouse drag makes them: 1 cm steps of the drag operator.
PICTURE_SPACING = 1.45  # m between the figures
PICTURE_PINS = scenes.FEET + ("foot.L", "foot.R")  # toes, heels and (foot heads) ankles: planted feet
PICTURE_STEP = 0.01  # m per drag step
PICTURE_RESOLUTION = (2200, 900)
PICTURE_SOLVERS = (("SR_INVERSE", "SR inverse"), ("QUASI_NEWTON", "quasi-Newton"), ("CCD", "CCD"),
                   ("JACOBIAN_TRANSPOSE", "Jacobian transpose"))
RAISE_OUT = 0.3  # m: the raised hand's tail this far out to the side of the shoulder, at the head's height
PICTURES = {  # name -> (turn of the figures about Z toward the camera's right, elevation of the camera (deg), title)
    "raise": (30.0, 8.0, "Raise: the right hand dragged up to head height, feet pinned"),
    "reach": (50.0, 8.0, "Reach: the right hand dragged to 25 cm in front of the chest, feet pinned"),
    "squat": (62.0, 8.0, "Squat: the hips dragged 25 cm down, feet pinned"),
}


@dataclass
class Pose:
    """One figure of a picture: how it was posed and what came of it."""

    label: str
    reference: str | None  # None: the start pose, not dragged
    ranges: bool = False
    solver: str = "SR_INVERSE"
    obj: object = None
    start_point: np.ndarray | None = None
    target: np.ndarray | None = None
    max_pin_error: float = 0.0
    drag_error: float = 0.0
    figures: dict = field(default_factory=dict)  # what the caption says, measured


def has_joint_ranges() -> bool:
    try:
        bpy.ops.welman_ik.joint_ranges.get_rna_type()
    except (AttributeError, KeyError):
        return False
    return hasattr(bpy.types.PoseBone, "welman_ik_range")


def world_rotations(obj) -> dict:
    bpy.context.view_layer.update()
    return {pb.name: (obj.matrix_world @ pb.matrix).to_quaternion() for pb in obj.pose.bones}


def turn(a, b) -> float:
    """Degrees between two orientations, whatever the quaternions' signs."""
    return float(np.degrees(2.0 * np.arccos(min(1.0, abs(a.dot(b))))))


def knee_forward(obj, side: str) -> float:
    """How far (m) the knee is in front of the line from hip to ankle (the rig faces its -Y)."""
    hip, knee, ankle = (point(obj, b, t) for b, t in ((f"thigh.{side}", 0.0), (f"shin.{side}", 0.0),
                                                      (f"shin.{side}", 1.0)))
    axis = (ankle - hip) / np.linalg.norm(ankle - hip)
    off = knee - hip - ((knee - hip) @ axis) * axis
    return float(off @ np.array(obj.matrix_world.to_3x3() @ Vector((0.0, -1.0, 0.0))).ravel())


def pose_figure(name: str, fig: Pose) -> None:
    """Drag as the demo does, in 1 cm steps, with ``fig``'s preferred pose and ranges."""
    obj = fig.obj
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    obj.welman_ik.keyframes = "NEVER"
    bpy.context.view_layer.update()
    rotations = world_rotations(obj)
    if name == "reach":
        bone, anchor = REACH_BONE, REACH_ANCHOR
        front = np.array(obj.matrix_world.to_3x3() @ Vector((0.0, -1.0, 0.0))).ravel()
        target = point(obj, CHEST_BONE, 1.0) + REACH_AHEAD * front / np.linalg.norm(front)
    elif name == "raise":
        bone, anchor = REACH_BONE, REACH_ANCHOR
        shoulder = point(obj, "upper_arm.R", 0.0)
        side = shoulder - point(obj, CHEST_BONE, 0.0)
        side[2] = 0.0
        target = shoulder + RAISE_OUT * side / np.linalg.norm(side)
        target[2] = point(obj, "spine.006", 0.0)[2]
    else:
        bone, anchor = SQUAT_BONE, SQUAT_ANCHOR
        target = point(obj, SQUAT_BONE, SQUAT_ANCHOR) - np.array([0.0, 0.0, SQUAT_DROP])
    fig.start_point, fig.target = point(obj, bone, anchor), target
    if fig.reference is not None:
        obj.welman_ik.reference = fig.reference
        obj.welman_ik.solver = fig.solver
        if fig.ranges:
            scenes.select(obj, ())
            with scenes.quiet():
                bpy.ops.welman_ik.joint_ranges(preset="AUTO")
        steps = max(1, int(np.ceil(np.linalg.norm(target - fig.start_point) / PICTURE_STEP)))
        for i in range(1, steps + 1):
            goal = fig.start_point + (target - fig.start_point) * i / steps
            with scenes.quiet():
                result = bpy.ops.welman_ik.drag(bone=bone, target=tuple(goal), anchor=anchor)
            if result != {"FINISHED"}:
                raise RuntimeError(f"picture {name}, {fig.label}: the drag did not finish")
        bpy.context.view_layer.update()
        last = obj.welman_ik.last_solve
        fig.drag_error, fig.max_pin_error = last.drag_error, last.max_pin_error
    after = world_rotations(obj)
    fig.figures["chest"] = turn(rotations[CHEST_BONE], after[CHEST_BONE])
    fig.figures["trunk"] = max(turn(rotations[b], after[b]) for b in TRUNK_BONES)
    fig.figures["head"] = turn(rotations["spine.006"], after["spine.006"])
    fig.figures["knees"] = min(knee_forward(obj, s) for s in "LR")
    bpy.ops.object.mode_set(mode="OBJECT")


def pin_feet(obj) -> None:
    """Position pins on the toes' and heels' tails and the ankles (the feet's heads): two
    points per foot would leave it free to roll about the line through them."""
    for bone in PICTURE_PINS:
        scenes.select(obj, [bone])
        with scenes.quiet():
            bpy.ops.welman_ik.pin(kind="POSITION", anchor=0.0 if bone.startswith("foot.") else 1.0)
    scenes.select(obj, ())


def caption_text(name: str, fig: Pose) -> str:
    if fig.reference is None:
        return f"{fig.label}"
    f = fig.figures
    if name == "squat":
        return f"{fig.label}\nknees {100 * f['knees']:+.0f} cm forward"
    return f"{fig.label}\ntrunk {f['trunk']:.0f}°, head {f['head']:.0f}°"


def picture(name: str, path: Path) -> list[Pose]:
    """Render the picture ``name`` ('reach' or 'squat') to ``path``; the figures posed."""
    scenes.empty_scene()
    ranges = has_joint_ranges()
    figures = [Pose("start pose", None)] + [Pose(label, "START", ranges, solver) for solver, label in PICTURE_SOLVERS]
    render.setup_workbench()
    angle, elevation, title = PICTURES[name]
    shown = []
    for i, fig in enumerate(figures):
        obj = scenes.basic_human(pins=())
        bpy.ops.object.mode_set(mode="OBJECT")
        obj.name = f"{name} {fig.label}"
        obj.location.x = (i - (len(figures) - 1) / 2) * PICTURE_SPACING
        obj.rotation_euler.z = np.radians(angle)
        bpy.context.view_layer.update()
        shown += render.add_body(obj)
        bpy.ops.object.mode_set(mode="POSE")
        pin_feet(obj)
        fig.obj = obj
        pose_figure(name, fig)
        shown += render.pin_markers(obj)
        shown += render.drag_marker(fig.start_point, fig.target, arrow=fig.reference is None)
    right = (1.0, 0.0, 0.0)
    top = max(max((o.matrix_world @ Vector(c)).z for c in o.bound_box) for o in shown) + 0.12
    for fig in figures:  # over each figure, at its depth (the camera looks down a little)
        where = fig.obj.matrix_world.translation
        shown.append(render.caption(caption_text(name, fig), (where.x, where.y, top), right, size=0.08))
    shown.append(render.caption(title, (0.0, 0.0, top + 0.3), right, size=0.095))
    for fig in figures:
        shown.append(render.stand(fig.obj.matrix_world.translation))
    render.frame_camera(shown, (0.0, 1.0, 0.0), elevation=np.radians(elevation), resolution=PICTURE_RESOLUTION)
    render.render(path)
    return figures


# --- main ------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("out"),
                        help="directory for demo.blend and the pictures (demo_raise.png, demo_reach.png, demo_squat.png, demo.png)")
    parser.add_argument("--images", type=Path, help="also copy the pictures here (docs/images)")
    parser.add_argument("--no-pictures", action="store_true", help="skip rendering")
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
    blend = out / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"\nWrote {blend}")

    found_notes, failures = notes(rigs), problems(rigs, gaps)  # before the pictures replace the scene
    if not args.no_pictures:
        paths = []
        for name in PICTURES:
            path = out / f"demo_{name}.png"
            for fig in picture(name, path):
                print(f"  {name:<6} {fig.label:<20} trunk {fig.figures['trunk']:5.1f} deg  head "
                      f"{fig.figures['head']:5.1f} deg  knees forward {100 * fig.figures['knees']:+5.1f} cm  "
                      f"pins {1000 * fig.max_pin_error:.4f} mm")
                if fig.max_pin_error > PIN_TOLERANCE:
                    failures.append(f"picture {name}, {fig.label}: a pin is {1000 * fig.max_pin_error:.2f} mm off")
            paths.append(path)
            print(f"Wrote {path}")
        combined = render.stack(paths, out / "demo.png")
        print(f"Wrote {combined}")
        if args.images:
            args.images.mkdir(parents=True, exist_ok=True)
            for path in paths:
                shutil.copyfile(path, args.images / path.name)
                print(f"Copied {path.name} to {args.images}")

    for note in found_notes:
        print(f"note: {note}")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    print(f"{'FAILED' if failures else 'OK'} in {time.perf_counter() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the bpy module can hang at exit with Rigify's classes registered
