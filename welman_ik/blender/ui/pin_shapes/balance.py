"""The balance pin's shape and miss: the centre of mass, its plumb line, and the support
polygon through the planted pins (or the target point).
"""

from __future__ import annotations

import math

import numpy as np

from ....core.goals.balance import convex_hull_2d, nearest_in_polygon
from .parts import FILL_HELD, FILL_VIOLATED, PIN_VIOLATED, Shapes, norm, pin_colour, plane_basis, shape_colour, unit
from .scene import PinScene


def measure_balance(scene: PinScene, pin, i: int, shapes: Shapes) -> float:
    """The centre of mass, its plumb line down to the ground level (the lowest support corner,
    or the location's height) and the support polygon (or the target); the miss [m]: how far
    the plumb point lies outside the polygon (or from the target), across the vertical."""
    threshold = scene.threshold
    up = unit(scene.directions[i])
    com = scene.centre_of_mass()
    location = scene.locations[i]
    corners = np.zeros((0, 3))
    supported = pin.use_support
    support = scene.support() if supported else np.zeros((0, 3))
    below = support.mean(axis=0) if len(support) else location
    if float((com - below) @ up) < 0.0:  # the vertical's sign does not matter: the plumb line goes down
        up = -up
    if supported:
        level = float(np.min(support @ up)) if len(support) else float(location @ up)
        basis = plane_basis(up)  # (3, 2) across the vertical
        flat = support @ basis
        hull = convex_hull_2d(flat)
        corners = support[hull]
        if len(hull):
            x = com @ basis
            miss = norm(nearest_in_polygon(flat[hull], x)[0] - x)
        else:
            miss = math.inf
    else:
        level = float(location @ up)
        across = com - location
        miss = norm(across - (across @ up) * up)
    ground = com - (float(com @ up) - level) * up
    status = pin_colour(miss, threshold)
    shapes.add("LINES", shape_colour(miss, threshold), [com, ground])
    shapes.add("POINTS", status, [com, ground])
    if supported:
        if len(corners) >= 2:
            loop = np.stack([corners, np.roll(corners, -1, axis=0)], 1).reshape(-1, 3)
            shapes.add("LINES", shape_colour(miss, threshold), loop if len(corners) > 2 else corners)
        if len(corners) >= 3:
            fan = np.stack([np.broadcast_to(corners[0], corners[1:-1].shape), corners[1:-1], corners[2:]], 1)
            shapes.add("TRIS", FILL_HELD if miss <= threshold else FILL_VIOLATED, fan.reshape(-1, 3))
    else:
        shapes.add("POINTS", status, [location])
        if miss > threshold:
            shapes.miss("LINES", PIN_VIOLATED, [ground, location - (float(location @ up) - level) * up])
    return miss
