"""``python -m welman_ik.cleanup INPUT... --out DIR --onto RIG.blend[:OBJECT]``: real clips
retargeted onto a copy of the basic human metarig, locally and through a Dask scheduler with
two workers started here as real processes. The written files are opened (or imported) again
here and measured on the evaluated pose, apart from what the report says."""

from __future__ import annotations

import json
import time
from pathlib import Path

import bpy
import pytest
import scenes
from conftest import FIXTURES
from test_cleanup_cli import cleanup, dask_cluster

from welman_ik.blender.bake import retarget as goals
from welman_ik.blender.bake.retarget_measure import measure
from welman_ik.blender.rig.retarget_map import retarget_scale

GROUPS_MM = ("plants_mm", "hips_mm", "hands_mm", "feet_mm", "head_mm")


def trim(source: Path, path: Path, frames: int) -> Path:
    """The first ``frames`` frames of BVH ``source`` written to ``path``."""
    lines = source.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Frames:"))
    body = [line for line in lines[at + 2:] if line.strip()][:frames]
    path.write_text("\n".join([*lines[:at], f"Frames: {len(body)}", lines[at + 1], *body]) + "\n")
    return path


@pytest.fixture
def clips(tmp_path) -> Path:
    folder = tmp_path / "clips"
    folder.mkdir()
    trim(FIXTURES / "mocapbank_clip.bvh", folder / "walk.bvh", 40)
    trim(FIXTURES / "mixamo_clip.bvh", folder / "mixamo.bvh", 40)
    return folder


@pytest.fixture
def rig(tmp_path) -> Path:
    """A .blend holding the basic human metarig and a mesh (one armature)."""
    scenes.empty_scene()
    scenes.basic_human(pins=())
    bpy.ops.object.mode_set(mode="OBJECT")
    path = tmp_path / "character.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    return path


def exit_status(entries) -> int:
    """The CLI's exit status for these report entries: 0 when every clip is ok, else 2."""
    return 0 if all(e["status"] == "ok" for e in entries) else 2


def check_written(path: Path, entry: dict) -> None:
    """The written .blend opened here: its rig's new action, the clip's untouched, and the
    plants and hips measured again on the evaluated pose. The status says ok exactly when every
    gate held, and names each one missed otherwise (the file is written either way)."""
    gates = entry["gates"]
    assert set(gates) == {"plants", "floor", "planted", "bends", "facing", "stretch"}
    missed = [name for name, gate in gates.items() if not gate["held"]]
    assert all(gate["held"] == (gate["value"] <= gate["limit"]) for gate in gates.values())
    if missed:
        assert entry["status"].startswith("failed: gates missed: ") and all(n in entry["status"] for n in missed)
    else:
        assert entry["status"] == "ok", entry
    assert path.exists()
    assert all(entry[k] is not None for k in GROUPS_MM) and entry["orientations_deg"] is not None
    assert entry["plants_mm"] <= 1.0 and entry["hips_mm"] <= 20.0 and entry["contacts"] > 0
    bpy.ops.wm.open_mainfile(filepath=str(path))
    target = bpy.data.objects["metarig"]
    clip = next(o for o in bpy.data.objects if o.type == "ARMATURE" and o != target)
    assert target.animation_data.action.name == "metarig.welman_retarget"
    assert not clip.animation_data.action.name.endswith(".welman_retarget")
    first, last = (round(f) for f in clip.animation_data.action.frame_range)
    found = goals.make(bpy.context, target, clip, list(range(first, last + 1)), retarget_scale(target, clip), True)
    measured = {m.group: m.error for m in measure(found)}
    assert measured["plants"] <= 1e-3 and measured["hips"] <= 0.02
    assert abs(measured["plants"] * 1000 - entry["plants_mm"]) <= 1e-3


@pytest.mark.once
def test_onto_a_rig_locally(clips, rig, tmp_path):
    out = tmp_path / "out"
    done = cleanup(clips, "--out", out, "--onto", rig, "--workers", "2")
    entries = {e["file"]: e for e in json.loads((out / "report.json").read_text())}
    assert done.returncode == exit_status(entries.values()), done.stderr
    assert set(entries) == {"walk.bvh", "mixamo.bvh"}
    assert sorted(p.name for p in out.iterdir()) == ["mixamo.blend", "report.json", "walk.blend"]
    for name, entry in entries.items():
        assert entry["onto"] == "metarig" and entry["measured_on"] == "the written file, opened again"
        check_written(out / name.replace(".bvh", ".blend"), entry)


@pytest.mark.once
def test_onto_a_rig_as_fbx(clips, rig, tmp_path):
    out = tmp_path / "fbx"
    done = cleanup(clips / "walk.bvh", "--out", out, "--onto", f"{rig}:metarig", "--format", "fbx")
    entry = json.loads((out / "report.json").read_text())[0]
    assert done.returncode == exit_status([entry]), done.stderr
    assert entry["status"].startswith(("ok", "failed: gates missed")) and entry["measured_on"] == (
        "the written file, imported again")
    assert entry["plants_mm"] <= 1.0 and entry["hips_mm"] <= 20.0
    assert (out / "walk.fbx").is_file()


@pytest.mark.once
def test_what_cannot_be_retargeted_onto_is_said(clips, rig, tmp_path):
    # Not a .blend: refused before any clip.
    done = cleanup(clips, "--out", tmp_path / "a", "--onto", clips / "walk.bvh")
    assert done.returncode == 2 and "--onto" in done.stderr and "blend" in done.stderr
    # A rig file with two armatures and no name: each clip fails, saying how to name one.
    bpy.ops.wm.open_mainfile(filepath=str(rig))
    bpy.ops.object.armature_add()
    two = tmp_path / "two.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(two), copy=True)
    done = cleanup(clips / "walk.bvh", "--out", tmp_path / "b", "--onto", two)
    assert done.returncode == 2
    entry = json.loads((tmp_path / "b" / "report.json").read_text())[0]
    assert "--onto RIG.blend:OBJECT" in entry["status"] and not (tmp_path / "b" / "walk.blend").exists()
    # A named object that is not there.
    done = cleanup(clips / "walk.bvh", "--out", tmp_path / "c", "--onto", f"{rig}:Nobody")
    entry = json.loads((tmp_path / "c" / "report.json").read_text())[0]
    assert done.returncode == 2 and "no armature named 'Nobody'" in entry["status"]


@pytest.mark.once
def test_onto_a_rig_through_a_dask_scheduler_and_two_workers(clips, rig, tmp_path):
    import distributed  # noqa: F401 - installed by the requirements: missing is a failure, not a skip

    with dask_cluster(tmp_path) as address:
        out = tmp_path / "out"
        started = time.perf_counter()
        done = cleanup(clips, "--out", out, "--onto", rig, "--scheduler", address)
        assert time.perf_counter() - started < 300
        entries = {e["file"]: e for e in json.loads((out / "report.json").read_text())}
        assert done.returncode == exit_status(entries.values()), done.stderr
        assert {e["worker"] for e in entries.values()} == {"worker0", "worker1"}, entries
        for name, entry in entries.items():
            check_written(out / name.replace(".bvh", ".blend"), entry)


@pytest.mark.once
def test_a_clip_that_misses_a_gate_fails_and_says_which(clips, tmp_path):
    """A rig whose spine a constraint stretches a fifth: the clip is written, its report names
    the stretch gate and its figure, and the run exits 2."""
    scenes.empty_scene()
    target = scenes.basic_human(pins=())
    stretch = target.pose.bones["spine.003"].constraints.new("LIMIT_SCALE")
    stretch.use_min_y, stretch.min_y, stretch.owner_space = True, 1.2, "LOCAL"
    bpy.ops.object.mode_set(mode="OBJECT")
    rig = tmp_path / "stretched.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(rig), copy=True)
    out = tmp_path / "out"
    done = cleanup(clips / "walk.bvh", "--out", out, "--onto", rig)
    entry = json.loads((out / "report.json").read_text())[0]
    assert done.returncode == 2, entry
    assert entry["status"].startswith("failed: gates missed: ") and "stretch 20.0 (limit 1.0" in entry["status"]
    assert not entry["gates"]["stretch"]["held"] and entry["gates"]["stretch"]["bone"] == "spine.003"
    assert (out / "walk.blend").exists()
