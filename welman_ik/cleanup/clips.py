"""Reading clips into Blender, and the plumbing each clip's job shares (``job.clean`` and
``onto.retarget``): a fresh scene with the importers and Welman IK ready, the importers' and
operators' prints kept quiet and their failures turned into a ``ClipError`` that says what
went wrong, a BVH or FBX file checked and imported (a BVH's unit guessed from its skeleton's
size), an action's frames and shifting its keys, and a clip's report entry whatever happens.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import bpy
import numpy as np

from .report import entry

FORMATS = (".bvh", ".fbx")
MM = 1000.0
# BVH files carry no unit: the one that makes the skeleton closest to a person's size wins.
BVH_UNITS = {"metres": 1.0, "centimetres": 0.01, "inches": 0.0254, "millimetres": 0.001}
PERSON = 1.7  # [m] the size the unit guess aims at (the rest skeleton's largest extent)
FBX_IMPORT_OFFSET = 1  # frames Blender's FBX importer adds to the file's times (its anim_offset)


class ClipError(Exception):
    """A clip that cannot be cleaned, with the message its report entry shows."""


# -- the scene -------------------------------------------------------------------------


def fresh_scene() -> None:
    """An empty file with the importers and Welman IK ready."""
    bpy.ops.wm.read_homefile(use_empty=True)
    fresh_scene_addons()


def fresh_scene_addons() -> None:
    """The importers and Welman IK ready in whatever file is open."""
    import addon_utils

    import welman_ik

    for module in ("io_anim_bvh", "io_scene_fbx"):
        addon_utils.enable(module, default_set=True)
    if not hasattr(bpy.types.Object, "welman_ik"):
        welman_ik.register()


@contextlib.contextmanager
def quiet():
    """The importers' and operators' prints (to stdout, in background mode) kept off the
    process's output (the demo and the benchmarks use it for their tables too)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def call(operator, what: str, **kwargs) -> None:
    """Run an import or export operator; a failure becomes a ClipError naming ``what``."""
    try:
        with quiet():
            result = operator(**kwargs)
    except RuntimeError as error:  # the operator raised or reported an error
        raise ClipError(f"{what}: {reason(str(error))}") from None
    if result != {"FINISHED"}:
        raise ClipError(f"{what}: the operator returned {', '.join(sorted(result))}")


def reason(text: str) -> str:
    """The line of an operator's error that says what went wrong (the exception's, not the
    traceback's or the location's)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"^[A-Za-z_.]+(Error|Exception):", line)]
    if raised:
        return raised[-1]
    lines = [line for line in lines if not line.startswith(("Location:", "File ", "Traceback"))]
    return lines[0].removeprefix("Error: ") if lines else "unknown error"


# -- reading a clip --------------------------------------------------------------------


def check_bvh(path: Path) -> None:
    """A clear ClipError for a file that is not a whole BVH clip (before the importer, whose
    errors are tracebacks): the HIERARCHY and MOTION sections, and every frame it announces
    with one value per channel."""
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise ClipError(f"could not read the file: {error.strerror or error}") from None
    if not text.lstrip().upper().startswith("HIERARCHY"):
        raise ClipError("not a BVH file: it does not start with HIERARCHY")
    head, separator, motion = text.partition("MOTION")
    if not separator:
        raise ClipError("truncated BVH: no MOTION section after the skeleton")
    channels = sum(int(n) for n in re.findall(r"CHANNELS\s+(\d+)", head))
    announced = re.search(r"Frames:\s*(\d+)", motion)
    timing = re.search(r"Frame Time:\s*(\S+)\s*\n", motion)
    if announced is None or timing is None:
        raise ClipError("truncated BVH: the MOTION section has no 'Frames:' or 'Frame Time:' line")
    rows = [line.split() for line in motion[timing.end():].splitlines() if line.strip()]
    whole = 0
    for row in rows:
        if len(row) != channels:
            break
        whole += 1
    frames = int(announced.group(1))
    if whole < frames:
        raise ClipError(f"truncated BVH: it announces {frames} frames of {channels} values, and only "
                        f"{whole} are whole")


def check_fbx(path: Path) -> None:
    """A clear ClipError for a file that is not a binary FBX (Blender's importer reads no
    other kind)."""
    try:
        with path.open("rb") as stream:
            head = stream.read(256)
    except OSError as error:
        raise ClipError(f"could not read the file: {error.strerror or error}") from None
    if head.startswith(b"Kaydara FBX Binary"):
        return
    if b"FBX" in head and head.lstrip().startswith(b";"):
        raise ClipError("an ASCII FBX file: Blender reads binary FBX only; export it again as binary")
    raise ClipError("not an FBX file: it does not start with the binary FBX header")


def armatures() -> list:
    return [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]


def rest_points(path: Path) -> np.ndarray | None:
    """The heads and tails (k, 3) in file units of the bones Blender's BVH importer builds from
    the file, in its rest pose, from the importer's own reader (``io_anim_bvh.import_bvh.read_bvh``)
    without building the armature and its animation; None where that reader is not there or
    cannot read the file (the importer itself then reports why)."""
    try:
        from io_anim_bvh.import_bvh import read_bvh

        nodes = read_bvh(bpy.context, str(path), global_scale=1.0)[0]
        return np.array([(*node.rest_head_world, *node.rest_tail_world) for node in nodes.values()],
                        dtype=float).reshape(-1, 3)
    except (ImportError, AttributeError, TypeError, ValueError, IndexError, KeyError, OSError):
        return None


def import_bvh(path: Path, scale: float | None) -> tuple[object, float]:
    """The BVH clip's armature and the scale (metres per file unit) it was imported with:
    ``scale``, or the unit of ``BVH_UNITS`` that makes the skeleton a person's size."""
    check_bvh(path)
    if scale is None:
        points = rest_points(path)
        if points is None:  # (the importer's reader could not: its import says why)
            call(bpy.ops.import_anim.bvh, f"could not read {path.name} as BVH", filepath=str(path), global_scale=1.0)
            found = armatures()
            if not found:
                raise ClipError(f"could not read {path.name} as BVH: no skeleton in it")
            from ..blender.rig.body import rest_ends

            points = rest_ends(found[0]).reshape(-1, 3)
            fresh_scene()
        size = float(np.ptp(points, axis=0).max()) if len(points) else 0.0
        if not math.isfinite(size) or size <= 0.0:
            raise ClipError(f"{path.name}: the skeleton has no size; give its unit with --scale")
        scale = min(BVH_UNITS.values(), key=lambda s: abs(math.log(s * size / PERSON)))
    call(bpy.ops.import_anim.bvh, f"could not read {path.name} as BVH", filepath=str(path), global_scale=scale,
          update_scene_fps=True, update_scene_duration=True)
    found = armatures()
    if not found:
        raise ClipError(f"could not read {path.name} as BVH: no skeleton in it")
    return found[0], scale


def import_fbx(path: Path) -> tuple[object, float]:
    """The FBX clip's animated armature (the one with most bones), at the file's own units."""
    check_fbx(path)
    call(bpy.ops.import_scene.fbx, f"could not read {path.name} as FBX", filepath=str(path))
    found = armatures()
    if not found:
        raise ClipError(f"{path.name} has no armature: nothing to clean")
    animated = [o for o in found if o.animation_data and o.animation_data.action] or found
    return max(animated, key=lambda o: len(o.data.bones)), 1.0


def clip_frames(obj, missing: str) -> range:
    """The frames of the armature's action (``missing``: the error when it has none)."""
    action = obj.animation_data.action if obj.animation_data else None
    if action is None:
        raise ClipError(missing)
    first, last = (round(v) for v in action.frame_range)
    return range(first, last + 1)


def shift_action(obj, frames: float) -> None:
    """Every key of the object's action (and its handles) ``frames`` later, in bulk."""
    from ..blender.rig.keyframes import action_fcurves

    for curve in action_fcurves(obj):
        keys = curve.keyframe_points
        for field in ("co", "handle_left", "handle_right"):
            values = np.empty(2 * len(keys))
            keys.foreach_get(field, values)
            values[0::2] += frames
            keys.foreach_set(field, values)
        curve.update()


# -- one clip's job --------------------------------------------------------------------


def run_clip(name: str, output: Path, work: Callable[[], dict]) -> dict:
    """The report entry of clip ``name``: ``work()``'s fields, or its failure as ``status`` and
    no ``output`` file left behind (one written and measured, whose figures missed a gate, is
    kept for the user to see); the seconds it took."""
    started = time.perf_counter()
    result = entry(name)
    try:
        result.update(work())
    except ClipError as error:
        result["status"] = str(error)
    except Exception as error:  # noqa: BLE001 - any failure is this clip's, reported in its entry
        result["status"] = f"failed: {type(error).__name__}: {error}"
    if result["status"] != "ok" and not result.get("measured_on"):  # (a written file that missed a gate stays)
        with contextlib.suppress(OSError):
            output.unlink()
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result
