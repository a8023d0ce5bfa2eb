"""From an armature's pins and settings to a solved, written and keyed pose."""

from __future__ import annotations

import dataclasses
import math
import time

import bpy
import numpy as np

from ...core import SOLVERS, PositionGoal, Problem, SolveResult
from ..pins.checks import REACH_FACTOR, check_goal_bones, check_goal_point, check_pin_bones, rig_reach
from ..pins.figures import Figures, record, worst_miss
from ..pins.following import check_cycles, placed
from ..pins.goals import (
    POINT_KINDS,
    SHAPED_KINDS,
    ShapedPins,
    check_numbers,
    check_pin,
    describe,
    held_bones,
    pin_bones,
    support_points,
)
from ..pins.setup import (
    MOVED_WITH_DRAG,
    active_pins,
    free_controls,
    movable_bones,
    preferred_pose,
    translating_bones,
)
from ..pins.standing import standing_balance
from ..rig import body, keyframes
from ..rig.evaluated import FLOAT32_SLACK, GoalSet, Measured, anchor_points
from ..rig.evaluated import measure as evaluated_measure
from ..rig.evaluated import slack as evaluated_slack
from ..rig.model import RigError, RigModel, cached_model
from ..rig.targets import set_world
from ..rig.units import length_text


def anchor_world(obj, pose_bone, anchor: float) -> np.ndarray:
    """World position of the point ``anchor`` (0 head, 1 tail) along an evaluated pose bone."""
    return anchor_points(obj, [pose_bone.name], [anchor])[0]


def move_pins_to_bone(context, obj, bone: str) -> None:
    """After a drag: the position and pose pins on the dragged bone (ignored while it was
    dragged) hold where the bone ended."""
    pins = [p for p in obj.welman_ik.pins if p.bone == bone and p.kind in MOVED_WITH_DRAG]
    if pins:
        context.view_layer.update()
        pose_bone = obj.pose.bones[bone]
        for p in pins:  # (recorded in its target's space when it follows one)
            turn = (obj.matrix_world @ pose_bone.matrix).to_quaternion().normalized() if p.kind == "POSE" else None
            set_world(p, anchor_world(obj, pose_bone, p.anchor), turn)


def drag_pins(obj, settings, bone: str, anchor: float, pins: list[tuple] | None) -> list[tuple]:
    """The (pin, target) pairs a drag of ``bone`` holds (None: every active pin, where it
    holds now), once the drag and its pins are checked: refused with the reason otherwise."""
    if obj is None or obj.type != "ARMATURE":
        raise RigError("The active object is not an armature")
    if obj.mode == "EDIT":
        raise RigError("Leave edit mode first: the solver works on the pose")
    if bone not in obj.pose.bones:
        raise RigError(f"Bone '{bone}' does not exist in armature '{obj.name}'")
    if not (0.0 <= anchor <= 1.0) or not math.isfinite(anchor):
        raise RigError(f"Anchor must be between 0 and 1, got {anchor}")
    if pins is None:
        active = active_pins(settings, exclude=bone)
        check_cycles(obj, active)
        pins = [(p, placed(p)) for p in active]
    check_pin_bones(obj, [p for p, _ in pins])
    for p, _ in pins:
        check_numbers(p)
    return pins


CLOSE_ROUNDS = 12  # evaluate-and-correct rounds of a scripted drag or a confirm
CORRECTION_TOLERANCE = 0.1  # of the setting: how closely a correcting round solves the model
# A correcting round moves the model's targets by the evaluated gap and solves again from the
# pose found: the loop converges when the pose changes by small least-norm steps. CCD turns
# each joint all the way in turn and may swing the chain anew for a small gap (behind a
# constraint that passes a joint's turn on in part, the loop then stalls centimetres off):
# its correcting rounds are the SR inverse's, from the pose CCD found.
CORRECTING = {"CCD": "SR_INVERSE"}
APPROACH_STEP = 0.02  # of the armature's size: the longest stride of a scripted drag's approach


class DragSolver:
    """One drag of one bone with every pin, lock and limit in force.

    Built once per drag (the hinge tree is cached), then ``solve`` for each new target,
    each solve starting from the previous solution, and ``apply`` to write the pose and
    measure it as Blender evaluates it. ``settle`` repeats both until the evaluated pose
    meets the goals (constraints and drivers the model does not know close the loop).
    """

    def __init__(self, obj, settings, bone: str, anchor: float = 1.0, pins: list[tuple] | None = None,
                 keep_root: bool = False, reuse: bool = False):
        """``pins``: (pin, world target) pairs to hold; None: every active pin, at its location
        (or where its target has it now: ``following.placed``).
        ``keep_root``: the root bone stays where it is (as a motion edit keeps it)."""
        pins = drag_pins(obj, settings, bone, anchor, pins)
        # The other kinds' targets are their fields (a motion edit's follow pins: where the
        # animation puts them on its frame), or nothing: the pin's own.
        shaped = [(p, t if isinstance(t, dict) else {}) for p, t in pins if p.kind in SHAPED_KINDS]
        for p, _ in shaped:
            check_pin(obj, p, settings.solver)
        support = support_points(pins)
        every_pin, pins = pins, [(p, t) for p, t in pins if p.kind in POINT_KINDS]
        self.obj = obj
        self.settings = settings
        self.bone = bone
        self.reach = rig_reach(obj)
        targets = [check_goal_point(f"The location of the pin on '{p.bone}'", t, self.reach) for p, t in pins]
        for p, fields in shaped:
            check_goal_point(f"The location of {describe(p)}", fields.get("location", p.location), self.reach)
        names = [bone] + [p.bone for p, _ in pins] + [n for p, _ in shaped for n in pin_bones(obj, p)]
        gaze = body.gaze_bone(obj, settings)
        if gaze:  # its neck takes part, to keep it looking where it looked
            names.append(gaze)
        translating = translating_bones(obj, bone)
        check_goal_bones(obj, bone, [p.bone for p, _ in pins] + held_bones([p for p, _ in shaped]),
                         translating if anchor == 0.0 else ())
        # Grabbed by its head, a bone that translates moves as Blender's grab moves it, without
        # turning: dragging the hips down folds the legs instead of tilting the pelvis.
        root = obj.pose.bones[bone].parent is None
        grabbed = anchor == 0.0 and (bool(translating) or (root and not all(obj.pose.bones[bone].lock_location)))
        build = cached_model if reuse else RigModel  # a scripted drag keeps the model between calls
        held = [p.bone for p, _ in pins] + held_bones([p for p, _ in shaped])
        self.model = build(obj, names, movable_bones(obj, bone, settings.chain_length, keep_root),
                           translating=translating | free_controls(obj, held), keep_free=[bone],
                           fixed_roots=bool(translating),
                           keep_turn=[bone] if grabbed else [])
        if not self.model.moves_point(bone):
            raise RigError(f"Nothing can move bone '{bone}': it and the bones above it are locked")
        pin_priority, drag_priority = (0, 1) if settings.pins_first else (1, 0)
        # The trunk joins only for what the limbs cannot do; the neck keeps the gaze.
        self.tiers = body.tiers(obj, self.model)
        self.gaze = self.model.bones[gaze].frame_joint if gaze else None
        self.pin_goals = []
        for (p, _), target in zip(pins, targets):
            joint, local = self.model.anchor_local(p.bone, p.anchor)
            self.pin_goals.append(PositionGoal(joint, local, target, weight=p.weight, priority=pin_priority))
        self.shaped = ShapedPins(obj, self.model, shaped, pin_priority, support)
        # The body kept from tipping over while a limb is dragged; the hips or the trunk dragged
        # move the body where the user puts it, balanced or not (a lunge, a fall).
        frame = self.model.bones[bone].frame_joint
        trunk = self.tiers is not None and 0 <= frame < len(self.tiers) and self.tiers[frame] > 0
        standing = None if trunk else standing_balance(obj, self.model, every_pin, pin_priority)
        self.standing = [] if standing is None else [standing]
        joint, local = self.model.anchor_local(bone, anchor)
        start = self.model.skeleton.forward(self.model.q0)
        self.drag_goal = PositionGoal(joint, local, start.points(np.array([joint]), local[None])[0],
                                      priority=drag_priority)
        self.goals = GoalSet([p.bone for p, _ in pins] + [bone], [p.anchor for p, _ in pins] + [anchor],
                             targets + [self.drag_goal.target], [p.weight for p, _ in pins] + [1.0], dragged=True)
        self.q = self.model.q0.copy()
        self.reference = preferred_pose(settings.reference, self.model.q0)
        self.correctable = False  # whether the last evaluated pose differed from the model's
        self._kinematics = None

    def kinematics(self):
        """The model at the current solution (one forward pass per solution: ``apply`` and the
        next mouse event's effector share it)."""
        if self._kinematics is None or self._kinematics.q is not self.q:
            self._kinematics = self.model.skeleton.forward(self.q)
        return self._kinematics

    @property
    def target(self) -> np.ndarray:
        """The drag's world target."""
        return self.goals.targets[-1]

    def problem(self, time_budget: float | None = None, tolerance: float | None = None,
                prefer: bool = True) -> Problem:
        s = self.settings
        return Problem(
            skeleton=self.model.skeleton,
            goals=self.pin_goals + self.shaped.goals + [self.drag_goal] + self.standing,  # (the order explain reads)
            tolerance=s.tolerance if tolerance is None else tolerance,
            max_iterations=s.max_iterations,
            damping=s.damping,
            time_budget=time_budget,
            reference=self.reference if prefer else None,
            reference_weight=s.reference_weight,
            ranges=self.model.ranges,
            tiers=self.tiers,
            gaze=self.gaze,
        )

    def solve(self, target, time_budget: float | None = None, tolerance: float | None = None,
              prefer: bool = True) -> Figures:
        """Solve the model for a new drag target (the figures are the model's until ``apply``);
        ``tolerance``: the model's own, when it must be tighter than the setting; ``prefer``:
        with the preferred pose (a correcting round goes without it, and by ``CORRECTING``'s
        solver: its small least-norm steps keep the loop's secant estimate valid)."""
        self.goals.targets[-1] = check_goal_point("The drag target", target, self.reach)
        for goal, model_target in zip(self.pin_goals + [self.drag_goal], self.goals.model_targets):
            goal.target = model_target
        started = time.perf_counter()
        solver = self.settings.solver if prefer else CORRECTING.get(self.settings.solver, self.settings.solver)
        result = SOLVERS[solver](self.problem(time_budget, tolerance, prefer), self.q)
        ms = 1000.0 * (time.perf_counter() - started)
        if not np.all(np.isfinite(result.q)):
            raise RigError("The solver failed (non-finite result); the pose is unchanged")
        self.q = result.q
        pin_errors = result.errors[:-1]
        return Figures(result, float(result.errors[-1]), float(pin_errors.max(initial=0.0)), ms, result.converged)

    def approach(self, target) -> Figures:
        """Solve for a far target as a mouse would bring the bone there: through targets at
        most ``APPROACH_STEP`` of the armature's size apart, each solve starting from the
        last, the preferred pose the one the drag began in. A long jump in one solve can land
        on the wrong side of a nearly straight knee, or stall against a joint range (a squat
        from straight legs); short strides follow the way the limbs bend. The figures are the
        last stride's, with the time of all of them."""
        target = check_goal_point("The drag target", target, self.reach)
        start = self.drag_goal.target.copy()
        stride = APPROACH_STEP * self.reach[1] / REACH_FACTOR
        steps = max(1, math.ceil(float(np.linalg.norm(target - start)) / stride))
        elapsed = 0.0
        for t in np.linspace(0.0, 1.0, steps + 1)[1:]:
            figures = self.solve(start + t * (target - start))
            elapsed += figures.milliseconds
            if not figures.result.converged and t < 1.0:  # out of reach on the way: straight to the end
                figures = self.solve(target)
                elapsed += figures.milliseconds
                break
        return dataclasses.replace(figures, milliseconds=elapsed)  # the last stride's iterations

    def apply(self, figures: Figures) -> Figures:
        """Write the solution onto the pose bones, measure the goals on the pose Blender
        evaluates, take the gap as the next solve's correction, and record the evaluated
        figures."""
        self.model.write(self.q)
        evaluated = self.goals.measure(self.obj)
        goals = self.pin_goals + [self.drag_goal]
        model_points = self.kinematics().points(np.concatenate([g.joint for g in goals]),
                                                                  np.concatenate([g.local for g in goals]))
        points = len(self.pin_goals)
        model_errors = np.concatenate([figures.result.errors[:points], figures.result.errors[-1:]])
        model_met = model_errors <= self.settings.tolerance + evaluated_slack(model_points)
        self.correctable = self.goals.correct(evaluated, model_points, model_met)
        measured = evaluated_measure(self.goals, evaluated, self.settings.tolerance)
        shaped = self.shaped_measure()
        pin_errors = np.concatenate([measured.errors[:-1][measured.counted[:-1]], shaped.errors[shaped.counted]])
        converged = measured.converged and shaped.converged
        figures = Figures(figures.result, float(measured.errors[-1]), float(pin_errors.max(initial=0.0)),
                          figures.milliseconds, converged, "" if converged else explain(self, figures.result, measured,
                                                                                          shaped))
        record(self.settings.last_solve, figures)
        return figures

    def shaped_measure(self) -> Measured:
        """The errors of the pins of every kind but POSITION on the evaluated pose (updated)."""
        errors = self.shaped.measure(self.q)
        slack = evaluated_slack(np.array([g.get("location", p.location) for p, g in self.shaped.pairs]).reshape(-1, 3))
        weights = np.array([p.weight for p in self.shaped.pins], dtype=float)
        return Measured(errors, errors <= self.settings.tolerance + slack, weights > 0.0)

    def key(self, frame: float) -> None:
        """Key the bones the solve moved (rotation; location where it is a joint)."""
        moved = self.model.moved(self.q, *keyframes.key_thresholds(self.obj, self.settings.tolerance))
        if moved:
            keyframes.key_bones(self.obj, moved, frame, with_location=self.model.translated(moved))

    def settle(self, figures: Figures, rounds: int = CLOSE_ROUNDS) -> Figures:
        """Evaluate, and while the evaluated pose misses where the model holds, correct and
        solve again: at most ``rounds`` times, until three rounds in a row bring it no
        closer; the closest pose is the one left."""
        figures = self.apply(figures)
        best, stale = (worst_miss(figures), self.q.copy(), figures), 0
        for _ in range(rounds):
            if figures.converged or not self.correctable or stale >= 3:
                break
            # Corrections aim the model well inside the tolerance: the evaluated pose adds its
            # own single-precision noise.
            figures = self.apply(self.solve(self.target, tolerance=CORRECTION_TOLERANCE * self.settings.tolerance,
                                            prefer=False))
            if worst_miss(figures) < best[0]:
                best, stale = (worst_miss(figures), self.q.copy(), figures), 0
            else:
                stale += 1
        if figures is not best[2]:
            self.q = best[1]
            figures = self.apply(best[2])
        return figures


def explain(solver: DragSolver, result: SolveResult, measured, shaped: Measured | None = None) -> str:
    """One line: which goals the evaluated pose misses, by how much, and why. The goals in
    the problem's order: the position pins, the other kinds' pins (``shaped``), the drag."""
    goals = solver.goals
    labels = [f"'{b}' (pinned)" for b in goals.bones[:-1]]
    labels += [d[0].upper() + d[1:] for d in solver.shaped.labels()]
    labels.append(f"'{goals.bones[-1]}'" + (" (dragged)" if goals.dragged else " (pinned)"))
    if shaped is None:
        shaped = Measured(np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0, dtype=bool))

    def ordered(a, b):
        return np.concatenate([a[:-1], b, a[-1:]])

    errors = ordered(measured.errors, shaped.errors)
    met, counted = ordered(measured.met, shaped.met), ordered(measured.counted, shaped.counted)
    missed = [i for i in range(len(labels)) if not met[i] and counted[i]]
    if not missed:
        return ""
    slack = FLOAT32_SLACK * max(1.0, float(np.abs(goals.model_targets).max(initial=1.0)))
    model_met = result.errors <= solver.settings.tolerance + slack
    parts = []
    for i in missed[:2]:
        drag = goals.dragged and i == len(labels) - 1
        what = labels[i]
        if model_met[i]:
            why = "constraints or drivers move it where the solver cannot follow"
        elif drag and solver.settings.pins_first:
            why = "out of reach with the pins held"
        elif not result.converged and result.iterations >= solver.settings.max_iterations:
            why = f"not converged in {result.iterations} iterations"
        else:
            why = "out of reach, or the goals conflict"
        scene = bpy.context.scene
        parts.append(f"{what} is {length_text(scene, errors[i])} off: {why}")
    more = len(missed) - 2
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


RUN_TOLERANCE = 1e-5  # [rad, m] a pose read back within this of what the last drag left is that pose
_RUNS: dict = {}  # armature pointer -> (what the last scripted drag was, the pose its run began in, the pose it left)


def drag(context, obj, bone: str, target, anchor: float = 1.0) -> Figures:
    """Script form of the drag: solve, write, close the loop on the evaluated pose, key per
    the ``keyframes`` setting, and move a pin on the dragged bone (if any) to where the
    bone ended.

    Scripted drags of one bone, one after another on one frame with nothing else changing the
    pose or the pins in between, are one drag as a mouse makes it: their preferred pose
    ('START') is the pose the first of them began in, so a hand dragged out and back in steps
    comes back to where it started."""
    settings = obj.welman_ik
    solver = DragSolver(obj, settings, bone, anchor, reuse=True)
    run = (bone, anchor, context.scene.frame_current, settings.reference, settings.solver, solver.model.layout,
           tuple((p.bone, p.kind, p.enabled, p.anchor, p.weight) for p in settings.pins))
    last = _RUNS.get(obj.as_pointer())
    if (settings.reference == "START" and last is not None and last[0] == run
            and float(np.abs(last[2] - solver.q).max(initial=0.0)) <= RUN_TOLERANCE):
        solver.reference = last[1].copy()
    origin = solver.reference
    figures = solver.settle(solver.approach(target))
    _RUNS[obj.as_pointer()] = (run, origin, solver.model.read())
    scene = context.scene
    if keyframes.should_key(settings.keyframes, scene):
        solver.key(scene.frame_current)
    move_pins_to_bone(context, obj, bone)
    return figures
