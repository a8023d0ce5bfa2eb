"""Pictures of the viewport overlay, one per pin kind, for the manual (docs/posing.md): docs/images/overlay_<kind>.png.

    python3 scripts/overlay_pictures.py                  # all kinds
    python3 scripts/overlay_pictures.py --kinds aim,region --output out

Runs Debian's Blender (3.4+) in a real window on its own Xvfb display (as ``tests/e2e`` does;
``make e2e`` installs blender, xvfb, xdotool and imagemagick). This file is both sides: started
with plain Python it is the driver (Xvfb, Blender, waiting); inside Blender (``--python`` it) it
loads Welman IK from this checkout, builds the Rigify basic human metarig, and for each kind
makes a pin in a sensible pose, frames the view on it, lets the viewport draw, and takes the
screen with ImageMagick (``import -window root``) cropped to a box of the 3D view about the pin.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("position", "orientation", "pose", "line", "plane", "aim", "region", "together", "balance")
SIZE = (400, 300)  # each picture, pixels
SCREEN = (1000, 760)  # the Xvfb screen and the Blender window


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kinds", default=",".join(KINDS), help="which pictures, joined by commas")
    p.add_argument("--output", default=str(ROOT / "docs" / "images"))
    p.add_argument("--blender", default=os.environ.get("BLENDER", "blender"))
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for the whole run")
    p.add_argument("--bench", action="store_true",
                   help="also time the overlay's draw of 33 pins (printed as 'overlay draw: ...')")
    p.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.kinds = [k.strip().lower() for k in args.kinds.split(",") if k.strip()]
    for k in args.kinds:
        if k not in KINDS:
            p.error(f"unknown kind {k!r}")
    return args


# --------------------------------------------------------------------------- driver (plain Python)


def driver(argv) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    import run_e2e  # Xvfb, process groups, Blender's environment

    for tool in ("Xvfb", "import", args.blender):
        if shutil.which(tool) is None:
            print(f"overlay_pictures: {tool} not found (make e2e installs blender, xvfb and imagemagick)",
                  file=sys.stderr)
            return 1
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="welman_overlay_"))
    xvfb = blender = None
    log_path = workdir / "blender.log"
    try:
        screen = argparse.Namespace(display=0, screen=f"{SCREEN[0]}x{SCREEN[1]}")
        xvfb, display = run_e2e.start_xvfb(screen, workdir)
        env = run_e2e.blender_env({**os.environ, "DISPLAY": f":{display}"}, workdir)
        env["LIBGL_ALWAYS_SOFTWARE"] = "1"
        cmd = [args.blender, "--factory-startup", "--window-geometry", "0", "0", str(SCREEN[0]), str(SCREEN[1]),
               "--python", str(Path(__file__).resolve()), "--", "--root", str(ROOT), "--output", str(out),
               "--kinds", ",".join(args.kinds)] + (["--bench"] if args.bench else [])
        with open(log_path, "w") as log:
            blender = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       cwd=str(ROOT))
        try:
            code = blender.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            code = None
        text = log_path.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith("overlay draw:"):
                print(f"  {line}")
        problems = [line for line in text.splitlines() if "Traceback" in line or "Welman IK overlay:" in line]
        written = [out / f"overlay_{k}.png" for k in args.kinds]
        missing = [str(p) for p in written if not p.exists()]
        for p in written:
            if p.exists():
                print(f"  {p} ({p.stat().st_size} bytes)")
        if code != 0 or missing or problems:
            print(text[-4000:], file=sys.stderr)
            print(f"overlay_pictures: Blender exit code {code}, missing {missing}, problems {problems}", file=sys.stderr)
            return 1
        return 0
    finally:
        run_e2e.stop(blender, "Blender")
        run_e2e.stop(xvfb, "Xvfb")
        shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------- Blender side


def blender_side(argv) -> None:
    import bpy
    from mathutils import Euler, Quaternion, Vector

    args = parse_args(argv)
    sys.path.insert(0, args.root)
    sys.path.insert(0, str(Path(args.root) / "tests" / "e2e"))
    import blender_common as common

    common.prepare(tempfile.mkdtemp(prefix="welman_overlay_blender_"))
    state = {"obj": None}

    def view():
        window, area, region, _ = common.view3d()
        return window, area, region, area.spaces.active

    def override():
        window, area, region, _ = view()
        return bpy.context.temp_override(window=window, screen=window.screen, area=area, region=region)

    def setup():
        common.load_addon(args.root)
        with override():
            bpy.ops.screen.screen_full_area()
        space = view()[3]
        space.show_region_header = False
        space.show_region_tool_header = False
        space.show_region_toolbar = False
        space.show_region_ui = False
        space.show_gizmo = False
        overlay = space.overlay
        overlay.show_text = False
        overlay.show_stats = False
        overlay.show_cursor = False
        overlay.show_object_origins = False
        overlay.show_axis_x = False  # the floor's red and green axes would read as pins
        overlay.show_axis_y = False
        space.shading.type = "SOLID"
        bpy.context.preferences.view.show_navigate_ui = False
        with override():
            state["obj"] = common.new_metarig()
        obj = state["obj"]
        obj.data.display_type = "OCTAHEDRAL"

    def point(name: str, anchor: float = 1.0) -> Vector:
        obj = state["obj"]
        pb = obj.pose.bones[name]
        return obj.matrix_world @ (pb.head + anchor * (pb.tail - pb.head))

    def select(names, active=None):
        from welman_ik.blender.rig import selection

        obj = state["obj"]
        for pb in obj.pose.bones:
            selection.set_selected(pb, pb.name in names)
        if active is not None:
            obj.data.bones.active = obj.data.bones[active]

    def pin(names, active=None, **options):
        select(names, active)
        with override():
            result = bpy.ops.welman_ik.pin(**options)
        if result != {"FINISHED"}:
            raise RuntimeError(f"welman_ik.pin({options}) gave {result}")
        select(())

    def rotate(name: str, axis, degrees: float) -> None:
        pb = state["obj"].pose.bones[name]
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = Quaternion(axis, math.radians(degrees)) @ pb.rotation_quaternion

    def reset():
        obj = state["obj"]
        obj.welman_ik.pins.clear()
        for pb in obj.pose.bones:
            pb.rotation_mode = "QUATERNION"
            pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
            pb.location = (0.0, 0.0, 0.0)
        select(())
        obj.data.bones.active = None
        bpy.context.view_layer.update()

    def look(centre, rotation, distance: float, perspective: str = "PERSP") -> None:
        _, _, _, space = view()
        rv3d = space.region_3d
        rv3d.view_perspective = perspective
        rv3d.view_rotation = rotation
        rv3d.view_location = Vector(centre)
        rv3d.view_distance = distance

    def front(pitch: float = 80.0, yaw: float = 0.0):
        """A view from the front (the metarig faces -Y) ``pitch`` degrees from straight down,
        turned ``yaw`` degrees about Z (positive: from the figure's left)."""
        return (Euler((0.0, 0.0, math.radians(yaw))).to_quaternion()
                @ Euler((math.radians(pitch), 0.0, 0.0)).to_quaternion())

    # Each kind: make the pose and pins; return (view centre, view rotation, distance, perspective).
    def scene_position():
        pin(["toe.L", "toe.R", "heel.02.L", "heel.02.R"])
        rotate("thigh.R", (1.0, 0.0, 0.0), 25.0)  # the right foot lifted off its pins: misses, drawn red
        bpy.context.view_layer.update()
        return (point("foot.L", 0.5) + point("foot.R", 0.5)) / 2.0, front(55.0, -30.0), 2.2, "PERSP"

    def scene_orientation():
        rotate("forearm.L", (1.0, 0.0, 0.0), 30.0)
        pin(["hand.L"], kind="ORIENTATION")
        return point("hand.L", 0.5), front(70.0, 35.0), 0.7, "PERSP"

    def scene_pose():
        pin(["hand.R"], kind="POSE", axes=(True, True, False))  # Z left free: faint
        return point("hand.R", 0.5), front(70.0, -35.0), 0.7, "PERSP"

    def scene_line():
        pin(["hand.R"], kind="LINE")  # the hand slides along a rail, front to back
        state["obj"].welman_ik.pins[-1].direction = (0.0, 1.0, 0.0)
        return point("hand.R"), front(70.0, -50.0), 1.8, "PERSP"

    def scene_plane():
        pin(["toe.L"], kind="PLANE", plane_normal="UP")
        return point("toe.L", 0.5), front(55.0, 40.0), 1.2, "PERSP"

    def scene_aim():
        obj = state["obj"]
        rotate("spine.006", (1.0, 0.0, 0.0), -15.0)
        bpy.context.view_layer.update()
        pb = obj.pose.bones["spine.006"]
        basis = (obj.matrix_world @ pb.matrix).to_3x3().normalized()
        axes = {s + a: (-1.0 if s else 1.0) * basis.col["XYZ".index(a)] for a in "XYZ" for s in ("", "-")}
        facing = max(axes, key=lambda a: -axes[a].y)  # the axis nearest the figure's front (-Y)
        pin(["spine.006"], kind="AIM", aim_axis=facing)
        head = obj.matrix_world @ pb.head
        obj.welman_ik.pins[-1].location = head + 0.5 * axes[facing]  # what the head looks at
        return head + 0.3 * axes[facing] + Vector((0.0, 0.0, 0.05)), front(78.0, 45.0), 2.3, "PERSP"

    def scene_region():
        rotate("upper_arm.R", (0.0, 1.0, 0.0), -35.0)
        pin(["hand.R"], kind="REGION", radius=0.12)
        obj = state["obj"]
        obj.welman_ik.pins[-1].location = point("hand.R") + Vector((-0.05, 0.0, 0.04))
        return point("hand.R"), front(75.0, -30.0), 1.0, "PERSP"

    def scene_together():
        pin(["hand.L", "hand.R"], active="hand.R", kind="TOGETHER")  # apart until a solve: red
        return (point("hand.L") + point("hand.R")) / 2.0, front(85.0, 0.0), 4.5, "PERSP"

    def scene_balance():
        pin(["toe.L", "toe.R", "heel.02.L", "heel.02.R"])
        pin([], kind="BALANCE", use_support=True)
        obj = state["obj"]
        from welman_ik.blender.pins.goals import centre_of_mass

        com = Vector(centre_of_mass(obj))
        return Vector((com.x, com.y, 0.5 * com.z)), front(52.0, 35.0), 3.7, "PERSP"

    scenes = {"position": scene_position, "orientation": scene_orientation, "pose": scene_pose,
              "line": scene_line, "plane": scene_plane, "aim": scene_aim, "region": scene_region,
              "together": scene_together, "balance": scene_balance}

    def shoot(kind: str, centre) -> None:
        """The screen, cropped to ``SIZE`` about ``centre``'s place in the 3D view."""
        from bpy_extras import view3d_utils

        window, _, region, space = view()
        spot = view3d_utils.location_3d_to_region_2d(region, space.region_3d, Vector(centre))
        spot = spot if spot is not None else Vector((region.width / 2, region.height / 2))
        w, h = SIZE
        x = round(region.x + spot.x - w / 2)
        y_up = round(region.y + spot.y + h / 2)  # the box's top, from the window's bottom
        x = min(max(x, region.x), region.x + region.width - w)
        y_up = max(min(y_up, region.y + region.height), region.y + h)
        y = window.height - y_up  # X screen rows count down from the top
        path = Path(args.output) / f"overlay_{kind}.png"
        subprocess.run(["import", "-window", "root", "-crop", f"{w}x{h}+{x}+{y}", "+repage", "-strip",
                        f"PNG24:{path}"], check=True, timeout=60)
        print(f"overlay_pictures: wrote {path}", flush=True)

    def steps():
        setup()
        yield 1.0
        for kind in args.kinds:
            reset()
            with override():
                centre, rotation, distance, perspective = scenes[kind]()
            bpy.context.view_layer.update()
            look(centre, rotation, distance, perspective)
            _, area, _, _ = view()
            area.tag_redraw()
            yield 1.5  # software GL: let the viewport draw
            shoot(kind, centre)
        if args.bench:
            yield from bench()
        bpy.ops.wm.quit_blender()

    def bench():
        """33 pins (every kind on four bones, a balance), drawn a few dozen times."""
        from welman_ik.blender.ui import overlay

        reset()
        with override():
            for name in ("hand.L", "hand.R", "forearm.L", "forearm.R"):
                for kind in ("POSITION", "ORIENTATION", "POSE", "LINE", "PLANE", "AIM", "REGION"):
                    pin([name], kind=kind)
            for name in ("hand.L", "hand.R", "forearm.L", "forearm.R"):
                pin([name, "spine.003"], active="spine.003", kind="TOGETHER")
            pin([], kind="BALANCE", use_support=True)
        look(point("spine.003"), front(80.0, 20.0), 4.0)
        overlay.DRAW_TIMES.clear()
        _, area, _, _ = view()
        for _ in range(40):
            area.tag_redraw()
            yield 0.05
        times = overlay.DRAW_TIMES
        if times:
            geometry, calls = (sorted(t[i] for t in times) for i in (0, 1))
            print(f"overlay draw: {len(state['obj'].welman_ik.pins)} pins, {len(times)} draws; median geometry "
                  f"{geometry[len(times) // 2]:.2f} ms (fastest {geometry[0]:.2f}), gpu calls "
                  f"{calls[len(times) // 2]:.2f} ms (fastest {calls[0]:.2f})", flush=True)

    running = steps()

    def tick():
        try:
            return next(running)
        except StopIteration:
            return None
        except Exception:  # noqa: BLE001 - report and quit
            import traceback

            traceback.print_exc()
            sys.stdout.flush()
            os._exit(2)

    bpy.app.timers.register(tick, first_interval=1.0)


def _inside_blender() -> bool:
    try:
        import bpy
    except ImportError:
        return False
    return not bpy.app.background


if __name__ == "__main__":
    if _inside_blender():
        try:
            blender_side(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else [])
        except Exception:  # noqa: BLE001 - a broken setup: say why and quit rather than wait for the driver
            import traceback

            traceback.print_exc()
            sys.stdout.flush()
            os._exit(2)
    else:
        sys.exit(driver(sys.argv[1:]))
