"""What the interactive drag shares with the layers above it. They read it, or set it; the
drag imports nothing of theirs.

``DRAG_STATE.session``: the running interactive drag (None between drags); the UI's overlay
draws its goal. ``DRAG_STATE.latencies``: the last drag's per-event milliseconds, for
measurements. ``DRAG_STATE.budget_source``: where the drag asks for its time per mouse
event; the add-on preferences set it when they register, and without it the drag takes
``EVENT_BUDGET``."""

from __future__ import annotations

EVENT_BUDGET = 0.025  # seconds per mouse event (solve, write, evaluate): a screen refresh (33 ms) less its spread and a busy machine's stalls


class DragState:
    """What the running interactive drag shows; ``latencies`` keeps the last drag's
    per-event milliseconds for measurements."""

    session = None
    latencies: list = []
    budget_source = None  # context -> seconds of solving per mouse event; None: EVENT_BUDGET

    def event_budget(self, context) -> float:
        """Seconds of solving per mouse event."""
        return EVENT_BUDGET if self.budget_source is None else self.budget_source(context)


DRAG_STATE = DragState()
