"""Step 6 of the bake, its figures, measured where the user sees them: each baked frame's goals on the pose
Blender evaluates from the written action (constraints and drivers included), the eased
frames against each pin's own place too, the worst frame recorded in ``last_solve`` and the
missed frames listed."""

from __future__ import annotations

import time

import numpy as np

from ...core import SolveResult
from ..pins.figures import Figures, record
from ..pins.goals import describe
from ..rig.evaluated import EndsReader, GoalSet, Measured, measure, points_at
from ..rig.units import length_text
from .measure_shaped import FloorFrames, ShapedMeasure
from .report import frame_ranges, list_misses


class BakeMeasure:
    """The figures of a bake (``plan``, its ``log`` of solved frames, and its ``sampling``,
    whose current tree gives the structure the other kinds' pins are measured on):
    ``frames()`` measures, ``verify()`` records."""

    def __init__(self, plan, log, sampling):
        self.plan, self.log, self.sampling = plan, log, sampling
        self.own: dict[int, Measured] = {}  # the eased frames measured against the pins' own places
        self.worst: tuple[int, Measured] | None = None  # the worst frame, evaluated
        self.max_pin_error = 0.0  # [m] measured on the evaluated pose once the action is written
        self.eased_pin_error = 0.0  # [m] the largest pin error against the goals asked for (eased)
        # Every frame on which a goal missed its own place: (frame, goal, miss, goals missed,
        # miss against the goal asked for, whether that goal was eased).
        self.misses: list[tuple] = []
        self.shaped = ShapedMeasure(plan, log, sampling)  # the other kinds' pins

    def frames(self) -> dict[int, Measured]:
        """Each baked frame's goals measured on the pose Blender evaluates from the written
        action (constraints and drivers included): one evaluation per frame, the points read
        there, the distances of the frames with the same goals worked out together."""
        scene, tolerance = self.plan.context.scene, self.plan.tolerance
        frames = sorted(self.log.positions)
        readings, shaped, shaped_own = {}, {}, {}
        read = EndsReader(self.plan.obj)
        floors: dict[tuple, FloorFrames] = {}  # the frames whose other kinds' pins are all floor pins, by pins
        for frame in frames:
            scene.frame_set(frame)  # the action as written
            readings[frame] = read(self.log.positions[frame][0])
            entries = self.log.shaped.get(frame, ([], None))[0]
            if entries:
                key = self.shaped.floors_key(entries)
                if key is None:
                    shaped[frame] = self.shaped.measure(frame, entries, tolerance)
                else:
                    if key not in floors:
                        floors[key] = self.shaped.floor_frames(frame, entries, tolerance)
                    floors[key].read(frame, readings[frame][1])
            own_entries = self.log.eased[frame][1] if frame in self.log.eased else []
            if own_entries:
                shaped_own[frame] = self.shaped.measure(frame, own_entries, tolerance)
        for group in floors.values():
            shaped.update(group.measured())
        groups: dict[tuple, list[int]] = {}
        for frame in frames:
            bones, anchors, _, weights, _ = self.log.positions[frame]
            groups.setdefault((tuple(bones), tuple(anchors), tuple(weights)), []).append(frame)
        out, evaluated = {}, {}
        for (bones, anchors, weights), members in groups.items():
            points = points_at([readings[f] for f in members], anchors)  # (frames, bones, 3): all at once
            evaluated.update(zip(members, points))
            goals = GoalSet(list(bones) * len(members), np.tile(anchors, len(members)),
                            np.vstack([self.log.positions[f][2] for f in members]), np.tile(weights, len(members)))
            measured = measure(goals, points.reshape(-1, 3), tolerance)
            for i, frame in enumerate(members):
                part = slice(i * len(bones), (i + 1) * len(bones))
                out[frame] = Measured(measured.errors[part], measured.met[part], measured.counted[part])
        for frame, part in shaped.items():
            out[frame] = self._with_shaped(out[frame], part)
        # The eased frames again, against each pin's own place: what a user reads as the pin.
        self.own = {}
        for frame, (targets, _) in self.log.eased.items():
            if frame not in out:
                continue
            bones, anchors, _, weights, _ = self.log.positions[frame]
            own = measure(GoalSet(list(bones), np.asarray(anchors, dtype=float), targets,
                                  np.asarray(weights, dtype=float)), evaluated[frame], tolerance)
            self.own[frame] = self._with_shaped(own, shaped_own[frame]) if frame in shaped_own else own
        return out

    def _with_shaped(self, measured: Measured, shaped: Measured) -> Measured:
        """``measured`` (the position pins, then the edit) with the other kinds' pins
        (``shaped``) in the order of ``goal_names``: before the edit."""
        cut = len(measured.errors) - (1 if self.plan.edit is not None else 0)

        def insert(a, b):
            return np.concatenate([a[:cut], b, a[cut:]])

        return Measured(insert(measured.errors, shaped.errors), insert(measured.met, shaped.met),
                        insert(measured.counted, shaped.counted))

    def goal_names(self, frame: int) -> list[str]:
        """How the figures name each goal of a frame, in the order ``measure_frames`` gives."""
        bones = list(self.log.positions[frame][0])
        cut = len(bones) - (1 if self.plan.edit is not None else 0)
        shaped = [describe(pin) for pin, *_ in self.log.shaped.get(frame, ([], None))[0]]
        return bones[:cut] + shaped + bones[cut:]

    def verify(self, measured: dict[int, Measured] | None = None) -> None:
        """Record the worst frame's figures, measured on the evaluated pose (``measured``: the
        measurements already taken of the action as written)."""
        measured = self.frames() if measured is None else measured
        pins = slice(None, -1 if self.plan.edit is not None else None)  # the pins' entries, not the edit's
        self.worst, self.max_pin_error, self.eased_pin_error = None, 0.0, 0.0
        for frame, asked in measured.items():
            m = self.own.get(frame, asked)  # each pin against its own place
            worst = float(m.errors[pins][m.counted[pins]].max(initial=0.0))
            self.eased_pin_error = max(self.eased_pin_error, float(asked.errors[pins][asked.counted[pins]]
                                                                  .max(initial=0.0)))
            if self.worst is None or worst > self.max_pin_error:
                self.worst, self.max_pin_error = (frame, m), worst
        self.misses = self._misses(measured)
        list_misses(self.plan.settings, self.misses)
        if self.misses:  # the figures' frame: the largest miss of any goal (an edit's too)
            frame = max(self.misses, key=lambda miss: miss[2])[0]
            self.worst = (frame, self.own.get(frame, measured[frame]))
        if self.worst is not None:
            # An edit's own figure is its error where it holds in full: on the edited frame
            # (elsewhere its target is the blend the edit asks for).
            edited = measured.get(self.plan.edit.frame) if self.plan.edit is not None else None
            self._record(float(edited.errors[-1]) if edited is not None else None)

    def _misses(self, measured: dict[int, Measured]) -> list[tuple]:
        """(frame, worst goal's name, its miss from its own place [m], goals missed, its miss
        against the goal asked for [m], whether that goal was eased) of every frame on which a
        goal missed its own place."""
        out = []
        for frame, asked in sorted(measured.items()):
            m = self.own.get(frame, asked)
            missed = np.flatnonzero(m.counted & ~m.met)
            if missed.size:
                i = int(missed[np.argmax(m.errors[missed])])
                eased = bool(m is not asked and m.errors[i] != asked.errors[i])
                out.append((frame, self.goal_names(frame)[i], float(m.errors[i]), int(missed.size),
                            float(asked.errors[i]), eased))
        return out

    def eased_note(self) -> str:
        """Where the goals were eased toward the animation, in words: '... over 10 frames at the
        range start (frames 101-110) ...'; empty when nothing was."""
        if not self.log.eased:
            return ""
        first, last = self.plan.frames[0], self.plan.frames[-1]
        middle = (first + last) / 2.0
        ends = []
        for name, part in (("start", [f for f in self.log.eased if f <= middle]),
                           ("end", [f for f in self.log.eased if f > middle])):
            if part:
                ends.append(f"{len(part)} frame(s) at the range {name} ({frame_ranges(part)})")
        return "goals eased toward the animation, which goes on past the range, over " + " and ".join(ends)

    def _record(self, edit_error: float | None = None) -> None:
        frame, measured = self.worst
        iterations = self.log.positions[frame][4]
        bones = self.goal_names(frame)
        missed = [i for i in range(len(bones)) if measured.counted[i] and not measured.met[i]]
        message = ""
        if missed:
            i = max(missed, key=lambda k: measured.errors[k])
            what = bones[i] if bones[i].startswith("the ") else f"'{bones[i]}'"
            scene = self.plan.context.scene
            message = (f"{what} is {length_text(scene, measured.errors[i])} off on frame {frame} in the evaluated "
                       f"pose ({len(missed)} goal(s) missed on that frame); missed on "
                       f"{len(self.misses)} frame(s): {frame_ranges([f for f, *_ in self.misses])}")
            eased = [f for f, *_, was_eased in self.misses if was_eased]
            if eased:
                message = (f"{what} is {length_text(scene, measured.errors[i])} from its own location on frame "
                           f"{frame} (evaluated); {self.eased_note()}: against the eased goals "
                           f"{length_text(scene, self.eased_pin_error)}. Off its location on {len(self.misses)} "
                           f"frame(s): {frame_ranges([f for f, *_ in self.misses])}")
        edit = self.plan.edit is not None
        record(self.plan.settings.last_solve, Figures(
            SolveResult(np.zeros(0), iterations, measured.errors, measured.converged),
            drag_error=(float(measured.errors[-1]) if edit_error is None else edit_error) if edit else 0.0,
            max_pin_error=self.max_pin_error,
            milliseconds=1000.0 * (time.perf_counter() - self.plan.started), converged=measured.converged,
            message=message, eased_pin_error=self.eased_pin_error if self.log.eased else None,
            eased_frames=len(self.log.eased), operation="EDIT" if edit else "BAKE"))
