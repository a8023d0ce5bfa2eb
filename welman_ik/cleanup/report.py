"""The clean-up's report entries and files, each written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPORT = "report.json"
UMASK = os.umask(0o022)  # read once, at import (setting it is process-wide, so not per file)
os.umask(UMASK)


def entry(name: str) -> dict:
    """A clip's report entry before any work: every field ``report.json`` promises."""
    return {"file": name, "status": "ok", "frames": 0, "contacts": 0, "slide_before_mm": None,
            "slide_after_mm": None, "max_pin_error_mm": None, "seconds": 0.0}


def failed(name: str, status: str) -> dict:
    out = entry(name)
    out["status"] = status
    return out


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, renamed into
    place: a reader sees the old file or the whole new one, never half of it."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o666 & ~UMASK)  # as a plain open() would have made it
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_report(folder: Path, entries: Sequence[dict]) -> Path:
    """``folder/report.json``: the list of entries, in the order the clips were given."""
    path = folder / REPORT
    write_atomic(path, (json.dumps(list(entries), indent=2, allow_nan=False) + "\n").encode())
    return path


def summary(entries: Sequence[dict], seconds: float, workers: str, done: str = "cleaned") -> str:
    """Lines for the terminal: one per failed clip, then the totals (``done``: what was done to
    each clip, 'cleaned' or 'retargeted')."""
    bad = [e for e in entries if e["status"] != "ok"]
    lines = [f"  {e['file']}: {e['status']}" for e in bad]
    ok = [e for e in entries if e["status"] == "ok"]
    worst = max((e["slide_after_mm"] for e in ok if e.get("slide_after_mm") is not None), default=None)
    rate = f"{60.0 * len(entries) / seconds:.1f} clips per minute, " if ok and seconds > 0 else ""
    lines.append(f"{len(ok)} of {len(entries)} clips {done}, {len(bad)} failed, in {seconds:.1f} s ({rate}{workers})"
                 + (f"; largest foot slide left {worst:.2f} mm" if worst is not None else ""))
    return "\n".join(lines)
