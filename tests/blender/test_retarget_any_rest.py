"""The retarget follows the source's motion in the world, not the way its file lays out its rest
pose, its units or its up axis. One fixture walk is rewritten (``scripts/bvh_variants.py``)
with the same joint places on every frame under an A-pose rest, every bone along one axis
with the T-pose in frame 1, a rest posed mid-stride, in centimetres or inches, and standing
Z-up; each is imported as a user imports it (Blender's BVH importer, its scale left at 1 for
centimetres, the up axis the file stands on) and retargeted onto the basic human metarig
with the map ``retarget_map_fill`` makes. Every variant must give the T-pose clip's target
motion on every frame, measured on the evaluated poses: each bone's head within 1 mm, its
direction within 1 degree, and the hands', feet's and head's facing within 5 degrees."""

from __future__ import annotations

import addon_utils
import bpy
import bvh_variants
import numpy as np
import pytest
import retarget_gates
import scenes
from conftest import FIXTURES

from welman_ik.blender.rig.body import pose_matrices

CLIP = "pymo_walk.bvh"  # inches
FRAMES = 90  # of the clip's 300 (120 fps): a step and a half
INCH = 0.0254
# (rest, file units in metres, up axis, the importer's scale): a user imports a centimetre clip as
# it comes (scale 1) and an inch clip at its size in metres.
VARIANTS = {"tpose": ("tpose", INCH, "Y", INCH), "apose_cm": ("apose", 0.01, "Y", 1.0),
            "axis_in": ("axis", INCH, "Y", INCH), "stride_m_z": ("stride", 1.0, "Z", 1.0)}
ENDS = ("hand.L", "hand.R", "foot.L", "foot.R", "spine.006")


def _retargeted(tmp_path, name: str, size: float = 1.0):
    """(matrices (frames, bones, 4, 4) of the target's evaluated pose, contacts found, target,
    source, frames); ``size``: the target armature object's scale."""
    rest, metres, up, importer_scale = VARIANTS[name]
    path = tmp_path / f"{name}.bvh"
    bvh_variants.write_variant(FIXTURES / CLIP, path, rest=rest, scale=INCH / metres, up=up,
                               frames=slice(0, FRAMES))
    scenes.empty_scene()
    addon_utils.enable("io_anim_bvh", default_set=True)
    bpy.ops.import_anim.bvh(filepath=str(path), global_scale=importer_scale, **bvh_variants.import_axes(up))
    source = bpy.context.object
    bpy.ops.object.select_all(action="DESELECT")
    target = scenes.basic_human(pins=())
    target.scale = (size,) * 3
    assert bpy.ops.welman_ik.retarget_map_fill(source=source.name) == {"FINISHED"}
    first = 2 if rest == "axis" else 1  # the axis rest's T-pose frame comes first
    frames = list(range(first, first + FRAMES))
    assert bpy.ops.welman_ik.retarget(source=source.name, frame_start=frames[0], frame_end=frames[-1]) == {
        "FINISHED"}
    pose, world = pose_matrices(target, target.pose.bones.keys(), frames)
    plants = [g for g in target.welman_ik.last_solve.groups if g.group == "plants"]
    return world[:, None] @ pose, plants, target, source, frames


@pytest.mark.once
def test_the_same_motion_under_any_rest_units_and_up_axis(tmp_path):
    reference, plants, target, source, frames = _retargeted(tmp_path, "tpose")
    names = target.pose.bones.keys()
    assert plants, "the walk plants its feet"
    # Measured as a user would, on both evaluated poses (``scripts/retarget_gates.py``): no foot
    # point below the floor, knees and elbows bent as the source's and in its plane, no flips.
    scene = bpy.context.scene
    figures = retarget_gates.gates(source, target, frames, scene.render.fps / scene.render.fps_base)
    assert figures["sink_mm"] <= 2.0, figures
    assert figures["bend_diff_deg"] <= 10.0 and figures["bend_plane_deg"] <= 20.0, figures
    assert figures["flips"] == 0 and figures["stretch_pct"] <= 1.0, figures
    assert target.welman_ik.last_solve.message.startswith("gates held"), target.welman_ik.last_solve.message
    for name in VARIANTS:
        if name == "tpose":
            continue
        found, *_ = _retargeted(tmp_path, name)
        heads = np.linalg.norm(found[..., :3, 3] - reference[..., :3, 3], axis=-1)
        assert heads.max() <= 1e-3, (name, names[int(np.argmax(heads.max(axis=0)))], heads.max())
        a = reference[..., :3, :3] / np.linalg.norm(reference[..., :3, :3], axis=-2, keepdims=True)
        b = found[..., :3, :3] / np.linalg.norm(found[..., :3, :3], axis=-2, keepdims=True)
        directions = np.degrees(np.arccos(np.clip(np.einsum("fbi,fbi->fb", a[..., 1], b[..., 1]), -1.0, 1.0)))
        assert directions.max() <= 1.0, (name, names[int(np.argmax(directions.max(axis=0)))], directions.max())
        ends = [names.index(n) for n in ENDS]
        turn = np.einsum("fbji,fbjk->fbik", a[:, ends], b[:, ends])
        facing = np.degrees(np.arccos(np.clip((np.trace(turn, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)))
        assert facing.max() <= 5.0, (name, facing.max())


@pytest.mark.once
def test_a_character_of_another_size_moves_the_same_scaled(tmp_path):
    """A character a hundred times larger (a rig in centimetres): the same contacts found (the
    contact settings are for a grown person, scaled to the character), the same motion scaled,
    every gate held."""
    reference, plants, *_ = _retargeted(tmp_path, "tpose")
    found, plants_large, target, *_ = _retargeted(tmp_path, "tpose", size=100.0)
    assert plants and plants_large  # (without contacts found, the plants group is not reported)
    assert target.welman_ik.last_solve.message.startswith("gates held"), target.welman_ik.last_solve.message
    heads = np.linalg.norm(found[..., :3, 3] / 100.0 - reference[..., :3, 3], axis=-1)
    assert heads.max() <= 1e-3
