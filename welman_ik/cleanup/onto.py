"""One clip retargeted onto a rig (``--onto RIG.blend[:OBJECT]``) inside a process that has
``bpy``: the clip imported in a scene of its own for its unit, the rig's file opened, the clip
imported into it, ``welman_ik.retarget`` run, the result written (the rig's file, or an FBX of
the rig alone) and opened or imported again, and each goal group's largest miss measured
there, on the evaluated pose. Run by ``worker.main`` with ``--onto``; what it shares with
``job.py`` (reading the clips, the job's plumbing) is in ``clips.py``."""

from __future__ import annotations

import math
from pathlib import Path

import bpy

from .clips import (
    FBX_IMPORT_OFFSET,
    FORMATS,
    MM,
    ClipError,
    armatures,
    call,
    clip_frames,
    fresh_scene,
    fresh_scene_addons,
    import_bvh,
    import_fbx,
    quiet,
    reason,
    run_clip,
    shift_action,
)

ANGLE_GROUPS = ("orientations",)


def retarget(source: Path, output: Path, rig: Path, target_name: str = "", scale: float | None = None) -> dict:
    """Retarget ``source`` onto a copy of the armature ``target_name`` (or the only one) of the
    .blend file ``rig``, written to ``output`` (.blend: the rig's file with the clip and the
    new action; .fbx: the rig alone, its new action baked); returns its report entry. The
    figures are read from the written file, opened or imported again."""
    return run_clip(source.name, output, lambda: _retarget(source, output, rig, target_name, scale))


def _import_clip(source: Path, scale: float | None):
    suffix = source.suffix.lower()
    before = set(armatures())
    obj, scale = import_bvh(source, scale) if suffix == ".bvh" else import_fbx(source)
    new = [o for o in armatures() if o not in before]
    return (new[0] if new else obj), scale


def _open(path: Path, what: str) -> None:
    try:
        with quiet():
            bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    except RuntimeError as error:
        raise ClipError(f"could not open {what} {path.name}: {reason(str(error))}") from None
    fresh_scene_addons()


def _target(name: str, rig: Path):
    armatures = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    if name:
        found = bpy.data.objects.get(name)
        if found is None or found.type != "ARMATURE":
            raise ClipError(f"{rig.name} has no armature named '{name}' (it has: "
                            f"{', '.join(o.name for o in armatures) or 'none'})")
        return found
    if len(armatures) != 1:
        raise ClipError(f"{rig.name} has {len(armatures)} armatures ({', '.join(o.name for o in armatures)}): "
                        "name the one to retarget onto, --onto RIG.blend:OBJECT" if armatures else
                        f"{rig.name} has no armature to retarget onto")
    return armatures[0]


def _retarget(source: Path, output: Path, rig: Path, target_name: str, scale: float | None) -> dict:
    from ..blender.bake import retarget as goals
    from ..blender.bake.retarget_gates import evaluate
    from ..blender.bake.retarget_measure import GROUPS
    from ..blender.rig.model import RigError
    from ..blender.rig.retarget_map import retarget_scale

    suffix = source.suffix.lower()
    if suffix not in FORMATS:
        raise ClipError(f"not a BVH or FBX file ({source.suffix or 'no suffix'})")
    if not source.is_file():
        raise ClipError("no such file")
    fresh_scene()
    _, scale = _import_clip(source, scale)  # the clip's unit, found in a scene of its own
    _open(rig, "the rig file")
    target = _target(target_name, rig)
    if target.library is not None or target.data.library is not None:
        raise ClipError(f"'{target.name}' is linked from a library in {rig.name}: make it local to retarget onto it")
    clip, _ = _import_clip(source, scale)
    frames = clip_frames(clip, "the clip has no animation: nothing to retarget")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames[0], frames[-1]
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    bpy.context.view_layer.objects.active = target
    if target.mode != "POSE":
        bpy.ops.object.mode_set(mode="POSE")
    try:
        ratio = retarget_scale(target, clip)
    except RigError as error:
        raise ClipError(str(error)) from None
    try:
        with quiet():
            done = bpy.ops.welman_ik.retarget(source=clip.name, frame_start=frames[0], frame_end=frames[-1],
                                              scale=ratio)
    except RuntimeError as error:
        raise ClipError(f"the retarget was refused: {reason(str(error))}") from None
    if done != {"FINISHED"}:
        raise ClipError("the retarget did not finish")
    # The goals as asked of this rig, world-space per frame, to measure the written file against.
    found = goals.make(bpy.context, target, clip, list(frames), ratio, True)
    names = target.name, clip.name
    bpy.ops.object.mode_set(mode="OBJECT")
    if output.suffix.lower() == ".fbx":
        _export_target(target, output, frames)
        fresh_scene()
        before = set(armatures())
        call(bpy.ops.import_scene.fbx, "could not read the written FBX", filepath=str(output))
        written = [o for o in armatures() if o not in before]
        if not written:
            raise ClipError("the written FBX has no armature")
        target = max(written, key=lambda o: len(o.data.bones))
    else:
        with quiet():
            bpy.ops.wm.save_as_mainfile(filepath=str(output), copy=True)
        _open(output, "the written file")
        target = bpy.data.objects[names[0]]
    if target.animation_data is None or target.animation_data.action is None:
        raise ClipError("the written file's rig has no action")
    found.target = target  # the written rig, measured against the same goals
    found_misses, gates = evaluate(found)
    misses = {m.group: m for m in found_misses}
    out = {"frames": len(frames), "contacts": len(found.plants), "onto": names[0], "scale": scale,
           "retarget_scale": round(ratio, 6), "action": target.animation_data.action.name,
           "measured_on": "the written file, " + ("imported again" if output.suffix.lower() == ".fbx" else "opened again")}
    for group in GROUPS:
        miss = misses.get(group)
        key = f"{group}_deg" if group in ANGLE_GROUPS else f"{group}_mm"
        value = None if miss is None else (math.degrees(miss.error) if group in ANGLE_GROUPS else miss.error * MM)
        out[key] = None if value is None else round(value, 4)
    out["slide_after_mm"] = out["max_pin_error_mm"] = out["plants_mm"] if found.plants else 0.0
    out["gates"] = {g.name: {"value": _figure(g.name, g.value), "limit": _figure(g.name, g.limit), "held": g.held,
                             "frame": g.frame, "bone": g.bone, **({"remark": g.remark} if g.remark else {})}
                     for g in gates}
    missed = [g for g in gates if not g.held]
    if missed:  # the file is written, and the clip failed: say which gate, by how much
        out["status"] = "failed: gates missed: " + ", ".join(
            f"{g.name} {_figure(g.name, g.value)} (limit {_figure(g.name, g.limit)}; {g.bone}, frame {g.frame})"
            for g in missed)
    return out


def _figure(gate: str, value: float) -> float:
    """A gate's figure as report.json gives it: mm, degrees or per cent."""
    from ..blender.bake.retarget_gates import ANGLES

    return round(math.degrees(value) if gate in ANGLES else 100.0 * value if gate == "stretch" else value * MM, 4)


def _export_target(target, output: Path, frames: range) -> None:
    """The rig (and its meshes) alone to an FBX, its assigned action baked on every frame."""
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == target or obj.parent == target)
    bpy.context.view_layer.objects.active = target
    shift_action(target, -FBX_IMPORT_OFFSET)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames[0] - FBX_IMPORT_OFFSET, frames[-1] - FBX_IMPORT_OFFSET
    try:
        call(bpy.ops.export_scene.fbx, "could not write the FBX", filepath=str(output), check_existing=False,
              use_selection=True, add_leaf_bones=False, bake_anim=True, bake_anim_use_all_actions=False,
              bake_anim_use_nla_strips=False, bake_anim_force_startend_keying=True, bake_anim_simplify_factor=0.0,
              bake_anim_step=1.0)
    finally:
        shift_action(target, FBX_IMPORT_OFFSET)
        scene.frame_start, scene.frame_end = frames[0], frames[-1]
    if not output.is_file():
        raise ClipError("the exporter wrote no .fbx file")
