"""``python -m welman_ik.cleanup`` on a folder of real clips plus broken ones: with local
workers, and through a Dask scheduler and two workers started here as real processes.
The cleaned files are imported again here and their planted feet measured on the pose
Blender evaluates, apart from what the report says."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import bpy
import numpy as np
import pytest
import scenes
from conftest import FIXTURES, ROOT

from welman_ik.cleanup import gather
from welman_ik.cleanup.clips import ClipError, check_bvh, check_fbx, reason
from welman_ik.cleanup.job import clean
from welman_ik.cleanup.measure import extent, sample

CLIPS = ("mixamo_clip.bvh", "mocapbank_clip.bvh", "pymo_walk.bvh")
FIELDS = {"file", "status", "frames", "contacts", "slide_before_mm", "slide_after_mm", "max_pin_error_mm", "seconds"}
HELD_MM = 1.0  # a cleaned plant drifts less than this, measured on the re-imported clip
TRUNCATED = "truncated.bvh"  # the first 20 kB of mixamo_clip.bvh
NO_ARMATURE = "cube.fbx"
FBX_CLIP = "mocapbank_fbx.fbx"  # mocapbank_clip.bvh exported to FBX by Blender


def environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def cleanup(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "welman_ik.cleanup", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=environment(), cwd=ROOT, check=False)


def export_fbx(path: Path, clip: str | None) -> None:
    """An FBX file made by Blender: the clip's armature and action, or a lone cube."""
    import addon_utils

    scenes.empty_scene()
    addon_utils.enable("io_scene_fbx", default_set=True)
    if clip is None:
        bpy.ops.mesh.primitive_cube_add()
        assert bpy.ops.export_scene.fbx(filepath=str(path)) == {"FINISHED"}
        return
    addon_utils.enable("io_anim_bvh", default_set=True)
    bpy.ops.import_anim.bvh(filepath=str(FIXTURES / clip), global_scale=0.01)
    assert bpy.ops.export_scene.fbx(filepath=str(path), object_types={"ARMATURE"}, add_leaf_bones=False,
                                    bake_anim=True) == {"FINISHED"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The fixture clips, a truncated BVH, an FBX clip and an FBX without an armature."""
    path = tmp_path_factory.mktemp("clips")
    for clip in CLIPS:
        shutil.copy(FIXTURES / clip, path / clip)
    (path / TRUNCATED).write_bytes((FIXTURES / "mixamo_clip.bvh").read_bytes()[:20000])
    export_fbx(path / FBX_CLIP, "mocapbank_clip.bvh")
    export_fbx(path / NO_ARMATURE, None)
    return path


def reimported(path: Path, scale: float):
    """A cleaned BVH imported again (its frames from 1), the armature in pose mode."""
    import addon_utils

    scenes.empty_scene()
    addon_utils.enable("io_anim_bvh", default_set=True)
    assert bpy.ops.import_anim.bvh(filepath=str(path), global_scale=scale, update_scene_duration=True) == {"FINISHED"}
    return bpy.context.object


def check_report(out: Path, folder: Path, entries: list[dict]) -> dict[str, dict]:
    """The report lists every clip with the contract's fields; the failed ones say why and
    leave no file; nothing half-written is left in ``out``; the sources are untouched."""
    by_name = {e["file"]: e for e in entries}
    assert [e["file"] for e in entries] == sorted(p.name for p in folder.iterdir())
    for e in entries:
        assert FIELDS <= e.keys(), e
    assert by_name[TRUNCATED]["status"].startswith("truncated BVH: it announces 69 frames"), by_name[TRUNCATED]
    assert "has no armature" in by_name[NO_ARMATURE]["status"], by_name[NO_ARMATURE]
    ok = {name for name, e in by_name.items() if e["status"] == "ok"}
    assert ok == {*CLIPS, FBX_CLIP}, {n: e["status"] for n, e in by_name.items()}
    assert {p.name for p in out.iterdir()} == ok | {"report.json"}  # no partial or failed output
    for clip in CLIPS:
        assert (folder / clip).read_bytes() == (FIXTURES / clip).read_bytes()
    return by_name


def check_cleaned(out: Path, entry: dict) -> None:
    """The report's figures, and the cleaned file itself: every plant held within
    ``HELD_MM`` on the pose Blender evaluates from it, where the source slid by more."""
    assert entry["contacts"] > 0 and entry["slide_before_mm"] > 3.0, entry
    assert entry["slide_after_mm"] < HELD_MM and entry["max_pin_error_mm"] < 0.1, entry
    obj = reimported(out / entry["file"], entry["scale"])
    frames = range(bpy.context.scene.frame_start, bpy.context.scene.frame_start + entry["frames"])
    assert round(obj.animation_data.action.frame_range[1]) == frames[-1]
    worst = 0.0
    for plant in entry["plants"]:
        anchor = {"heel": 0.0, "toe": 1.0}[plant["point"]]
        span = range(plant["frame_start"], plant["frame_end"] + 1)
        worst = max(worst, extent(sample(obj, [(plant["bone"], anchor)], span)[:, 0]))
    assert worst * 1000.0 < HELD_MM, (entry["file"], worst)


def test_a_folder_on_local_workers(folder, tmp_path):
    out = tmp_path / "cleaned"
    done = cleanup(folder, "--out", out, "--workers", "2")
    assert done.returncode == 2, done.stderr  # two clips fail
    assert "4 of 6 clips cleaned, 2 failed" in done.stderr, done.stderr
    entries = check_report(out, folder, json.loads((out / "report.json").read_text()))
    for clip in CLIPS:
        check_cleaned(out, entries[clip])
    fbx = entries[FBX_CLIP]
    assert fbx["frames"] == entries["mocapbank_clip.bvh"]["frames"] and fbx["slide_after_mm"] < HELD_MM, fbx


def test_all_clean_exits_zero_and_scale_and_feet_can_be_given(tmp_path):
    out = tmp_path / "cleaned"
    done = cleanup(FIXTURES / "pymo_walk.bvh", "--out", out, "--workers", "1", "--scale", "0.0254",
                   "--feet", "LeftFoot,RightFoot")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads((out / "report.json").read_text())
    assert entry["status"] == "ok" and entry["feet"] == ["LeftFoot", "RightFoot"] and entry["scale"] == 0.0254
    check_cleaned(out, entry)


def test_a_local_run_does_not_load_dask(tmp_path):
    """Dask's ``distributed`` takes a quarter of a second to import: a run on local workers
    (the command line's default) names its clips' worker without it."""
    script = ("import sys; from welman_ik.cleanup import runner; "
              f"entries = runner.run([{str(FIXTURES / 'pymo_walk.bvh')!r}], {str(tmp_path / 'out')!r}, workers=1, "
              "progress=False); print(entries[0]['status'], entries[0]['worker'], 'distributed' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "local", "False"], done.stdout + done.stderr


def test_bad_arguments_and_missing_bones(tmp_path):
    assert cleanup(FIXTURES / "pymo_walk.bvh", "--out", tmp_path, "--feet", "LeftFoot").returncode == 2
    assert "two bone names" in cleanup(FIXTURES / "pymo_walk.bvh", "--out", tmp_path, "--feet", "A").stderr
    done = cleanup(FIXTURES / "pymo_walk.bvh", tmp_path / "nowhere.bvh", "--out", tmp_path / "o", "--feet",
                   "LeftFoot,NoSuchFoot")
    assert done.returncode == 2
    entries = {e["file"]: e for e in json.loads((tmp_path / "o" / "report.json").read_text())}
    assert entries["pymo_walk.bvh"]["status"].startswith("no bone named 'NoSuchFoot' (--feet)"), entries
    assert entries["nowhere.bvh"]["status"] == "no such file or folder"
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["report.json"]


def test_an_output_never_overwrites_its_source(tmp_path):
    clip = tmp_path / "pymo_walk.bvh"
    shutil.copy(FIXTURES / "pymo_walk.bvh", clip)
    done = cleanup(tmp_path, "--out", tmp_path, "--workers", "1")
    assert done.returncode == 2
    (entry,) = json.loads((tmp_path / "report.json").read_text())
    assert "would overwrite the clip itself" in entry["status"]
    assert clip.read_bytes() == (FIXTURES / "pymo_walk.bvh").read_bytes()


def test_inputs_are_gathered_with_their_problems(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for sub in ("a", "b"):
        shutil.copy(FIXTURES / "pymo_walk.bvh", tmp_path / sub / "walk.bvh")
    (tmp_path / "a" / "notes.txt").write_text("not a clip")
    (tmp_path / "a" / ".hidden.bvh").write_text("")
    clips = gather([tmp_path / "a", tmp_path / "b", tmp_path / "missing"])
    assert [(c.name, c.problem.split(" (")[0]) for c in clips] == [
        ("walk.bvh", ""), ("walk.bvh", "another clip has the same name"), ("missing", "no such file or folder")]


@pytest.mark.parametrize(("text", "message"), [
    ("not a bvh", "not a BVH file: it does not start with HIERARCHY"),
    ("HIERARCHY\nROOT Hips\n{\n", "truncated BVH: no MOTION section"),
    ("HIERARCHY\nROOT Hips\n{\nCHANNELS 3 Xrotation Yrotation Zrotation\n}\nMOTION\nFrames: 3\n",
     "truncated BVH: the MOTION section has no"),
    (("HIERARCHY\nROOT Hips\n{\nCHANNELS 3 Xrotation Yrotation Zrotation\n}\nMOTION\nFrames: 3\n"
     "Frame Time: 0.033\n1 2 3\n4 5 6\n7 8\n"), "truncated BVH: it announces 3 frames of 3 values, and only 2"),
])
def test_broken_bvh_files_are_named_for_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "clip.bvh"
    path.write_text(text)
    with pytest.raises(ClipError, match=message):
        check_bvh(path)


def test_broken_fbx_files_are_named_for_what_is_wrong(folder, tmp_path):
    ascii_fbx, garbage = tmp_path / "ascii.fbx", tmp_path / "garbage.fbx"
    ascii_fbx.write_text("; FBX 7.4.0 project file\nFBXHeaderExtension:  {\n")
    garbage.write_text("garbage")
    with pytest.raises(ClipError, match="an ASCII FBX file"):
        check_fbx(ascii_fbx)
    with pytest.raises(ClipError, match="not an FBX file"):
        check_fbx(garbage)
    cut = tmp_path / "cut.fbx"
    cut.write_bytes((folder / FBX_CLIP).read_bytes()[:5000])
    result = clean(cut, tmp_path / "out.fbx")
    assert result["status"].startswith("could not read cut.fbx as FBX: "), result
    assert "failed to read complete nested block" in result["status"]
    assert not (tmp_path / "out.fbx").exists()


def test_a_skeleton_without_recognisable_feet_is_refused_with_the_way_out(tmp_path):
    """The mocapbank clip with every joint renamed J0, J1, ...: no naming to find the feet by."""
    text = (FIXTURES / "mocapbank_clip.bvh").read_text()
    count = iter(range(1000))
    text = re.sub(r"^(\s*)(ROOT|JOINT) (\S+)", lambda m: f"{m.group(1)}{m.group(2)} J{next(count)}", text,
                  flags=re.MULTILINE)
    source = tmp_path / "anonymous.bvh"
    source.write_text(text)
    result = clean(source, tmp_path / "out" / "anonymous.bvh")
    assert result["status"].startswith("no pair of feet (its bone names follow no naming"), result
    assert "--feet LEFT,RIGHT" in result["status"] and result["frames"] == 0
    renamed = clean(source, tmp_path / "anonymous_out.bvh", feet=["J15", "J18"])  # the ankles, by name
    assert renamed["status"] == "ok" and renamed["contacts"] > 0, renamed


def test_whole_bvh_files_pass_the_check():
    for clip in CLIPS:
        check_bvh(FIXTURES / clip)


def test_an_operator_error_is_its_exception_line():
    text = ('Error: Python: Traceback (most recent call last):\n  File "x.py", line 1, in load\n'
            "    rx = radians(float(line[3]))\nIndexError: list index out of range\nLocation: ops.py:109\n")
    assert reason(text) == "IndexError: list index out of range"
    assert reason("Error: Cannot open file\nLocation: ops.py:109") == "Cannot open file"


# -- Dask ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_workers(address: str, count: int, seconds: float = 60.0) -> None:
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(count, timeout=seconds)


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2):
    """A Dask scheduler and ``workers`` single-threaded workers ('worker0', ...) started as real
    processes (their logs in ``folder/logs``), ended on leaving; yields the scheduler's address."""
    address = f"tcp://127.0.0.1:{free_port()}"
    port = address.rsplit(":", 1)[1]
    logs = folder / "logs"
    logs.mkdir()
    processes = []

    def start(name, *args):
        log = (logs / f"{name}.log").open("w")
        processes.append(subprocess.Popen([sys.executable, "-m", *args], stdout=log, stderr=subprocess.STDOUT,
                                          env=environment(), cwd=folder))

    try:
        start("scheduler", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", port,
              "--no-dashboard")
        for i in range(workers):
            start(f"worker{i}", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-dashboard",
                  "--name", f"worker{i}")
        wait_for_workers(address, workers)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.mark.once
def test_a_folder_through_a_dask_scheduler_and_two_workers(folder, tmp_path):
    import distributed  # noqa: F401 - installed by the requirements: missing is a failure, not a skip
    with dask_cluster(tmp_path) as address:
        out = tmp_path / "cleaned"
        started = time.perf_counter()
        done = cleanup(folder, "--out", out, "--scheduler", address)
        assert done.returncode == 2, done.stderr
        assert f"Dask scheduler {address}" in done.stderr, done.stderr
        entries = check_report(out, folder, json.loads((out / "report.json").read_text()))
        assert time.perf_counter() - started < 300
        check_cleaned(out, entries["pymo_walk.bvh"])
        # Both workers took clips (each entry names the Dask worker that ran it).
        assert {e["worker"] for e in entries.values() if e["status"] == "ok"} == {"worker0", "worker1"}, entries


def test_a_clip_is_evaluated_once_a_frame_for_all_its_figures_and_its_file(tmp_path):
    """Evaluating every frame is what a clip's job costs most: its figures before and after the
    bake and the BVH writer share one evaluation of each, as Detect Contacts, the bake's measure
    and the file read back take one of their own (six passes of the clip's frames before)."""
    changes = []

    @bpy.app.handlers.persistent
    def count(scene, *_):
        changes.append(scene.frame_current)

    bpy.app.handlers.frame_change_post.append(count)
    try:
        result = clean(FIXTURES / "pymo_walk.bvh", tmp_path / "walk.bvh")
    finally:
        bpy.app.handlers.frame_change_post.remove(count)
    assert result["status"] == "ok", result
    assert result["contacts"] > 0
    frames = result["frames"]
    # Detect Contacts, the figures before, the bake's measure, the figures after (the writer's
    # too), the file read back: five passes, and a few frame changes around them.
    assert 5 * frames <= len(changes) < 5 * frames + 50, (len(changes), frames)


def test_equal_points_have_no_extent():
    assert extent(np.zeros((4, 3))) == 0.0
    assert extent(np.array([[0.0, 0.0, 0.0], [0.0, 0.003, 0.004]])) == pytest.approx(0.005)


# -- a Blender executable ----------------------------------------------------------------


def test_from_a_blender_executable(folder, tmp_path):
    """``blender --background --python scripts/cleanup.py -- ...``: no bpy module involved;
    each clip runs in a background process of the same Blender (Debian's 3.4 under ``make
    e2e``, which sets WELMAN_IK_REQUIRE_BLENDER so that a missing one fails instead)."""
    blender = shutil.which("blender", path="/usr/bin:/bin:" + os.environ.get("PATH", ""))
    if blender is None:
        if os.environ.get("WELMAN_IK_REQUIRE_BLENDER"):
            pytest.fail("no Blender executable on PATH")
        pytest.skip("no Blender executable on PATH (make e2e installs Debian's)")
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    from run_e2e import blender_env  # Debian's Blender must not see this venv's Python

    out = tmp_path / "cleaned"
    done = subprocess.run([blender, "--background", "--factory-startup", "--python", str(ROOT / "scripts" / "cleanup.py"),
                           "--", str(folder / FBX_CLIP), str(folder / NO_ARMATURE), "--out", str(out), "--workers",
                           "2"], capture_output=True, text=True, timeout=600, env=blender_env(os.environ, tmp_path),
                          cwd=tmp_path, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    entries = {e["file"]: e for e in json.loads((out / "report.json").read_text())}
    assert "has no armature" in entries[NO_ARMATURE]["status"]
    cleaned = entries[FBX_CLIP]
    assert cleaned["status"] == "ok", cleaned
    assert cleaned["contacts"] > 0 and cleaned["slide_before_mm"] > 3.0 and cleaned["slide_after_mm"] < HELD_MM
    assert sorted(p.name for p in out.iterdir()) == [FBX_CLIP, "report.json"]
