"""The truth is the pose Blender evaluates.

The solver poses a model of the armature (``model.py``); constraints, drivers and whatever
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


def world_matrix(obj) -> np.ndarray:
    """The object's world matrix (4, 4) (read row by row: several times faster than
    converting the Matrix whole)."""
    return np.array([row[:] for row in obj.matrix_world])


def anchor_points(obj, bones, anchors) -> np.ndarray:
    """World positions (k, 3) of the points ``anchors`` (0 head, 1 tail) along pose bones
    ``bones`` as Blender last evaluated them (call ``update`` first after a change)."""
    return points_at([bone_ends(obj, bones)], anchors)[0]


def bone_ends(obj, bones) -> tuple[list, list]:
    """(each pose bone of ``bones``: its head and tail, the armature's world matrix by rows) as
    Blender last evaluated them: ``anchor_points``' reading, left raw so that the readings of
    many frames are worked out at once (``points_at``)."""
    pose_bones = obj.pose.bones
    return [(*pb.head, *pb.tail) for pb in map(pose_bones.__getitem__, bones)], [row[:] for row in obj.matrix_world]


class EndsReader:
    """``bone_ends`` for a loop over frames: every pose bone's head and tail read raw with two
    ``foreach_get`` calls (a few microseconds, against about two a bone one by one), the bones'
    own picked out by index. The values are Blender's single-precision ones, as ``bone_ends``'."""

    def __init__(self, obj):
        self.obj = obj
        self.index = {pb.name: i for i, pb in enumerate(obj.pose.bones)}
        self._picks: dict[tuple, np.ndarray] = {}  # bones -> their heads' and tails' rows, head then tail

    def __call__(self, bones) -> tuple[np.ndarray, list]:
        count = len(self.index)
        ends = np.empty(6 * count, dtype=np.float32)  # every head, then every tail
        pose_bones = self.obj.pose.bones
        pose_bones.foreach_get("head", ends[:3 * count])
        pose_bones.foreach_get("tail", ends[3 * count:])
        key = tuple(bones)
        picked = self._picks.get(key)
        if picked is None:
            rows = [self.index[name] for name in key]
            picked = self._picks[key] = np.ravel(np.column_stack((rows, np.add(rows, count)))).astype(np.intp)
        return ends.reshape(-1, 3)[picked].reshape(-1, 6), [row[:] for row in self.obj.matrix_world]


def points_at(readings: list, anchors) -> np.ndarray:
    """World positions (m, k, 3) of the points ``anchors`` (k,) along the bones of ``m``
    readings of the same k bones (``bone_ends``)."""
    ends = np.array([ends for ends, _ in readings], dtype=float).reshape(len(readings), -1, 2, 3)
    world = np.array([rows for _, rows in readings], dtype=float)
    local = ends[:, :, 0] + np.asarray(anchors, dtype=float).reshape(1, -1, 1) * (ends[:, :, 1] - ends[:, :, 0])
    return np.einsum("mij,mkj->mki", world[:, :3, :3], local) + world[:, None, :3, 3]


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
        self._secant = Secant(len(self.bones))

    @property
    def model_targets(self) -> np.ndarray:
        """Where the model should put each point so that the evaluated one lands on target."""
        return self.targets + self.offsets

    def measure(self, obj) -> np.ndarray:
        """Evaluated world points (k, 3); evaluates the pose first."""
        update()
        return anchor_points(obj, self.bones, self.anchors)

    def correct(self, evaluated: np.ndarray, model_points: np.ndarray, model_met: np.ndarray) -> bool:
        """Offsets for the next solve from where the evaluated points landed; True when the
        model and the evaluated pose differ by more than storage noise anywhere.

        Where the model met its (offset) target, the offset takes a secant (Broyden) step on
        the evaluated miss, so a loop that the model only half explains (a constraint that
        scales or turns the effect of the joints below it) still closes in a few rounds.
        Where the model could not meet its target (out of reach), the offset is just the
        gap between the model's point and the evaluated one.
        """
        gap = model_points - evaluated
        real = np.linalg.norm(gap, axis=1) > slack(evaluated)
        stepped = self.offsets + self._secant.step(self.offsets, self.targets - evaluated)
        self.offsets = np.where(real[:, None], np.where(model_met[:, None], stepped, gap), 0.0)
        return bool(real.any())


class Secant:
    """Per goal, Broyden's secant estimate B (3, 3) of how the evaluated miss m changes with
    the offset o (B starts at -I: the model exact), and the step -B^-1 m that zeroes it."""

    def __init__(self, count: int):
        self.jacobians = np.tile(-np.eye(3), (count, 1, 1))
        self.last: tuple[np.ndarray, np.ndarray] | None = None

    def step(self, offsets: np.ndarray, misses: np.ndarray) -> np.ndarray:
        if self.last is not None:
            d_offset, d_miss = offsets - self.last[0], misses - self.last[1]
            norm2 = np.einsum("ij,ij->i", d_offset, d_offset)
            moved = norm2 > 1e-18
        if self.last is not None and moved.any():  # (else every estimate stays as it is)
            predicted = np.einsum("nij,nj->ni", self.jacobians, d_offset)
            update = np.einsum("ni,nj->nij", d_miss - predicted, d_offset) / np.where(moved, norm2, 1.0)[:, None, None]
            candidate = self.jacobians + np.where(moved[:, None, None], update, 0.0)
            # A secant estimate gone near-singular or sign-flipped starts over from the model's.
            singular_values = np.linalg.svd(candidate, compute_uv=False)
            sane = singular_values[:, 0] < 1e3 * singular_values[:, -1]
            sane &= np.einsum("nii->n", candidate) < 0.0
            self.jacobians = np.where(sane[:, None, None], candidate, -np.eye(3))
        self.last = (offsets.copy(), misses.copy())
        return -np.linalg.solve(self.jacobians, misses[:, :, None])[:, :, 0]


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
