"""Modal operators that work in slices on a timer (the bake, the retarget): Blender's progress
bar, a status text, Esc leaving nothing behind."""

from __future__ import annotations

import time

from ...core.collection import collection_paused
from ..rig import views

BAKE_SLICE = 0.1  # seconds of baking between redraws of the progress


class Slices:
    """A modal operator that works in slices on a timer, with Blender's progress bar and a
    status text. ``_begin`` starts it on ``self._work`` (``done``, ``next()``, ``index``,
    ``frames``, ``finish()``, ``abort()``: a ``Baker`` or a ``RetargetRun``); each timer tick
    works ``BAKE_SLICE`` seconds; Esc aborts it and leaves nothing behind. A subclass says what
    it is (``noun``), what the status text reads (``_status``), what to do between slices
    (``_between``), what a failure reports (``_failed``) and what it did (``_finished``)."""

    noun = ""

    def _status(self, context, work, last) -> str:
        return ""

    def _between(self, work) -> None:
        pass

    def modal(self, context, event):
        work = self._work
        if event.type == "ESC" and event.value == "PRESS":
            work.abort()
            self._end(context)
            self.report({"INFO"}, f"{self.noun} cancelled; nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        try:
            with collection_paused():
                started = time.perf_counter()
                while not work.done and time.perf_counter() - started < BAKE_SLICE:
                    last = work.next()
                self._between(work)
                context.window_manager.progress_update(work.index)
                context.workspace.status_text_set(self._status(context, work, last))
                if not work.done:
                    return {"RUNNING_MODAL"}
                finished = work.finish()
        except Exception as error:  # noqa: BLE001 - leave nothing behind, say why
            work.abort()
            self._end(context)
            return self._failed(error)
        self._end(context)
        return self._finished(context, work, finished)

    def _begin(self, context, work) -> set:
        self._work = work
        total = len(work.frames)
        wm = context.window_manager
        wm.progress_begin(0, total)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _end(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)
        views.redraw()  # the new action, Last Solve and the missed frames
