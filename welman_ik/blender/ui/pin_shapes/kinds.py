"""The shape and the miss of each pin kind but the balance (``balance``): a point, a triad,
a line, a plane, an aimed ray, a sphere, a tether; what each draws is listed in
``pin_shapes``. The lines that show a miss go through ``Shapes.miss`` (an ``IdleShapes`` of a
pin out of force leaves them out).
"""

from __future__ import annotations

import math

import numpy as np

from .balance import measure_balance
from .parts import (
    FAINT_VIOLATED,
    FILL_HELD,
    FILL_VIOLATED,
    LINE_BONES,
    LINE_HALF,
    PIN_VIOLATED,
    PLANE_HALF,
    PLANE_LINES,
    PLANE_TRIS,
    TRIAD,
    TRIAD_MIN,
    UNIT_CIRCLES,
    Shapes,
    norm,
    pin_colour,
    plane_basis,
    quaternion_matrix,
    shape_colour,
    triad,
    unit,
)
from .scene import PinScene

AIM_AXES = {"X": (0, 1.0), "Y": (1, 1.0), "Z": (2, 1.0), "-X": (0, -1.0), "-Y": (1, -1.0), "-Z": (2, -1.0)}


def _orientation(scene: PinScene, pin, i: int, shapes: Shapes) -> float:
    """Draw the goal's triad at the bone's head; the miss [m] as the solver measures it (the
    bone's length times the chord between each held axis and its goal)."""
    head, _, axes, length = scene.bone(pin.bone)
    goal = quaternion_matrix(scene.rotations[i])
    held_axes = scene.held_axes[i].tolist()
    size = max(TRIAD * length, TRIAD_MIN)
    triad(shapes, head, goal, held_axes, size)
    chords = np.linalg.norm(goal - axes, axis=0)
    miss = length * float(max((c for c, h in zip(chords, held_axes) if h), default=0.0))
    if miss > scene.threshold:
        for k in range(3):
            if held_axes[k]:
                shapes.miss("LINES", PIN_VIOLATED, [head, head + size * axes[:, k]])
    return miss


def measure_and_shape(scene: PinScene, pin, i: int, shapes: Shapes) -> float:
    """Add ``pin``'s shape except its status colour (added by the caller); its miss [m]."""
    kind = pin.kind
    threshold = scene.threshold
    if kind == "BALANCE":
        return measure_balance(scene, pin, i, shapes)
    point = scene.point(pin.bone, scene.anchors[i])
    location = scene.locations[i]
    if kind == "POSITION":
        miss = norm(point - location)
        shapes.add("POINTS", pin_colour(miss, threshold), [location])
        if miss > threshold:
            shapes.miss("LINES", PIN_VIOLATED, [point, location])
        return miss
    if kind == "ORIENTATION":
        miss = _orientation(scene, pin, i, shapes)
        shapes.add("POINTS", pin_colour(miss, threshold), [scene.bone(pin.bone)[0]])
        return miss
    if kind == "POSE":
        turn = _orientation(scene, pin, i, shapes)
        off = norm(point - location)
        miss = max(turn, off)
        shapes.add("POINTS", pin_colour(miss, threshold), [location])
        if off > threshold:
            shapes.miss("LINES", PIN_VIOLATED, [point, location])
        return miss
    if kind == "LINE":
        d = unit(scene.directions[i])
        length = scene.bone(pin.bone)[3]
        along = float((point - location) @ d)
        foot = location + along * d
        miss = norm(point - foot)
        reach = max(LINE_HALF, LINE_BONES * length)
        ends = [location + (min(0.0, along) - reach) * d, location + (max(0.0, along) + reach) * d]
        shapes.add("LINES", shape_colour(miss, threshold), ends)
        shapes.add("POINTS", pin_colour(miss, threshold), [point])
        if miss > threshold:
            shapes.miss("LINES", PIN_VIOLATED, [point, foot])
        return miss
    if kind in {"PLANE", "FLOOR"}:  # a patch of the plane under the point (a floor: unfilled, missed only below)
        n = unit(scene.directions[i])
        height = float((point - location) @ n)
        foot = point - height * n
        miss = abs(height) if kind == "PLANE" else max(0.0, -height)
        frame = PLANE_HALF * plane_basis(n).T  # (2, 3)
        shapes.add("LINES", shape_colour(miss, threshold), foot + PLANE_LINES @ frame)
        if kind == "PLANE":
            shapes.add("TRIS", FILL_HELD if miss <= threshold else FILL_VIOLATED, foot + PLANE_TRIS @ frame)
        shapes.add("POINTS", pin_colour(miss, threshold), [point])
        if miss > threshold:
            shapes.miss("LINES", PIN_VIOLATED, [point, foot])
        return miss
    if kind == "AIM":
        head, _, axes, length = scene.bone(pin.bone)
        index, sign = AIM_AXES.get(pin.aim_axis, (1, 1.0))
        aim = sign * axes[:, index]
        way = location - head
        distance = norm(way)
        miss = 0.0 if distance < 1e-12 else length * norm(way / distance - aim)
        status = pin_colour(miss, threshold)
        shapes.add("LINES", status, [head, head + max(distance, length) * aim])
        shapes.add("POINTS", status, [location])
        if miss > threshold:
            shapes.miss("LINES", FAINT_VIOLATED, [head, location])
        return miss
    if kind == "REGION":
        radius = max(float(scene.radii[i]), 0.0)
        offset = point - location
        distance = norm(offset)
        miss = max(0.0, distance - radius)
        if radius > 0.0:
            shapes.add("LINES", shape_colour(miss, threshold), location + radius * UNIT_CIRCLES)
        shapes.add("POINTS", pin_colour(miss, threshold), [point])
        if miss > threshold:
            shapes.miss("LINES", PIN_VIOLATED, [point, location + radius * offset / distance])
        return miss
    if kind == "TOGETHER":  # (another armature's bone: its point, where ``following`` put it)
        other = location if i in scene.followers.met else scene.point(pin.target_bone, scene.target_anchors[i])
        miss = norm(point - other)
        status = pin_colour(miss, threshold)
        shapes.add("LINES", status, [point, other])
        shapes.add("POINTS", status, [point, other])
        return miss
    return math.inf
