"""A cleaned clip stands as its source stood, and its report is the file's.

Each real clip (BVH in centimetres, inches and metres, and an FBX) is cleaned by
``welman_ik.cleanup.job.clean``; then, apart from the job's own checks, the written file is
compared here with its source as a user would see them: the BVH text (names, hierarchy,
offsets, channel layout, frame time and count), both files imported with the importer's
default settings (frames, size per axis on every frame), and every plant of the report
measured on the written file's evaluated pose against the report's figures."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import addon_utils
import bpy
import numpy as np
import pytest
import scenes
from compare_clips import imported
from conftest import FIXTURES, world_point

from welman_ik.cleanup import bvh
from welman_ik.cleanup.job import clean

AGREES_MM = 0.1  # the report's figures and the file's, measured here
HELD_MM = 1.0
ANCHORS = {"heel": 0.0, "toe": 1.0}


def metres_clip(path: Path) -> Path:
    """``mocapbank_clip.bvh`` (centimetres) written in metres: offsets and root positions / 100."""
    text = (FIXTURES / "mocapbank_clip.bvh").read_text()
    head, motion = text.split("MOTION", 1)
    head = re.sub(r"OFFSET\s+(\S+)\s+(\S+)\s+(\S+)",
                  lambda m: "OFFSET " + " ".join(f"{float(v) / 100:.6f}" for v in m.groups()), head)
    lines = motion.splitlines()
    timing = next(i for i, line in enumerate(lines) if line.strip().startswith("Frame Time"))
    rows = []
    for line in lines[timing + 1:]:
        values = line.split()
        if values:
            values[:3] = [f"{float(v) / 100:.6f}" for v in values[:3]]  # the root's position channels
            rows.append(" ".join(values))
    path.write_text(head + "MOTION" + "\n".join(lines[:timing + 1]) + "\n" + "\n".join(rows) + "\n")
    return path


def fbx_clip(path: Path) -> Path:
    """``pymo_walk.bvh`` written to FBX by Blender with a mesh it deforms (its animation then
    starts on frame 2 when read)."""
    scenes.empty_scene()
    for module in ("io_anim_bvh", "io_scene_fbx"):
        addon_utils.enable(module, default_set=True)
    assert bpy.ops.import_anim.bvh(filepath=str(FIXTURES / "pymo_walk.bvh"), global_scale=0.0254,
                                   update_scene_fps=True, update_scene_duration=True) == {"FINISHED"}
    armature = bpy.context.object
    bpy.ops.mesh.primitive_cube_add(size=0.2)  # the character's mesh, deformed by the skeleton
    body = bpy.context.object
    body.name = "Body"
    body.parent = armature
    body.modifiers.new("Armature", "ARMATURE").object = armature
    assert bpy.ops.export_scene.fbx(filepath=str(path), object_types={"ARMATURE", "MESH"}, add_leaf_bones=False,
                                    bake_anim=True) == {"FINISHED"}
    return path


def bone_lengths(obj, frames) -> dict[str, np.ndarray]:
    """bone -> (frames,): the world distance from its parent's head to its head, per frame,
    for every bone with a parent."""
    out = {pb.name: np.empty(len(frames)) for pb in obj.pose.bones if pb.parent is not None}
    for i, frame in enumerate(frames):
        bpy.context.scene.frame_set(frame)
        bpy.context.view_layer.update()
        heads = {pb.name: np.array(obj.matrix_world @ pb.head) for pb in obj.pose.bones}
        for pb in obj.pose.bones:
            if pb.parent is not None:
                out[pb.name][i] = np.linalg.norm(heads[pb.name] - heads[pb.parent.name])
    return out


def sizes(obj, frames) -> np.ndarray:
    """(frames, 3): the evaluated skeleton's size along world X, Y, Z (every bone's head)."""
    out = np.empty((len(frames), 3))
    for i, frame in enumerate(frames):
        bpy.context.scene.frame_set(frame)
        heads = np.array([world_point(obj, pb.name, 0.0) for pb in obj.pose.bones])
        out[i] = np.ptp(heads, axis=0)
    return out


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory):
    """name -> (source, written file, report entry) for each clip."""
    folder = tmp_path_factory.mktemp("clips")
    sources = [FIXTURES / "mocapbank_clip.bvh", FIXTURES / "pymo_walk.bvh",
               metres_clip(folder / "mocapbank_metres.bvh"), fbx_clip(folder / "walk.fbx")]
    out = {}
    for source in sources:
        local = folder / source.name
        if source != local:
            shutil.copy(source, local)
        written = folder / "out" / source.name
        written.parent.mkdir(exist_ok=True)
        entry = clean(local, written)
        assert entry["status"] == "ok", entry
        out[source.name] = (local, written, entry)
    return out


CLIPS = ("mocapbank_clip.bvh", "pymo_walk.bvh", "mocapbank_metres.bvh", "walk.fbx")
UNITS = {"mocapbank_clip.bvh": 0.01, "pymo_walk.bvh": 0.0254, "mocapbank_metres.bvh": 1.0}
# [mm] the largest change of the body's size along an axis a clip's clean-up may make: measured
# 9.02, 4.82, 9.02 and 2.02 (the feet held where they slid 23, 12, 23 and 4 mm, and on or above
# the clip's floor: the walk's FBX lifted by up to 2 mm, where it was 1.43 without the floor).
SIZE_CHANGE_MM = {"mocapbank_clip.bvh": 11.5, "pymo_walk.bvh": 6.0, "mocapbank_metres.bvh": 11.5, "walk.fbx": 2.5}


@pytest.mark.parametrize("name", [c for c in CLIPS if c.endswith(".bvh")])
def test_a_cleaned_bvh_keeps_its_source_format(cleaned, name):
    """Joint names, hierarchy, offsets, channel layout and rotation orders and frame time are
    the source's; as many frames; the scale the clean-up guessed is the file's unit."""
    source, written, entry = cleaned[name]
    was, now = bvh.parse(source.read_text()), bvh.parse(written.read_text())
    assert now.names == was.names and now.parents == was.parents
    assert np.abs(now.offsets - was.offsets).max() <= 1e-4
    assert now.channels == was.channels
    assert sum(len(c) == 6 for c in now.channels) == 1  # only the root has positions
    assert now.frame_time == was.frame_time and now.motion.shape == was.motion.shape
    assert entry["scale"] == UNITS[name]


@pytest.mark.parametrize("name", CLIPS)
def test_a_cleaned_clip_stands_as_its_source_stood(cleaned, name):
    """Both files through the importer's default settings: the same first frame and frame
    count and frame rate; on every frame every bone as long as in the source (its head's
    distance from its parent's, within 0.1 mm; measured 0.0005 at most), and the body's
    size along each axis changed by no more than the clean-up moved the feet
    (``SIZE_CHANGE_MM``: about 1.25 times what was measured; the report's
    ``extent_change_mm`` stays under the largest slide it removed)."""
    source, written, entry = cleaned[name]
    obj, frames = imported(source)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    objects = sorted((o.type, o.name) for o in bpy.context.scene.objects)
    before = sizes(obj, frames)
    lengths_before = bone_lengths(obj, frames)
    obj, written_frames = imported(written)
    assert sorted((o.type, o.name) for o in bpy.context.scene.objects) == objects  # the mesh too
    assert written_frames == frames, (written_frames, frames)
    assert bpy.context.scene.render.fps / bpy.context.scene.render.fps_base == pytest.approx(fps)
    after = sizes(obj, written_frames)
    lengths_after = bone_lengths(obj, written_frames)
    unit = UNITS.get(name, 1.0)  # the importer's default reads one file unit as a metre
    change_mm = float(np.abs(after - before).max()) * unit * 1000.0
    assert set(lengths_after) == set(lengths_before)
    length_mm = max(float(np.abs(lengths_after[n] - lengths_before[n]).max()) for n in lengths_before) * unit * 1000.0
    print(f"\n{name}: size per axis changed by at most {change_mm:.3f} mm (reported {entry['extent_change_mm']}), "
          f"bone lengths by {length_mm:.4f} mm")
    assert length_mm <= 0.1
    assert change_mm <= SIZE_CHANGE_MM[name]
    assert entry["extent_change_mm"] <= entry["slide_before_mm"]


@pytest.mark.parametrize("name", CLIPS)
def test_the_report_is_the_file(cleaned, name):
    """Every plant of the report measured here on the written file's evaluated pose: its
    drift and its distance from where it is held agree with the report's within 0.1 mm, and
    it holds within 1 mm where the source slid."""
    _, written, entry = cleaned[name]
    assert entry["measured_on"] == "the written file, imported again"
    options = {"global_scale": entry["scale"]} if written.suffix == ".bvh" else {}
    obj, _ = imported(written, **options)
    assert entry["contacts"] == len(entry["plants"]) > 0 and entry["slide_before_mm"] > 3.0
    for plant in entry["plants"]:
        scene = bpy.context.scene
        path = []
        for frame in range(plant["frame_start"], plant["frame_end"] + 1):
            scene.frame_set(frame)
            path.append(world_point(obj, plant["bone"], ANCHORS[plant["point"]]))
        path = np.array(path)
        drift = float(np.linalg.norm(path[:, None] - path[None], axis=-1).max()) * 1000.0
        off = float(np.linalg.norm(path - np.array(plant["held_at_m"]), axis=1).max()) * 1000.0
        assert abs(drift - plant["slide_after_mm"]) <= AGREES_MM, (plant, drift)
        assert abs(off - plant["pin_error_mm"]) <= AGREES_MM, (plant, off)
        assert drift <= HELD_MM and off <= HELD_MM, (plant, drift, off)
    assert entry["slide_after_mm"] == max(p["slide_after_mm"] for p in entry["plants"])
    assert entry["max_pin_error_mm"] == max(p["pin_error_mm"] for p in entry["plants"]) <= HELD_MM


@pytest.mark.parametrize("name", ["mocapbank_clip.bvh", "mixamo_clip.bvh", "pymo_walk.bvh"])
@pytest.mark.parametrize("unit", [1.0, 0.01, 0.0254, 0.001])
def test_the_unit_is_guessed_from_the_skeleton_the_importer_builds(tmp_path, name, unit):
    """Without ``--scale`` the clip's unit is guessed from its rest skeleton's size, read by the
    importer's own reader (the armature built once, at the unit found): the points are the
    heads and tails of the armature the importer builds from the file, every clip in any unit
    gets the unit an import measured would give, and a file the reader cannot read goes the
    importer's way, which says why."""
    import bvh_variants

    from welman_ik.cleanup.clips import BVH_UNITS, PERSON, ClipError, import_bvh, rest_points

    path = tmp_path / name
    bvh_variants.write_variant(FIXTURES / name, path, rest="tpose", scale=unit, frames=slice(0, 5))
    scenes.empty_scene()
    addon_utils.enable("io_anim_bvh", default_set=True)
    points = rest_points(path)
    assert bpy.ops.import_anim.bvh(filepath=str(path), global_scale=1.0) == {"FINISHED"}
    from welman_ik.blender.rig.body import rest_ends

    built = rest_ends(bpy.context.object).reshape(-1, 3)
    assert points.shape == built.shape
    # (the armature turns the file's Y-up onto Blender's Z-up: the same extents, axes swapped)
    np.testing.assert_allclose(np.sort(np.ptp(points, axis=0)), np.sort(np.ptp(built, axis=0)), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(points[1::2] - points[::2], axis=1),
                               np.linalg.norm(built[1::2] - built[::2], axis=1), rtol=1e-5, atol=1e-9)
    size = float(np.ptp(built, axis=0).max())
    expected = min(BVH_UNITS.values(), key=lambda s: abs(math.log(s * size / PERSON)))
    scenes.empty_scene()
    obj, scale = import_bvh(path, None)
    assert scale == expected
    assert [o for o in bpy.context.scene.objects if o.type == "ARMATURE"] == [obj]  # built once
    bad = tmp_path / "bad.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 x\n}\nMOTION\n")
    assert rest_points(bad) is None
    scenes.empty_scene()
    with pytest.raises(ClipError):
        import_bvh(bad, None)
