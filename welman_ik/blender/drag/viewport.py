"""Mouse positions to rays and bones, in the 3D viewport's region space."""

from __future__ import annotations

import numpy as np
from bpy_extras import view3d_utils

from ..rig import selection

PICK_RADIUS = 12.0  # pixels from a bone's line within which the mouse picks it


def view_region(context):
    """The 3D viewport's main region and its view (``(None, None)`` outside a 3D viewport),
    whichever region of the area the operator started from (the sidebar's buttons too)."""
    area = context.area
    if area is None or area.type != "VIEW_3D":
        return None, None
    region = next((r for r in area.regions if r.type == "WINDOW"), None)
    return region, area.spaces.active.region_3d


def region_mouse(region, event) -> tuple[float, float]:
    """The event's mouse position in ``region`` pixels."""
    return event.mouse_x - region.x, event.mouse_y - region.y


def grab_offset(region, rv3d, point, mouse) -> tuple[float, float]:
    """What to add to the mouse (region pixels) so that it sits on ``point`` (world space) on
    screen: a drag measured from where it started, not from where the mouse happens to be
    (the sidebar's button). (0, 0) where the point is behind the view."""
    seen = view3d_utils.location_3d_to_region_2d(region, rv3d, tuple(map(float, point)))
    return (0.0, 0.0) if seen is None else (seen[0] - mouse[0], seen[1] - mouse[1])


def mouse_ray(region, rv3d, mouse) -> tuple[np.ndarray, np.ndarray]:
    """World-space origin and direction of the ray under ``mouse`` (region pixels); right for
    orthographic and perspective views alike."""
    origin = view3d_utils.region_2d_to_origin_3d(region, rv3d, mouse)
    direction = view3d_utils.region_2d_to_vector_3d(region, rv3d, mouse)
    return np.array(origin, dtype=float), np.array(direction, dtype=float)


def _segment_distance(p, a, b) -> float:
    ab = b - a
    t = 0.0 if not ab.any() else float(np.clip((p - a) @ ab / (ab @ ab), 0.0, 1.0))
    return float(np.linalg.norm(p - (a + t * ab)))


def bone_under_mouse(region, rv3d, obj, mouse) -> str:
    """The visible pose bone whose drawn line passes nearest the mouse, within PICK_RADIUS
    pixels; '' if none."""
    world = obj.matrix_world
    p = np.array(mouse, dtype=float)
    best, best_name = PICK_RADIUS, ""
    for pb in obj.pose.bones:
        if selection.is_hidden(pb):
            continue
        head = view3d_utils.location_3d_to_region_2d(region, rv3d, world @ pb.head)
        tail = view3d_utils.location_3d_to_region_2d(region, rv3d, world @ pb.tail)
        if head is None or tail is None:
            continue
        distance = _segment_distance(p, np.array(head), np.array(tail))
        if distance < best:
            best, best_name = distance, pb.name
    return best_name
