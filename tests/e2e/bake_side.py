"""E2E harness for the modal bake, Blender side: runs inside Blender (3.4+) with a real window.

Started by ``run_bake_e2e.py`` as

    blender --factory-startup --python tests/e2e/bake_side.py -- --root REPO --workdir DIR --mode cancel ...

It loads Welman IK from the checkout and builds Welman's Fig 6.5 scene, made as long as the
bake range: the Rigify basic human metarig in pose mode, pins on the tails of ``toe.L``,
``toe.R``, ``heel.02.L`` and ``heel.02.R``, the whole pose keyed every 20 frames from frame 1,
alternately at rest and with the pelvis 0.25 m lower (made once with ``welman_ik.drag``).
It sets the current frame (``--frame``, inside the range), makes the scene an undo step of
its own, records what a bake must not change (the actions, the assigned action, its keys,
the pose channels, the current frame) and writes ``DIR/ready.json``.

Then it serves the driver's requests, one file each: ``DIR/request_<n>.json``
(``{"id": n, "cmd": ...}``) is answered in ``DIR/reply_<n>.json``:

``bake``    invoke ``welman_ik.bake`` (``INVOKE_DEFAULT``: the modal form) on the 3D viewport
            with the request's ``frame_start`` and ``frame_end``;
``status``  the state now, answered a few timer ticks later, so that every event the driver
            sent before asking has been through Blender's event handling;
``finish``  write ``DIR/result.json`` (the state against the records), then Blender quits.

Any error is written to ``DIR/fatal.json`` and Blender quits.

How the modal bake is observed without touching the add-on: a pass-through modal operator,
started before the bake, counts the mouse moves the window hands it. A running modal
operator started later (the bake) is asked first and keeps every event but its timer's and
Esc, so while the bake runs the counter stands still, and moves count again once it has
ended. The bake's progress is read from its ``Baker`` object, found among Python's objects
(``gc``), which the operator keeps while it runs. Every timer tick records any change of
the assigned action, the number of actions and whether a ``.welman_bake`` action exists.

Everything runs from ``bpy.app.timers`` so that the window exists and draws between steps.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blender_common as common
from blender_common import write_json

STARTED = time.time()
TICK = 0.05  # seconds between timer ticks
SUFFIX = ".welman_bake"  # the name the bake gives its new action: <original> + SUFFIX
FEET = ("toe.L", "toe.R", "heel.02.L", "heel.02.R")
PELVIS = "spine"  # the root bone; its head is the pelvis


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    p = argparse.ArgumentParser(prog="bake_side.py")
    p.add_argument("--root", required=True, help="repository root (put on sys.path)")
    p.add_argument("--workdir", required=True, help="folder for the JSON files shared with the driver")
    p.add_argument("--mode", required=True, choices=("cancel", "undo"))
    p.add_argument("--frame-end", type=int, required=True, help="last keyed frame (the scene runs from frame 1)")
    p.add_argument("--key-every", type=int, default=20, help="frames between keys")
    p.add_argument("--drop", type=float, default=0.25, help="metres the pelvis is lowered on every other key")
    p.add_argument("--frame", type=int, default=7, help="the current frame while the bake runs")
    p.add_argument("--timeout", type=float, default=300.0, help="quit by itself after this many seconds")
    return p.parse_args(argv)


ARGS = parse_args()
WORKDIR = ARGS.workdir
common.prepare(WORKDIR)


# --------------------------------------------------------------------------- state


class State:
    step = "setup"
    ticks = 0
    window = None
    area = None
    region = None
    obj_name = ""
    view_draws = 0  # draws of the 3D viewport's main region
    wait_from = 0
    wait_started = 0.0
    # What the bake must leave as it was (cancel), or as undo brings it back.
    original_action = ""
    actions_before: list = []
    keys_before: dict = {}
    pose_before: dict = {}
    frame_before = 0
    bake_invoked_at = None
    # Observations.
    moves = 0  # mouse moves the pass-through logger was handed
    last_mouse = None
    keys: list = []  # key presses and releases the logger was handed
    history: list = []  # (t, assigned action, number of actions, .welman_bake actions) at each change
    progress: list = []  # (t, frames baked, frames) of the running bake, at each status
    next_request = 1
    pending = None  # (request, tick) of a status request waiting for its ticks
    handle = None
    quitting = False


S = State()


# --------------------------------------------------------------------------- the event probe


class E2E_OT_bake_probe(bpy.types.Operator):
    """Counts the mouse moves and keys the window hands it, and passes them on"""

    bl_idname = "e2e.bake_probe"
    bl_label = "E2E bake probe"

    def invoke(self, context, event):
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}:
            S.moves += 1
            S.last_mouse = [event.mouse_x, event.mouse_y]
        elif event.value in {"PRESS", "RELEASE"} and event.type not in {"TIMER", "NONE"} and len(S.keys) < 1000:
            S.keys.append({"t": round(time.time() - STARTED, 3), "type": event.type, "value": event.value,
                           "ctrl": event.ctrl})
        return {"PASS_THROUGH"}


def _count_view_draw():
    S.view_draws += 1


# --------------------------------------------------------------------------- helpers


def find_view3d():
    S.window, S.area, S.region, _ = common.view3d()


def override():
    return bpy.context.temp_override(window=S.window, screen=S.window.screen, area=S.area, region=S.region)


def armature():
    return bpy.data.objects[S.obj_name]  # undo replaces the data-blocks: always by name


def assigned(obj) -> str | None:
    ad = obj.animation_data
    return ad.action.name if ad is not None and ad.action is not None else None


def action_fcurves(obj) -> list:
    from welman_ik.blender.rig import keyframes  # it knows Blender 4.4+ channelbags

    return list(keyframes.action_fcurves(obj))


def action_keys(obj) -> dict:
    """Every key of the assigned action: ``data_path[index]`` -> flat (frame, value, ...)."""
    out = {}
    for fc in action_fcurves(obj):
        co = [0.0] * (2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        out[f"{fc.data_path}[{fc.array_index}]"] = co
    return out


def bakers(collect: bool = False) -> list:
    """Progress of every live ``Baker`` (the running bake's): frames baked, frames, done."""
    from welman_ik.blender.bake import baker as bake

    if collect:
        gc.collect()
    out = []
    for o in gc.get_objects():
        if type(o) is bake.Baker:  # the exact class: no attribute lookups on other objects
            frames = getattr(o, "frames", None)
            index = getattr(o, "index", None)
            out.append({"baked": index, "frames": len(frames) if frames is not None else None,
                        "done": index is not None and frames is not None and index >= len(frames)})
    return out


def bake_registered() -> int:
    """How many finished bakes the window manager keeps as last operators (for redo)."""
    return sum(1 for op in bpy.context.window_manager.operators if op.bl_idname in {"WELMAN_IK_OT_bake",
                                                                                       "welman_ik.bake"})


def record():
    """One row of the history whenever what a tick sees changed."""
    obj = bpy.data.objects.get(S.obj_name)
    if obj is None:
        return
    names = [a.name for a in bpy.data.actions]
    row = [assigned(obj), len(names), sorted(n for n in names if n.endswith(SUFFIX))]
    if not S.history or S.history[-1][1:] != row:
        S.history.append([round(time.time() - STARTED, 3), *row])


def rect(r) -> dict:
    return {"x": r.x, "y": r.y, "width": r.width, "height": r.height}


# --------------------------------------------------------------------------- steps


def step_setup():
    find_view3d()
    S.handle = bpy.types.SpaceView3D.draw_handler_add(_count_view_draw, (), "WINDOW", "POST_PIXEL")
    common.load_addon(ARGS.root)
    bpy.utils.register_class(E2E_OT_bake_probe)
    with override():
        obj = common.new_metarig()
        build_animation(obj)
        bpy.ops.view3d.view_axis(type="FRONT")
        bpy.ops.view3d.view_all()
    S.obj_name = obj.name
    with override():  # the probe, started before the bake: the bake's handler comes first
        bpy.ops.e2e.bake_probe("INVOKE_DEFAULT")
    S.wait_from = S.view_draws
    S.wait_started = time.time()
    S.area.tag_redraw()
    S.step = "wait"


def build_animation(obj):
    """Pins on the feet; keys every ``--key-every`` frames, alternately at rest and with the
    pelvis ``--drop`` lower (as ``scripts/bench_bake.py`` builds it)."""
    from welman_ik.blender.rig import selection

    scene = bpy.context.scene
    for pb in obj.pose.bones:
        selection.set_selected(pb, pb.name in FEET)
    if bpy.ops.welman_ik.pin() != {"FINISHED"}:
        raise RuntimeError("welman_ik.pin() did not finish")
    for pb in obj.pose.bones:
        selection.set_selected(pb, False)
    scene.frame_start, scene.frame_end = 1, ARGS.frame_end
    common.key_squats(obj, range(1, ARGS.frame_end + 1, ARGS.key_every), ARGS.drop, PELVIS)
    scene.frame_set(ARGS.frame)


def step_ready():
    obj = armature()
    bpy.context.view_layer.update()
    # The scene was built by this script: make it an undo step of its own, so that undoing
    # the bake returns to it (and not to the startup file).
    with override():
        bpy.ops.ed.undo_push(message="Welman IK bake e2e scene")
    S.original_action = assigned(obj)
    S.actions_before = sorted(a.name for a in bpy.data.actions)
    S.keys_before = action_keys(obj)
    S.pose_before = common.pose_snapshot(obj)
    S.frame_before = bpy.context.scene.frame_current
    frames = sorted({round(v) for co in S.keys_before.values() for v in co[0::2]})
    record()
    write_json("ready.json", {
        "blender_version": bpy.app.version_string,
        "window": {"x": S.window.x, "y": S.window.y, "width": S.window.width, "height": S.window.height},
        "region": rect(S.region),
        "mode": obj.mode,
        "armature": obj.name,
        "action": S.original_action,
        "actions": S.actions_before,
        "fcurves": len(S.keys_before),
        "keyed_frames": [frames[0], frames[-1], len(frames)] if frames else None,
        "frame_current": S.frame_before,
        "pins": [{"bone": p.bone, "anchor": p.anchor, "enabled": p.enabled} for p in obj.welman_ik.pins],
        "bakers": bakers(),
        "seconds_to_ready": time.time() - STARTED,
    })
    S.step = "serve"


def status() -> dict:
    obj = armature()
    live = bakers()
    running = [b for b in live if not b["done"]]
    if running:
        S.progress.append([round(time.time() - STARTED, 3), running[0]["baked"], running[0]["frames"]])
    keys = action_keys(obj)
    frames = sorted({round(v) for co in keys.values() for v in co[0::2]})
    names = [a.name for a in bpy.data.actions]
    return {
        "t": time.time() - STARTED,
        "mode": obj.mode,
        "action": assigned(obj),
        "actions": sorted(names),
        "welman_bake_actions": sorted(n for n in names if n.endswith(SUFFIX)),
        "action_keys": {"fcurves": len(keys), "keys": sum(len(co) // 2 for co in keys.values()),
                        "frames": len(frames),
                        "first": frames[0] if frames else None, "last": frames[-1] if frames else None},
        "frame_current": bpy.context.scene.frame_current,
        "bakers": live,
        "bake_registered": bake_registered(),
        "moves": S.moves,
        "last_mouse": S.last_mouse,
        "keys": len(S.keys),
    }


def invoke_bake(request) -> dict:
    with override():
        result = bpy.ops.welman_ik.bake("INVOKE_DEFAULT", frame_start=request["frame_start"],
                                        frame_end=request["frame_end"])
    S.bake_invoked_at = time.time() - STARTED
    return {"result": sorted(result), "t": S.bake_invoked_at, "bakers": bakers()}


def result() -> dict:
    obj = armature()
    bpy.context.view_layer.update()
    names = sorted(a.name for a in bpy.data.actions)
    keys = action_keys(obj) if assigned(obj) == S.original_action else None
    return {
        "mode": ARGS.mode,
        "blender_version": bpy.app.version_string,
        "original_action": S.original_action,
        "action": assigned(obj),
        "actions_before": S.actions_before,
        "actions": names,
        "welman_bake_actions": [n for n in names if n.endswith(SUFFIX)],
        "welman_bake_ever": sorted({n for row in S.history for n in row[3]}),
        "original_keys_unchanged": keys == S.keys_before if keys is not None else None,
        "fcurves": len(S.keys_before),
        "changed_bones": common.changed_bones(S.pose_before, obj),
        "bones": len(S.pose_before),
        "frame_before": S.frame_before,
        "frame_current": bpy.context.scene.frame_current,
        "bakers": bakers(collect=True),
        "bake_registered": bake_registered(),
        "bake_invoked_at": S.bake_invoked_at,
        "progress": S.progress,
        "history": S.history,
        "moves": S.moves,
        "keys": S.keys,
        "ticks": S.ticks,
        "seconds_alive": time.time() - STARTED,
    }


def serve():
    """Answer the driver's next request, if any."""
    if S.pending is not None:
        request, tick = S.pending
        if S.ticks >= tick + request.get("ticks", 3):
            write_json(f"reply_{request['id']}.json", status())
            S.pending = None
            S.next_request += 1
        return
    request = common.read_request(S.next_request)
    if request is None:
        return
    cmd = request.get("cmd")
    if cmd == "status":
        S.pending = (request, S.ticks)
        return
    if cmd == "bake":
        reply = invoke_bake(request)
    elif cmd == "finish":
        write_json("result.json", result())
        reply = {"ok": True}
    else:
        reply = {"error": f"unknown command {cmd!r}"}
    write_json(f"reply_{request['id']}.json", reply)
    S.next_request += 1
    if cmd == "finish":
        quit_blender()


def quit_blender():
    S.quitting = True
    if S.handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(S.handle, "WINDOW")
        S.handle = None
    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        bpy.ops.wm.quit_blender()


def tick():
    if S.quitting:
        return None
    S.ticks += 1
    try:
        if time.time() - STARTED > ARGS.timeout:
            raise TimeoutError(f"no 'finish' from the driver within {ARGS.timeout} s")
        if S.step == "setup":
            step_setup()
        elif S.step == "wait":  # two draws of the viewport: the window is up and shows the rig
            if S.view_draws >= S.wait_from + 2:
                step_ready()
            elif time.time() - S.wait_started > 30.0:
                raise TimeoutError("the 3D viewport did not redraw within 30 s")
            else:
                S.area.tag_redraw()
        elif S.step == "serve":
            record()
            serve()
    except Exception:  # noqa: BLE001 - any failure is written for the driver, then Blender quits
        common.fail(S.step, quit_blender)
        return None
    return TICK


bpy.app.timers.register(tick, first_interval=0.2)
print(f"E2E bake side: Blender {bpy.app.version_string}, mode {ARGS.mode}, workdir {WORKDIR}", flush=True)
