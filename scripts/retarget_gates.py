"""A retarget's figures as a user would check them, measured on the evaluated poses of both
armatures and nothing of the retarget's own: foot slide across the source's contacts (found
here on the source's own feet), feet sinking below the target's floor or floating above it
when planted, knee and elbow bend against the source's (angle and plane), the shoulder line's
facing, deforming bones' stretch, flips, and the time against a Copy Rotation bake.

    .venv/bin/python scripts/retarget_gates.py [CLIP.bvh] [FRAMES] [--rig metarig|rigify]
        [--rest tpose|apose|axis|stride] [--units m|cm|in] [--up Y|Z] [--json OUT.json]

The clip is imported with Blender's BVH importer as a user would (a variant of it written by
``scripts/bvh_variants.py`` first, when asked for), the map filled by ``retarget_map_fill``,
the retarget run with its defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "tests" / "blender")]

import bpy
import numpy as np
import scenes

from welman_ik.blender.rig.body import pose_matrices, rest_ends
from welman_ik.core.anatomy.retarget import retarget_roles

FIXTURES = ROOT / "tests" / "fixtures"
FILE_UNITS = {"pymo_walk.bvh": "in", "mixamo_clip.bvh": "cm", "mocapbank_clip.bvh": "cm"}
METRES = {"m": 1.0, "cm": 0.01, "in": 0.0254}
PARTS = ("thigh", "shin", "foot", "upper_arm", "forearm", "hand")


def roles_of(obj) -> dict[str, str]:
    """role -> bone: the first bone of each role; a generated Rigify rig's deforming bones."""
    names = [b.name for b in obj.data.bones]
    if "DEF-thigh.L" in names:
        return {f"{part}.{side}": f"DEF-{part}.{side}" for part in PARTS for side in "LR"}
    roles = retarget_roles(names, {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones})[1]
    out = {}
    for name in names:
        out.setdefault(roles.get(name, ""), name)
    return out


def import_clip(path: Path, units: str, up: str):
    """``path`` imported as a user imports it: scale 1 for a clip in metres, else its units'
    size in metres (a user sets the importer's scale), up axis as the file stands."""
    import addon_utils

    addon_utils.enable("io_anim_bvh", default_set=True)
    axes = {"Y": ("-Z", "Y"), "Z": ("Y", "Z")}[up]
    bpy.ops.import_anim.bvh(filepath=str(path), global_scale=METRES[units], axis_forward=axes[0], axis_up=axes[1])
    obj = bpy.context.object
    return obj


def heads_of(obj, bones, frames) -> np.ndarray:
    pose, world = pose_matrices(obj, bones, frames)
    return (world[:, None] @ pose)[..., :3, 3]


def joints(obj, frames) -> tuple[dict, np.ndarray]:
    """role -> column, and (frames, roles, 3) the heads (and the foot's tail as 'toe.X')."""
    roles = roles_of(obj)
    names = [roles[f"{p}.{s}"] for p in PARTS for s in "LR"]
    pose, world = pose_matrices(obj, names, frames)
    m = world[:, None] @ pose
    heads = m[..., :3, 3]
    lengths = np.array([obj.data.bones[n].length for n in names]) * obj.matrix_world.to_scale()[0]
    rot = m[..., :3, :3] / np.linalg.norm(m[..., :3, :3], axis=-2, keepdims=True)
    tails = heads + rot[..., 1] * lengths[None, :, None]
    column = {f"{p}.{s}": i for i, (p, s) in enumerate((p, s) for p in PARTS for s in "LR")}
    toes = {f"toe.{s}": tails[:, column[f"foot.{s}"]] for s in "LR"}
    hands_end = {f"hand_end.{s}": tails[:, column[f"hand.{s}"]] for s in "LR"}
    extra = {**toes, **hands_end}
    for k in extra:
        column[k] = len(column)
    return column, np.concatenate([heads, np.stack(list(extra.values()), axis=1)], axis=1)


def angle(a, b) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.einsum("...i,...i->...", a, b), -1.0, 1.0)))


def source_contacts(points: np.ndarray, leg: float, fps: float) -> list[tuple[int, int]]:
    """(first, last) frames a source foot point (frames, 3) is down: within 6% of the leg's length
    of its lowest and moving under 15% of the leg's length per second, at least 3 frames."""
    height = points[:, 2] - points[:, 2].min()
    speed = np.r_[0.0, np.linalg.norm(np.diff(points, axis=0), axis=1)] * fps
    down = (height < 0.06 * leg) & (speed < 0.15 * leg)
    out, start = [], None
    for i, d in enumerate(np.r_[down, False]):
        if d and start is None:
            start = i
        elif not d and start is not None:
            if i - start >= 3:
                out.append((start, i - 1))
            start = None
    return out


def _bend(c: dict, x: np.ndarray, parts: tuple, side: str) -> tuple[np.ndarray, np.ndarray]:
    """(frames,) a limb's bend [deg] and (frames, 3) its bend axis (unnormalised)."""
    upper, lower, end = (x[:, c[f"{part}.{side}"]] for part in parts)
    return angle(lower - upper, end - lower), np.cross(lower - upper, end - lower)


def gates(source, target, frames, fps: float) -> dict:
    cs, s = joints(source, frames)
    ct, t = joints(target, frames)
    leg_s = float(np.median(np.linalg.norm(s[:, cs["thigh.L"]] - s[:, cs["shin.L"]], axis=1)
                            + np.linalg.norm(s[:, cs["shin.L"]] - s[:, cs["foot.L"]], axis=1)))
    out = {}
    # Each foot point's floor: its own height in the target's rest (the rest stands on the floor).
    ends = rest_ends(target, world=True)
    names = target.data.bones.keys()
    roles = roles_of(target)
    slide, float_up, sink = 0.0, 0.0, 0.0
    for side in "LR":
        foot = ends[names.index(roles[f"foot.{side}"])]
        for point, floor in ((f"foot.{side}", foot[0, 2]), (f"toe.{side}", foot[1, 2])):
            sink = max(sink, float(floor - t[:, ct[point], 2].min()))
            for first, last in source_contacts(s[:, cs[point]], leg_s, fps):
                held = t[first:last + 1, ct[point]]
                slide = max(slide, float(np.linalg.norm(held - held[0], axis=1).max()))
                float_up = max(float_up, float(held[:, 2].min() - floor))
    out["slide_mm"] = 1000 * slide
    out["sink_mm"] = 1000 * max(sink, 0.0)
    out["planted_above_floor_mm"] = 1000 * float_up
    bends = []
    planes = []
    for upper, lower, end in (("thigh", "shin", "foot"), ("upper_arm", "forearm", "hand")):
        for side in "LR":
            bs, ns = _bend(cs, s, (upper, lower, end), side)
            bt, nt = _bend(ct, t, (upper, lower, end), side)
            bends.append(np.abs(bs - bt).max())
            both = (bs > 15) & (bt > 15)
            planes.append(angle(ns[both], nt[both]).max() if both.any() else 0.0)
            if upper == "thigh":
                out[f"locked_knee_frames.{side}"] = int(np.sum((bt < 5) & (bs >= 15)))
    out["bend_diff_deg"] = float(max(bends))
    out["bend_plane_deg"] = float(max(planes))
    # The shoulder line's facing, seen from above.
    def shoulders(c, x):
        v = x[:, c["upper_arm.L"]] - x[:, c["upper_arm.R"]]
        return np.arctan2(v[:, 1], v[:, 0])
    diff = np.degrees(np.angle(np.exp(1j * (shoulders(cs, s) - shoulders(ct, t)))))
    out["shoulder_facing_deg"] = float(np.abs(diff).max())
    # Stretch of deforming bones.
    deform = [b.name for b in target.data.bones if b.use_deform]
    pose, world = pose_matrices(target, deform, frames)
    m = world[:, None] @ pose
    lengths = np.linalg.norm(m[..., :3, 1], axis=-1)  # the Y column's length: the bone's scale along it
    ratio = lengths / np.linalg.norm(np.array(target.matrix_world)[:3, 1])
    out["stretch_pct"] = float(100 * np.abs(ratio - 1).max())  # longer or shorter
    out["longer_pct"] = float(100 * max((ratio - 1).max(), 0.0))
    # Flips: a deforming bone turning > 30 deg in a frame where no source bone turns 10 deg.
    r = m[..., :3, :3] / np.linalg.norm(m[..., :3, :3], axis=-2, keepdims=True)
    step = np.degrees(np.arccos(np.clip((np.trace(np.einsum("fbji,fbjk->fbik", r[:-1], r[1:]), axis1=-2,
                                                  axis2=-1) - 1) / 2, -1, 1)))
    pose_s, world_s = pose_matrices(source, source.data.bones.keys(), frames)
    rs = (world_s[:, None] @ pose_s)[..., :3, :3]
    rs = rs / np.linalg.norm(rs, axis=-2, keepdims=True)
    step_s = np.degrees(np.arccos(np.clip((np.trace(np.einsum("fbji,fbjk->fbik", rs[:-1], rs[1:]), axis1=-2,
                                                    axis2=-1) - 1) / 2, -1, 1))).max(axis=1)
    out["flips"] = int(np.sum((step > 30) & (step_s[:, None] < 10)))
    return out


def make_target(rig: str):
    """The target rig named ``rig``: a metarig (basic or full human), a Rigify rig generated from
    one, or the Mixamo fixture's skeleton, its motion taken off (a character rigged by Mixamo)."""
    if rig == "mixamo":
        bpy.ops.object.mode_set(mode="OBJECT") if bpy.context.object else None
        target = import_clip(FIXTURES / "mixamo_clip.bvh", "cm", "Y")
        target.animation_data_clear()
        target.name = "character"
        bpy.ops.object.mode_set(mode="POSE")
        return target
    if rig in ("metarig", "human"):
        return scenes.basic_human(pins=()) if rig == "metarig" else scenes.human(pins=())
    return scenes.generated_rigify(metarig=scenes.human if rig == "rigify_human" else None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("clip", nargs="?", default="pymo_walk.bvh")
    parser.add_argument("frames", nargs="?", type=int, default=200)
    parser.add_argument("--rig", choices=("metarig", "rigify", "human", "rigify_human", "mixamo"), default="metarig")
    parser.add_argument("--rest", default="tpose")
    parser.add_argument("--units", default=None)
    parser.add_argument("--up", choices=("Y", "Z"), default="Y")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--blend", type=Path, default=None)
    parser.add_argument("--target-scale", type=float, default=1.0, help="the target armature object's scale")
    parser.add_argument("--fk", action="store_true", help="a Rigify rig's limbs switched to FK before the map is filled")
    parser.add_argument("--ratio", action="store_true", help="time a Copy Rotation bake of the same frames too")
    parser.add_argument("--poses", type=Path, default=None, help="save the target's evaluated bone matrices (.npy)")
    args = parser.parse_args()
    path = FIXTURES / args.clip
    units = args.units or FILE_UNITS.get(args.clip, "cm")
    if args.rest != "tpose" or args.units or args.up != "Y":
        import bvh_variants

        out = Path(tempfile.mkdtemp()) / f"{path.stem}_{args.rest}_{units}_{args.up}.bvh"
        scale = METRES[FILE_UNITS.get(args.clip, "cm")] / METRES[units]
        bvh_variants.write_variant(path, out, rest=args.rest, scale=scale, up=args.up)
        path = out
    scenes.empty_scene()
    source = import_clip(path, units, args.up)
    first = 2 if args.rest == "axis" else 1
    frames = list(range(first, first + args.frames))
    target = make_target(args.rig)
    if args.target_scale != 1.0:
        bpy.ops.object.mode_set(mode="OBJECT")
        target.scale = (args.target_scale,) * 3
        bpy.context.view_layer.update()
    if args.fk:
        for side in "LR":
            for holder in ("upper_arm_parent", "thigh_parent"):
                target.pose.bones[f"{holder}.{side}"]["IK_FK"] = 1.0
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = target
    bpy.ops.object.mode_set(mode="POSE")
    bpy.ops.welman_ik.retarget_map_fill(source=source.name)
    started = time.perf_counter()
    result = bpy.ops.welman_ik.retarget(source=source.name, frame_start=frames[0], frame_end=frames[-1])
    took = time.perf_counter() - started
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    figures = {"clip": args.clip, "rest": args.rest, "units": units, "up": args.up, "rig": args.rig,
               "result": sorted(result), "seconds": took, "frames_per_second": len(frames) / took,
               "message": target.welman_ik.last_solve.message}
    figures.update(gates(source, target, frames, fps))
    if args.ratio:  # Blender's own: Copy Rotation constraints baked by nla.bake, onto a second rig
        import compare_retarget

        from welman_ik.blender.rig.retarget_map import retarget_scale

        bpy.ops.object.mode_set(mode="OBJECT")
        other = make_target(args.rig)
        bpy.ops.welman_ik.retarget_map_fill(source=source.name)
        copy = compare_retarget.rotation_copy(source, other, frames, retarget_scale(other, source))
        figures["copy_rotation_seconds"] = copy
        figures["times_copy_rotation"] = took / copy
    for key, value in figures.items():
        print(f"{key:>24}: {value:.3f}" if isinstance(value, float) else f"{key:>24}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    if args.poses:
        pose, world = pose_matrices(target, target.pose.bones.keys(), frames)
        np.save(args.poses, world[:, None] @ pose)
    if args.blend:
        bpy.ops.wm.save_as_mainfile(filepath=str(args.blend))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # (the bpy module can hang at its exit after a Rigify generation)
