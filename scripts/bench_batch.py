"""Benchmark: clips per minute of the batch clean-up, ``python -m welman_ik.cleanup``, with
one local worker and with several.

What it measures
    A folder of ``--copies`` copies of each clip in ``tests/fixtures/*.bvh`` (under
    different names), cleaned by the command-line tool exactly as a user runs it (a new
    Python process; each clip in its own process with ``bpy``), once with ``--workers 1``
    and once per count in ``--workers`` (default: 1 and the number of CPU cores). The
    wall time of the whole command, from start to exit, is the figure: clips per minute,
    and the speed-up over one worker. Every clip must come back "ok"; the largest foot
    slide left is printed as a check.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench_batch.py
    .venv/bin/python scripts/bench_batch.py --copies 4 --workers 1 2 4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def run(folder: Path, out: Path, workers: int) -> tuple[float, list[dict]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "welman_ik.cleanup", str(folder), "--out", str(out), "--workers",
                           str(workers), "--quiet"], env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the clean-up failed (exit status {done.returncode}):\n{done.stderr}")
    return seconds, json.loads((out / "report.json").read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=2, help="copies of each fixture clip in the folder")
    parser.add_argument("--workers", type=int, nargs="+", default=sorted({1, os.cpu_count() or 1}),
                        help="worker counts to time")
    args = parser.parse_args(argv)
    clips = sorted(FIXTURES.glob("*.bvh"))
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "clips"
        folder.mkdir()
        for k in range(args.copies):
            for clip in clips:
                shutil.copy(clip, folder / f"{clip.stem}_{k}{clip.suffix}")
        count = len(clips) * args.copies
        frames = None
        print(f"{count} clips ({args.copies} copies of {', '.join(c.name for c in clips)}) on {os.cpu_count()} cores")
        print(f"{'workers':>8}{'seconds':>10}{'clips/min':>11}{'speed-up':>10}{'frames/s':>10}  largest slide left")
        base = None
        for workers in args.workers:
            seconds, entries = run(folder, Path(temporary) / f"out{workers}", workers)
            frames = sum(e["frames"] for e in entries)
            base = base or seconds
            slide = max(e["slide_after_mm"] for e in entries)
            print(f"{workers:8d}{seconds:10.1f}{60.0 * count / seconds:11.1f}{base / seconds:10.2f}"
                  f"{frames / seconds:10.0f}  {slide:.3f} mm")
    print("seconds: the whole command, start to exit; frames/s: baked frames of all clips over that time.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
