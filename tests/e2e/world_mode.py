"""E2E, the ``world`` mode (pins on the world, issue 39): what a person does in the window to pin
a hand to a cup and carry the cup. Called by ``run_e2e.py`` once the window is ready and the
sidebar shows the Welman IK tab; ``world_side.py`` is its Blender side (the Empty "Cup" at the
right hand; the ops that look).

1. The sidebar's buttons found: the pointer moved down the column of buttons beside the pins
   list, asking at each step which operator the button under it runs (Copy Python Command).
   Pin To is greyed out while no other object is selected (its icon's pixels, against the same
   icon once the Cup is selected).
2. Object Mode (Ctrl+Tab), the Cup Shift+clicked, then the armature Shift+clicked (active again),
   Pose Mode (Ctrl+Tab), hand.R clicked: the Cup stays selected. Pin To clicked. Checks: a pin
   on hand.R following the Cup, the hand where it was. Screenshot (the faint tether from the
   hand's goal to the Cup's origin).
3. Object Mode, the Cup clicked and moved with G Z 0.17 Enter; the armature clicked, Pose Mode;
   hand.L clicked, the sidebar's Drag Active Bone clicked, the pointer moved a little, a click
   confirms. Checks: hand.R's tail within 1 mm of its place on the Cup (the pin's goal in the
   world, ``rig.targets.world_fields``, against the evaluated tail), the pins list row
   "hand.R → Cup". Screenshots before the drag (the goal on the moved Cup, tethered) and after.
"""

from __future__ import annotations

import math
import time

HAND, OTHER, BODY, CUP = "hand.R", "hand.L", "spine.002", "Cup"  # (world_side.py's)
CUP_MOVE_KEYS = ("g", "z", "0", "period", "1", "7", "Return")  # G, Z, 0.17 typed, Enter: the Cup 17 cm up
CUP_MOVE_M = (0.15, 0.20)  # how far the Cup must have moved [m]
FOLLOW_TOLERANCE_M = 1e-3  # hand.R's tail from its place on the Cup after the drag
STILL_M = 1e-6  # hand.R's move on Pin To (nothing solves)
COLUMN_INSET_PX = 49  # the pins list's column of buttons from the sidebar's right edge (Blender 3.4, scale 1)
SCAN_STEP_PX = 16  # the pointer's step down that column (the buttons are 20 px high) ...
REFINE_PX = (-8, -4, 4, 8)  # ... and around a button found, for its middle
ICON_HALF = 7  # pixels either side of a button's middle that make its icon
GREYED_MARGIN = 40  # how much brighter (0-255) an enabled icon's brightest pixels are than the greyed one's
DRAG_STEPS, DRAG_STEP_PX = 10, 3  # the pointer's move after the Drag button (down the screen)
REDRAW_S = 1.5  # for the viewport to redraw in software GL before a screenshot
LOG_OVERLAY = "Welman IK overlay:"  # what the overlay prints (once) when its draw fails
PIN_TO = "bpy.ops.welman_ik.pin_to()"
DRAG = "bpy.ops.welman_ik.drag()"


def world_pin(args, x, ex, to_screen, to_window, left, checks, report: dict, out_dir) -> tuple[int, int]:
    """The world mode's steps and checks; the pointer's last position on the screen."""
    world: dict = {"steps": []}
    report["world"] = world
    ready = report["ready"]
    ui = ready["ui_region"]

    def look(label: str) -> dict:
        seen = ex.request("op", timeout=min(30, left()), op="world_look")["result"]
        world["steps"].append({"label": label, "t": round(time.time(), 2), **{k: seen[k] for k in (
            "mode", "active_object", "selected_objects", "active_bone", "selected_bones", "cup", "hand_tail")}})
        return seen

    def until(label: str, wanted, timeout: float = 4.0) -> dict:
        """Look until ``wanted(seen)`` or ``timeout`` seconds (Blender draws slowly in software)."""
        end = time.time() + timeout
        while True:
            seen = look(label)
            if wanted(seen) or time.time() > end:
                return seen
            time.sleep(0.25)

    def point(seen: dict, name: str) -> tuple[float, float]:
        return to_screen(*seen["windows"][name])

    def click(at, modifier: str = "") -> None:
        x.move(*at)
        time.sleep(0.3)  # Blender takes the click's position from the last move it has read
        if modifier:
            x.xdo("keydown", modifier)
        x.click(1)
        if modifier:
            x.xdo("keyup", modifier)

    def keys(*chords: str) -> None:
        for chord in chords:
            x.key(chord)
            time.sleep(0.1)

    def state(seen: dict) -> str:
        return (f"{seen['mode']}, active {seen['active_object']}, selected objects {seen['selected_objects']}"
                + (f", bones {seen['selected_bones']} (active {seen['active_bone']})" if seen["mode"] == "POSE" else ""))

    def icon(png, y: float) -> float:
        """The brightness (0-255) of the brightest tenth of the pixels of a button's icon."""
        values = sorted(max(rgb) for rgb in _pixels(png, to_screen(column, y), ICON_HALF))
        top = values[-max(1, len(values) // 10):]
        return sum(top) / len(top)

    # 1. The buttons; Pin To greyed out while the Cup is not selected.
    column = ui["x"] + ui["width"] - COLUMN_INSET_PX
    start = look("start")
    t = time.time()
    buttons = scan_buttons(x, ex, column, ui, to_screen, to_window, left, want=(DRAG, PIN_TO))
    world["buttons"] = buttons
    world["scan_s"] = time.time() - t
    found = PIN_TO in buttons and DRAG in buttons
    checks.add(found, "the sidebar's buttons found", f"down the list's column (window x {column}, y) in "
               f"{world['scan_s']:.1f} s: " + ", ".join(f"{c} {y:.0f}" for c, y in buttons.items()))
    if not found:
        return x.mouse()
    x.move(*point(start, BODY))
    time.sleep(1.0)  # (the sidebar redrawn without the pointer over a button)
    x.screenshot(out_dir / "e2e_world_greyed.png")
    greyed = icon(out_dir / "e2e_world_greyed.png", buttons[PIN_TO])

    # 2. The Cup selected too, the armature active, hand.R selected in Pose Mode; Pin To.
    keys("ctrl+Tab")
    seen = until("object mode", lambda s: s["mode"] == "OBJECT")
    trail = [state(seen)]
    click(point(seen, "cup_edge"), "shift")
    seen = until("cup shift+clicked", lambda s: CUP in s["selected_objects"])
    trail.append(state(seen))
    click(point(seen, BODY), "shift")
    seen = until("armature shift+clicked", lambda s: s["active_object"] != CUP)
    trail.append(state(seen))
    keys("ctrl+Tab")
    seen = until("pose mode", lambda s: s["mode"] == "POSE")
    trail.append(state(seen))
    click(point(seen, HAND))
    seen = until("hand.R clicked", lambda s: s["selected_bones"] == [HAND], timeout=2.0)
    trail.append(state(seen))
    world["selection"] = trail
    armature = start["active_object"]
    checks.add(seen["mode"] == "POSE" and seen["active_object"] == armature
               and seen["selected_objects"] == sorted([armature, CUP]) and seen["selected_bones"] == [HAND]
               and seen["active_bone"] == HAND, "the Cup selected with the armature, hand.R in Pose Mode",
               " -> ".join(trail))

    time.sleep(0.7)
    x.screenshot(out_dir / "e2e_world_enabled.png")
    enabled = icon(out_dir / "e2e_world_enabled.png", buttons[PIN_TO])
    poll = [start["pin_to"], seen["pin_to"]]
    world["pin_to_icon"] = {"greyed": greyed, "enabled": enabled, "poll": poll}
    checks.add(enabled - greyed >= GREYED_MARGIN and not poll[0]["enabled"] and poll[1]["enabled"],
               "Pin To greyed out until the Cup is selected too",
               f"the icon's brightest pixels {greyed:.0f} with the armature alone selected, {enabled:.0f} with the Cup "
               f"too (at least {GREYED_MARGIN} brighter); its poll in the sidebar's region: "
               + ", then ".join('enabled' if p['enabled'] else f"refused ({p['refusal']!r})" for p in poll))
    before = seen
    click(to_screen(column, buttons[PIN_TO]))
    seen = until("pin to clicked", lambda s: any(p["target_object"] == CUP for p in s["pins"]))
    time.sleep(REDRAW_S)
    x.screenshot(out_dir / "e2e_world_pin_to.png")
    followed = [p for p in seen["pins"] if p["target_object"] == CUP]
    pin = followed[0] if followed else {}
    moved = math.dist(before["hand_tail"], seen["hand_tail"])
    world["pinned"] = {"pins": seen["pins"], "hand_moved_m": moved}
    checks.add(len(followed) == 1 and pin["bone"] == HAND and pin["kind"] == "POSE" and pin["enabled"]
               and moved <= STILL_M and pin.get("error", math.inf) <= STILL_M and not pin.get("lost"),
               "Pin To pins the hand to the Cup, the hand stays",
               f"pins following the Cup {[(p['bone'], p['kind'], p['target_object']) for p in followed]}; "
               f"{HAND}'s tail moved {moved:.1e} m, {pin.get('error', math.nan):.1e} m from the pin's goal "
               f"(at most {STILL_M:g}); {len(seen['pins'])} pins")

    # 3. The Cup moved in Object Mode, then another bone dragged from the sidebar's Drag button.
    x.move(*point(seen, BODY))
    time.sleep(0.3)
    keys("ctrl+Tab")
    seen = until("object mode again", lambda s: s["mode"] == "OBJECT")
    click(point(seen, "cup_edge"))
    seen = until("cup clicked", lambda s: s["selected_objects"] == [CUP] and s["active_object"] == CUP)
    trail = [state(seen)]
    cup0 = seen["cup"]
    keys(*CUP_MOVE_KEYS)
    seen = until("cup moved", lambda s: math.dist(s["cup"], cup0) > 0.01)
    cup_move = [b - a for a, b in zip(cup0, seen["cup"])]
    distance = math.dist(cup0, seen["cup"])
    click(point(seen, BODY))
    seen = until("armature clicked", lambda s: s["active_object"] == armature)
    trail.append(state(seen))
    keys("ctrl+Tab")
    seen = until("pose mode again", lambda s: s["mode"] == "POSE")
    click(point(seen, OTHER))
    seen = until("hand.L clicked", lambda s: s["active_bone"] == OTHER)
    trail.append(state(seen))
    world["cup_moved"] = {"by": cup_move, "m": distance, "trail": trail}
    checks.add(CUP_MOVE_M[0] <= distance <= CUP_MOVE_M[1] and seen["active_bone"] == OTHER,
               "the Cup moved with G, hand.L active",
               f"the Cup moved ({', '.join(f'{v:+.3f}' for v in cup_move)}) m, {distance * 100:.1f} cm (from "
               f"{CUP_MOVE_M[0] * 100:.0f} to {CUP_MOVE_M[1] * 100:.0f}); " + " -> ".join(trail))
    time.sleep(REDRAW_S)
    x.screenshot(out_dir / "e2e_world_moved.png")
    held = next((p for p in seen["pins"] if p["target_object"] == CUP), {})
    world["before_drag"] = {"pin": held}

    click(to_screen(column, buttons[DRAG]))
    time.sleep(0.5)
    running = ex.request("status", timeout=min(20, left()), label="world drag button")["drag_running"]
    pointer = x.mouse()
    for i in range(1, DRAG_STEPS + 1):
        x.move(pointer[0], pointer[1] + DRAG_STEP_PX * i)
        time.sleep(0.25)
    time.sleep(0.8)
    x.click(1)
    time.sleep(1.0)
    after = ex.request("status", timeout=min(20, left()), label="world drag confirmed")
    seen = until("drag confirmed", lambda s: True)
    time.sleep(REDRAW_S)
    x.screenshot(out_dir / "e2e_world_followed.png")
    pin = next((p for p in seen["pins"] if p["target_object"] == CUP), {})
    other = math.dist(before["other_tail"], seen["other_tail"])
    hand = math.dist(before["hand_tail"], seen["hand_tail"])
    # The Cup only moved: the hand's tail must have moved as it did (whatever world_fields says).
    carried = math.dist([b - a for a, b in zip(before["hand_tail"], seen["hand_tail"])], cup_move)
    world["followed"] = {"pin": pin, "hand_moved_m": hand, "other_moved_m": other, "labels": seen["list_labels"],
                         "hand_move_off_cup_move_m": carried}
    checks.add(running is True and after["drag_running"] is False and other > 0.01,
               "the Drag button drags hand.L, a click confirms",
               f"drag running after the button: {running}, after the click: {after['drag_running']}; {OTHER}'s tail "
               f"moved {other * 100:.1f} cm for the pointer's {DRAG_STEPS * DRAG_STEP_PX} px")
    error = pin.get("error", math.inf)
    checks.add(error <= FOLLOW_TOLERANCE_M and carried <= FOLLOW_TOLERANCE_M and not pin.get("lost")
               and pin.get("enabled", False), "the hand follows the Cup",
               f"{HAND}'s evaluated tail {error * 1e6:.2f} µm from its place on the Cup (the pin's goal in the world, "
               f"rig.targets.world_fields); it moved {hand * 100:.2f} cm, {carried * 1e6:.2f} µm off the Cup's move of "
               f"{distance * 100:.2f} cm (each at most {FOLLOW_TOLERANCE_M * 1000:g} mm)")
    rows = [row for row in seen["list_labels"] if row.startswith(f"{HAND} → {CUP}")]
    checks.add(len(rows) == 1, "the pins list shows what the pin follows",
               f"rows {seen['list_labels']} (one starting {HAND + ' → ' + CUP!r})")
    lines = [line for line in ex.log_path.read_text(errors="replace").splitlines() if line.startswith(LOG_OVERLAY)]
    checks.add(not lines, "the overlay drew without errors", "; ".join(lines) or f"no {LOG_OVERLAY!r} line")
    return x.mouse()


def scan_buttons(x, ex, column: float, ui: dict, to_screen, to_window, left, want) -> dict:
    """Move the pointer down the column of buttons beside the pins list (window x ``column``),
    from the sidebar's top, and ask at each step which operator the button under it runs (Copy
    Python Command), until each of ``want`` has been passed; then a few steps around each of
    ``want`` for its middle. {command: window y of the middle of its button (of the steps that
    hit it, for the others)}."""

    def command_at(wy: float) -> str | None:
        x.move(*to_screen(column, wy))
        time.sleep(0.12)
        expected = [round(v) for v in to_window(*x.mouse())]
        for _ in range(10):  # (the reply may come before the window has the pointer's move)
            seen = ex.request("op", timeout=min(20, left()), op="world_hover")["result"]
            last = seen["last_mouse"]
            if last is not None and abs(last[0] - expected[0]) <= 1 and abs(last[1] - expected[1]) <= 1:
                break
            time.sleep(0.1)
        return seen["command"]

    hits: dict = {}
    wy = ui["y"] + ui["height"] - 10
    command = None
    while wy > ui["y"] + 10 and not (all(c in hits for c in want) and command not in want):
        command = command_at(wy)
        if command:
            hits.setdefault(command, []).append(wy)
        wy -= SCAN_STEP_PX
    for wanted in want:
        ys = hits.get(wanted, [])
        for y in sorted({y + d for y in ys[:1] for d in REFINE_PX} - set(ys)):
            if command_at(y) == wanted:
                ys.append(y)
    return {c: (min(ys) + max(ys)) / 2 for c, ys in hits.items()}


def _pixels(png, centre, half: int) -> list:
    """The RGB (0-255) of the square of pixels around screen point ``centre`` (run_e2e's)."""
    from run_e2e import _pixels as pixels

    return pixels(png, centre, half)
