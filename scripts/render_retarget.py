"""Pictures of a retarget: the source skeleton (grey sticks) beside the target (the
mannequin), on chosen frames, rendered by Blender (Workbench, headless).

    .venv/bin/python scripts/render_retarget.py FILE.blend SOURCE TARGET OUT.png CAPTION [FRAME ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpy
import render
import scenes
from mathutils import Vector


def pictures(blend: str, source: str, target: str, out: Path, frames, apart: float = 1.2,
             caption: str = "") -> list[Path]:
    """Render ``frames`` of ``blend``: the source moved ``apart`` metres to the side, the target
    on a stand whose top is its floor (z = 0), seen from the front and a little above."""
    scenes.load_addon()
    bpy.ops.wm.open_mainfile(filepath=blend)
    render.setup_workbench()
    src, tgt = bpy.data.objects[source], bpy.data.objects[target]
    for obj in (src, tgt):
        obj.data.pose_position = "REST"
    bpy.context.view_layer.update()
    parts = render.add_sticks(src) + (render.add_body(tgt) if "spine.006" in tgt.pose.bones else render.add_sticks(tgt))
    for obj in (src, tgt):
        obj.data.pose_position = "POSE"
    src.location.x += apart
    paths = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        for obj in list(bpy.data.objects):
            if obj.type == "CAMERA" or obj.name.startswith(("stand", "caption")):
                bpy.data.objects.remove(obj)
        bpy.context.view_layer.update()
        # Under the body: the middle of its deforming bones' heads (a Rigify rig's first bone,
        # its root, stays behind at the origin).
        body = [pb for pb in tgt.pose.bones if pb.bone.use_deform] or list(tgt.pose.bones)
        hips = tgt.matrix_world @ (sum((pb.head for pb in body), Vector()) / len(body)) if body else tgt.location
        floor = render.stand((hips.x, hips.y, 0.0), radius=0.6, height=0.02)
        text = [render.caption(f"{caption} frame {frame}".strip(), (hips.x + apart / 2, hips.y, 2.05))] if caption else []
        render.frame_camera(parts + [floor] + text, (0.0, 1.0, 0.0), resolution=(1200, 760), margin=1.2,
                            elevation=0.25)
        paths.append(render.render(out.with_name(f"{out.stem}_{frame}.png")))
    return paths


if __name__ == "__main__":
    blend, source, target, out, caption, *frames = sys.argv[1:]
    pictures(blend, source, target, Path(out), [int(f) for f in frames] or [1], caption=caption)
    sys.stdout.flush()
    import os

    os._exit(0)  # (a process that imported bpy as a module may not exit by itself)
