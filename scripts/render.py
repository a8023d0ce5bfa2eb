"""Pictures of posed metarigs rendered by Blender itself (Workbench, headless, no GPU needed).

Armatures do not render, so each Rigify basic human metarig gets a body: a wooden-mannequin
figure of tapered capsules and ellipsoids, one mesh per bone, parented to its bone
(``parent_type = 'BONE'``), so it follows whatever pose the solver writes. The right side is
warm and the left side cool, as animators colour-code limbs; the head has a nose so its
facing reads at a glance. Markers show the pins (dark dots) and the drag (an orange target
and an arrow from where the dragged point started).

    import render
    render.setup_workbench()
    render.add_body(obj)                              # in the rest pose, before posing
    render.pin_markers(obj); render.drag_marker(start, target); render.stand(centre)
    render.caption("text", location, right)
    render.frame_camera(objects, direction); render.render(path)
"""

from __future__ import annotations

from pathlib import Path

import bmesh
import bpy
from mathutils import Matrix, Vector

BODY = (0.80, 0.66, 0.50, 1.0)  # light wood
RIGHT = (0.86, 0.50, 0.38, 1.0)  # warm: the figure's right limbs
LEFT = (0.45, 0.62, 0.80, 1.0)  # cool: the figure's left limbs
PIN = (0.12, 0.12, 0.14, 1.0)
DRAG = (1.00, 0.48, 0.05, 1.0)
STAND = (0.80, 0.80, 0.78, 1.0)
BACKGROUND_TOP, BACKGROUND_BOTTOM = (0.97, 0.97, 0.96), (0.80, 0.82, 0.84)  # a studio sweep
TEXT = (0.15, 0.15, 0.17, 1.0)

X, Y, Z = Vector((1, 0, 0)), Vector((0, 1, 0)), Vector((0, 0, 1))

# The mannequin, in the metarig's rest pose (it faces -Y, Z up). Per bone, parts:
# ("capsule", from, to, radius at from, radius at to, across, flat): a tapered capsule whose
# cross-section is an ellipse, ``radius`` along ``across`` and ``radius * flat`` across that;
# ("ellipsoid", centre, radii along (X, Y, Z)). Points are (bone, t along head..tail) or
# (bone, t, offset): offset a float, metres on along the bone, or a vector in the armature's
# rest space; ``across`` is an axis of the armature's rest space.
SEGMENTS = 20
SHAFT = 0.93  # shaft radius over ball radius


def _along(bone: str, ra: float, rb: float, across: Vector = X, flat: float = 1.0, start: float = 0.0,
           end: float = 1.0) -> tuple:
    """A capsule along ``bone`` from ``start`` to ``end`` (0 head, 1 tail)."""
    return ("capsule", (bone, start), (bone, end), ra, rb, across, flat)


def _limbs(side: str) -> dict:
    s = 1 if side == "L" else -1
    return {
        f"shoulder.{side}": [_along(f"shoulder.{side}", 0.035, 0.045, start=0.15)],
        f"upper_arm.{side}": [_along(f"upper_arm.{side}", 0.052, 0.040, Y)],
        f"forearm.{side}": [_along(f"forearm.{side}", 0.040, 0.030, Y)],
        # The metarig's hand bone is the palm (8 cm): the mitt carries on to the fingertips.
        f"hand.{side}": [("capsule", (f"hand.{side}", 0.1), (f"hand.{side}", 1.0, 0.08), 0.040, 0.034, Y, 0.42)],
        f"thigh.{side}": [_along(f"thigh.{side}", 0.085, 0.055)],
        f"shin.{side}": [_along(f"shin.{side}", 0.055, 0.038)],
        # The foot from the heel (behind and below the ankle) to the ball.
        f"foot.{side}": [("capsule", (f"foot.{side}", 0.0, (0.0, 0.035, -0.045)), (f"foot.{side}", 1.0), 0.040,
                          0.038, X * s, 0.6)],
        f"toe.{side}": [_along(f"toe.{side}", 0.036, 0.026, X * s, 0.6)],
    }


PARTS = {
    "spine": [("ellipsoid", ("spine", 0.15, (0.0, 0.0, -0.02)), (0.165, 0.105, 0.12)),  # the pelvis
              _along("spine", 0.14, 0.125, flat=0.70)],
    "spine.001": [_along("spine.001", 0.125, 0.13, flat=0.70)],
    "spine.002": [_along("spine.002", 0.13, 0.15, flat=0.68)],
    "spine.003": [_along("spine.003", 0.15, 0.14, flat=0.68, end=0.78)],
    "spine.004": [_along("spine.004", 0.05, 0.045)],
    "spine.005": [_along("spine.005", 0.045, 0.045)],
    "spine.006": [("ellipsoid", ("spine.006", 0.45, (0.0, -0.01, 0.0)), (0.080, 0.095, 0.112)),
                  ("ellipsoid", ("spine.006", 0.42, (0.0, -0.095, 0.0)), (0.018, 0.03, 0.022))],  # the nose
    **_limbs("L"),
    **_limbs("R"),
}


def _colour(bone: str) -> tuple:
    if bone.endswith(".L"):
        return LEFT
    if bone.endswith(".R"):
        return RIGHT
    return BODY


def _rest_point(obj, spec) -> Vector:
    """World point of a part's end, in the armature's rest (edit) pose."""
    bone, t, *offset = spec
    b = obj.data.bones[bone]
    p = b.head_local.lerp(b.tail_local, t)
    if offset and isinstance(offset[0], float):  # metres on along the bone
        p = p + (b.tail_local - b.head_local).normalized() * offset[0]
    elif offset:  # metres in the armature's rest space
        p = p + Vector(offset[0])
    return obj.matrix_world @ p


def _frame(axis: Vector, across: Vector) -> Matrix:
    """Columns: ``across`` made orthogonal to ``axis``, the third axis, and ``axis``."""
    u = axis.normalized()
    e1 = across - across.dot(u) * u
    if e1.length < 1e-6:
        e1 = (X if abs(u.x) < 0.9 else Y) - u * u.dot(X if abs(u.x) < 0.9 else Y)
    e1.normalize()
    return Matrix((e1, u.cross(e1), u)).transposed()


def _capsule(bm, a: Vector, b: Vector, ra: float, rb: float, across: Vector, flat: float, tail_cap: bool) -> None:
    """A tapered capsule from ``a`` to ``b``; ``tail_cap`` False: no ball at ``b`` (the next
    part's ball is the joint there, and two balls in one place would flicker)."""
    frame = _frame(b - a, across).to_4x4() @ Matrix.Diagonal((1.0, flat, 1.0, 1.0))
    length = (b - a).length
    # The shaft a little thinner than the balls: the joints read as balls, as on a wooden
    # mannequin, and the surfaces meet at an angle instead of flickering where they touch.
    bmesh.ops.create_cone(bm, cap_ends=False, segments=SEGMENTS, radius1=SHAFT * ra, radius2=SHAFT * rb,
                          depth=length, matrix=Matrix.Translation((a + b) / 2) @ frame)
    for centre, r in ((a, ra), (b, rb)) if tail_cap else ((a, ra),):
        bmesh.ops.create_uvsphere(bm, u_segments=SEGMENTS, v_segments=SEGMENTS // 2, radius=r,
                                  matrix=Matrix.Translation(centre) @ frame)


def _ellipsoid(bm, centre: Vector, radii, rotation: Matrix) -> None:
    bmesh.ops.create_uvsphere(bm, u_segments=SEGMENTS + 4, v_segments=SEGMENTS // 2 + 2, radius=1.0,
                              matrix=Matrix.Translation(centre) @ rotation.to_4x4() @ Matrix.Diagonal((*radii, 1.0)))


def _mesh_object(name: str, bm, colour, collection=None):
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    for polygon in mesh.polygons:
        polygon.use_smooth = True
    obj = bpy.data.objects.new(name, mesh)
    obj.color = colour
    (collection or bpy.context.scene.collection).objects.link(obj)
    return obj


def add_body(obj) -> list:
    """A mannequin body for metarig ``obj``, built in its current pose (call it in the rest
    pose), one mesh per bone parented to that bone. Returns the meshes."""
    bpy.context.view_layer.update()
    rotation = obj.matrix_world.to_3x3().normalized()
    joints = [_rest_point(obj, spec[1]) for specs in PARTS.values() for spec in specs
              if spec[0] == "capsule" and spec[1][0] in obj.pose.bones]
    parts = []
    for bone, specs in PARTS.items():
        pb = obj.pose.bones.get(bone)
        if pb is None:
            continue
        bm = bmesh.new()
        for spec in specs:
            if spec[0] == "capsule":
                _, a, b, ra, rb, across, flat = spec
                a, b = _rest_point(obj, a), _rest_point(obj, b)
                _capsule(bm, a, b, ra, rb, rotation @ across, flat, all((b - j).length > 0.01 for j in joints))
            else:
                _, centre, radii = spec
                _ellipsoid(bm, _rest_point(obj, centre), radii, rotation)
        part = _mesh_object(f"{obj.name} {bone}", bm, _colour(bone))
        part.parent, part.parent_type, part.parent_bone = obj, "BONE", bone
        part.matrix_parent_inverse = (obj.matrix_world @ pb.matrix @ Matrix.Translation((0, pb.length, 0))).inverted()
        parts.append(part)
    return parts


def sphere(location, radius: float, colour, name: str = "marker"):
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=16, v_segments=8, radius=radius, matrix=Matrix.Translation(location))
    return _mesh_object(name, bm, colour)


def pin_markers(obj, radius: float = 0.03) -> list:
    """A dark dot at every enabled pin's goal."""
    return [sphere(p.location, radius, PIN, f"pin {p.bone}") for p in obj.welman_ik.pins if p.enabled]


def drag_marker(start, target, radius: float = 0.03, arrow: bool = True) -> list:
    """The drag's target, and a thin arrow from where the dragged point started."""
    start, target = Vector(start), Vector(target)
    made = [sphere(target, radius, DRAG, "drag target")]
    span = target - start
    if arrow and span.length > 3 * radius:
        bm = bmesh.new()
        tip = target - span.normalized() * radius
        head = tip - span.normalized() * min(0.06, 0.4 * span.length)
        frame = _frame(span, X).to_4x4()
        bmesh.ops.create_cone(bm, cap_ends=True, segments=12, radius1=0.007, radius2=0.007,
                              depth=(head - start).length, matrix=Matrix.Translation((start + head) / 2) @ frame)
        bmesh.ops.create_cone(bm, cap_ends=True, segments=16, radius1=0.022, radius2=0.0,
                              depth=(tip - head).length, matrix=Matrix.Translation((head + tip) / 2) @ frame)
        made.append(_mesh_object("drag arrow", bm, DRAG))
    return made


def caption(text: str, location, right=(1.0, 0.0, 0.0), size: float = 0.1):
    """Flat text centred on ``location`` and standing on it, upright, reading along ``right``
    (the camera's right), facing the camera."""
    curve = bpy.data.curves.new("caption", "FONT")
    curve.body, curve.size, curve.align_x, curve.align_y = text, size, "CENTER", "BOTTOM"
    obj = bpy.data.objects.new("caption", curve)
    obj.color = TEXT
    bpy.context.scene.collection.objects.link(obj)
    r = Vector(right).normalized()
    obj.matrix_world = Matrix.Translation(location) @ Matrix((r, Z, r.cross(Z))).transposed().to_4x4()
    return obj


def stand(centre, radius: float = 0.45, height: float = 0.025):
    """A round stand whose top is the floor at ``centre``."""
    bm = bmesh.new()
    bmesh.ops.create_cone(bm, cap_ends=True, segments=64, radius1=radius, radius2=radius, depth=height,
                          matrix=Matrix.Translation(Vector(centre) - Vector((0, 0, height / 2))))
    return _mesh_object("stand", bm, STAND)


def frame_camera(objects, direction, up=(0.0, 0.0, 1.0), margin: float = 1.08, resolution=(1800, 860),
                 elevation: float = 0.0):
    """An orthographic camera looking along ``direction`` (tilted down by ``elevation``
    radians) that frames the bounding boxes of ``objects`` with ``margin``; sets the resolution."""
    scene = bpy.context.scene
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    bpy.context.view_layer.update()
    forward = Vector(direction).normalized()
    forward = (Matrix.Rotation(-elevation, 3, forward.cross(Vector(up)).normalized()) @ forward).normalized()
    right = forward.cross(Vector(up)).normalized()
    true_up = right.cross(forward)
    points = [o.matrix_world @ Vector(corner) for o in objects for corner in o.bound_box]
    xs, ys, depths = ([p.dot(axis) for p in points] for axis in (right, true_up, forward))
    centre = right * (max(xs) + min(xs)) / 2 + true_up * (max(ys) + min(ys)) / 2 + forward * min(depths)
    aspect = resolution[0] / resolution[1]
    width = max(max(xs) - min(xs), (max(ys) - min(ys)) * aspect) * margin
    data = bpy.data.cameras.new("camera")
    data.type, data.ortho_scale = "ORTHO", width
    data.clip_start, data.clip_end = 0.01, 100.0
    camera = bpy.data.objects.new("camera", data)
    scene.collection.objects.link(camera)
    rotation = Matrix((right, true_up, -forward)).transposed()
    camera.matrix_world = Matrix.Translation(centre - 10.0 * forward) @ rotation.to_4x4()
    scene.camera = camera
    return camera


def setup_workbench(light_direction=(0.45, -0.35, 0.82)) -> None:
    """Workbench, object colours, the default studio light, shadows cast along
    ``light_direction``, outlines, a transparent background (``render`` lays the picture on
    a studio sweep)."""
    scene = bpy.context.scene
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.render_aa = "16"
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "OBJECT"
    shading.show_shadows = True
    shading.shadow_intensity = 0.5
    shading.show_cavity = False  # it draws the seams where the capsules overlap
    shading.show_object_outline = True
    shading.object_outline_color = (0.1, 0.1, 0.1)
    shading.show_specular_highlight = True
    scene.display.light_direction = light_direction
    scene.display.shadow_shift = 0.1
    scene.render.film_transparent = True
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGBA"
    scene.view_settings.view_transform = "Standard"


def render(path: Path) -> Path:
    """Render the scene's camera to ``path`` (PNG, on the studio sweep)."""
    import numpy as np

    scene = bpy.context.scene
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    image = bpy.data.images.load(str(path))
    w, h = image.size
    pixels = np.empty(w * h * 4, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    pixels = pixels.reshape(h, w, 4)
    t = np.linspace(0.0, 1.0, h)[:, None, None]  # rows bottom to top
    sweep = (1 - t) * np.array(BACKGROUND_BOTTOM) + t * np.array(BACKGROUND_TOP)
    alpha = pixels[:, :, 3:4]
    pixels[:, :, :3] = pixels[:, :, :3] * alpha + sweep * (1 - alpha)  # the PNG holds straight alpha
    pixels[:, :, 3] = 1.0
    image.pixels.foreach_set(pixels.ravel())
    image.filepath_raw, image.file_format = str(path), "PNG"
    image.save()
    bpy.data.images.remove(image)
    return Path(path)


def _pixels(paths) -> tuple[list, list]:
    """(images, (h, w, 4) float pixels of each) of the PNGs ``paths``, loaded."""
    import numpy as np

    images = [bpy.data.images.load(str(p)) for p in paths]
    pixels = []
    for image in images:
        w, h = image.size
        buffer = np.empty(w * h * 4, dtype=np.float32)
        image.pixels.foreach_get(buffer)
        pixels.append(buffer.reshape(h, w, 4))
    return images, pixels


def _save_pixels(whole, path: Path, images) -> Path:
    """``whole`` (h, w, 4) saved as the PNG ``path``; ``images`` (what it was made of) removed."""
    out = bpy.data.images.new(Path(path).stem, whole.shape[1], whole.shape[0], alpha=False)
    out.pixels.foreach_set(whole.ravel())
    out.filepath_raw, out.file_format = str(path), "PNG"
    out.save()
    for image in [*images, out]:
        bpy.data.images.remove(image)
    return Path(path)


def stack(paths, path: Path) -> Path:
    """The PNGs ``paths`` (same width) one above the other, in one PNG."""
    import numpy as np

    images, pixels = _pixels(paths)
    if any(p.shape[1] != pixels[0].shape[1] for p in pixels):
        raise ValueError("stack: the pictures differ in width")
    return _save_pixels(np.concatenate(pixels[::-1], axis=0), path, images)  # Blender's rows run bottom to top


def strip(paths, path: Path, gap: int = 6) -> Path:
    """The PNGs ``paths`` (same height) side by side, a thin white gap between, in one PNG."""
    import numpy as np

    images, pixels = _pixels(paths)
    height = pixels[0].shape[0]
    if any(p.shape[0] != height for p in pixels):
        raise ValueError("strip: the pictures differ in height")
    gap_column = np.ones((height, gap, 4), dtype=np.float32)
    columns = [part for i, p in enumerate(pixels) for part in ([gap_column, p] if i else [p])]
    return _save_pixels(np.concatenate(columns, axis=1), path, images)


def add_sticks(obj, radius: float = 0.025, colour=(0.55, 0.56, 0.60, 1.0)) -> list:
    """A plain body for any armature ``obj`` (a mocap skeleton): a capsule along each bone,
    parented to it, left limbs cool and right limbs warm by name (a generated Rigify rig: its
    deforming bones alone). Call it in the rest pose."""
    bpy.context.view_layer.update()
    rotation = obj.matrix_world.to_3x3().normalized()
    parts = []
    deforming_only = any(b.name.startswith("DEF-") for b in obj.data.bones)
    for pb in obj.pose.bones:
        if deforming_only and not pb.bone.use_deform:
            continue
        head, tail = obj.matrix_world @ pb.head, obj.matrix_world @ pb.tail
        if (tail - head).length < 1e-4:
            continue
        bm = bmesh.new()
        _capsule(bm, head, tail, radius, radius * 0.8, rotation @ X, 1.0, True)
        name = pb.name.lower()
        tint = LEFT if "left" in name or name.endswith(".l") else RIGHT if "right" in name or name.endswith(".r") \
            else colour
        part = _mesh_object(f"{obj.name} {pb.name}", bm, tint)
        part.parent, part.parent_type, part.parent_bone = obj, "BONE", pb.name
        part.matrix_parent_inverse = (obj.matrix_world @ pb.matrix @ Matrix.Translation((0, pb.length, 0))).inverted()
        parts.append(part)
    return parts
