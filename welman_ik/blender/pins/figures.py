"""A solve's figures, as the drag and the bake record them in the armature's ``last_solve``
(measured on the evaluated pose)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core import SolveResult


@dataclass
class Figures:
    """One solve's figures. ``result`` is the model's; the errors, ``converged`` and
    ``message`` are measured on the pose Blender evaluated after the write-back."""

    result: SolveResult
    drag_error: float
    max_pin_error: float
    milliseconds: float
    converged: bool = False
    message: str = ""
    eased_pin_error: float | None = None  # against eased goals (a bake near an open range end); None: not eased
    eased_frames: int = 0
    operation: str = "DRAG"  # what solved: 'DRAG', 'EDIT' (a motion edit), 'BAKE' or 'RETARGET' (OPERATION_ITEMS)


def record(last_solve, figures: Figures) -> None:
    """Store a solve's figures in the armature's ``last_solve`` group."""
    last_solve.iterations = figures.result.iterations
    last_solve.drag_error = figures.drag_error
    last_solve.max_pin_error = figures.max_pin_error
    last_solve.milliseconds = figures.milliseconds
    last_solve.converged = figures.converged
    last_solve.message = figures.message
    last_solve.eased_pin_error = figures.max_pin_error if figures.eased_pin_error is None else figures.eased_pin_error
    last_solve.eased_frames = figures.eased_frames
    last_solve.operation = figures.operation


def worst_miss(figures: Figures) -> float:
    return max(figures.drag_error, figures.max_pin_error)
