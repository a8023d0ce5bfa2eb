"""Python's cyclic garbage collector held off during a bulk job (a bake, a retarget, a clip).

Such a job makes many short-lived objects (each frame's goals, samples and results), and
CPython's collector runs whenever the objects made outnumber those freed by a threshold; now
and then it walks every object the process holds, which in Blender (tens of thousands of
objects) takes about 20 ms, several times over a long bake. Reference counting frees the
job's own objects as it goes; the few cycles it leaves wait for the collector until the job
is done.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collection_paused():
    """A context in which the cyclic garbage collector does not run (as it was after: a
    nested one leaves it off until the outer one ends)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
