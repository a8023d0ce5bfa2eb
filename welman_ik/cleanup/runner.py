"""The clips of a clean-up run, handed out to local processes or to a Dask cluster, their
cleaned files and report written as they come back."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .launch import Onto, clean_clip, launcher, output_name
from .report import failed, summary, write_atomic, write_report

FORMATS = (".bvh", ".fbx")


class Clip:
    """One input: its path, the name its output keeps, and what stops it before any work."""

    def __init__(self, path: Path, problem: str = ""):
        self.path = path
        self.name = path.name
        self.output = path.name  # the written file's name
        self.problem = problem


def gather(inputs: Iterable[str | os.PathLike], onto: Onto | None = None) -> list[Clip]:
    """The clips of ``inputs``: each file as given, each folder's BVH and FBX files (sorted,
    hidden ones left out). A missing path or a second clip of the same name is a clip with
    its problem stated, so that the report lists it."""
    clips: list[Clip] = []
    for given in inputs:
        path = Path(given)
        if path.is_dir():
            clips += [Clip(p) for p in sorted(path.iterdir())
                      if p.is_file() and p.suffix.lower() in FORMATS and not p.name.startswith(".")]
        elif path.is_file():
            clips.append(Clip(path))
        else:
            clips.append(Clip(path, "no such file or folder"))
    seen: dict[str, Path] = {}
    for clip in clips:
        clip.output = output_name(clip.name, onto)
        if clip.problem:
            continue
        if clip.output in seen:
            clip.problem = f"another clip has the same name ({seen[clip.output]}); its output would be overwritten"
        else:
            seen[clip.output] = clip.path
    return clips


def progress_bar(total: int):
    """A tqdm bar on a terminal (None without tqdm: the run prints a line per clip instead)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="clip", desc="Cleaning", disable=None, file=sys.stderr)


def parse_onto(value: str, format: str = "blend") -> Onto:
    """``RIG.blend[:OBJECT]`` read into an ``Onto`` (the file's bytes); OSError or ValueError
    saying why it cannot be."""
    path, obj = value, ""
    head, sep, tail = value.rpartition(":")
    if sep and head.lower().endswith(".blend"):
        path, obj = head, tail
    if not path.lower().endswith(".blend"):
        raise ValueError(f"--onto takes a .blend file (and :OBJECT), got {value!r}")
    if format not in ("blend", "fbx"):
        raise ValueError(f"--format with --onto is blend or fbx, got {format!r}")
    data = Path(path).read_bytes()
    if not data.startswith((b"BLENDER", b"\x1f\x8b", b"\x28\xb5\x2f\xfd")):
        raise ValueError(f"{path} is not a .blend file")
    return Onto(Path(path).name, data, obj, format)


def run(inputs: Sequence[str | os.PathLike], out: str | os.PathLike, workers: int | None = None,
        scheduler: str | None = None, feet: Sequence[str] | None = None, scale: float | None = None,
        blender: str | None = None, timeout: float | None = None, progress: bool = True,
        onto: Onto | None = None, floor: bool = True) -> list[dict]:
    """Clean every clip of ``inputs`` into the folder ``out``; returns the report's entries
    (also written to ``out/report.json``), in the order of the inputs.

    ``workers``: local processes at once (default: one per CPU core); ``scheduler``: the
    address of a running Dask distributed scheduler, whose workers take one clip per task
    instead. ``feet``: the two foot bones' names, else found by their naming; ``scale``:
    metres per BVH unit, else guessed; ``blender``: a Blender executable to run the jobs
    (else this Python's bpy); ``timeout``: seconds a clip may take; ``onto``: retarget each
    clip onto that rig instead (``parse_onto``), written as ``<clip>.blend`` or ``.fbx``;
    ``floor`` off: the clean-up does not keep the feet on or above each clip's floor.
    """
    started = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clips = gather(inputs, onto)
    entries: list[dict | None] = [None] * len(clips)
    pending: list[tuple[int, Clip, bytes]] = []
    for i, clip in enumerate(clips):
        if not clip.problem and (out / clip.output).resolve() == clip.path.resolve():
            clip.problem = "its output would overwrite the clip itself: choose another --out folder"
        if clip.problem:
            entries[i] = failed(clip.name, clip.problem)
            continue
        try:
            pending.append((i, clip, clip.path.read_bytes()))
        except OSError as error:
            entries[i] = failed(clip.name, f"could not read the file: {error.strerror or error}")
    bar = progress_bar(len(clips)) if progress else None
    done = [0]

    def finished(i: int, result: dict, data: bytes | None) -> None:
        if data is not None:
            try:
                write_atomic(out / clips[i].output, data)
            except OSError as error:
                result = dict(result, status=f"could not write the cleaned file: {error.strerror or error}")
        entries[i] = result
        done[0] += 1
        line = f"[{done[0]}/{len(clips)}] {result['file']}: {result['status']}"
        if bar is not None:
            bar.update(1)
            if result["status"] != "ok":
                bar.write(line, file=sys.stderr)
        elif progress:
            print(line, file=sys.stderr, flush=True)

    for i, clip in enumerate(clips):
        if entries[i] is not None and progress:
            finished(i, entries[i], None)
    if pending:
        if scheduler:
            how = f"Dask scheduler {scheduler}"
            _on_dask(scheduler, pending, finished, feet, scale, blender, timeout, onto, floor)
        else:
            count = max(1, workers or os.cpu_count() or 1)
            how = f"{count} local worker{'s' if count > 1 else ''}"
            launcher(blender)  # no bpy and no Blender: say so once, before any clip
            _local(count, pending, finished, feet, scale, blender, timeout, onto, floor)
    else:
        how = "no clip to run" if clips else "no BVH or FBX file in the inputs"
    if bar is not None:
        bar.close()
    # (A clip with no entry here was never run: say so rather than let it pass as cleaned.)
    final = [e if e is not None else failed(c.name, "not run: the run stopped before it") for e, c in
             zip(entries, clips)]
    write_report(out, final)
    if progress:
        print(summary(final, time.perf_counter() - started, how, "retargeted" if onto else "cleaned"),
              file=sys.stderr, flush=True)
    return final


Finished = Callable[[int, dict, "bytes | None"], None]


def _local(count: int, pending, finished: Finished, feet, scale, blender, timeout, onto=None, floor=True) -> None:
    """Each clip in its own process, ``count`` at once (threads wait on the processes)."""
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="welman-ik-clip") as pool:
        futures = {pool.submit(clean_clip, clip.name, data, feet, scale, blender, timeout, onto, floor): (i, clip)
                   for i, clip, data in pending}
        for future in as_completed(futures):
            i, clip = futures[future]
            try:
                result, data = future.result()
            except Exception as error:  # noqa: BLE001 - a clip's failure is its entry's
                result, data = failed(clip.name, f"failed: {type(error).__name__}: {error}"), None
            finished(i, result, data)


def _on_dask(address: str, pending, finished: Finished, feet, scale, blender, timeout, onto=None,
             floor=True) -> None:
    """Each clip one task on the Dask cluster at ``address``; its bytes go with the task and
    the cleaned file's come back, so the workers need no shared folder."""
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as error:
        raise RuntimeError("--scheduler needs Dask distributed: pip install 'dask[distributed]'") from error
    with Client(address, timeout="30s") as client:
        futures = {client.submit(clean_clip, clip.name, data, feet, scale, blender, timeout, onto, floor, pure=False,
                                 key=f"welman-ik-clean-{i}-{clip.name}"): (i, clip)
                   for i, clip, data in pending}
        for future in dask_completed(futures):
            i, clip = futures[future]
            try:
                result, data = future.result()
            except Exception as error:  # noqa: BLE001 - a lost worker, an unpicklable result
                result, data = failed(clip.name, f"the Dask task failed: {type(error).__name__}: {error}"), None
            finished(i, result, data)
