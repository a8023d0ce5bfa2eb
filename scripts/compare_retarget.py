"""The retarget against a plain rotation copy, on the same clip and rig, measured on the
evaluated poses: foot slide in the source's contacts, foot sink below the floor, each hand's
direction from its shoulder against the source's, and flips (a bone turning more than 30
degrees in a frame where its source bone turns less).

The rotation copy is the usual set-up: Copy Rotation constraints (world space) from every mapped
source bone and a Copy Location on the hips, baked with Blender's own bake (``nla.bake``).

    .venv/bin/python scripts/compare_retarget.py [CLIP.bvh] [FRAMES] [--rig metarig|rigify] [--blend OUT_DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "tests" / "blender")]

import bpy
import numpy as np
import scenes
from conftest import import_clip

from welman_ik.blender.bake import retarget as retarget_goals
from welman_ik.blender.rig.body import pose_matrices
from welman_ik.blender.rig.retarget_map import retarget_scale

# Per target rig: its feet, and (shoulder, hand) of each arm, the bones a user sees move.
RIGS = {"metarig": (("foot.L", "foot.R"), [("upper_arm.L", "hand.L"), ("upper_arm.R", "hand.R")]),
        "rigify": (("DEF-foot.L", "DEF-foot.R"), [("DEF-upper_arm.L", "DEF-hand.L"), ("DEF-upper_arm.R", "DEF-hand.R")])}


def source_arms(source) -> list[tuple[str, str]]:
    """(upper arm, hand) of each side of the clip, by its naming."""
    from welman_ik.core.anatomy.retarget import retarget_roles

    roles = retarget_roles([b.name for b in source.data.bones],
                           {b.name: (b.parent.name if b.parent else None) for b in source.data.bones})[1]
    first = {}
    for name, role in roles.items():
        first.setdefault(role, name)
    return [(first[f"upper_arm.{side}"], first[f"hand.{side}"]) for side in ("L", "R")]


def setup(clip: str, rig: str = "metarig"):
    scenes.empty_scene()
    source = import_clip(clip)
    bpy.ops.object.mode_set(mode="OBJECT")
    target = scenes.basic_human(pins=()) if rig == "metarig" else scenes.generated_rigify()
    bpy.ops.welman_ik.retarget_map_fill(source=source.name)
    return source, target


def rotation_copy(source, target, frames, scale) -> float:
    """Copy Rotation constraints (world to world) on every mapped bone and a Copy Location on the
    hips, baked by Blender into an action (``nla.bake``, visual keying); returns seconds."""
    lines = [(line.target_bone, line.source_bone) for line in target.welman_ik.retarget_map]
    hips = lines[0][0]
    # Both rigs rest facing -Y with their limbs out (a T-pose), so a world-space copy is the
    # usual set-up; Blender's Copy Rotation keeps no rest offset of its own.
    for name, source_bone in lines:
        c = target.pose.bones[name].constraints.new("COPY_ROTATION")
        c.target, c.subtarget = source, source_bone
        c.target_space = c.owner_space = "WORLD"
    c = target.pose.bones[hips].constraints.new("COPY_LOCATION")
    c.target, c.subtarget = source, lines[0][1]
    started = time.perf_counter()
    bpy.context.view_layer.objects.active = target
    bpy.ops.object.mode_set(mode="POSE")
    for pb in target.pose.bones:
        pb.bone.select = True
    bpy.ops.nla.bake(frame_start=frames[0], frame_end=frames[-1], only_selected=True, visual_keying=True,
                     clear_constraints=True, bake_types={"POSE"})
    return time.perf_counter() - started


def figures(source, target, retarget, rig: str = "metarig") -> dict:
    frames = retarget.frames
    out = {}
    # Foot slide in the source's contacts, and sink below the rest height.
    slide, sink = 0.0, 0.0
    for plant in retarget.plants:
        pose, world = pose_matrices(target, [plant.bone], frames[plant.first:plant.last + 1])
        m = world @ pose[:, 0]
        points = m[:, :3, 3] + (m[:, :3, :3] / np.linalg.norm(m[:, :3, :3], axis=-2, keepdims=True)) @ plant.local
        slide = max(slide, float(np.linalg.norm(points - points[0], axis=1).max()))
    feet, arms = RIGS[rig]
    for foot in feet:
        rest = (target.matrix_world @ target.data.bones[foot].head_local).z
        pose, world = pose_matrices(target, [foot], frames)
        sink = max(sink, float(rest - (world @ pose[:, 0])[:, 2, 3].min()))
    out["foot slide in contacts [mm]"] = 1000 * slide
    out["foot sink below its rest height [mm]"] = 1000 * max(sink, 0.0)
    # Hand direction from the shoulder.
    pairs_t, pairs_s = arms, source_arms(source)
    angle = []
    for obj, pairs in ((target, pairs_t), (source, pairs_s)):
        names = sorted({n for p in pairs for n in p})
        pose, world = pose_matrices(obj, names, frames)
        heads = (world[:, None] @ pose)[..., :3, 3]
        at = {n: i for i, n in enumerate(names)}
        v = np.stack([heads[:, at[b]] - heads[:, at[a]] for a, b in pairs], axis=1)
        angle.append(v / np.linalg.norm(v, axis=-1, keepdims=True))
    out["hand direction from shoulder, worst [deg]"] = float(np.degrees(np.arccos(np.clip(
        np.einsum("fpi,fpi->fp", *angle), -1, 1))).max())
    # Flips.
    pairs = [(line.target_bone, line.source_bone) for line in target.welman_ik.retarget_map]
    if rig == "rigify":  # the legs the rig's IK chains bend: their deforming bones
        from welman_ik.core.anatomy.retarget import retarget_roles

        roles = retarget_roles([b.name for b in source.data.bones],
                               {b.name: (b.parent.name if b.parent else None) for b in source.data.bones})[1]
        legs = {role: name for name, role in reversed(list(roles.items()))}
        pairs += [(f"DEF-{part}.{side}", legs[f"{part}.{side}"]) for side in ("L", "R") for part in ("thigh", "shin")]
    names = [t for t, _ in pairs]
    turned = []
    for obj, bones in ((target, names), (source, [s for _, s in pairs])):
        pose, world = pose_matrices(obj, bones, frames)
        r = (world[:, None] @ pose)[..., :3, :3]
        r = r / np.linalg.norm(r, axis=-2, keepdims=True)
        step = np.einsum("fbji,fbjk->fbik", r[:-1], r[1:])
        turned.append(np.degrees(np.arccos(np.clip((np.trace(step, axis1=-2, axis2=-1) - 1) / 2, -1, 1))))
    out["flips (>30 deg in a frame where the source turns less)"] = int(np.sum((turned[0] > 30) & (turned[1] < 30)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("clip", nargs="?", default="mocapbank_clip.bvh")
    parser.add_argument("frames", nargs="?", type=int, default=120)
    parser.add_argument("--blend", type=Path, default=None)
    parser.add_argument("--rig", choices=sorted(RIGS), default="metarig",
                        help="the target: the basic human metarig, or a Rigify rig generated from it (the "
                             "retarget alone: a rotation copy onto its controls is no usual set-up)")
    args = parser.parse_args()
    scenes.load_addon()
    results = {}
    methods = ["welman_ik.retarget"] + (["rotation copy (Copy Rotation + Copy Location, nla.bake)"]
                                        if args.rig == "metarig" else [])
    for method in methods:
        source, target = setup(args.clip, args.rig)
        frames = list(range(1, args.frames + 1))
        scale = retarget_scale(target, source)
        if method == "welman_ik.retarget":
            started = time.perf_counter()
            bpy.ops.welman_ik.retarget(source=source.name, frame_start=1, frame_end=args.frames)
            seconds = time.perf_counter() - started
            reported = {f"reported {g.group} [{'deg' if g.group == 'orientations' else 'mm'}]":
                        (math.degrees(g.error) if g.group == "orientations" else 1000 * g.error)
                        for g in target.welman_ik.last_solve.groups}
        else:
            seconds, reported = rotation_copy(source, target, frames, scale), {}
        found = retarget_goals.make(bpy.context, target, source, frames, scale, True)
        results[method] = {"seconds": seconds, **figures(source, target, found, args.rig), **reported}
        if args.blend:
            args.blend.mkdir(parents=True, exist_ok=True)
            name = f"{args.rig}_" + ("welman.blend" if "welman" in method else "copy.blend")
            bpy.ops.wm.save_as_mainfile(filepath=str(args.blend / name))
    print(json.dumps(results, indent=2))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
