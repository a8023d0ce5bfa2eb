"""From an armature's pins and settings to a solved, written and keyed pose."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..core import SOLVERS, PositionGoal, Problem, SolveResult
from . import keyframes
from .rig import RigError, RigModel, chain_to_root

SOLVABLE_PIN_KINDS = {"POSITION"}
MAX_COORDINATE = 1e6  # metres; Blender stores infinity in a float property as ~3.4e38


def anchor_world(obj, pose_bone, anchor: float) -> np.ndarray:
    """World position of the point ``anchor`` (0 head, 1 tail) along an evaluated pose bone."""
    local = pose_bone.head + anchor * (pose_bone.tail - pose_bone.head)
    return np.array(obj.matrix_world @ local, dtype=float)


def active_pins(settings, exclude: str = ""):
    """Enabled pins the solver can hold, except those on bone ``exclude``."""
    return [p for p in settings.pins if p.enabled and p.bone != exclude and p.kind in SOLVABLE_PIN_KINDS]


def check_pin_bones(obj, pins) -> None:
    """Refuse pins whose bone was renamed or deleted."""
    gone = [p.bone for p in pins if p.bone not in obj.pose.bones]
    if gone:
        raise RigError(f"A pin holds bone '{gone[0]}', which no longer exists; unpin or clear it")


def move_pins_to_bone(context, obj, bone: str) -> None:
    """After a drag: the pins on the dragged bone (ignored while it was dragged) hold where
    the bone ended."""
    pins = [p for p in obj.welman_ik.pins if p.bone == bone]
    if pins:
        context.view_layer.update()
        for p in pins:
            p.location = anchor_world(obj, obj.pose.bones[bone], p.anchor)


def movable_bones(obj, bone: str, chain_length: int, keep_root: bool = False):
    """Names the solver may move: None for the whole body, else the dragged bone and its
    ``chain_length - 1`` nearest ancestors; ``keep_root``: never a root bone."""
    if chain_length <= 0:
        names = None if not keep_root else [pb.name for pb in obj.pose.bones]
    else:
        names = [pb.name for pb in chain_to_root(obj.pose.bones[bone])[:chain_length]]
    return names if not keep_root else [n for n in names if obj.pose.bones[n].parent is not None]


@dataclass
class Figures:
    result: SolveResult
    drag_error: float
    max_pin_error: float
    milliseconds: float


def record(last_solve, figures: Figures) -> None:
    """Store a solve's figures in the armature's ``last_solve`` group."""
    last_solve.iterations = figures.result.iterations
    last_solve.drag_error = figures.drag_error
    last_solve.max_pin_error = figures.max_pin_error
    last_solve.milliseconds = figures.milliseconds
    last_solve.converged = figures.result.converged


class DragSolver:
    """One drag of one bone with every pin, lock and limit in force.

    Built once per drag (the hinge tree is cached), then ``solve`` for each new target,
    each solve starting from the previous solution.
    """

    def __init__(self, obj, settings, bone: str, anchor: float = 1.0, pins: list[tuple] | None = None,
                 keep_root: bool = False):
        """``pins``: (pin, world target) pairs to hold; None: every active pin, at its location.
        ``keep_root``: the root bone stays where it is (as a motion edit keeps it)."""
        if obj is None or obj.type != "ARMATURE":
            raise RigError("The active object is not an armature")
        if obj.mode == "EDIT":
            raise RigError("Leave edit mode first: the solver works on the pose")
        if bone not in obj.pose.bones:
            raise RigError(f"Bone '{bone}' does not exist in armature '{obj.name}'")
        if not (0.0 <= anchor <= 1.0) or not math.isfinite(anchor):
            raise RigError(f"Anchor must be between 0 and 1, got {anchor}")
        if pins is None:
            pins = [(p, p.location) for p in active_pins(settings, exclude=bone)]
        check_pin_bones(obj, [p for p, _ in pins])
        self.obj = obj
        self.settings = settings
        self.bone = bone
        names = [bone] + [p.bone for p, _ in pins]
        self.model = RigModel(obj, names, movable_bones(obj, bone, settings.chain_length, keep_root))
        if not self.model.moves_point(bone):
            raise RigError(f"Nothing can move bone '{bone}': it and the bones above it are locked")
        pin_priority, drag_priority = (0, 1) if settings.pins_first else (1, 0)
        self.pin_goals = []
        for p, target in pins:
            joint, local = self.model.anchor_local(p.bone, p.anchor)
            target = np.array(target, dtype=float)
            if not np.all(np.isfinite(target)):
                raise RigError(f"The pin on '{p.bone}' has a location that is not a number")
            self.pin_goals.append(PositionGoal(joint, local, target, weight=p.weight, priority=pin_priority))
        joint, local = self.model.anchor_local(bone, anchor)
        start = self.model.skeleton.forward(self.model.q0)
        self.drag_goal = PositionGoal(joint, local, start.points(np.array([joint]), local[None])[0],
                                      priority=drag_priority)
        self.q = self.model.q0.copy()

    def problem(self, time_budget: float | None = None) -> Problem:
        s = self.settings
        return Problem(
            skeleton=self.model.skeleton,
            goals=self.pin_goals + [self.drag_goal],
            tolerance=s.tolerance,
            max_iterations=s.max_iterations,
            damping=s.damping,
            time_budget=time_budget,
        )

    def solve(self, target, time_budget: float | None = None) -> Figures:
        target = np.asarray(target, dtype=float).reshape(3)
        if not np.all(np.isfinite(target)):
            raise RigError("The drag target is not a number (NaN or infinite)")
        if np.abs(target).max() > MAX_COORDINATE:
            raise RigError(f"The drag target is more than {MAX_COORDINATE:g} m away (infinite?)")
        self.drag_goal.target = target
        started = time.perf_counter()
        result = SOLVERS[self.settings.solver](self.problem(time_budget), self.q)
        ms = 1000.0 * (time.perf_counter() - started)
        if not np.all(np.isfinite(result.q)):
            raise RigError("The solver failed (non-finite result); the pose is unchanged")
        self.q = result.q
        pin_errors = result.errors[:-1]
        return Figures(result, float(result.errors[-1]), float(pin_errors.max(initial=0.0)), ms)

    def apply(self, figures: Figures, frame: float, key: bool) -> list[str]:
        """Write the solution onto the pose bones, key it if asked, and record the figures."""
        moved = self.model.write(self.q)
        if key and moved:
            roots = {n for n in moved if self.model.bones[n].slides}
            keyframes.key_bones(self.obj, moved, frame, with_location=roots)
        record(self.settings.last_solve, figures)
        return moved


def drag(context, obj, bone: str, target, anchor: float = 1.0) -> Figures:
    """Script form of the drag: solve once, write, key per the ``keyframes`` setting, and
    move a pin on the dragged bone (if any) to where the bone ended."""
    settings = obj.welman_ik
    solver = DragSolver(obj, settings, bone, anchor)
    figures = solver.solve(target)
    scene = context.scene
    solver.apply(figures, scene.frame_current, keyframes.should_key(settings.keyframes, scene))
    move_pins_to_bone(context, obj, bone)
    return figures
