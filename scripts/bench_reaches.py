"""Benchmark: does the limb do the reaching? The trunk's and the head's turn for reaches.

What it measures
    The Rigify basic human metarig, both feet pinned (position pins on the toes' and heels'
    tails, ``scenes.FEET``), default settings (preferred pose 'START', gaze on), with and
    without the human joint ranges (``joint_ranges(preset='AUTO')``). The tail of hand.R is
    dragged with ``bpy.ops.welman_ik.drag`` as a script would, in one call ("one") or in 12
    equal steps ("steps"), to a target 0.8 of the arm's length (upper arm, forearm and hand)
    from the upper arm's head, straight up, out to the side, forward, across the chest
    (forward and toward the left) and down toward the right knee; and, out of reach, 0.7 m
    in front of the chest and 0.4 m to the left ("far across"). Per solver, every figure on
    the pose Blender evaluates:

    * trunk: the largest world-space turn of a trunk bone, pelvis to neck (spine .. spine.005);
    * head: the world-space turn of the head (spine.006);
    * limb share: how much of the hand's travel the arm made itself: 1 - |t| / |d|, d the hand's
      displacement and t the part the chest's own motion carried it (the hand where it ended,
      moved back with the chest);
    * hand: the hand's distance from its target (mm); pins: ``last_solve.max_pin_error`` (mm);
    * wrist: the angle between the hand's Y axis and the forearm's (world), in degrees: how far
      the wrist bends off the forearm's line;
    * elbow cm: how far the elbow (the forearm's head) lies above the line from the shoulder
      (the upper arm's head) to the wrist (the hand's head): the world-Z component of its
      perpendicular offset from that line (positive: above).

    The exit status is 1 when an in-reach drag turns the trunk more than 5 degrees or the head
    more than 3, or misses the hand by more than 1 mm, under any solver; and when a reach up,
    to the side, forward or across bends the wrist more than 25 degrees off the forearm's line
    or lifts the elbow more than 2 cm above the shoulder-wrist line.

How to run (from the repository root, with the bpy-module virtual environment)::

    .venv/bin/python scripts/bench_reaches.py
    .venv/bin/python scripts/bench_reaches.py --solvers SR_INVERSE,CCD --json out/reaches.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import bpy  # first: it puts Blender's own modules (addon_utils) on the path
import numpy as np
from mathutils import Vector

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import scenes

SOLVERS = ("SR_INVERSE", "QUASI_NEWTON", "CCD", "JACOBIAN_TRANSPOSE")
TRUNK = ("spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005")
HEAD = "spine.006"
CHEST = "spine.003"
HAND = "hand.R"
ARM = ("upper_arm.R", "forearm.R", "hand.R")
IN_REACH = 0.8  # of the arm's length
STEPS = 12
TRUNK_LIMIT, HEAD_LIMIT, HAND_LIMIT = 5.0, 3.0, 1e-3  # deg, deg, m
WRIST_LIMIT, ELBOW_LIMIT = 25.0, 2.0  # deg, cm
POSTURE = ("up", "side", "forward", "across")  # the reaches held to the wrist and elbow limits


def update() -> None:
    bpy.context.view_layer.update()


def point(obj, bone: str, anchor: float = 1.0) -> np.ndarray:
    pb = obj.pose.bones[bone]
    return np.array(obj.matrix_world @ pb.head.lerp(pb.tail, anchor))


def world(obj, bone: str):
    return obj.matrix_world @ obj.pose.bones[bone].matrix


def degrees(a, b) -> float:
    return math.degrees(2.0 * math.acos(min(1.0, abs(a.to_quaternion().normalized().dot(b.to_quaternion().normalized())))))


def arm_posture(obj) -> tuple[float, float]:
    """(wrist [deg], elbow [cm]) of the evaluated pose: the hand's Y axis off the forearm's,
    and the height of the elbow above the line from the shoulder to the wrist."""
    hand, forearm = world(obj, HAND).to_3x3(), world(obj, "forearm.R").to_3x3()
    wrist = math.degrees(hand.col[1].normalized().angle(forearm.col[1].normalized(), 0.0))
    shoulder, elbow, joint = point(obj, "upper_arm.R", 0.0), point(obj, "forearm.R", 0.0), point(obj, HAND, 0.0)
    line = (joint - shoulder) / np.linalg.norm(joint - shoulder)
    offset = (elbow - shoulder) - np.dot(elbow - shoulder, line) * line
    return wrist, 100.0 * float(offset[2])


def targets(obj) -> dict:
    root = point(obj, "upper_arm.R", 0.0)
    length = sum(obj.pose.bones[b].bone.length for b in ARM)
    side = root - point(obj, CHEST, 0.0)
    side[2] = 0.0
    side /= np.linalg.norm(side)
    forward, up = np.array([0.0, -1.0, 0.0]), np.array([0.0, 0.0, 1.0])
    knee = point(obj, "shin.R", 0.0)
    across = -0.6 * side + 0.8 * forward
    ways = {"up": up, "side": side, "forward": forward, "across": across / np.linalg.norm(across),
            "down": (knee - root) / np.linalg.norm(knee - root)}
    found = {name: root + IN_REACH * length * way for name, way in ways.items()}
    found["far across"] = point(obj, CHEST) + np.array([0.4, -0.7, 0.0])
    return found


def scene(solver: str, ranges: bool):
    scenes.empty_scene()
    obj = scenes.basic_human(pins=())
    obj.welman_ik.keyframes = "NEVER"
    obj.welman_ik.solver = solver
    with scenes.quiet():
        scenes.pin_bones(obj, scenes.FEET)
        if ranges:
            bpy.ops.welman_ik.joint_ranges(preset="AUTO")
    update()
    return obj


def reach(obj, start: dict, target: np.ndarray, steps: int) -> dict:
    for pb in obj.pose.bones:
        pb.matrix_basis = start[pb.name]
    update()
    before = {n: world(obj, n) for n in (*TRUNK, HEAD)}
    origin = point(obj, HAND)
    began = time.perf_counter()
    for i in range(1, steps + 1):
        with scenes.quiet():
            bpy.ops.welman_ik.drag(bone=HAND, target=tuple(map(float, origin + (target - origin) * i / steps)))
    seconds = time.perf_counter() - began
    update()
    hand = point(obj, HAND)
    chest_before, chest_after = before[CHEST], world(obj, CHEST)
    carried = hand - np.array((chest_before @ chest_after.inverted()) @ Vector(hand))
    moved = float(np.linalg.norm(hand - origin))
    wrist, elbow = arm_posture(obj)
    return {
        "trunk": max(degrees(before[n], world(obj, n)) for n in TRUNK),
        "head": degrees(before[HEAD], world(obj, HEAD)),
        "limb_share": 1.0 - float(np.linalg.norm(carried)) / moved if moved > 1e-9 else 1.0,
        "hand_mm": 1000.0 * float(np.linalg.norm(hand - target)),
        "pins_mm": 1000.0 * obj.welman_ik.last_solve.max_pin_error,
        "wrist": wrist,
        "elbow_cm": elbow,
        "seconds": seconds,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    rows, failed = [], []
    print(f"{'solver':<18} {'ranges':<6} {'drag':<5} {'target':<10} {'trunk':>6} {'head':>6} {'limb':>5} "
          f"{'hand mm':>8} {'pins mm':>8} {'wrist':>6} {'elbow cm':>8} {'s':>5}")
    for solver in args.solvers.split(","):
        for ranges in (False, True):
            obj = scene(solver, ranges)
            start = {pb.name: pb.matrix_basis.copy() for pb in obj.pose.bones}
            for name, target in targets(obj).items():
                for mode, steps in (("one", 1), ("steps", STEPS)):
                    row = {"solver": solver, "ranges": ranges, "drag": mode, "target": name,
                           **reach(obj, start, target, steps)}
                    rows.append(row)
                    print(f"{solver:<18} {'on' if ranges else 'off':<6} {mode:<5} {name:<10} {row['trunk']:6.1f} "
                          f"{row['head']:6.1f} {row['limb_share']:5.2f} {row['hand_mm']:8.3f} {row['pins_mm']:8.4f} "
                          f"{row['wrist']:6.1f} {row['elbow_cm']:8.2f} {row['seconds']:5.2f}", flush=True)
                    natural = name != "far across" and (row["trunk"] > TRUNK_LIMIT or row["head"] > HEAD_LIMIT
                                                        or row["hand_mm"] > 1000.0 * HAND_LIMIT)
                    posture = name in POSTURE and (row["wrist"] > WRIST_LIMIT or row["elbow_cm"] > ELBOW_LIMIT)
                    if natural or posture:
                        failed.append(row)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1))
    for row in failed:
        print(f"FAIL {row['solver']} ranges {row['ranges']} {row['drag']} {row['target']}: trunk {row['trunk']:.1f} deg, "
              f"head {row['head']:.1f} deg, hand {row['hand_mm']:.3f} mm, wrist {row['wrist']:.1f} deg, "
              f"elbow {row['elbow_cm']:+.2f} cm")
    table(rows)
    return 1 if failed else 0


def table(rows: list[dict]) -> None:
    """A Markdown table of the in-reach rows: per solver and target, the worst over ranges and
    drags of each figure."""
    print("\n| solver | target | wrist (°) | elbow (cm) | trunk (°) | head (°) | hand (mm) | time (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for solver in dict.fromkeys(r["solver"] for r in rows):
        for name in dict.fromkeys(r["target"] for r in rows):
            group = [r for r in rows if r["solver"] == solver and r["target"] == name]
            print(f"| {solver} | {name} | {max(r['wrist'] for r in group):.1f} | "
                  f"{max(r['elbow_cm'] for r in group):+.2f} | {max(r['trunk'] for r in group):.1f} | "
                  f"{max(r['head'] for r in group):.1f} | {max(r['hand_mm'] for r in group):.3f} | "
                  f"{max(r['seconds'] for r in group):.2f} |")


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    os._exit(status)
