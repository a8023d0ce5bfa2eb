"""E2E harness, Blender side: runs inside Blender (3.4+) with a real window.

Started by ``run_e2e.py`` as

    blender --factory-startup --python tests/e2e/blender_side.py -- --root REPO --workdir DIR ...

It loads Welman IK from the checkout, builds the Rigify basic human metarig in pose mode with
the feet pinned, makes the dragged bone active, sets up a front orthographic 3D view framed on
the rig with the sidebar open, and writes ``DIR/ready.json`` with the window coordinates of the
point to drag. Then it serves the driver's requests, one file each: ``DIR/request_<n>.json``
(``{"id": n, "cmd": "status" | "reframe" | "finish", ...}``) is answered in ``DIR/reply_<n>.json``:
``status`` after the sidebar has redrawn, ``reframe`` (frame the rig again, after the driver
resized the sidebar) with new coordinates, ``finish`` after writing ``DIR/result.json``, and
then Blender quits. Any error is written to ``DIR/fatal.json`` and
Blender quits.

Per mouse event of the interactive drag, the time from the event's arrival in the operator's
modal handler to the end of the viewport redraw that shows it: the operator's ``modal`` is
wrapped (on the class, from here: the add-on is not changed) to stamp each ``MOUSEMOVE`` as it
comes in and as it is handled (solve, write, depsgraph update), and draw handlers on the 3D
viewport's main region stamp when its next draw begins (``PRE_VIEW``) and ends (``POST_PIXEL``,
added after the add-on's own, so it runs last). The add-on's own draw callback (``overlay.draw``,
the one it gives ``SpaceView3D.draw_handler_add``) is wrapped in its module before the add-on
registers, so the handler it adds is the timed one: each call's duration is kept, and the calls
within a viewport draw are summed onto the events that draw shows. Both the handler and the
callback are also timed in the CPU time of Blender's main thread (``time.thread_time``), which
leaves out the time other threads and processes take the cores from it (llvmpipe's rasterizer
threads among them). ``result.json`` has them as ``mouse_events`` and ``overlay_draws``.

An ``op`` request runs what a button or a script does (``run_op``); in first mode a ``status``
reply also has the figures of the drag started from the sidebar's Drag button (``first_status``),
and the timer watches the feet and the trunk over that drag (``watch_drag``).

World mode (``world_side.py``): an Empty "Cup" at the right hand, and ops that look (``world_look``,
``world_hover``) while the driver does the rest in the window.

A ``status`` request with ``mouse_window`` also tells which bone the add-on's pick finds there, the
pins, and the dragged bone's world orientation; in ``pin-key`` mode the timer keeps the pins and
that orientation when a pin is first added (the pin key pressed mid-drag).

Everything runs from ``bpy.app.timers`` so that the window exists and draws between steps.
Nothing here changes the add-on: a keymap item is added only when the add-on has none for the
drag (``--bind auto``), and a probe panel (headerless, empty) in the add-on's sidebar tab tells
whether that tab is the one shown.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import bpy
from bpy_extras import view3d_utils
from mathutils import Vector

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blender_common as common
import world_side
from blender_common import write_json

STARTED = time.time()
MOTION_KEYS = (1, 21)  # motion mode: the whole pose keyed here, the pelvis lowered at the second
MOTION_FRAME = 11  # the edited frame
MOTION_FALLOFF = 5  # frames 6..16 take the edit; the others keep their motion
SIDEBAR_TAB = "Welman IK"
# Where the add-on leaves the per-event latencies of the last interactive drag, and where its
# running drag session lives (None when no drag is running). The driver fails the run when
# either is missing (the add-on moved them): its drag-state checks would otherwise pass blind.
LATENCY_HOOKS = ("welman_ik.blender.drag.state.DRAG_STATE.latencies",)
SESSION_HOOK = "welman_ik.blender.drag.state.DRAG_STATE.session"
KEY_NAMES = {  # shortcut words that differ between xdotool and Blender's key types
    "tab": "TAB", "space": "SPACE", "return": "RET", "enter": "RET", "escape": "ESC", "esc": "ESC",
    "delete": "DEL", "backspace": "BACK_SPACE", "minus": "MINUS", "plus": "PLUS", "period": "PERIOD",
    "0": "ZERO", "1": "ONE", "2": "TWO", "3": "THREE", "4": "FOUR", "5": "FIVE", "6": "SIX",
    "7": "SEVEN", "8": "EIGHT", "9": "NINE",
}
MODIFIERS = {"ctrl": "ctrl", "control": "ctrl", "shift": "shift", "alt": "alt", "super": "oskey", "oskey": "oskey"}


TRUNK = ("spine", "spine.001", "spine.002", "spine.003", "spine.004", "spine.005")  # the metarig's pelvis to neck
HEAD = "spine.006"
FEET = ("foot.L", "foot.R")  # first mode: the bones the recipe pins (heel at the head) ...
TOES = ("toe.L", "toe.R")  # ... and the toes (their tails)
ARM = ("upper_arm.R", "forearm.R", "hand.R")  # first mode: the arm the drag reaches with
LEAN = ("spine", "spine.004")  # the trunk's lean: the line between these two bones' heads, from upright
IDLE_PINS = (("hand.L", (0.1, 0.0, 0.0)), ("spine.006", (0.0, 0.0, 0.1)))  # first mode: the pins with frames
# (their tails, put this far off the bone [m]) ...
IDLE_FRAMES = (20, 40)  # ... in force on these frames only

def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    p = argparse.ArgumentParser(prog="blender_side.py")
    p.add_argument("--root", required=True, help="repository root (put on sys.path)")
    p.add_argument("--workdir", required=True, help="folder for the JSON files shared with the driver")
    p.add_argument("--mode", default="dry-run", choices=("dry-run", "confirm", "cancel", "undo", "motion", "pin-key", "panel", "first",
                                                     "world"))
    p.add_argument("--bone", default="hand.R")
    p.add_argument("--anchor", type=float, default=0.5,
                   help="point along the bone put under the mouse (0 head, 1 tail; the modal drag's default is 0.5)")
    p.add_argument("--pins", default="toe.L,toe.R,heel.02.L,heel.02.R")
    p.add_argument("--solver", default="", help="armature.welman_ik.solver for the drag (default: the add-on's)")
    p.add_argument("--shortcut", default="ctrl+shift+d")
    p.add_argument("--bind", default="auto", choices=("auto", "always", "never"),
                   help="add a keymap item for the drag: auto = only if the add-on has none")
    p.add_argument("--layout", default="maximized", choices=("maximized", "default"),
                   help="maximized: the 3D viewport fills the window (Ctrl+Space)")
    p.add_argument("--fill", type=float, default=0.7, help="rig height as a fraction of the viewport height")
    p.add_argument("--timeout", type=float, default=300.0, help="quit by itself after this many seconds")
    return p.parse_args(argv)


ARGS = parse_args()
# The operator the shortcut starts: the drag, or (motion mode) the interactive motion edit.
OPERATOR = "welman_ik.edit_motion" if ARGS.mode == "motion" else "welman_ik.drag"
WORKDIR = ARGS.workdir
common.prepare(WORKDIR)


def vec(v) -> list:
    return [float(x) for x in v]


# --------------------------------------------------------------------------- state


class State:
    step = "setup"
    obj = None
    window = None
    area = None
    region = None
    ui_region = None
    view_draws = 0  # draws of the 3D viewport's main region
    ui_draws = 0  # draws of the sidebar region
    probe_draws = 0  # draws of the probe panel: the add-on's tab is the one shown
    wait_from = 0
    wait_started = 0.0
    snapshot: dict = {}
    path_before = None
    hand_before = None
    obj_name = None
    tail_before = None
    pins_before: list = []  # the pins at ready, as pin_rows gives them
    rotation_before = None  # the dragged bone's world orientation at ready
    trunk_before: dict = {}  # the trunk's and the head's world orientations at ready
    pin_appeared = None  # pin-key mode: the pins and the bone's orientation when a new pin first showed
    first_start = None  # first mode: the pose's figures when the drag began from the sidebar's button
    watch = None  # first mode: the worst figures seen over the drag (see watch_drag)
    keymap: dict = {}
    ready: dict = {}
    next_request = 1
    reframe_request = None  # a "reframe" request being served
    pending = None  # (request, ui_draws, probe_draws, time) of a status request waiting for a redraw
    events: list = []
    statuses: list = []
    handles: list = []
    moves: list = []  # per MOUSEMOVE handled by the drag: perf_counter stamps (see time_mouse_events)
    overlay_draws: list = []  # ms of each call of the add-on's draw callback (see time_overlay_draw)
    overlay_in_draw = None  # [wall, thread CPU] ms of the add-on's draw callback so far in the viewport draw
    quitting = False


S = State()
world_side.bind(S)


# --------------------------------------------------------------------------- probes


class E2E_PT_probe(bpy.types.Panel):
    """Draws nothing; counts its draws, which happen only while its tab is the one shown."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = SIDEBAR_TAB
    bl_label = "E2E probe"
    bl_options = {"HIDE_HEADER"}
    bl_order = 10000

    def draw(self, context):
        S.probe_draws += 1


class E2E_OT_event_log(bpy.types.Operator):
    """Logs the window's mouse and key events as Blender sees them, and passes them on"""

    bl_idname = "e2e.event_log"
    bl_label = "E2E event log"

    def invoke(self, context, event):
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        logged = event.type in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"} or event.value in {"PRESS", "RELEASE"}
        if logged and len(S.events) < 20000:
            S.events.append({
                "t": round(time.time() - STARTED, 4), "type": event.type, "value": event.value,
                "x": event.mouse_x, "y": event.mouse_y, "ctrl": event.ctrl, "shift": event.shift,
            })
        return {"PASS_THROUGH"}


def _count_view_draw():
    S.view_draws += 1


def _count_ui_draw():
    S.ui_draws += 1


def _viewport_draw_begins():
    now = time.perf_counter()
    S.overlay_in_draw = [0.0, 0.0]
    for move in reversed(S.moves):  # the moves handled since the last draw: this draw shows them
        if move["draw_began"] is not None:
            break
        move["draw_began"] = now


def _viewport_draw_ends():
    now = time.perf_counter()
    overlay, S.overlay_in_draw = S.overlay_in_draw, None
    for move in reversed(S.moves):
        if move["drawn"] is not None:
            break
        if move["draw_began"] is not None:
            move["drawn"] = now
            move["overlay"], move["overlay_cpu"] = overlay if overlay is not None else (None, None)


def time_overlay_draw():
    """Wrap the add-on's viewport draw callback in its module, before the add-on registers
    (``overlay.register`` hands ``SpaceView3D.draw_handler_add`` the module's ``draw`` as it
    finds it then), so that every call is timed: its milliseconds go to ``S.overlay_draws`` and,
    within a viewport draw, onto that draw's sums of wall and thread CPU time
    (``S.overlay_in_draw``)."""
    if ARGS.root not in sys.path:
        sys.path.insert(0, ARGS.root)
    from welman_ik.blender.ui import overlay

    if getattr(overlay, "_handle", None) is not None:
        raise RuntimeError("the add-on's draw handler is already registered: its draw callback cannot be timed")
    draw = overlay.draw

    def timed_draw(*args):
        started, started_cpu = time.perf_counter(), time.thread_time()
        try:
            return draw(*args)
        finally:
            ms = 1000.0 * (time.perf_counter() - started)
            cpu_ms = 1000.0 * (time.thread_time() - started_cpu)
            if len(S.overlay_draws) < 100000:
                S.overlay_draws.append(ms)
            if S.overlay_in_draw is not None:
                S.overlay_in_draw[0] += ms
                S.overlay_in_draw[1] += cpu_ms

    timed_draw.__wrapped__ = draw
    overlay.draw = timed_draw


def time_mouse_events():
    """Wrap the interactive drag's ``modal`` (shared by the drag and the motion edit) so that
    each mouse move it handles is stamped on arrival and when handled; the viewport's draw
    handlers stamp the redraw that follows. Blender looks the method up on the class at each
    call, so the wrapper takes effect for every drag started from now on."""
    from welman_ik.blender.drag import operator

    modal = operator.ModalDrag.modal

    def timed_modal(self, context, event):
        if event.type != "MOUSEMOVE":
            return modal(self, context, event)
        arrived, arrived_cpu = time.perf_counter(), time.thread_time()
        try:
            return modal(self, context, event)
        finally:
            if len(S.moves) < 20000:
                S.moves.append({"arrived": arrived, "handled": time.perf_counter(), "draw_began": None,
                                "drawn": None, "overlay": None, "overlay_cpu": None,
                                "handler_cpu": 1000.0 * (time.thread_time() - arrived_cpu)})

    timed_modal.__wrapped__ = modal
    operator.ModalDrag.modal = timed_modal


def mouse_event_times() -> list:
    """Per timed mouse event [ms from its arrival in the modal handler]: ``handled`` (the
    operator's work: solve, write, depsgraph update), ``draw_began`` and ``drawn`` (the start
    and end of the viewport redraw after it, None when none came), ``overlay`` (the add-on's
    draw callback within that redraw [ms], None when none came), ``handler_cpu`` and
    ``overlay_cpu`` (the same two in the main thread's CPU time [ms]), and ``superseded``: the
    next event arrived before that redraw, so it showed the next event's pose as well."""
    rows = []
    for i, move in enumerate(S.moves):
        following = S.moves[i + 1]["arrived"] if i + 1 < len(S.moves) else math.inf

        def since(key, m=move):
            return None if m[key] is None else 1000.0 * (m[key] - m["arrived"])

        rows.append({"handled": since("handled"), "draw_began": since("draw_began"), "drawn": since("drawn"),
                     "overlay": move["overlay"], "handler_cpu": move["handler_cpu"],
                     "overlay_cpu": move["overlay_cpu"],
                     "superseded": move["drawn"] is not None and following < move["draw_began"]})
    return rows


# --------------------------------------------------------------------------- helpers


def find_view3d():
    S.window, S.area, S.region, S.ui_region = common.view3d()


def override():
    return bpy.context.temp_override(window=S.window, screen=S.window.screen, area=S.area, region=S.region)


def resolve(path: str):
    """The object at a dotted path such as ``package.module.NAME.attr``, or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is None:
            continue
        value = module
        for attr in parts[i:]:
            value = getattr(value, attr, None)
            if value is None:
                return None
        return value
    return None


def first_hook(paths):
    for path in paths:
        value = resolve(path)
        if value is not None:
            return path, value
    return None, None


def drag_running() -> bool | None:
    """True while a drag session runs, False between drags, None when ``SESSION_HOOK`` is
    not there (the driver counts that as a failure, not as either answer)."""
    owner_path, _, attr = SESSION_HOOK.rpartition(".")
    owner = resolve(owner_path)
    if owner is None or not hasattr(owner, attr):
        return None
    return getattr(owner, attr) is not None


def point_on_bone(obj, name: str, anchor: float) -> Vector:
    pb = obj.pose.bones[name]
    return obj.matrix_world @ (pb.head + anchor * (pb.tail - pb.head))


def action_fcurves(obj) -> list:
    try:  # the add-on's helper knows Blender 4.4+ channelbags
        from welman_ik.blender.rig import keyframes

        return list(keyframes.action_fcurves(obj))
    except (ImportError, AttributeError):
        ad = obj.animation_data
        if ad is None or ad.action is None:
            return []
        return list(getattr(ad.action, "fcurves", []))


def world_rotation(obj, name: str):
    """The pose bone's world orientation, a unit quaternion."""
    return (obj.matrix_world @ obj.pose.bones[name].matrix).to_quaternion().normalized()


def angle_deg(a, b) -> float:
    """The angle between two orientations (unit quaternions, either sign), degrees."""
    dot = abs(sum(x * y for x, y in zip(a, b)))
    return math.degrees(2.0 * math.acos(min(1.0, dot)))


def pin_rows(obj) -> list:
    return [{"bone": p.bone, "kind": p.kind, "enabled": p.enabled, "anchor": p.anchor, "location": vec(p.location),
             "rotation": vec(p.rotation)} for p in obj.welman_ik.pins]


def watch_pins():
    """pin-key mode, from the timer: the first time a pin is added, keep the pins and the
    dragged bone's world orientation (the pose of the key press: nothing solves between
    the key and the next mouse move)."""
    if ARGS.mode != "pin-key" or S.pin_appeared is not None or S.obj_name is None:
        return
    obj = bpy.data.objects[S.obj_name]
    if len(obj.welman_ik.pins) > len(S.pins_before):
        S.pin_appeared = {"t": time.time() - STARTED, "pins": pin_rows(obj),
                          "rotation": vec(world_rotation(obj, ARGS.bone)), "drag_running": drag_running()}


def hovered_bone(obj, mouse_window) -> str | None:
    """The add-on's pick of the bone under a window position in the viewport ('' for none)."""
    from welman_ik.blender.drag import viewport

    mouse = (mouse_window[0] - S.region.x, mouse_window[1] - S.region.y)
    return viewport.bone_under_mouse(S.region, S.area.spaces.active.region_3d, obj, mouse)


def region_point(region, rv3d, world) -> list | None:
    p = view3d_utils.location_3d_to_region_2d(region, rv3d, world)
    return None if p is None else [float(p.x), float(p.y)]


def rect(r) -> dict:
    return {"x": r.x, "y": r.y, "width": r.width, "height": r.height}


def parse_shortcut(text: str) -> dict:
    words = [w.strip().lower() for w in text.split("+") if w.strip()]
    spec = {"value": "PRESS"}
    for word in words[:-1]:
        if word not in MODIFIERS:
            raise ValueError(f"unknown modifier {word!r} in shortcut {text!r}")
        spec[MODIFIERS[word]] = True
    key = words[-1]
    spec["type"] = KEY_NAMES.get(key, key.upper())
    return spec


def describe(kmi) -> str:
    mods = [m for m in ("ctrl", "shift", "alt", "oskey") if getattr(kmi, m)]
    return "+".join(mods + [kmi.type])


def setup_keymap() -> dict:
    wm = bpy.context.window_manager
    found = []
    for kc_name in ("addon", "user"):
        kc = getattr(wm.keyconfigs, kc_name)
        if kc is None:
            continue
        for km in kc.keymaps:
            for kmi in km.keymap_items:
                if kmi.idname == OPERATOR and kmi.active:
                    found.append({"keyconfig": kc_name, "keymap": km.name, "shortcut": describe(kmi)})
    wanted = parse_shortcut(ARGS.shortcut)
    bound = False
    if ARGS.bind == "always" or (ARGS.bind == "auto" and not found):
        km = wm.keyconfigs.addon.keymaps.new(name="Pose", space_type="EMPTY")
        km.keymap_items.new(OPERATOR, **wanted)
        bound = True
    wanted_text = "+".join([m for m in ("ctrl", "shift", "alt", "oskey") if wanted.get(m)] + [wanted["type"]])
    return {"found": found, "bound_by_harness": bound, "shortcut": wanted_text,
            "shortcut_in_addon": any(f["shortcut"] == wanted_text for f in found)}


# --------------------------------------------------------------------------- steps


def step_setup():
    find_view3d()
    for callback, region_type in ((_count_view_draw, "WINDOW"), (_count_ui_draw, "UI")):
        handle = bpy.types.SpaceView3D.draw_handler_add(callback, (), region_type, "POST_PIXEL")
        S.handles.append((handle, region_type))
    time_overlay_draw()
    common.load_addon(ARGS.root)
    time_mouse_events()
    for callback, kind in ((_viewport_draw_begins, "PRE_VIEW"), (_viewport_draw_ends, "POST_PIXEL")):
        S.handles.append((bpy.types.SpaceView3D.draw_handler_add(callback, (), "WINDOW", kind), "WINDOW"))
    bpy.utils.register_class(E2E_PT_probe)
    bpy.utils.register_class(E2E_OT_event_log)
    S.keymap = setup_keymap()
    with override():
        obj = common.new_metarig()
        pins = [p for p in ARGS.pins.split(",") if p]
        for pb in obj.pose.bones:
            pb.bone.select = pb.name in pins
        if pins and bpy.ops.welman_ik.pin() != {"FINISHED"}:
            raise RuntimeError("welman_ik.pin() did not finish")
        if ARGS.mode == "motion":
            animate(obj)
        for pb in obj.pose.bones:
            pb.bone.select = pb.name == ARGS.bone
        obj.data.bones.active = obj.data.bones[ARGS.bone]
        if ARGS.mode == "world":  # the Cup at the right hand
            world_side.setup(obj)
    if ARGS.solver:
        obj.welman_ik.solver = ARGS.solver
    S.obj = obj
    S.obj_name = obj.name
    if ARGS.layout == "maximized":
        with override():
            bpy.ops.screen.screen_full_area()
        find_view3d()
    space = S.area.spaces.active
    space.show_region_ui = True
    space.show_region_toolbar = True
    with override():
        bpy.ops.view3d.view_axis(type="FRONT")
    rv3d = space.region_3d
    rv3d.view_perspective = "ORTHO"
    lo, hi = rig_bounds(obj)
    rv3d.view_location = (lo + hi) / 2
    rv3d.view_distance = 3.0
    with override():  # a pass-through logger of what the window receives
        bpy.ops.e2e.event_log("INVOKE_DEFAULT")
    return wait_draw("frame")


def animate(obj):
    """Welman's Fig 6.5: the whole pose keyed at rest and with the pelvis 0.25 m lower (the
    feet pinned), then the edited frame between them made current."""
    common.key_squats(obj, MOTION_KEYS)
    obj.welman_ik.motion_falloff = MOTION_FALLOFF
    bpy.context.scene.frame_set(MOTION_FRAME)


def motion_path(obj) -> dict:
    """The dragged point on every frame of the keyed range (the current frame is kept)."""
    scene = bpy.context.scene
    current = scene.frame_current
    path = {}
    for frame in range(MOTION_KEYS[0], MOTION_KEYS[-1] + 1):
        scene.frame_set(frame)
        path[frame] = point_on_bone(obj, ARGS.bone, ARGS.anchor)
    scene.frame_set(current)
    return path


def rig_bounds(obj):
    bpy.context.view_layer.update()
    points = [obj.matrix_world @ p for pb in obj.pose.bones for p in (pb.head, pb.tail)]
    lo = Vector([min(p[i] for p in points) for i in range(3)])
    hi = Vector([max(p[i] for p in points) for i in range(3)])
    return lo, hi


def wait_draw(next_step):
    """Redraw the viewport, then go to ``next_step`` once it has drawn twice (the projection
    matrices ``location_3d_to_region_2d`` uses are updated by drawing)."""
    S.wait_from = S.view_draws
    S.wait_started = time.time()
    S.area.tag_redraw()
    S.step = ("wait", next_step)


def step_frame(final: bool):
    """Scale and shift the view so the rig fills ``--fill`` of the height, centred in the part
    of the viewport the sidebar and toolbar leave free."""
    space = S.area.spaces.active
    rv3d = space.region_3d
    lo, hi = rig_bounds(S.obj)
    mid_x = (lo.x + hi.x) / 2
    bottom = region_point(S.region, rv3d, Vector((mid_x, lo.y, lo.z)))
    top = region_point(S.region, rv3d, Vector((mid_x, lo.y, hi.z)))
    height_px = top[1] - bottom[1]
    if height_px <= 0:
        raise RuntimeError(f"the view is not a front view: rig projects from {bottom} to {top}")
    ppm = height_px / (hi.z - lo.z)
    if final:
        return ppm
    desired = ARGS.fill * S.region.height
    rv3d.view_distance *= height_px / desired
    ppm *= desired / height_px
    left = next((r.width for r in S.area.regions if r.type == "TOOLS"), 0)
    right = S.ui_region.width if S.ui_region is not None and S.area.spaces.active.show_region_ui else 0
    free_centre = (left + S.region.width - right) / 2
    shift_px = S.region.width / 2 - free_centre  # > 0: the rig must appear left of centre
    rv3d.view_location = ((lo + hi) / 2) + Vector((shift_px / ppm, 0.0, 0.0))
    return None


def step_ready():
    ppm = step_frame(final=True)
    rv3d = S.area.spaces.active.region_3d
    obj = S.obj
    bpy.context.view_layer.update()
    # The scene was built by this script: make it an undo step of its own, so that undoing
    # the drag returns to it (and not to the startup file).
    with override():
        bpy.ops.ed.undo_push(message="Welman IK e2e scene")
    S.snapshot = common.pose_snapshot(obj)
    S.path_before = motion_path(obj) if ARGS.mode == "motion" else None
    S.hand_before = point_on_bone(obj, ARGS.bone, ARGS.anchor)
    S.tail_before = point_on_bone(obj, ARGS.bone, 1.0)
    S.pins_before = pin_rows(obj)
    S.rotation_before = world_rotation(obj, ARGS.bone)
    S.trunk_before = {name: world_rotation(obj, name) for name in TRUNK + (HEAD,) if name in obj.pose.bones}
    hand_region = region_point(S.region, rv3d, S.hand_before)
    if hand_region is None:
        raise RuntimeError("the dragged bone is behind the view")
    hand_window = [S.region.x + hand_region[0], S.region.y + hand_region[1]]
    inside = 0 <= hand_region[0] < S.region.width and 0 <= hand_region[1] < S.region.height
    ui = S.ui_region
    started = time.perf_counter()
    with bpy.context.temp_override(window=S.window):
        bpy.ops.wm.redraw_timer(type="DRAW_WIN_SWAP", iterations=3)
    redraw_ms = (time.perf_counter() - started) * 1000.0 / 3
    S.ready = {
        "blender_version": bpy.app.version_string,
        "window": {"x": S.window.x, "y": S.window.y, "width": S.window.width, "height": S.window.height},
        "region": rect(S.region),
        "ui_region": rect(ui) if ui is not None else None,
        "sidebar_centre_window": [ui.x + ui.width / 2, ui.y + ui.height / 2] if ui is not None else None,
        # The tab strip runs down the sidebar's right edge, about 20 pixels wide.
        "sidebar_tabs_window": [ui.x + ui.width - 8, ui.y + ui.height - 60] if ui is not None else None,
        "bone": ARGS.bone,
        "anchor": ARGS.anchor,
        "hand_world": vec(S.hand_before),
        "hand_region": hand_region,
        "hand_window": hand_window,
        "hand_inside_region": inside,
        "pixels_per_metre": ppm,
        "window_redraw_ms": redraw_ms,
        "view": {"perspective": rv3d.view_perspective, "distance": rv3d.view_distance,
                 "location": vec(rv3d.view_location), "rotation": vec(rv3d.view_rotation)},
        "keymap": S.keymap,
        "pins": [{"bone": p.bone, "anchor": p.anchor, "location": vec(p.location)} for p in obj.welman_ik.pins],
        "solver": obj.welman_ik.solver,
        "mode": obj.mode,
        "active_bone": obj.data.bones.active.name if obj.data.bones.active else None,
        "selected_bones": sorted(b.name for b in obj.data.bones if b.select),
        "seconds_to_ready": time.time() - STARTED,
    }
    if S.reframe_request is None:
        write_json("ready.json", S.ready)
    else:  # a reframe asked for by the driver (after it resized the sidebar)
        write_json(f"reply_{S.reframe_request['id']}.json", S.ready)
        S.reframe_request = None
        S.next_request += 1
    S.step = "serve"


def status(request) -> dict:
    obj = S.obj = bpy.data.objects[S.obj_name]  # undo replaces the data-blocks
    moves = [e for e in S.events if e["type"] in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}]
    extra = {}
    if request.get("mouse_window") is not None:  # the driver's pointer: the bone a key would pin
        extra = {"mouse_window": request["mouse_window"], "bone_under_mouse": hovered_bone(obj, request["mouse_window"]),
                 "pins": pin_rows(obj), "bone_rotation": vec(world_rotation(obj, ARGS.bone))}
    return {
        "t": time.time() - STARTED,
        "mode": obj.mode,
        "active_bone": obj.data.bones.active.name if obj.data.bones.active else None,
        "drag_running": drag_running(),
        "changed_bones": common.changed_bones(S.snapshot, obj),
        "events": len(S.events),
        "last_mouse": [moves[-1]["x"], moves[-1]["y"]] if moves else None,
        "ui_region": rect(S.ui_region) if S.ui_region is not None else None,
        "probe_draws": S.probe_draws,
        "ui_draws": S.ui_draws,
        "view_draws": S.view_draws,
        **extra,
        **({"first": first_status(obj)} if S.first_start is not None else {}),
    }


def result(request) -> dict:
    obj = S.obj = bpy.data.objects[S.obj_name]  # undo replaces the data-blocks
    bpy.context.view_layer.update()
    rv3d = S.area.spaces.active.region_3d
    hand_after = point_on_bone(obj, ARGS.bone, ARGS.anchor)
    tail_after = point_on_bone(obj, ARGS.bone, 1.0)
    out = {
        "mode": ARGS.mode,
        "blender_version": bpy.app.version_string,
        "bone": ARGS.bone,
        "anchor": ARGS.anchor,
        "hand_before": vec(S.hand_before),
        "hand_after": vec(hand_after),
        "hand_tail_before": vec(S.tail_before),
        "hand_tail_after": vec(tail_after),
        "hand_moved_m": (hand_after - S.hand_before).length,
    }
    cursor = request.get("cursor_window")
    if cursor is not None:
        mouse = (cursor[0] - S.region.x, cursor[1] - S.region.y)
        origin = view3d_utils.region_2d_to_origin_3d(S.region, rv3d, mouse)
        direction = view3d_utils.region_2d_to_vector_3d(S.region, rv3d, mouse).normalized()

        def to_ray(p):
            t = max(0.0, (p - origin).dot(direction))
            return (origin + t * direction - p).length

        out["cursor"] = {"window": list(cursor), "region": list(mouse), "ray_origin": vec(origin),
                         "ray_direction": vec(direction)}
        out["distance_to_cursor_ray_before"] = to_ray(S.hand_before)
        out["distance_to_cursor_ray_after"] = to_ray(hand_after)
    pins = {}
    for p in obj.welman_ik.pins:  # the points held (a pin-key mode's orientation pin holds no point)
        if p.bone in obj.pose.bones and p.kind in {"POSITION", "POSE"}:
            point = point_on_bone(obj, p.bone, p.anchor)
            pins[p.bone] = {"goal": vec(p.location), "point": vec(point),
                            "error": (point - Vector(p.location)).length, "enabled": p.enabled}
    out["pins"] = pins
    out["max_pin_error"] = max((v["error"] for v in pins.values() if v["enabled"]), default=None)
    out["pins_before"] = S.pins_before
    out["pin_list"] = pin_rows(obj)
    rotation = world_rotation(obj, ARGS.bone)
    out["bone_rotation_before"] = vec(S.rotation_before)
    out["bone_rotation_after"] = vec(rotation)
    out["bone_turned_deg"] = angle_deg(S.rotation_before, rotation)
    # The trunk (pelvis to neck) and the head: how far each turned in the world.
    turned = {name: angle_deg(before, world_rotation(obj, name)) for name, before in S.trunk_before.items()}
    out["trunk_turned_deg"] = max((turned[n] for n in TRUNK if n in turned), default=0.0)
    out["head_turned_deg"] = turned.get(HEAD, 0.0)
    # Each orientation pin on the dragged bone: how far the bone turned from the pin's goal.
    out["orientation_pin_angles_deg"] = [angle_deg(p.rotation, rotation) for p in obj.welman_ik.pins
                                         if p.kind == "ORIENTATION" and p.bone == ARGS.bone]
    if S.pin_appeared is not None:
        out["pin_appeared"] = {**S.pin_appeared,
                               "angle_to_final_deg": angle_deg(S.pin_appeared["rotation"], rotation)}
    frame = bpy.context.scene.frame_current
    fcurves = action_fcurves(obj)
    at_frame = [fc for fc in fcurves if any(abs(k.co[0] - frame) < 1e-6 for k in fc.keyframe_points)]
    out["frame_current"] = frame
    out["has_action"] = bool(obj.animation_data and obj.animation_data.action)
    out["fcurve_count"] = len(fcurves)
    out["key_count"] = sum(len(fc.keyframe_points) for fc in fcurves)
    out["keys_at_current_frame"] = sorted(f"{fc.data_path}[{fc.array_index}]" for fc in at_frame)
    out["keyed_bones_at_current_frame"] = sorted(
        {fc.data_path.split('"')[1] for fc in at_frame if fc.data_path.startswith("pose.bones[")})
    out["changed_bones"] = common.changed_bones(S.snapshot, obj)
    out["pose_identical"] = not out["changed_bones"]
    out["drag_running_at_finish"] = drag_running()
    if S.path_before is not None:  # how far the edit moved the dragged point on each frame
        after = motion_path(obj)
        out["motion"] = {"frame": MOTION_FRAME, "falloff": MOTION_FALLOFF,
                         "moved_m": {f: (after[f] - S.path_before[f]).length for f in after}}
    path, latencies = first_hook(LATENCY_HOOKS)
    out["latency_source"] = path
    out["latencies_ms"] = [float(v) for v in latencies] if latencies is not None else None
    out["mouse_events"] = mouse_event_times()
    out["overlay_draws"] = S.overlay_draws
    try:
        import gpu

        out["gl_renderer"] = f"{gpu.platform.vendor_get()} {gpu.platform.renderer_get()}"
    except (ImportError, AttributeError, RuntimeError):
        out["gl_renderer"] = None
    ls = obj.welman_ik.last_solve
    out["last_solve"] = {k: getattr(ls, k) for k in ("iterations", "drag_error", "max_pin_error", "milliseconds",
                                                     "converged") if hasattr(ls, k)}
    out["solver"] = obj.welman_ik.solver
    out["first_watch"] = S.watch
    out["obj_mode"] = obj.mode
    out["keymap"] = S.keymap
    out["events"] = S.events
    out["statuses"] = S.statuses
    out["seconds_alive"] = time.time() - STARTED
    return out


def marker_points(obj) -> list:
    """Window coordinates of each pin's marker (its goal point)."""
    rv3d = S.area.spaces.active.region_3d
    out = []
    for p in obj.welman_ik.pins:
        point = region_point(S.region, rv3d, Vector(p.location))
        if point is not None:
            out.append({"bone": p.bone, "window": [S.region.x + point[0], S.region.y + point[1]]})
    return out


def peek() -> dict:
    obj = S.obj = bpy.data.objects[S.obj_name]
    from welman_ik.blender.ui import panel

    offer = panel.ranges_offer(obj)
    naming, count = offer if isinstance(offer, tuple) else (offer, None)
    return {"view_draws": S.view_draws, "ui_draws": S.ui_draws, "pins": len(obj.welman_ik.pins),
            "pin_rows": pin_rows(obj), "active_bone": obj.data.bones.active.name if obj.data.bones.active else None,
            "selected_bones": sorted(b.name for b in obj.data.bones if b.select),
            "markers": marker_points(obj), "ranges_offer": [naming, count],
            "region": rect(S.region), "ui_region": rect(S.ui_region) if S.ui_region is not None else None}


def run_op(request) -> dict:
    """What a button or a script does, through the add-on's operators from this timer, the way a
    script runs them. Nothing here tags a redraw; whether the viewport redraws is the add-on's
    doing (but for 'frame', which sets the scene's frame as the timeline does). Panel mode:
    'select' bones (``bones``; the first made active), 'clear' the pins, or 'pin' the selected
    bones (``kind``, the sidebar's + button: POSE). First mode: 'drag_button' (the sidebar's Drag
    button), 'reach' (where the far reach's goal is), 'keys' (the bones keyed at the frame),
    'last_solve' (the Last Solve panel's labels), 'idle_pins' (pins with frames, off their
    bones), 'frame' (the scene's frame to ``frame``)."""
    obj = S.obj = bpy.data.objects[S.obj_name]
    before = {"view_draws": S.view_draws, "markers": marker_points(obj)}
    op = request.get("op")
    result = None
    if op in FIRST_OPS:
        result = FIRST_OPS[op](obj, request)
        return {"op": op, "result": result, "before": before, "after": peek()}
    with override():
        if op == "select":
            names = request.get("bones") or []
            for pb in obj.pose.bones:
                pb.bone.select = pb.name in names
            if names:
                obj.data.bones.active = obj.data.bones[names[0]]
        elif op == "clear":
            result = sorted(bpy.ops.welman_ik.clear_pins())
        elif op == "pin":
            result = sorted(bpy.ops.welman_ik.pin(kind=request.get("kind") or "POSITION"))
        else:
            raise ValueError(f"unknown op {op!r}")
    return {"op": op, "result": result, "before": before, "after": peek()}


# --------------------------------------------------------------------------- first mode


def window_point(world) -> list | None:
    """Window coordinates of a world point in the main region (None behind the view)."""
    p = region_point(S.region, S.area.spaces.active.region_3d, Vector(world))
    return None if p is None else [S.region.x + p[0], S.region.y + p[1]]


def world_point(obj, name: str, anchor: float) -> Vector:
    return point_on_bone(obj, name, anchor)


def lean_deg(obj) -> float:
    """The trunk's lean: the line from the pelvis (spine's head) to the chest (spine.004's
    head), its angle from +Z [deg]."""
    line = world_point(obj, LEAN[1], 0.0) - world_point(obj, LEAN[0], 0.0)
    return math.degrees(math.acos(max(-1.0, min(1.0, line.z / max(line.length, 1e-12)))))


def feet_figures(obj) -> dict:
    """The feet's world orientations, the heels' and toes' heights [m], and the trunk's lean."""
    return {"rotations": {n: world_rotation(obj, n) for n in FEET},
            "heels": {n: world_point(obj, n, 0.0).z for n in FEET},
            "toes": {n: world_point(obj, n, 1.0).z for n in TOES},
            "lean": lean_deg(obj)}


def watch_drag(force: bool = False) -> None:
    """First mode, from the timer and each status: while the drag from the sidebar runs, the
    worst figures so far: the largest turn of a foot from the drag's start [deg], the lowest
    heel and toe relative to their start [m], the largest lean of the trunk [deg]."""
    w = S.watch
    if w is None or S.obj_name is None or not (force or w["active"]):
        return
    obj = bpy.data.objects[S.obj_name]
    running = drag_running()
    if running is False and not force:
        w["active"] = False  # the drag ended: the last sample was its last pose
        return
    start, now = S.first_start["feet"], feet_figures(obj)
    turn = {n: angle_deg(start["rotations"][n], now["rotations"][n]) for n in FEET}
    heel = {n: now["heels"][n] - start["heels"][n] for n in FEET}
    toe = {n: now["toes"][n] - start["toes"][n] for n in TOES}
    w["samples"] += 1
    for n in FEET:
        w["foot_turn_deg"][n] = max(w["foot_turn_deg"][n], turn[n])
        w["heel_drop_m"][n] = min(w["heel_drop_m"][n], heel[n])
    for n in TOES:
        w["toe_drop_m"][n] = min(w["toe_drop_m"][n], toe[n])
    w["lean_deg"] = max(w["lean_deg"], now["lean"])


def first_status(obj) -> dict:
    """First mode, in each status reply: the hand's tail in the window, the trunk's turn since
    the drag began, the drag's goal in the window, and the worst figures watched so far."""
    watch_drag(force=S.watch is not None and S.watch["active"])
    start = S.first_start
    trunk = {n: angle_deg(start["trunk"][n], world_rotation(obj, n)) for n in TRUNK if n in start["trunk"]}
    session = resolve("welman_ik.blender.drag.state.DRAG_STATE.session")
    goal = None if session is None or session.goal is None else [float(v) for v in session.goal]
    return {"hand_window": window_point(world_point(obj, ARGS.bone, 1.0)),
            "hand_start_window": start["hand_window"],
            "trunk_turned_deg": max(trunk.values(), default=0.0),
            "lean_deg": lean_deg(obj), "lean_start_deg": start["feet"]["lean"],
            "goal": goal, "goal_window": None if goal is None else window_point(goal),
            "watch": S.watch}


def op_drag_button(obj, request) -> dict:
    """The sidebar's Drag button: the drag invoked with the sidebar as the context's region
    (the operator drags the active bone in the area's main region), the pointer wherever it is.
    The pose's figures are kept first, and the watch begins."""
    bpy.context.view_layer.update()
    S.first_start = {"trunk": {n: world_rotation(obj, n) for n in TRUNK + (HEAD,) if n in obj.pose.bones},
                     "feet": feet_figures(obj), "pelvis": world_point(obj, LEAN[0], 0.0),
                     "hand_window": window_point(world_point(obj, ARGS.bone, 1.0))}
    S.watch = {"active": True, "samples": 0, "foot_turn_deg": {n: 0.0 for n in FEET},
               "heel_drop_m": {n: 0.0 for n in FEET}, "toe_drop_m": {n: 0.0 for n in TOES},
               "lean_deg": S.first_start["feet"]["lean"], "lean_start_deg": S.first_start["feet"]["lean"]}
    if S.ui_region is None:
        raise RuntimeError("the 3D viewport has no sidebar region")
    head_window = window_point(world_point(obj, HEAD, 1.0))
    with bpy.context.temp_override(window=S.window, screen=S.window.screen, area=S.area, region=S.ui_region):
        outcome = sorted(bpy.ops.welman_ik.drag("INVOKE_DEFAULT"))
    moves = [e for e in S.events if e["type"] in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}]
    return {"outcome": outcome, "drag_running": drag_running(), "hand_window": S.first_start["hand_window"],
            "head_window": head_window,
            "last_mouse": [moves[-1]["x"], moves[-1]["y"]] if moves else None}


def op_reach(obj, request) -> dict:
    """Where the far reach's goal is: 40 cm past the arm's reach from the shoulder, up and out
    (-X is the metarig's right, +Z up, in the front view), in the world and the window; with
    the drag's goal now and the hand's tail in the window."""
    bpy.context.view_layer.update()
    shoulder = world_point(obj, ARM[0], 0.0)
    reach = sum(obj.pose.bones[n].length for n in ARM)
    out = Vector((-1.0, 0.0, 1.0)).normalized()
    target = shoulder + (reach + 0.4) * out
    session = resolve("welman_ik.blender.drag.state.DRAG_STATE.session")
    goal = None if session is None or session.goal is None else Vector([float(v) for v in session.goal])
    if goal is None and session is not None:
        goal = Vector([float(v) for v in session.effector()])
    return {"shoulder": vec(shoulder), "reach_m": reach, "target": vec(target), "target_window": window_point(target),
            "goal": None if goal is None else vec(goal), "goal_window": None if goal is None else window_point(goal),
            "hand_window": window_point(world_point(obj, ARGS.bone, 1.0)),
            "pixels_per_metre": S.ready.get("pixels_per_metre")}


def op_keys(obj, request) -> dict:
    """The bones keyed at the scene's frame, and the worst figures the drag's watch saw."""
    watch_drag(force=False)
    frame = bpy.context.scene.frame_current
    at_frame = [fc for fc in action_fcurves(obj) if any(abs(k.co[0] - frame) < 1e-6 for k in fc.keyframe_points)]
    return {"frame": frame, "keyed_bones": sorted({fc.data_path.split('"')[1] for fc in at_frame
                                                   if fc.data_path.startswith("pose.bones[")}),
            "changed_bones": common.changed_bones(S.snapshot, obj), "changed_by": changed_by(obj), "watch": S.watch,
            "pelvis_moved_m": (world_point(obj, LEAN[0], 0.0) - S.first_start["pelvis"]).length,
            "pelvis_turned_deg": angle_deg(S.first_start["trunk"][LEAN[0]], world_rotation(obj, LEAN[0])),
            "drag_running": drag_running()}


def changed_by(obj) -> dict:
    """Per bone whose channels changed since ready: the largest change of any channel value."""
    now = common.pose_snapshot(obj)
    out = {}
    for name, before in S.snapshot.items():
        diffs = [abs(a - b) for old, new in zip(before[1:], now[name][1:]) for a, b in zip(old, new)]
        if max(diffs, default=0.0) > 0.0:
            out[name] = max(diffs)
    return out


class RecordingLayout:
    """Stands in for a UILayout (as tests/blender/test_panel_words.py's does): records the text
    of every label drawn; every other call gives another recording layout."""

    def __init__(self, log: list):
        self.log = log

    def __getattr__(self, name):  # row, column, box, split, separator, prop, operator, ...
        return lambda *args, **kwargs: RecordingLayout(self.log)

    def label(self, text="", **kwargs):
        self.log.append(text)


def op_last_solve(obj, request) -> dict:
    """The labels the add-on's Last Solve sub-panel draws now, in order."""
    import types

    from welman_ik.blender.ui import panel

    log: list = []
    fake = types.SimpleNamespace(layout=RecordingLayout(log))
    with bpy.context.temp_override(window=S.window, screen=S.window.screen, area=S.area, region=S.ui_region):
        panel.WELMAN_IK_PT_last_solve.draw(fake, bpy.context)
    ls = obj.welman_ik.last_solve
    return {"labels": log, "last_solve": {k: getattr(ls, k) for k in ("operation", "iterations", "drag_error",
                                                                      "max_pin_error", "milliseconds", "converged")
                                          if hasattr(ls, k)}}


def op_idle_pins(obj, request) -> dict:
    """Position pins at the tails of ``IDLE_PINS``' bones, each put its offset off the bone, in
    force on ``IDLE_FRAMES`` only (the scene's frame outside them); the pins list's detail of
    each (the add-on's ``pin_detail``)."""
    pins = obj.welman_ik.pins
    added = []
    for name, offset in IDLE_PINS:
        for pb in obj.pose.bones:
            pb.bone.select = pb.name == name
        obj.data.bones.active = obj.data.bones[name]
        with override():
            if bpy.ops.welman_ik.pin(kind="POSITION", anchor=1.0) != {"FINISHED"}:
                raise RuntimeError(f"welman_ik.pin() on {name} did not finish")
        pin = pins[len(pins) - 1]
        pin.frame_start, pin.frame_end = IDLE_FRAMES
        pin.location = Vector(pin.location) + Vector(offset)
        added.append(len(pins) - 1)
    return {"added": added, "frame": bpy.context.scene.frame_current, "pins": first_pin_rows(obj)}


def first_pin_rows(obj) -> list:
    try:
        from welman_ik.blender.ui import pin_list
    except ImportError:  # (an add-on from before the pins list showed frames: pictures of how it was)
        pin_list = None
    frame = bpy.context.scene.frame_current
    return [{"bone": p.bone, "kind": p.kind, "anchor": p.anchor, "frames": [p.frame_start, p.frame_end],
             "detail": pin_list.pin_detail(p) if pin_list else "",
             "in_force": pin_list.in_force(p, frame) if pin_list else True,
             "window": window_point(p.location)} for p in obj.welman_ik.pins]


def op_frame(obj, request) -> dict:
    """The scene's frame set as the timeline sets it."""
    bpy.context.scene.frame_set(int(request["frame"]))
    return {"frame": bpy.context.scene.frame_current, "pins": first_pin_rows(obj)}


FIRST_OPS = {"drag_button": op_drag_button, "reach": op_reach, "keys": op_keys, "last_solve": op_last_solve,
             "idle_pins": op_idle_pins, "frame": op_frame, **world_side.OPS}


def serve():
    """Answer the driver's next request, if any."""
    if S.pending is not None:
        request, ui_draws, probe_draws, asked = S.pending
        if S.ui_draws > ui_draws or time.time() - asked > 2.0:  # the sidebar has redrawn (or never will)
            reply = status(request)
            reply["sidebar_redrawn"] = S.ui_draws > ui_draws
            reply["welman_tab_active"] = S.probe_draws > probe_draws
            S.statuses.append({"label": request.get("label"), **reply})
            write_json(f"reply_{request['id']}.json", reply)
            S.pending = None
            S.next_request += 1
        return
    request = common.read_request(S.next_request)
    if request is None:
        return
    cmd = request.get("cmd")
    if cmd == "status":
        S.pending = (request, S.ui_draws, S.probe_draws, time.time())
        if S.ui_region is not None:
            S.ui_region.tag_redraw()
        S.area.tag_redraw()
    elif cmd == "peek":  # the counters and the pins' markers, without asking for a redraw
        write_json(f"reply_{request['id']}.json", peek())
        S.next_request += 1
    elif cmd == "op":  # panel mode: what a button does, run as a script runs it (nothing here redraws)
        write_json(f"reply_{request['id']}.json", run_op(request))
        S.next_request += 1
    elif cmd == "reframe":
        S.reframe_request = request
        S.step = "frame"
    elif cmd == "finish":
        out = result(request)
        write_json("result.json", out)
        write_json(f"reply_{request['id']}.json", {"ok": True})
        S.next_request += 1
        quit_blender()
    else:
        write_json(f"reply_{request['id']}.json", {"error": f"unknown command {cmd!r}"})
        S.next_request += 1


def quit_blender():
    S.quitting = True
    for handle, region_type in S.handles:
        bpy.types.SpaceView3D.draw_handler_remove(handle, region_type)
    S.handles.clear()
    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        bpy.ops.wm.quit_blender()


def tick():
    if S.quitting:
        return None
    try:
        if time.time() - STARTED > ARGS.timeout:
            raise TimeoutError(f"no 'finish' from the driver within {ARGS.timeout} s")
        step = S.step
        if step == "setup":
            step_setup()
        elif isinstance(step, tuple) and step[0] == "wait":
            if S.view_draws >= S.wait_from + 2:
                S.step = step[1]
            elif time.time() - S.wait_started > 30.0:
                raise TimeoutError("the 3D viewport did not redraw within 30 s")
            else:
                S.area.tag_redraw()
        elif step == "frame":
            step_frame(final=False)
            wait_draw("ready")
        elif step == "ready":
            step_ready()
        elif step == "serve":
            watch_pins()
            watch_drag()
            serve()
    except Exception:  # noqa: BLE001 - any failure is written for the driver, then Blender quits
        common.fail(S.step, quit_blender)
        return None
    return 0.05


bpy.app.timers.register(tick, first_interval=0.2)
print(f"E2E blender side: Blender {bpy.app.version_string}, mode {ARGS.mode}, workdir {WORKDIR}", flush=True)
