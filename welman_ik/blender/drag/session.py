"""The interactive drag without a window: mouse rays in, poses out.

The modal operator turns each mouse event into a ray and hands it here, so everything
the drag does (goals, solving, chain length, solver cycling, confirm and cancel) can be
tested with synthetic events.
"""

from __future__ import annotations

import time

import numpy as np

from ..pins.figures import Figures, record
from ..pins.records import add_pin, fields_of, pin_records, put_fields
from ..rig import keyframes
from ..rig.channels import PoseSnapshot
from ..rig.model import RigError
from ..rig.properties import SOLVER_ITEMS
from ..rig.units import length_text
from .solver import DragSolver, move_pins_to_bone
from .state import EVENT_BUDGET

LAST_SOLVE = ("iterations", "drag_error", "max_pin_error", "milliseconds", "converged", "message", "eased_pin_error",
              "eased_frames", "operation")
SOLVER_NAMES = {item[0]: item[1] for item in SOLVER_ITEMS}  # identifier -> the name a user reads
OVERRUN_MEMORY = 0.9  # per event, how much of the longest recent overrun of a solve's budget is still allowed for
MIN_SOLVE_SHARE = 0.5  # of a mouse event's budget: the solve's least, however long writing the pose takes
DEFAULT_ANCHOR = 0.5  # the bone's middle: Welman (1993) found it avoids unwanted twist


def closest_point_on_ray(origin, direction, point) -> np.ndarray:
    """The point of the ray origin + t direction (t >= 0) closest to ``point`` (Welman 1993,
    section 6.2): in an orthographic view it stays in the view plane through ``point``."""
    origin, direction, point = (np.asarray(v, dtype=float) for v in (origin, direction, point))
    d = direction / np.linalg.norm(direction)
    return origin + max(0.0, float((point - origin) @ d)) * d


class DragSession:
    """One interactive drag of one bone: ``move`` per mouse event, then ``confirm`` or ``cancel``."""

    def __init__(self, obj, bone: str, anchor: float = DEFAULT_ANCHOR, event_budget: float = EVENT_BUDGET,
                 pins: list[tuple] | None = None, keep_root: bool = False, title: str = "Welman IK"):
        """``pins``: (pin, world target) pairs to hold (None: every active pin at its location);
        ``keep_root``: the root bone stays where it is; ``title`` heads the header text."""
        self.obj = obj
        self.title = title
        self.pins, self.keep_root = pins, keep_root
        self.settings = obj.welman_ik
        self.bone = bone
        self.anchor = anchor
        self.event_budget = event_budget
        self.apply_seconds = 0.0  # what the last event's write, evaluation and measure took
        self.overrun_seconds = 0.0  # how far the solves ran past their budget lately (the longest, fading)
        self.snapshot = PoseSnapshot(obj)
        s = self.settings
        self.settings_before = (s.chain_length, s.solver, tuple(getattr(s.last_solve, f) for f in LAST_SOLVE))
        self.solver = DragSolver(obj, self.settings, bone, anchor, pins, keep_root)
        self.goal: np.ndarray | None = None
        self.figures: Figures | None = None
        self.milliseconds: list[float] = []  # per event, solve and write
        self.toggles: list[tuple] = []  # pins added ("added", index) or removed ("removed", index, fields)

    def effector(self) -> np.ndarray:
        """World position of the dragged point, from the session's current solution."""
        kin = self.solver.kinematics()
        # The model's point less the correction the evaluated pose asked for.
        return self.solver.drag_goal.point(kin) - self.solver.goals.offsets[-1]

    def move(self, ray_origin, ray_direction) -> Figures:
        """A mouse event: the goal is the point on the mouse ray closest to the effector. The
        event's time is its budget: the solve takes what writing, evaluating and measuring the
        pose (``apply``) left of it on the last event."""
        started = time.perf_counter()
        self.goal = closest_point_on_ray(ray_origin, ray_direction, self.effector())
        budget = self.solve_budget()
        solving = time.perf_counter()
        result = self.solver.solve(self.goal, time_budget=budget)
        applying = time.perf_counter()
        if budget is not None:  # a solve checks its clock between iterations: it ends past it by up to one
            self.overrun_seconds = max(applying - solving - budget, OVERRUN_MEMORY * self.overrun_seconds, 0.0)
        self.figures = self.solver.apply(result)
        self.apply_seconds = time.perf_counter() - applying
        self.milliseconds.append(1000.0 * (time.perf_counter() - started))
        return self.figures

    def solve_budget(self) -> float | None:
        """Seconds of solving this event may take: the event's budget less what the last
        event's ``apply`` took and how far the solves ran past their budget lately (at least
        ``MIN_SOLVE_SHARE`` of the budget); None: no limit."""
        if self.event_budget is None:
            return None
        spent = self.apply_seconds + self.overrun_seconds
        return max(MIN_SOLVE_SHARE * self.event_budget, self.event_budget - spent)

    def _rebuild(self) -> None:
        """A new solver from the pose as it is now (after a change of chain or solver)."""
        goal, reference, model = self.goal, self.solver.reference, self.solver.model
        self.solver = DragSolver(self.obj, self.settings, self.bone, self.anchor, self.pins, self.keep_root)
        if reference is not None and self.solver.reference is not None:
            # The pose the drag began in, whatever the chain: bone by bone, as the new tree
            # may hold other bones (a new pin's).
            for name, b in self.solver.model.bones.items():
                before = model.bones.get(name)
                if before is None:
                    continue
                for now, was in ((b.hinges, before.hinges), (b.slides, before.slides)):
                    for axis, joint in now.items():
                        if axis in was:
                            self.solver.reference[joint] = reference[was[axis]]
        if goal is not None:
            self.solver.goals.targets[-1] = self.solver.drag_goal.target = goal

    def change_chain_length(self, delta: int) -> int:
        previous = self.settings.chain_length
        self.settings.chain_length = max(0, previous + delta)
        try:
            self._rebuild()
        except RigError:
            self.settings.chain_length = previous  # e.g. every bone of the shorter chain is locked
            self._rebuild()
        return self.settings.chain_length

    def cycle_solver(self) -> str:
        names = [item[0] for item in SOLVER_ITEMS]
        self.settings.solver = names[(names.index(self.settings.solver) + 1) % len(names)]
        self._rebuild()
        return self.settings.solver

    def toggle_pin(self, context, kind: str, bone: str) -> str:
        """Pin ``bone`` (the bone under the mouse) by ``kind`` as it is now, or unpin it if it
        has such a pin, and go on dragging with the pins as they now are; a together pin
        joins ``bone`` to the dragged bone, a balance pin needs no bone. Cancel takes it
        back. Returns what was done, for the header."""
        if self.pins is not None:
            raise RigError("A motion edit holds the pins of its frame; change pins before editing")
        obj, pins = self.obj, self.settings.pins
        if kind != "BALANCE" and bone not in obj.pose.bones:
            raise RigError("Hover over a bone to pin it")
        if kind == "TOGETHER" and bone == self.bone:
            raise RigError("Hover over another bone to hold it together with the dragged one")
        name = "" if kind == "BALANCE" else bone
        match = next((i for i, p in enumerate(pins) if p.kind == kind and p.bone == name), None)
        if match is not None and pins[match].enabled:
            before = fields_of(pins[match])
            try:
                pins.remove(match)
                self.toggles.append(("removed", match, before))
            except TypeError:  # a library override keeps its library's pins: disabled instead
                pins[match].enabled = False
                self.toggles.append(("changed", match, before))
            done = f"unpinned {kind.lower()} {name}".rstrip()
        else:
            pose_bones = [] if kind == "BALANCE" else [obj.pose.bones[bone]]
            other = obj.pose.bones[self.bone] if kind == "TOGETHER" else None
            (record,) = pin_records(context, obj, kind, pose_bones, 1.0, other=other)
            entry = ("changed", match, fields_of(pins[match])) if match is not None else None
            add_pin(pins, record[0], kind, record[1])  # a disabled pin of the kind is replaced
            self.toggles.append(entry or ("added", len(pins) - 1))
            done = f"pinned {kind.lower()} {name}".rstrip()
        try:
            self._rebuild()
        except RigError:
            self._undo_toggle()
            self._rebuild()
            raise
        if self.goal is not None:  # the figures of the new goals (confirm settles from them)
            self.figures = self.solver.apply(self.solver.solve(self.goal, time_budget=self.solve_budget()))
        return done

    def _undo_toggle(self) -> None:
        entry = self.toggles.pop()
        pins = self.settings.pins
        if entry[0] == "added":
            pins.remove(entry[1])
            return
        if entry[0] == "changed":
            pin = pins[entry[1]]
        else:
            pin = pins.add()
        put_fields(pin, entry[2])
        if entry[0] == "removed":
            pins.move(len(pins) - 1, entry[1])

    def confirm(self, context) -> list[str]:
        """Keep the pose, once the evaluated pose meets the goals as far as correcting can
        take it; key the bones that moved since the start, per ``keyframes``."""
        if self.figures is not None:
            self.figures = self.solver.settle(self.figures)
        moved = self.snapshot.changed(self.obj, *keyframes.key_thresholds(self.obj, self.settings.tolerance))
        scene = context.scene
        if moved and keyframes.should_key(self.settings.keyframes, scene):
            located = {n for n in moved if self.snapshot.values[n][1] != tuple(self.obj.pose.bones[n].location)}
            keyframes.key_bones(self.obj, moved, scene.frame_current, with_location=located)
        if self.figures is not None:
            record(self.settings.last_solve, self.figures)
        move_pins_to_bone(context, self.obj, self.bone)
        return moved

    def cancel(self) -> None:
        """Put every channel back exactly as it was, and the settings the drag changed; no keys."""
        self.snapshot.restore(self.obj)
        while self.toggles:
            self._undo_toggle()
        chain_length, solver, figures = self.settings_before
        self.settings.chain_length, self.settings.solver = chain_length, solver
        for field, value in zip(LAST_SOLVE, figures):
            setattr(self.settings.last_solve, field, value)

    def header(self, scene=None) -> str:
        """The viewport header's text while dragging: what is dragged, the solver (by its UI
        name) and the figures of the last event, lengths in the scene's units. The keys and
        what they do are in the status bar (``operator.draw_status``)."""
        solver = SOLVER_NAMES.get(self.settings.solver, self.settings.solver)
        f = self.figures
        if f is None:
            return f"{self.title}: {self.bone}  |  {solver}  |  move the mouse"
        return (
            f"{self.title}: {self.bone}  |  {solver}  |  {f.result.iterations} iterations"
            f"  |  drag {length_text(scene, f.drag_error)}  |  pins {length_text(scene, f.max_pin_error)}"
            f"  |  {self.milliseconds[-1]:.1f} ms  |  chain {self.settings.chain_length or 'whole body'}"
        )
