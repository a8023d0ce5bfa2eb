"""Running one clip's job in its own process, with ``bpy`` or a Blender executable.

``clean_clip`` is what a local worker thread or a Dask worker calls: it takes the clip's
bytes (a farm machine need not see the submitting machine's files), runs ``worker.py`` on
them in a new process, and returns the report entry and the cleaned file's bytes. Which
program runs the job (``launcher``): a Blender executable when one is named (``--blender``
or the ``WELMAN_IK_BLENDER`` environment variable) or when the caller runs inside one;
otherwise this Python, when it can import ``bpy``; otherwise ``blender`` on the PATH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .report import entry

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds welman_ik/
ENVIRONMENT = "WELMAN_IK_BLENDER"
TAIL = 5  # lines of a dead job's error output kept in its entry
# Inside a Blender executable the job runs as an expression: the package put on the path,
# the arguments after ``--``.
BLENDER_EXPRESSION = ("import sys; sys.path.insert(0, {root!r}); from welman_ik.cleanup import worker; "
                      "worker.run(sys.argv[sys.argv.index('--') + 1:])")


class NoBlender(RuntimeError):
    """Neither ``bpy`` nor a Blender executable is available to run the jobs."""


def running_blender() -> str:
    """The Blender executable this process runs in, or '' (the bpy module, whose
    ``binary_path`` is empty, or a Python without bpy)."""
    bpy = sys.modules.get("bpy")
    return str(getattr(getattr(bpy, "app", None), "binary_path", "") or "")


def launcher(blender: str | None = None) -> list[str]:
    """The command that runs ``worker.py``'s main, the job's arguments still to be appended."""
    blender = blender or os.environ.get(ENVIRONMENT) or running_blender()
    if not blender and importlib.util.find_spec("bpy") is not None:
        return [sys.executable, "-m", "welman_ik.cleanup.worker"]
    blender = blender or shutil.which("blender")
    if not blender:
        raise NoBlender("no bpy module in this Python and no Blender executable: install bpy "
                        f"(pip install bpy) or name Blender with --blender or {ENVIRONMENT}")
    return [blender, "--background", "--factory-startup", "--python-expr",
            BLENDER_EXPRESSION.format(root=str(PACKAGE_ROOT)), "--"]


def worker_name() -> str:
    """The Dask worker this runs on ('local' outside one). A Dask worker has imported
    ``distributed`` already; a local run does not import it (a quarter of a second) to learn so."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return "local"
    try:
        return str(distributed.get_worker().name)
    except (AttributeError, ValueError):
        return "local"


def output_name(name: str, onto: Onto | None) -> str:
    """The written clip's name: the clip's own, or with ``--onto`` its stem and the format's suffix."""
    return name if onto is None else f"{Path(name).stem}.{onto.format}"


class Onto:
    """A rig to retarget every clip onto (``--onto RIG.blend[:OBJECT]``): the .blend file's name and
    bytes (sent with each task, as the clip's are), the armature's name ('' for the only one) and
    the written format ('blend' or 'fbx')."""

    def __init__(self, name: str, data: bytes, obj: str = "", format: str = "blend"):
        self.name, self.data, self.obj, self.format = name, data, obj, format


def clean_clip(name: str, data: bytes, feet: list[str] | None = None, scale: float | None = None,
               blender: str | None = None, timeout: float | None = None,
               onto: Onto | None = None, floor: bool = True) -> tuple[dict, bytes | None]:
    """Clean the clip ``name`` whose content is ``data`` in a new process (``onto``: retarget it
    onto that rig instead; ``floor`` off: the feet are not kept above the clip's floor);
    returns its report entry and the written file's bytes (None when it failed). Never raises
    for the clip's own faults: they are the entry's ``status``."""
    with tempfile.TemporaryDirectory(prefix="welman_ik_cleanup_") as folder:
        folder = Path(folder)
        (folder / "in").mkdir()
        (folder / "out").mkdir()
        source, report = folder / "in" / name, folder / "entry.json"
        output = folder / "out" / output_name(name, onto)
        source.write_bytes(data)
        command = [*launcher(blender), str(source), str(output), "--entry", str(report)]
        if onto is not None:
            (folder / "rig").mkdir()
            rig = folder / "rig" / onto.name
            rig.write_bytes(onto.data)
            command += ["--onto", str(rig), "--object", onto.obj]
        if feet:
            command += ["--feet", ",".join(feet)]
        if scale:
            command += ["--scale", repr(float(scale))]
        if not floor:
            command.append("--no-floor")
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT),
                                                                 environment.get("PYTHONPATH")]))
        try:
            done = subprocess.run(command, check=False, capture_output=True, text=True, errors="replace",
                                  timeout=timeout, env=environment, cwd=folder)
        except subprocess.TimeoutExpired:
            failed = entry(name)
            failed["status"] = f"stopped after {timeout:g} s (--timeout)"
            failed["worker"] = worker_name()
            return failed, None
        if not report.is_file():
            failed = entry(name)
            tail = [line for line in (done.stderr or done.stdout or "").splitlines() if line.strip()][-TAIL:]
            failed["status"] = (f"the clean-up process ended with exit status {done.returncode} before reporting"
                                + (f": {' | '.join(tail)}" if tail else ""))
            failed["worker"] = worker_name()
            return failed, None
        result = json.loads(report.read_text())
        result["worker"] = worker_name()
        if result.get("status") != "ok" and not (result.get("measured_on") and output.is_file()):
            return result, None  # (a written file that missed a gate is handed back with its failure)
        if not output.is_file():  # never an "ok" without its file
            result["status"] = "the clean-up reported success but wrote no file"
            return result, None
        return result, output.read_bytes()
