"""One clip cleaned inside a process that has ``bpy``: import, find the feet, detect their
contacts (and, unless ``--no-floor``, the clip's floor, with floor pins on the feet), bake,
export, then import the written file again in a fresh scene and measure it there, on the
evaluated pose: the report's figures are the file's.

A BVH clip is written by ``bvh.write`` in the source's own hierarchy, channels and axes
(Blender's BVH exporter writes its Z-up frame and six channels a joint); an FBX clip by
Blender's exporter with its curve simplification off and its frames where the source's are.

Run by ``worker.main`` (``python -m welman_ik.cleanup.worker``): one process per clip. What
it shares with the retarget (``onto.py``), reading the clips and the job's plumbing, is in
``clips.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from ..core import anatomy
from . import bvh
from .clips import (
    FBX_IMPORT_OFFSET,
    FORMATS,
    MM,
    ClipError,
    call,
    clip_frames,
    fresh_scene,
    import_bvh,
    import_fbx,
    quiet,
    run_clip,
    shift_action,
)
from .measure import Evaluated, evaluate, plant_figures

FEET = ("foot.L", "foot.R")  # the roles whose bones are the feet
FILE_AGREES = 0.0001  # [m] the written file's figures within this of the bake's, or the clip fails
STANDS = 0.001  # [m] the written file's size per axis within this of the baked clip's on every frame


# -- the feet --------------------------------------------------------------------------


def find_feet(obj, names: Sequence[str] | None = None) -> tuple[str, list[str]]:
    """The naming found and the two foot bones: ``names`` (checked) or the bones whose role
    ``anatomy.recognise`` says is a foot."""
    bones = [b.name for b in obj.data.bones]
    if names:
        missing = [n for n in names if n not in obj.data.bones]
        if missing:
            raise ClipError(f"no bone named {', '.join(map(repr, missing))} (--feet); the clip's bones include "
                            f"{', '.join(bones[:12])}{', ...' if len(bones) > 12 else ''}")
        return "", list(names)
    parents = {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones}
    naming, roles = anatomy.recognise(bones, parents)
    feet = [name for name in bones if roles.get(name) in FEET]
    if len(feet) != 2:
        found = f"found {', '.join(feet)}" if feet else "its bone names follow no naming the add-on recognises"
        raise ClipError(f"no pair of feet ({found}; Rigify, Mixamo and the usual BVH names are recognised): "
                        "name the two foot bones with --feet LEFT,RIGHT")
    return naming, feet


def select_only(obj, names) -> None:
    from ..blender.rig.selection import set_selected

    names = set(names)
    for pb in obj.pose.bones:
        set_selected(pb, pb.name in names)


# -- plants ----------------------------------------------------------------------------


def plants(obj) -> list[tuple[str, float, int, int, np.ndarray]]:
    """(bone, anchor, first frame, last frame, held place) of each plant ``detect_contacts`` made."""
    return [(p.bone, float(p.anchor), p.frame_start, p.frame_end, np.array(p.location, dtype=float))
            for p in obj.welman_ik.pins if p.kind == "POSITION"]


def floor(obj) -> tuple[list[tuple[str, float]], float] | None:
    """The feet's points ``detect_contacts`` pinned on the clip's floor, as (bone, anchor), and
    the floor's height [m]; None without floor pins."""
    pins = [p for p in obj.welman_ik.pins if p.kind == "FLOOR"]
    return ([(p.bone, float(p.anchor)) for p in pins], float(pins[0].location[2])) if pins else None


# -- exporting -------------------------------------------------------------------------


def export(obj, source: Path, output: Path, scale: float, frames: range, evaluated: Evaluated | None = None) -> None:
    """The armature and its assigned action to ``output``, in the format its suffix names,
    as the source stands: a BVH in the source's own hierarchy, channels, axes and units
    (``bvh.write``, from ``evaluated`` where the animation was evaluated already); an FBX by
    Blender's exporter with everything the file brought (its meshes too), every frame keyed
    as baked (no curve simplification), its times where the source's were."""
    if output.suffix.lower() == ".bvh":
        try:
            bvh.write(obj, source, output, scale, frames, evaluated=evaluated)
        except ValueError as error:
            raise ClipError(f"could not write the BVH: {error}") from None
    else:
        if obj.mode != "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = obj
        # The exporter writes frame f at time f / fps and the importer reads time t back as frame
        # t * fps + 1: the keys go one frame earlier, so the file is read back on the source's frames.
        shift_action(obj, -FBX_IMPORT_OFFSET)
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = frames[0] - FBX_IMPORT_OFFSET, frames[-1] - FBX_IMPORT_OFFSET
        try:
            # Everything the file brought (the character's meshes too), not the armature alone.
            call(bpy.ops.export_scene.fbx, "could not write the FBX", filepath=str(output), check_existing=False,
                  use_selection=False, add_leaf_bones=False, bake_anim=True,
                  bake_anim_use_all_actions=False, bake_anim_use_nla_strips=False,
                  bake_anim_force_startend_keying=True, bake_anim_simplify_factor=0.0, bake_anim_step=1.0)
        finally:
            shift_action(obj, FBX_IMPORT_OFFSET)
            scene.frame_start, scene.frame_end = frames[0], frames[-1]
    if not output.is_file():
        raise ClipError(f"the exporter wrote no {output.suffix} file")


# -- one clip --------------------------------------------------------------------------


def clean(source: Path, output: Path, feet: Sequence[str] | None = None, scale: float | None = None,
          keep_floor: bool = True) -> dict:
    """Clean ``source`` into ``output`` (a BVH or FBX file); returns its report entry. A clip
    that cannot be cleaned gets its reason as ``status`` and no output file. ``keep_floor``:
    the feet are kept on or above the clip's floor (found from their contacts) too."""
    return run_clip(source.name, output, lambda: _clean(source, output, feet, scale, keep_floor))


def _clean(source: Path, output: Path, feet: Sequence[str] | None, scale: float | None, keep_floor: bool) -> dict:
    suffix = source.suffix.lower()
    if suffix not in FORMATS:
        raise ClipError(f"not a BVH or FBX file ({source.suffix or 'no suffix'})")
    if not source.is_file():
        raise ClipError("no such file")
    fresh_scene()
    obj, scale = import_bvh(source, scale) if suffix == ".bvh" else import_fbx(source)
    frames = clip_frames(obj, "the armature has no animation: nothing to clean")
    if len(frames) < 2:
        raise ClipError("the clip has a single frame: nothing to clean")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames[0], frames[-1]  # the range Detect Contacts reads
    naming, feet = find_feet(obj, feet)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="POSE")
    scene.frame_set(frames[0])
    select_only(obj, feet)
    with quiet():
        detected = bpy.ops.welman_ik.detect_contacts(floor=keep_floor)
    if detected != {"FINISHED"}:
        raise ClipError("contact detection did not finish")
    found, floors = plants(obj), floor(obj)
    out = {"frames": len(frames), "contacts": len(found), "feet": feet, "naming": naming, "scale": scale,
           "slide_before_mm": 0.0, "slide_after_mm": 0.0, "max_pin_error_mm": 0.0, "floor_m": None,
           "below_floor_before_mm": None, "below_floor_after_mm": None}
    posed = evaluate(obj, frames)  # the clip as it plays: its figures, and the file written where nothing is baked
    before, _, source_sizes, below_before = plant_figures(obj, found, frames, floors, posed)
    baked = [], [], source_sizes, below_before
    if found:
        select_only(obj, feet)
        with quiet():
            finished = bpy.ops.welman_ik.bake(frame_start=frames[0], frame_end=frames[-1])
        last_solve = obj.welman_ik.last_solve
        if finished != {"FINISHED"}:
            raise ClipError(f"the bake did not finish{': ' + last_solve.message if last_solve.message else ''}")
        if last_solve.message:
            out["message"] = last_solve.message
        posed = evaluate(obj, frames)  # the baked clip: its figures, and the file written from them
        baked = plant_figures(obj, found, frames, floors, posed)
    clip = Clip(frames, fps(scene), sorted(obj.data.bones.keys()), baked[2])
    export(obj, source, output, scale, frames, posed)
    # The figures are the file's: read it back in a fresh scene, as a user would.
    written, stands = read_back(output, scale, found, clip, floors)
    # How far the clean-up changed the skeleton's size per axis on any frame (plants held
    # at their average place move a foot by up to its slide; the floor lifts a foot that dipped).
    out["extent_change_mm"] = round(float(np.abs(stands - source_sizes).max(initial=0.0)) * MM, 3)
    if floors is not None:
        out.update(floor_m=round(floors[1], 6), below_floor_before_mm=round(below_before * MM, 4),
                   below_floor_after_mm=round(written[2] * MM, 4))
    if found:
        pairs = list(zip([*baked[0], *baked[1]], [*written[0], *written[1]], strict=True))
        if floors is not None:
            pairs.append((baked[3], written[2]))
        differs = max(abs(a - b) for a, b in pairs)
        if differs > FILE_AGREES:
            raise ClipError(f"the written file does not hold what the bake did: read back, a figure differs "
                            f"by {differs * MM:.3f} mm from the bake's (more than {FILE_AGREES * MM:.1f} mm)")
        after, misses, _ = written
        out.update(slide_before_mm=round(max(before) * MM, 4), slide_after_mm=round(max(after) * MM, 4),
                   max_pin_error_mm=round(max(misses) * MM, 4))
        out["plants"] = [{"bone": bone, "point": "heel" if anchor == 0.0 else "toe" if anchor == 1.0 else anchor,
                          "frame_start": start, "frame_end": end, "slide_before_mm": round(b * MM, 4),
                          "slide_after_mm": round(a * MM, 4), "pin_error_mm": round(m * MM, 4),
                          "held_at_m": [round(float(v), 6) for v in place]}
                         for (bone, anchor, start, end, place), b, a, m in zip(found, before, after, misses)]
    out["measured_on"] = "the written file, imported again"
    return out


@dataclass(frozen=True)
class Clip:
    """What a written clip must keep of the baked one: its frames, frame rate, joints and its
    size along each axis on each frame (wrong axes or units show there at once)."""

    frames: range
    fps: float
    bones: list[str]
    extents: np.ndarray  # (frames, 3) [m]


def fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def read_back(path: Path, scale: float, found: list, source: Clip,
              floors: tuple | None = None) -> tuple[tuple[list, list, float | None], np.ndarray]:
    """The written file imported again in a fresh scene with the importer's settings of the
    source: its plants' drifts and distances from their places and how far its feet go below
    the ``floors`` (``plant_figures``), and its size along each axis on each frame [m]. A file that does not keep the baked clip's
    frames, frame rate or joints, or does not stand as it stood, is a ClipError."""
    fresh_scene()
    obj, _ = import_bvh(path, scale) if path.suffix.lower() == ".bvh" else import_fbx(path)
    frames = clip_frames(obj, "the written file has no animation")
    if frames != source.frames:
        raise ClipError(f"the written file holds frames {frames[0]}-{frames[-1]} where the source holds "
                        f"{source.frames[0]}-{source.frames[-1]}")
    if abs(fps(bpy.context.scene) - source.fps) > 1e-6 * source.fps:
        raise ClipError(f"the written file plays at {fps(bpy.context.scene):g} fps, the source at {source.fps:g}")
    bones = sorted(obj.data.bones.keys())
    if bones != source.bones:
        lost, gained = sorted(set(source.bones) - set(bones)), sorted(set(bones) - set(source.bones))
        raise ClipError(f"the written file's joints differ from the source's (lost: {', '.join(lost) or 'none'}; "
                        f"new: {', '.join(gained) or 'none'})")
    drifts, misses, stands, below = plant_figures(obj, found, frames, floors)
    stray = np.abs(stands - source.extents)
    frame, axis = np.unravel_index(int(np.argmax(stray)), stray.shape)
    if stray[frame, axis] > STANDS:
        raise ClipError(f"the written file does not stand as the cleaned clip stood: on frame {frames[frame]} its "
                        f"size along {'XYZ'[axis]} differs by {stray[frame, axis] * MM:.1f} mm")
    return (drifts, misses, below), stands
