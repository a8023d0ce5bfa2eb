"""One clip's job in a process of its own that has ``bpy``: cleaned, or retargeted onto a rig.

Run as ``python -m welman_ik.cleanup.worker SOURCE OUTPUT --entry ENTRY.json`` (or through
a Blender executable, see ``launch.py``): one process per clip, so a clip that crashes
Blender takes nothing else with it. The clip is cleaned by ``job.clean``, or with ``--onto
RIG.blend`` retargeted by ``onto.retarget``. The entry (``report.json``'s line for the clip)
is written to ENTRY.json whether the clip succeeds or not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.collection import collection_paused
from .job import clean
from .onto import retarget
from .report import write_atomic


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m welman_ik.cleanup.worker", description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("output", type=Path, help="the file to write (BVH or FBX, by its suffix)")
    parser.add_argument("--entry", type=Path, required=True, help="where to write the report entry (JSON)")
    parser.add_argument("--feet", help="the two foot bones, LEFT,RIGHT")
    parser.add_argument("--scale", type=float, help="metres per BVH unit (default: guessed from the skeleton)")
    parser.add_argument("--onto", type=Path, help="retarget onto the armature of this .blend file instead")
    parser.add_argument("--object", default="", help="with --onto: the armature's name (default: the only one)")
    parser.add_argument("--no-floor", dest="floor", action="store_false",
                        help="do not keep the feet on or above the clip's floor")
    args = parser.parse_args(argv)
    feet = [n.strip() for n in args.feet.split(",")] if args.feet else None
    with collection_paused():  # a process of its own for one clip: its objects freed as it goes
        if args.onto:
            result = retarget(args.source, args.output, args.onto, args.object, args.scale)
        else:
            result = clean(args.source, args.output, feet, args.scale, args.floor)
    write_atomic(args.entry, json.dumps(result).encode())  # a crash mid-write leaves no half entry
    return 0


def run(argv: Sequence[str] | None = None) -> None:
    """``main``, then the process ends at once: the entry and the written file are on disk,
    and Blender's own teardown (freeing every datablock, about 0.15 s) serves nothing."""
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
