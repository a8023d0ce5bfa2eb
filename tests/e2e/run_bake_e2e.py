#!/usr/bin/env python3
"""End-to-end test of the modal bake (``welman_ik.bake``, INVOKE form) in a real Blender window.

    python3 tests/e2e/run_bake_e2e.py --mode cancel        # a long bake, Esc while it runs
    python3 tests/e2e/run_bake_e2e.py --mode undo          # a short bake to the end, then Ctrl+Z
    python3 tests/e2e/run_bake_e2e.py --mode cancel,undo --output out

Needs only the Python standard library, and the Debian packages blender (3.4+), xvfb,
xdotool and imagemagick; the helpers (Xvfb, xdotool, the JSON exchange, the checks) are
``run_e2e.py``'s. For each mode it starts Blender with ``bake_side.py`` on its own Xvfb
display; the Blender side builds Welman's Fig 6.5 scene (the Rigify basic human, feet pinned,
the pelvis keyed alternately at rest and 0.25 m lower every 20 frames) as long as the mode
needs, and writes ``ready.json``. The driver puts the mouse over the 3D viewport, checks that
Blender sees it move there, asks the Blender side to invoke the bake on the viewport, and:

cancel  (frames 1..40001, tens of seconds of baking in Blender 3.4) waits until the bake has baked
        ``--min-frames`` frames, checks that it is running (its progress, no new action yet,
        the window's events held by its modal handler: a mouse move does not reach a
        pass-through probe started before it), takes a screenshot mid-bake, presses the real
        Esc key and checks that the modal operator has ended (mouse moves reach the probe
        again, no unfinished bake left) and that the bake left nothing behind: the same
        actions as before, the original action still assigned and unchanged key for key, every
        pose bone's location, rotations and scale bit-identical at the current frame, the
        current frame unchanged, and no ``.welman_bake`` action at any timer tick of the run.
undo    (frames 1..41) waits until the bake has finished, checks that it assigned the new
        action ``<original>.welman_bake`` with keys on every frame of the range and ended,
        presses the real Ctrl+Z and checks that the original action is assigned again, that
        no ``.welman_bake`` action is left, that the actions are those from before the bake,
        and that the pose and the current frame are as before the bake.

Then the Blender side quits, and its output must hold no Python traceback. Every wait has a
time limit and Xvfb and Blender are always ended (their own process groups). Exit code 0 when
every check passed, 1 otherwise. Writes ``out/e2e_bake_<mode>.png`` (the screen: mid-bake for
cancel, after the undo for undo; cancel also ``out/e2e_bake_cancel_after_esc.png``),
``out/e2e_bake_<mode>.json`` (result and checks) and ``out/e2e_bake_<mode>_blender.log``.
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

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from run_e2e import (
    Checks,
    Exchange,
    Failure,
    StartFailure,
    X,
    blender_env,
    leak_note,
    log_problems,
    quit_cleanly,
    run_all,
    stop,
)

ROOT = HERE.parents[1]
MODES = ("cancel", "undo")
SUFFIX = ".welman_bake"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="cancel,undo", help="cancel, undo, or both joined by a comma")
    p.add_argument("--blender", default=os.environ.get("BLENDER", "blender"))
    p.add_argument("--output", default=str(ROOT / "out"), help="folder for screenshots, logs and results")
    p.add_argument("--display", type=int, default=0, help="X display number (0: the first free from 99)")
    p.add_argument("--screen", default="1280x800", help="Xvfb screen size, also the Blender window size")
    p.add_argument("--hardware-gl", action="store_true", help="do not force Mesa's software GL (LIBGL_ALWAYS_SOFTWARE)")
    p.add_argument("--cancel-end", type=int, default=40001, help="cancel: the last frame of the scene and the bake")
    p.add_argument("--undo-end", type=int, default=41, help="undo: the last frame of the scene and the bake")
    p.add_argument("--frame", type=int, default=7, help="the current frame while the bake runs")
    p.add_argument("--min-frames", type=int, default=100, help="cancel: frames baked before Esc is pressed")
    p.add_argument("--timeout", type=float, default=240.0, help="seconds for one mode, all waits included")
    p.add_argument("--start-timeout", type=float, default=120.0, help="seconds for Blender to be ready")
    p.add_argument("--keep", action="store_true", help="keep the JSON exchange folder")
    args = p.parse_args(argv)
    args.modes = [m.strip() for m in args.mode.split(",") if m.strip()]
    for m in args.modes:
        if m not in MODES:
            p.error(f"unknown mode {m!r}")
    if args.cancel_end <= args.min_frames + 1:
        p.error("--cancel-end must leave more frames than --min-frames")
    return args


# --------------------------------------------------------------------------- one mode


class Run:
    """One mode's Blender, window and exchange, and the steps the two modes share."""

    def __init__(self, mode: str, args, display: int, out_dir: Path):
        self.mode, self.args, self.out_dir = mode, args, out_dir
        self.checks = Checks()
        self.timings: dict[str, float] = {}
        self.report: dict = {"mode": mode, "timings": self.timings}
        self.x = X(display)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"welman_e2e_bake_{mode}_"))
        self.log_path = out_dir / f"e2e_bake_{mode}_blender.log"
        self.shot = out_dir / f"e2e_bake_{mode}.png"
        for stale in (self.shot, out_dir / f"e2e_bake_{mode}_after_esc.png"):
            stale.unlink(missing_ok=True)
        self.frame_end = args.cancel_end if mode == "cancel" else args.undo_end
        self.blender = None
        self.ex: Exchange | None = None
        self.started = time.time()
        self.deadline = self.started + args.timeout
        self.geometry: dict = {}
        self.ready: dict = {}
        self.probe_points: list[tuple[float, float]] = []
        self.probe_index = 0

    def left(self) -> float:
        remaining = self.deadline - time.time()
        if remaining <= 0:
            raise Failure(f"mode {self.mode} took longer than --timeout {self.args.timeout:.0f} s")
        return remaining

    def status(self, label: str, **fields) -> dict:
        return self.ex.request("status", timeout=min(30, self.left()), label=label, **fields)

    def start(self) -> None:
        args = self.args
        width, height = (int(v) for v in args.screen.split("x"))
        env = blender_env(self.x.env, self.workdir)
        if not args.hardware_gl:
            env["LIBGL_ALWAYS_SOFTWARE"] = "1"
        cmd = [args.blender, "--factory-startup", "--window-geometry", "0", "0", str(width), str(height),
               "--python", str(HERE / "bake_side.py"), "--",
               "--root", str(ROOT), "--workdir", str(self.workdir), "--mode", self.mode,
               "--frame-end", str(self.frame_end), "--frame", str(args.frame), "--timeout", str(args.timeout + 30)]
        with open(self.log_path, "w") as log:  # the child keeps its own copy
            self.blender = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, cwd=str(ROOT))
        self.ex = Exchange(self.workdir, self.blender, self.log_path)

        wid = self.ex.wait_window(self.x, min(args.start_timeout, self.left()))
        self.timings["window_s"] = time.time() - self.started
        found = f"Blender window {wid} after {self.timings['window_s']:.1f} s"
        if not self.checks.add(wid is not None, "window", found):
            raise Failure("no Blender window")
        self.geometry = self.x.geometry(wid)
        self.report["window_geometry"] = self.geometry

        ready = self.ready = self.ex.wait_file("ready.json", min(args.start_timeout, self.left()))
        self.timings["ready_s"] = time.time() - self.started
        self.report["ready"] = ready
        pins = sorted(p["bone"] for p in ready["pins"] if p["enabled"])
        keyed = ready["keyed_frames"]
        self.checks.add(ready["mode"] == "POSE" and pins == sorted(("heel.02.L", "heel.02.R", "toe.L", "toe.R"))
                        and keyed is not None and keyed[0] == 1 and keyed[1] == self.frame_end
                        and ready["frame_current"] == args.frame and not ready["bakers"], "scene",
                        f"mode {ready['mode']}, pins {pins}, action {ready['action']!r} with {ready['fcurves']} "
                        f"F-curves keyed on {keyed[2] if keyed else 0} frames {keyed[:2] if keyed else ''}, "
                        f"frame {ready['frame_current']}, ready after {self.timings['ready_s']:.1f} s")

        # The mouse over the 3D viewport: Blender gives key events to the area under it.
        region, win = ready["region"], ready["window"]
        cx, cy = region["x"] + region["width"] / 2, region["y"] + region["height"] / 2
        self.probe_points = [self.to_screen(cx + dx, cy + dy) for dx, dy in ((0, 0), (25, 15), (-20, -25))]
        self.x.move(*self.probe_points[0])
        time.sleep(0.3)
        moved, status = self.probe("before the bake")
        seen = status["last_mouse"]
        expected = [round(v) for v in self.to_window(*self.x.mouse())]
        inside = seen is not None and 0 <= seen[0] - region["x"] < region["width"] \
            and 0 <= seen[1] - region["y"] < region["height"]
        self.checks.add(moved and inside and abs(seen[0] - expected[0]) <= 1 and abs(seen[1] - expected[1]) <= 1,
                        "mouse over the 3D viewport",
                        f"window {win['width']}x{win['height']}, the probe saw moves {moved}, last at window {seen} "
                        f"(expected {expected}, viewport {region})")

    def to_screen(self, wx: float, wy: float) -> tuple[float, float]:
        """Blender window coordinates (origin bottom left) to X screen coordinates."""
        return self.geometry["X"] + wx, self.geometry["Y"] + (self.ready["window"]["height"] - 1 - wy)

    def to_window(self, sx: float, sy: float) -> tuple[float, float]:
        return sx - self.geometry["X"], self.ready["window"]["height"] - 1 - (sy - self.geometry["Y"])

    def probe(self, label: str) -> tuple[bool, dict]:
        """Move the mouse a little inside the viewport; True when the probe saw the move.
        The status is answered a few timer ticks after the request, once Blender's event
        handling has been through the move."""
        before = self.status(f"{label}: before the probe move")["moves"]
        self.probe_index = (self.probe_index + 1) % len(self.probe_points)
        self.x.move(*self.probe_points[self.probe_index])
        time.sleep(0.4)
        status = self.status(f"{label}: after the probe move", ticks=4)
        return status["moves"] > before, status

    def invoke_bake(self) -> dict:
        reply = self.ex.request("bake", timeout=min(30, self.left()), frame_start=1, frame_end=self.frame_end)
        self.timings["bake_invoked_s"] = time.time() - self.started
        self.report["bake_reply"] = reply
        self.checks.add(reply["result"] == ["RUNNING_MODAL"], "bake invoked",
                        f"welman_ik.bake('INVOKE_DEFAULT', frame_start=1, frame_end={self.frame_end}) "
                        f"returned {reply['result']}")
        return reply

    def screenshot(self, path: Path | None = None) -> None:
        path = path or self.shot
        t = time.time()
        self.x.screenshot(path)
        seconds = time.time() - t
        self.timings.setdefault("screenshot_s", seconds)
        size = path.stat().st_size if path.exists() else 0
        self.checks.add(size > 10_000, "screenshot", f"{path} ({size} bytes, {seconds:.1f} s)")

    def finish(self, escaped: bool) -> dict:
        self.ex.request("finish", timeout=min(60, self.left()))
        result = self.ex.wait_file("result.json", min(30, self.left()), alive=False)
        self.report["result"] = result
        try:
            code = self.blender.wait(timeout=min(30, self.left()))
        except subprocess.TimeoutExpired:
            code = None
        self.timings["total_s"] = time.time() - self.started
        self.checks.add(quit_cleanly(code, self.log_path, escaped), "Blender quit",
                        f"exit code {code}" + (" (Esc was pressed)" if escaped else "") + leak_note(self.log_path))
        return result

    def close(self) -> None:
        stop(self.blender, "Blender")
        tracebacks, errors = log_problems(self.log_path)
        self.report["log_tracebacks"], self.report["log_errors"] = tracebacks, errors
        self.checks.add(not tracebacks, "no Python tracebacks in Blender's output",
                        "" if not tracebacks else "\n" + "\n---\n".join(tracebacks))
        if errors:
            print(f"  note: Blender printed {len(errors)} 'Error:' line(s): {errors}", flush=True)
        if self.args.keep:
            self.report["workdir"] = str(self.workdir)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self.report["checks"] = [{"ok": ok, "name": name, "detail": detail} for ok, name, detail in self.checks.rows]
        (self.out_dir / f"e2e_bake_{self.mode}.json").write_text(json.dumps(self.report, indent=1))


def running_bake(status: dict) -> dict | None:
    """The progress of the unfinished bake in a status, if there is one."""
    return next((b for b in status["bakers"] if not b["done"]), None)


def run_cancel(run: Run) -> None:
    args, checks = run.args, run.checks
    original = run.ready["action"]
    frames = run.frame_end
    run.invoke_bake()

    # Running, and some frames baked.
    status = run.status("after invoke")
    baked = running_bake(status)
    while baked is not None and baked["baked"] < args.min_frames:
        time.sleep(0.2)
        status = run.status("baking")
        baked = running_bake(status)
    run.timings["min_frames_s"] = time.time() - run.started
    first = baked["baked"] if baked else None
    checks.add(baked is not None and baked["frames"] == frames and not status["welman_bake_actions"]
               and status["action"] == original, "bake running",
               f"{first} of {baked['frames'] if baked else '?'} frames baked "
               f"{run.timings['min_frames_s'] - run.timings['bake_invoked_s']:.1f} s after invoke, "
               f"action {status['action']!r}, .welman_bake actions {status['welman_bake_actions']}")
    if baked is None:
        raise Failure("no running bake to cancel (it ended, or never started)")
    moved, status = run.probe("mid-bake")
    checks.add(not moved, "the bake's modal handler holds the window's events",
               "a mouse move over the viewport " + ("reached" if moved else "did not reach")
               + " the pass-through probe started before the bake")
    run.screenshot()  # mid-bake: the progress in the status bar

    # Esc, as late as the checks allow: the bake must still be running when it arrives.
    status = run.status("before Esc")
    baked = running_bake(status)
    run.report["baked_before_esc"] = baked
    checks.add(baked is not None and first < baked["baked"] < frames, "still baking before Esc",
               f"{baked['baked'] if baked else '?'} of {frames} frames baked, "
               f"{len(status['welman_bake_actions'])} .welman_bake actions")
    run.x.move(*run.probe_points[0])
    run.x.key("Escape")
    run.timings["esc_s"] = time.time() - run.started
    time.sleep(0.5)
    moved, status = run.probe("after Esc")
    checks.add(moved and running_bake(status) is None, "the bake ended on Esc",
               "a mouse move " + ("reached" if moved else "did not reach") + " the probe; "
               f"unfinished bakes: {[b for b in status['bakers'] if not b['done']]}")
    run.screenshot(run.out_dir / "e2e_bake_cancel_after_esc.png")  # the status bar without the bake's progress

    r = run.finish(escaped=True)
    checks.add(r["actions"] == r["actions_before"], "no new action",
               f"actions {r['actions']} (before: {r['actions_before']})")
    checks.add(r["action"] == original and r["original_keys_unchanged"] is True, "original action kept",
               f"assigned {r['action']!r} (before: {original!r}), its {r['fcurves']} F-curves unchanged key for key: "
               f"{r['original_keys_unchanged']}")
    checks.add(not r["changed_bones"], "pose bit-identical",
               f"{r['bones']} pose bones' location, rotations and scale at frame {r['frame_current']}"
               + (f"; changed: {r['changed_bones']}" if r["changed_bones"] else ""))
    checks.add(r["frame_current"] == r["frame_before"] == args.frame, "current frame unchanged",
               f"frame {r['frame_current']} (before: {r['frame_before']})")
    checks.add(not r["welman_bake_ever"] and not r["welman_bake_actions"], "no .welman_bake action at any tick",
               f"{r['ticks']} timer ticks; history of (t, assigned, actions, .welman_bake): {r['history']}")
    unfinished = [b for b in r["bakers"] if not b["done"]]
    checks.add(not unfinished and r["bake_registered"] == 0, "modal operator no longer running",
               f"unfinished bakes after a garbage collection: {unfinished}; finished bakes kept for redo: "
               f"{r['bake_registered']}")
    esc = [k for k in r["keys"] if k["type"] == "ESC"]
    print(f"  Esc events the probe was handed (the press goes to the bake): {esc}", flush=True)


def run_undo(run: Run) -> None:
    checks = run.checks
    original = run.ready["action"]
    baked_name = original + SUFFIX
    run.invoke_bake()

    # Finished: no bake runs any more and the assigned action changed (or, if it never
    # changes, a few seconds later: the checks below then say what is wrong).
    status = run.status("after invoke")
    limit, settle = time.time() + 60, time.time() + 5
    while running_bake(status) is not None or (status["action"] == original and time.time() < settle):
        if time.time() > limit:
            raise Failure(f"the bake did not finish within 60 s: action {status['action']!r}, "
                          f"bakes {status['bakers']}")
        time.sleep(0.2)
        status = run.status("baking")
    run.timings["baked_s"] = time.time() - run.started
    keys = status["action_keys"]
    checks.add(status["action"] == baked_name and status["welman_bake_actions"] == [baked_name]
               and status["bake_registered"] == 1, "bake finished",
               f"assigned {status['action']!r} (expected {baked_name!r}) "
               f"{run.timings['baked_s'] - run.timings['bake_invoked_s']:.1f} s after invoke, "
               f"actions {status['actions']}, finished bakes kept for redo: {status['bake_registered']}")
    checks.add(keys["first"] == 1 and keys["last"] == run.frame_end and keys["frames"] == run.frame_end,
               "baked keys", f"{keys['fcurves']} F-curves, {keys['keys']} keys on {keys['frames']} frames "
               f"{keys['first']}..{keys['last']}")
    moved, status = run.probe("after the bake")
    checks.add(moved and status["frame_current"] == run.args.frame, "bake ended",
               f"mouse moves reach the probe again: {moved}; frame {status['frame_current']}")

    # Ctrl+Z over the viewport.
    run.x.move(*run.probe_points[0])
    time.sleep(0.2)
    run.x.key("ctrl+z")
    run.timings["undo_s"] = time.time() - run.started
    limit = time.time() + 15
    status = run.status("after Ctrl+Z")
    while status["action"] != original and time.time() < limit:
        time.sleep(0.2)
        status = run.status("after Ctrl+Z")
    run.screenshot()

    r = run.finish(escaped=False)
    undo_keys = [k for k in r["keys"] if k["type"] == "Z" and k["value"] == "PRESS"]
    checks.add(r["action"] == original, "original action assigned again",
               f"assigned {r['action']!r} (before the bake {original!r}); Ctrl+Z presses the probe saw: "
               f"{len([k for k in undo_keys if k['ctrl']])}")
    checks.add(not r["welman_bake_actions"] and r["actions"] == r["actions_before"], "no .welman_bake action left",
               f"actions {r['actions']} (before the bake: {r['actions_before']})")
    checks.add(r["original_keys_unchanged"] is True and not r["changed_bones"]
               and r["frame_current"] == r["frame_before"], "pose and frame as before the bake",
               f"original action's keys unchanged: {r['original_keys_unchanged']}, changed bones: "
               f"{r['changed_bones']}, frame {r['frame_current']} (before: {r['frame_before']})")


def run_mode(mode: str, args, display: int, out_dir: Path) -> tuple[Checks, dict]:
    run = Run(mode, args, display, out_dir)
    try:
        run.start()
        (run_cancel if mode == "cancel" else run_undo)(run)
    except Failure as error:
        run.checks.add(False, "run", str(error))
        run.report["start_failed"] = isinstance(error, StartFailure)
    finally:
        run.close()
    return run.checks, run.report


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    return run_all(parse_args(argv), run_mode, "e2e bake")


if __name__ == "__main__":
    sys.exit(main())
