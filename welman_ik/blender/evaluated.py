"""The truth is the pose Blender evaluates.

The solver poses a model of the armature (``rig.py``); constraints, drivers and whatever
else the model leaves out decide where the bones really end. Every figure the add-on
reports is measured here, on the evaluated pose, and a solve closes its loop on it: where
an evaluated point misses while the model's point holds, the model's target moves by the
difference and the model is solved again, until the evaluated pose meets the goals or
stops getting closer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

# Blender stores pose matrices in single precision: a point 1 m from the origin is known
# to ~1e-7 m, and a few products along a chain lose a few bits more.
FLOAT32_SLACK = 64 * 2.0**-23


def update() -> None:
    """Let Blender evaluate the pose (constraints, drivers, inheritance)."""
    bpy.context.view_layer.update()


def anchor_points(obj, bones, anchors) -> np.ndarray:
    """World positions (k, 3) of the points ``anchors`` (0 head, 1 tail) along pose bones
    ``bones`` as Blender last evaluated them (call ``update`` first after a change)."""
    world = np.array(obj.matrix_world, dtype=float)
    pose_bones = obj.pose.bones
    local = np.empty((len(bones), 4))
    local[:, 3] = 1.0
    for i, (name, anchor) in enumerate(zip(bones, anchors)):
        pb = pose_bones[name]
        head, tail = np.array(pb.head, dtype=float), np.array(pb.tail, dtype=float)
        local[i, :3] = head + anchor * (tail - head)
    return (local @ world.T)[:, :3]


def slack(points: np.ndarray) -> np.ndarray:
    """How far (k,) [m] single-precision storage alone can put each point off."""
    return FLOAT32_SLACK * np.maximum(1.0, np.abs(points).max(axis=-1))


@dataclass
class GoalSet:
    """The points one solve holds, in Blender's terms: ``bones[i]``'s point ``anchors[i]``
    should be at ``targets[i]`` (world), with importance ``weights[i]`` (0: informative,
    never counted against convergence). The last entry may be the drag (``dragged``)."""

    bones: list[str]
    anchors: np.ndarray
    targets: np.ndarray
    weights: np.ndarray
    dragged: bool = False
    offsets: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.anchors = np.asarray(self.anchors, dtype=float).reshape(-1)
        self.targets = np.asarray(self.targets, dtype=float).reshape(-1, 3)
        self.weights = np.asarray(self.weights, dtype=float).reshape(-1)
        self.offsets = np.zeros_like(self.targets)

    @property
    def model_targets(self) -> np.ndarray:
        """Where the model should put each point so that the evaluated one lands on target."""
        return self.targets + self.offsets

    def measure(self, obj) -> np.ndarray:
        """Evaluated world points (k, 3); evaluates the pose first."""
        update()
        return anchor_points(obj, self.bones, self.anchors)

    def correct(self, evaluated: np.ndarray, model_points: np.ndarray) -> bool:
        """Take the gap between the model's points and the evaluated ones as the offsets of
        the next solve; True when that gap is more than storage noise anywhere."""
        gap = model_points - evaluated
        real = np.linalg.norm(gap, axis=1) > slack(evaluated)
        self.offsets = np.where(real[:, None], gap, 0.0)
        return bool(real.any())


@dataclass
class Measured:
    """Errors [m] of one evaluated pose: ``errors[i]`` of goal i, and what they add up to."""

    errors: np.ndarray
    met: np.ndarray  # (k,) bool, within tolerance (or storage noise)
    counted: np.ndarray  # (k,) bool, weight > 0

    @property
    def converged(self) -> bool:
        return bool(np.all(self.met | ~self.counted))


def measure(goals: GoalSet, evaluated: np.ndarray, tolerance: float) -> Measured:
    errors = np.linalg.norm(goals.targets - evaluated, axis=1)
    met = errors <= tolerance + slack(goals.targets)
    return Measured(errors, met, goals.weights > 0.0)
