"""Pictures of pins on the world (issue 39): a hand held on a moving prop, and a hand held on
another character's arm, baked over 60 frames and rendered by Blender (Workbench, headless)
on frames 1, 30 and 60, each picture a strip of the three frames.

1. The prop: the basic human metarig, its rest pose keyed; an Empty "Cup" (a cup-shaped mesh
   parented to it) at the right hand, keyed to move 60 cm (forward, in and down) and turn 90
   degrees about the vertical over frames 1 to 60; both feet pinned (pose), the right hand
   pinned (pose) and given the cup as its target; baked over frames 1 to 60.
2. The partner: a second metarig "Partner" 0.95 m to the side walks 1 m forward over frames 1
   to 60, its chest turning 25 degrees; the first rig walks the metre beside it (its object
   keyed), its left hand laid on the partner's shoulder (a drag) and pinned (position) to the
   partner's upper_arm.R; baked (the root on its path).

The captions give the frame and the hand's measured miss there: the distance of the evaluated
hand point from its goal (``world_fields(pin)['location']``, the target's evaluated matrix on
the frame times the record) in mm, and for the pose pin the angle in degrees. A dark dot is
the hand's goal on the frame; in the partner's pictures a thin rod joins it to the nearest
point of the partner's upper arm (the offset the pin holds). At the end a table of the misses
on every frame, and where the body stands on the pictured frames (hips, lean, feet).

    .venv/bin/python scripts/render_targets.py --output out/targets [--docs]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
from pathlib import Path

import bpy  # before bmesh: bpy puts Blender's own modules on the path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bmesh
import numpy as np
import render
import scenes
from mathutils import Matrix, Vector

from welman_ik.blender.rig.targets import world_fields

FRAMES = (1, 30, 60)
LAST = 60
PROP_VIEW = (-0.8, 1.0, 0.0)  # the camera in front, on the figure's left: the cup never behind the body
PARTNER_VIEW = (0.6, 1.0, 0.0)  # in front, on the first figure's right: the reach to the partner across
DOCS = Path(__file__).resolve().parent.parent / "docs" / "images"
CUP = (0.93, 0.93, 0.90, 1.0)  # white china
PARTNER = (0.56, 0.70, 0.54, 1.0)  # sage: the partner, all of it


# --- measuring -------------------------------------------------------------------------------

def world_point(obj, bone: str, anchor: float = 1.0) -> np.ndarray:
    """World position of a point along an evaluated pose bone (0 head, 1 tail)."""
    bpy.context.view_layer.update()
    pb = obj.pose.bones[bone]
    return np.array(obj.matrix_world @ (pb.head + anchor * (pb.tail - pb.head)))


def bone_turn(obj, bone: str):
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones[bone].matrix).to_quaternion()


def miss(obj, pin) -> tuple[float, float | None]:
    """The pin's miss on the current frame: (mm, degrees; None for a position pin)."""
    goal = world_fields(pin)
    mm = 1000.0 * float(np.linalg.norm(world_point(obj, pin.bone, pin.anchor) - goal["location"]))
    if pin.kind != "POSE":
        return mm, None
    turn = math.degrees(bone_turn(obj, pin.bone).rotation_difference(goal["rotation"]).angle) % 360.0
    return mm, min(turn, 360.0 - turn)


def slide(obj, pins, at: dict) -> float:
    """The largest distance (mm) of the pinned bones' heads and tails from where they were."""
    return 1000.0 * max(float(np.linalg.norm(world_point(obj, p.bone, a) - at[p.bone, a]))
                        for p in pins for a in (0.0, 1.0))


# --- building --------------------------------------------------------------------------------

def rest_keys(obj, frame: int = 1) -> None:
    """Key every bone's rotation as it is: an action to bake over."""
    for pb in obj.pose.bones:
        pb.keyframe_insert("rotation_quaternion", frame=frame)


def activate(obj, mode: str = "POSE") -> None:
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    for o in bpy.context.view_layer.objects:
        o.select_set(o == obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode=mode)


def mesh(name: str, build, colour, parent=None):
    """A mesh object from ``build(bm)``, smooth, coloured, parented (object) to ``parent``
    with its vertices in the parent's space."""
    bm = bmesh.new()
    build(bm)
    part = render._mesh_object(name, bm, colour)
    for polygon in part.data.polygons:
        polygon.use_smooth = True
    if parent is not None:
        part.parent = parent
        part.matrix_parent_inverse = Matrix.Identity(4)
    return part


def cup(at, hand) -> tuple:
    """An Empty "Cup" at ``at``, keyed to move 60 cm (+0.35 x, -0.45 y, -0.15 z) and turn 90
    degrees about Z over frames 1 to 60, and a cup (a tapered cylinder and a handle, parented to
    the Empty) upright under the mesh ``hand`` (the mitt as it stands now), its rim just under
    the lowest point of the mitt over it: the hand holds the cup from above. Returns (empty,
    meshes)."""
    scene = bpy.context.scene
    empty = bpy.data.objects.new("Cup", None)
    empty.empty_display_size = 0.05
    scene.collection.objects.link(empty)
    empty.location = tuple(at)
    bpy.context.view_layer.update()
    mitt = np.array([tuple(hand.matrix_world @ v.co) for v in hand.data.vertices]) - np.asarray(at)
    radius, height = 0.042, 0.10
    axis = mitt[:, :2].mean(axis=0)
    over = mitt[np.linalg.norm(mitt[:, :2] - axis, axis=1) < radius]
    top = float(over[:, 2].min()) - 0.002
    centre = Vector((axis[0], axis[1], top - height / 2))  # in the Empty's space (unturned on frame 1)

    def body(bm):
        bmesh.ops.create_cone(bm, cap_ends=True, segments=32, radius1=radius * 0.85, radius2=radius, depth=height,
                              matrix=Matrix.Translation(centre))

    def handle(bm):
        # A torus swept round an axis along Y, on the cup's +X side (away from the body).
        major, minor, n, m = 0.026, 0.007, 24, 10
        grid = []
        for i in range(n):
            a = 2 * math.pi * i / n
            grid.append([bm.verts.new((centre.x + radius + 0.012 + (major + minor * math.cos(b)) * math.cos(a),
                                       centre.y + minor * math.sin(b),
                                       centre.z + (major + minor * math.cos(b)) * math.sin(a)))
                         for b in (2 * math.pi * j / m for j in range(m))])
        for i in range(n):
            for j in range(m):
                bm.faces.new((grid[i][j], grid[(i + 1) % n][j], grid[(i + 1) % n][(j + 1) % m], grid[i][(j + 1) % m]))

    meshes = [mesh("cup", body, CUP, empty), mesh("cup handle", handle, CUP, empty)]
    empty.keyframe_insert("location", frame=1)
    empty.keyframe_insert("rotation_euler", frame=1)
    empty.location = tuple(np.asarray(at) + [0.35, -0.45, -0.15])
    empty.rotation_euler = (0.0, 0.0, math.radians(90.0))
    empty.keyframe_insert("location", frame=LAST)
    empty.keyframe_insert("rotation_euler", frame=LAST)
    scene.frame_set(1)
    return empty, meshes


def partner_rig(at, walk=(0.0, -1.0, 0.0)):
    """A second metarig "Partner" standing at ``at`` with a body (one colour), its object keyed
    to walk ``walk`` over frames 1 to 60 with its chest turning 25 degrees."""
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.object.armature_basic_human_metarig_add()
    partner = bpy.context.object
    partner.name = "Partner"
    partner.location = tuple(at)
    bpy.context.view_layer.update()
    parts = render.add_body(partner)
    for part in parts:
        side = part.name.endswith((".L", ".R"))
        part.color = tuple(c * (0.88 if side else 1.0) for c in PARTNER[:3]) + (1.0,)
    partner.keyframe_insert("location", frame=1)
    partner.location = tuple(np.asarray(at) + walk)
    partner.keyframe_insert("location", frame=LAST)
    chest = partner.pose.bones["spine.003"]
    chest.rotation_mode = "XYZ"
    chest.keyframe_insert("rotation_euler", frame=1)
    chest.rotation_euler = (0.0, math.radians(25.0), 0.0)
    chest.keyframe_insert("rotation_euler", frame=LAST)
    bpy.context.scene.frame_set(1)
    return partner, parts


def figure():
    """A new scene with a basic human metarig and its body, in object mode; (rig, shown objects)."""
    scenes.empty_scene()
    render.setup_workbench()
    obj = scenes.basic_human(pins=())
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.update()
    return obj, render.add_body(obj)


def prop_scene():
    """Set-up 1 baked; (rig, hand pin, feet pins, feet at rest, shown objects)."""
    obj, shown = figure()
    empty, meshes = cup(world_point(obj, "hand.R"), next(p for p in shown if p.parent_bone == "hand.R"))
    shown += meshes
    activate(obj)
    rest_keys(obj)
    for foot in ("foot.L", "foot.R"):
        scenes.pin_one(obj, foot, "POSE")
    feet = [p for p in obj.welman_ik.pins if p.bone.startswith("foot.")]
    scenes.pin_one(obj, "hand.R", "POSE").target_object = empty
    at = {(p.bone, a): world_point(obj, p.bone, a) for p in feet for a in (0.0, 1.0)}
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=LAST) == {"FINISHED"}
    # Found again: a pin taken from the collection before more were added may point at freed memory.
    hand = next(p for p in obj.welman_ik.pins if p.bone == "hand.R")
    feet = [p for p in obj.welman_ik.pins if p.bone.startswith("foot.")]
    return obj, hand, feet, at, shown


def partner_scene():
    """Set-up 2 baked; (rig, hand pin, partner, shown objects). Both characters walk the metre
    (their objects keyed), as an animator's two characters would; the first one's hand is laid
    on the partner's shoulder (a drag), pinned there, and holds while the partner's chest turns."""
    obj, shown = figure()
    obj.keyframe_insert("location", frame=1)
    obj.location = (0.0, -1.0, 0.0)
    obj.keyframe_insert("location", frame=LAST)
    bpy.context.scene.frame_set(1)
    partner, parts = partner_rig((0.95, 0.0, 0.0))
    shown += parts
    activate(obj)
    rest_keys(obj)
    shoulder = world_point(partner, "upper_arm.R", 0.25) + np.array([0.0, 0.0, 0.06])
    with scenes.quiet():
        bpy.ops.welman_ik.drag(bone="hand.L", target=tuple(shoulder))
    rest_keys(obj)  # the hand on the shoulder, as the animation's own pose
    hand = scenes.pin_one(obj, "hand.L", "POSITION")
    hand.target_object = partner
    hand.target_bone = "upper_arm.R"
    with scenes.quiet():
        assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=LAST) == {"FINISHED"}
    return obj, hand, partner, shown


def posture(obj) -> str:
    """How the body stands on the current frame: the hips (the head of ``spine``) in the world,
    the trunk's lean (hips to neck, from the vertical), the middle of the feet (the four foot
    and toe bones' heads and tails) and the lowest of those points' height."""
    hips, neck = world_point(obj, "spine", 0.0), world_point(obj, "spine.004", 0.0)
    lean = math.degrees(math.acos(float((neck - hips)[2] / np.linalg.norm(neck - hips))))
    feet = np.array([world_point(obj, b, a) for b in ("foot.L", "foot.R", "toe.L", "toe.R") for a in (0.0, 1.0)])
    middle = feet.mean(axis=0)
    return (f"hips at ({hips[0]:+.2f}, {hips[1]:+.2f}, {hips[2]:.2f}) m, trunk leaning {lean:4.1f}°, "
            f"feet at ({middle[0]:+.2f}, {middle[1]:+.2f}), lowest {100 * feet[:, 2].min():4.1f} cm up")


def rod(start, end, radius: float = 0.006, colour=render.PIN, name: str = "link"):
    """A thin rod from ``start`` to ``end``."""
    start, end = Vector(start), Vector(end)

    def build(bm):
        bmesh.ops.create_cone(bm, cap_ends=True, segments=12, radius1=radius, radius2=radius,
                              depth=(end - start).length,
                              matrix=Matrix.Translation((start + end) / 2) @ render._frame(end - start, Vector((1, 0, 0)))
                              .to_4x4())

    return mesh(name, build, colour)


def nearest_on_bone(obj, bone: str, point) -> np.ndarray:
    """The point of an evaluated bone's axis (head to tail) nearest ``point``."""
    head, tail = world_point(obj, bone, 0.0), world_point(obj, bone, 1.0)
    t = float(np.clip((np.asarray(point) - head) @ (tail - head) / ((tail - head) @ (tail - head)), 0.0, 1.0))
    return head + t * (tail - head)


# --- pictures --------------------------------------------------------------------------------

def bounds(shown, frames) -> list:
    """Boxes (hidden from the render) around ``shown`` as they stand on each of ``frames``:
    for framing the camera once over the whole motion."""
    boxes = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        bpy.context.view_layer.update()
        points = np.array([tuple(o.matrix_world @ Vector(c)) for o in shown for c in o.bound_box])
        low, high = points.min(axis=0), points.max(axis=0)
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=1.0, matrix=Matrix.Translation(Vector((low + high) / 2))
                              @ Matrix.Diagonal((*(high - low), 1.0)))
        box = render._mesh_object(f"bounds {frame}", bm, (0, 0, 0, 1))
        box.hide_render = True
        boxes.append(box)
    bpy.context.view_layer.update()
    return boxes


def pictures(name: str, shown, direction, text, markers, out: Path, elevation: float, floor, resolution,
             size: float = 0.075) -> Path:
    """Render ``FRAMES`` with one camera along ``direction`` framing the whole motion; the
    caption ``text(frame)`` over the figures, ``markers(frame)`` the goal dots; a strip."""
    forward = Vector(direction).normalized()
    right = forward.cross(Vector((0.0, 0.0, 1.0))).normalized()
    stand = render.stand(floor[0], radius=floor[1], height=0.02)
    boxes = bounds(shown, FRAMES)
    top = max((b.matrix_world @ Vector(c)).z for b in boxes for c in b.bound_box) + 0.12
    middle = sum((b.matrix_world.translation for b in boxes), Vector()) / len(boxes)
    where = Vector((middle.x, middle.y, top))
    sample = render.caption(text(FRAMES[0]), where, right, size=size)
    camera = render.frame_camera(boxes + [stand, sample], direction, elevation=elevation, resolution=resolution,
                                 margin=1.06)
    camera.data.sensor_fit = "HORIZONTAL"  # the scale frame_camera works out is the width, upright pictures too
    bpy.data.objects.remove(sample)
    paths = []
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        made = [render.caption(text(frame), where, right, size=size)] + markers(frame)
        paths.append(render.render(out / f"targets_{name}_{frame}.png"))
        for o in made:
            bpy.data.objects.remove(o)
    return render.strip(paths, out / f"targets_{name}.png")


# --- main ------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("out/targets"), help="directory for the pictures")
    parser.add_argument("--docs", action="store_true", help=f"also copy the strips into {DOCS}")
    args = parser.parse_args(argv)
    out = args.output.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows: dict[int, list] = {f: [] for f in range(1, LAST + 1)}

    obj, hand, feet, at, shown = prop_scene()
    for frame in range(1, LAST + 1):
        bpy.context.scene.frame_set(frame)
        rows[frame] += [*miss(obj, hand), slide(obj, feet, at)]

    notes = {}
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        notes["prop", frame] = posture(obj)

    def prop_text(frame):
        mm, deg, _ = rows[frame][:3]
        return f"right hand pinned to the cup, feet pinned\nframe {frame}: the hand off by {mm:.4f} mm, {deg:.4f}°"

    def prop_markers(frame):
        return [render.sphere(world_fields(hand)["location"], 0.02, render.PIN, "goal")]

    home = obj.matrix_world.translation
    feet_dots = [render.sphere(p.location, 0.02, render.PIN, f"pin {p.bone}") for p in feet]  # in the world
    strips = [pictures("prop", shown + feet_dots, PROP_VIEW, prop_text, prop_markers, out,
                       math.radians(22.0), ((home.x - 0.1, home.y - 0.15, 0.0), 0.5), (600, 800))]

    obj, hand, partner, shown = partner_scene()
    for frame in range(1, LAST + 1):
        bpy.context.scene.frame_set(frame)
        rows[frame] += [miss(obj, hand)[0]]

    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        notes["partner", frame] = posture(obj)

    def partner_text(frame):
        return (f"left hand pinned to Partner's upper_arm.R\n"
                f"frame {frame}: the hand off by {rows[frame][3]:.4f} mm")

    def partner_markers(frame):
        goal = world_fields(hand)["location"]
        return [render.sphere(goal, 0.02, render.PIN, "goal"), rod(nearest_on_bone(partner, "upper_arm.R", goal), goal)]

    strips.append(pictures("partner", shown, PARTNER_VIEW, partner_text, partner_markers, out,
                           math.radians(18.0), ((0.5, -0.5, 0.0), 1.0), (800, 600), size=0.09))

    print()
    print("Misses on every baked frame (the hand from its goal on the target; the feet from where pinned)")
    print(f"{'frame':>5}  {'prop hand mm':>12}  {'prop hand °':>11}  {'feet mm':>8}  {'partner hand mm':>15}")
    for frame, (mm, deg, feet_mm, other) in rows.items():
        print(f"{frame:>5}  {mm:12.4f}  {deg:11.4f}  {feet_mm:8.4f}  {other:15.4f}")
    worst = np.array(list(rows.values())).max(axis=0)
    print(f"{'worst':>5}  {worst[0]:12.4f}  {worst[1]:11.4f}  {worst[2]:8.4f}  {worst[3]:15.4f}")
    print()
    for (name, frame), note in notes.items():
        print(f"{name:<8} frame {frame:>2}: {note}")
    for path in strips:
        print(f"Wrote {path}")
        if args.docs:
            DOCS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS / path.name)
            print(f"Copied {path.name} to {DOCS}")
    print(f"Done in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the bpy module can hang at exit with Rigify's classes registered
