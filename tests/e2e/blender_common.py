"""E2E harness, shared by the Blender sides (``blender_side.py``, ``bake_side.py``).

Imported inside Blender (3.4+) with a real window; importing it changes nothing. Each side
calls ``prepare`` first with its exchange folder, then uses the helpers below.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import bpy

CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")
WORKDIR = ""  # the folder of the JSON files shared with the driver, set by ``prepare``


def prepare(workdir: str) -> None:
    """The exchange folder; no splash (it is shown after the --python scripts run), no
    "save changes?" dialog on quit, and quit.blend in the folder rather than /tmp."""
    global WORKDIR
    WORKDIR = workdir
    os.makedirs(workdir, exist_ok=True)
    preferences = bpy.context.preferences
    preferences.view.show_splash = False
    preferences.view.use_save_prompt = False
    preferences.view.smooth_view = 0
    preferences.filepaths.temporary_directory = workdir


def _jsonable(value):
    if hasattr(value, "__len__"):
        return [float(v) for v in value]
    return repr(value)


def write_json(name: str, data) -> None:
    path = os.path.join(WORKDIR, name)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1, default=_jsonable)
    os.replace(path + ".tmp", path)  # the driver never reads half a file


def view3d():
    """(window, the largest 3D viewport area, its main region, its sidebar region or None)."""
    window = bpy.context.window_manager.windows[0]
    areas = [a for a in window.screen.areas if a.type == "VIEW_3D"]
    if not areas:
        raise RuntimeError("no 3D viewport in the window")
    area = max(areas, key=lambda a: a.width * a.height)
    region = next(r for r in area.regions if r.type == "WINDOW")
    ui = next((r for r in area.regions if r.type == "UI"), None)
    return window, area, region, ui


def load_addon(root: str) -> None:
    """Welman IK from the checkout at ``root``, registered, and Rigify for its metarig."""
    if root not in sys.path:
        sys.path.insert(0, root)
    import addon_utils

    import welman_ik

    welman_ik.register()
    addon_utils.enable("rigify", default_set=True)


def new_metarig():
    """The only object: the Rigify basic human metarig, drawn in front, in pose mode (call
    it under a window/area override)."""
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob)
    bpy.ops.object.armature_basic_human_metarig_add()
    obj = bpy.context.view_layer.objects.active
    obj.show_in_front = True
    bpy.ops.object.mode_set(mode="POSE")
    return obj


def pose_snapshot(obj) -> dict:
    """Every pose bone's rotation mode and channels, to compare bit for bit."""
    return {pb.name: (pb.rotation_mode, *(tuple(getattr(pb, c)) for c in CHANNELS)) for pb in obj.pose.bones}


def changed_bones(before: dict, obj) -> list:
    """Names of the bones whose channels differ from the snapshot ``before``."""
    now = pose_snapshot(obj)
    return sorted(name for name, value in before.items() if now.get(name) != value)


def set_pose(obj, snapshot: dict) -> None:
    """Put a ``pose_snapshot`` back on the pose bones."""
    for pb in obj.pose.bones:
        mode, *channels = snapshot[pb.name]
        pb.rotation_mode = mode
        for channel, value in zip(CHANNELS, channels):
            setattr(pb, channel, value)


def key_squats(obj, frames, drop: float = 0.25, root: str = "spine") -> None:
    """Welman's Fig 6.5 as keys: the whole pose keyed on ``frames``, alternately at rest and
    with the pelvis (the head of ``root``) ``drop`` metres lower, the lowered pose made once
    with ``welman_ik.drag`` and the pins in force."""
    from welman_ik.blender.rig import keyframes

    bpy.context.scene.frame_set(frames[0])
    bpy.context.view_layer.update()
    rest = pose_snapshot(obj)
    pelvis = obj.matrix_world @ obj.pose.bones[root].head
    target = (pelvis[0], pelvis[1], pelvis[2] - drop)
    if bpy.ops.welman_ik.drag(bone=root, target=target, anchor=0.0) != {"FINISHED"}:
        raise RuntimeError("lowering the pelvis failed")
    lowered = pose_snapshot(obj)
    for i, frame in enumerate(frames):
        set_pose(obj, lowered if i % 2 else rest)
        for pb in obj.pose.bones:
            pb.keyframe_insert(keyframes.rotation_path(pb), frame=frame, group=pb.name)
            pb.keyframe_insert("location", frame=frame, group=pb.name)


def read_request(number: int) -> dict | None:
    """The driver's request ``number`` (``request_<n>.json``), or None while there is none."""
    path = os.path.join(WORKDIR, f"request_{number}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def fail(step, quit_blender) -> None:
    """The current exception, written for the driver (``fatal.json``); then Blender quits."""
    text = traceback.format_exc()
    print(text, file=sys.stderr)
    write_json("fatal.json", {"step": str(step), "traceback": text})
    try:
        quit_blender()
    except Exception:  # noqa: BLE001 - no clean way out left
        os._exit(3)
