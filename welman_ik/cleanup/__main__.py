"""``python -m welman_ik.cleanup INPUT... --out DIR [--workers N] [--scheduler ADDRESS]
[--feet NAME,NAME] [--no-floor] [--onto RIG.blend[:OBJECT] [--format blend|fbx]]``: exit
status 0 when every clip was cleaned (or retargeted), 2 otherwise."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .launch import ENVIRONMENT, NoBlender
from .runner import parse_onto, run

FAILED = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m welman_ik.cleanup",
        description="Clean up mocap clips: find the feet, detect their contacts and the floor they stand on, "
                    "bake them so the planted feet stop sliding and no foot goes below the floor, and export "
                    "each clip in its own format under its own name.",
        epilog="Writes DIR/report.json (one entry per clip). Exit status 0 when every clip was cleaned, "
               "2 when some failed.")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="BVH or FBX files, or folders of them")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder for the cleaned clips and report.json")
    p.add_argument("--workers", type=int, metavar="N", help="local processes at once (default: one per CPU core)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask distributed scheduler (tcp://host:8786): one task per clip on its workers")
    p.add_argument("--feet", metavar="NAME,NAME",
                   help="the left and right foot bones (default: found by Rigify, Mixamo or BVH naming)")
    p.add_argument("--scale", type=float, metavar="M",
                   help="metres per BVH unit (default: the unit that makes the skeleton a person's size)")
    p.add_argument("--blender", metavar="PATH",
                   help=f"a Blender executable to run each clip with (default: this Python's bpy; also {ENVIRONMENT})")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds one clip may take before it is stopped")
    p.add_argument("--no-floor", dest="floor", action="store_false",
                   help="do not keep the feet on or above each clip's floor (found from its contacts); the "
                        "plants are held all the same")
    p.add_argument("--onto", metavar="RIG.blend[:OBJECT]",
                   help="retarget each clip onto a copy of this rig (its only armature, or OBJECT) instead of "
                        "cleaning it in place: DIR/<clip>.blend, with the per-group misses in the report")
    p.add_argument("--format", choices=("blend", "fbx"), default="blend",
                   help="with --onto: write each retargeted clip as a .blend (default) or an FBX of the rig")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    feet = [n.strip() for n in args.feet.split(",")] if args.feet else None
    if feet is not None and (len(feet) != 2 or not all(feet)):
        p.error("--feet takes two bone names, LEFT,RIGHT")
    if args.workers is not None and args.workers < 1:
        p.error("--workers must be at least 1")
    for name, value in (("--scale", args.scale), ("--timeout", args.timeout)):
        if value is not None and not (value > 0.0 and value < float("inf")):
            p.error(f"{name} must be a positive number")
    onto = None
    if args.onto:
        try:
            onto = parse_onto(args.onto, args.format)
        except (OSError, ValueError) as error:
            p.error(f"--onto: {error}")
    try:
        entries = run(args.inputs, args.out, workers=args.workers, scheduler=args.scheduler, feet=feet,
                      scale=args.scale, blender=args.blender, timeout=args.timeout, progress=not args.quiet,
                      onto=onto, floor=args.floor)
    except (NoBlender, RuntimeError, OSError) as error:
        print(f"welman_ik.cleanup: {error}", file=sys.stderr)
        return FAILED
    return 0 if entries and all(e["status"] == "ok" for e in entries) else FAILED


if __name__ == "__main__":
    sys.exit(main())
