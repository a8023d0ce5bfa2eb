"""One BLAS thread for the solvers' small matrices.

The solvers' matrices are tiny (tens of rows): a BLAS or LAPACK call on them takes
microseconds on one core, but a threaded BLAS (OpenBLAS, as numpy ships it) may wake its
worker threads for them, and when the cores are busy (Blender's own threads, a render,
other processes) waiting for those threads costs several times the arithmetic. Each solve
therefore runs with the BLAS limited to one thread, through threadpoolctl when it is
installed (the extension bundles it); without it, numpy's own setting is left as it is.
"""

from __future__ import annotations

import contextlib
import functools
import os
from concurrent.futures import ThreadPoolExecutor

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - an add-on installed without its wheels
    ThreadpoolController = None

_controller = None


def one_blas_thread():
    """A context in which numpy's BLAS and LAPACK use one thread (a no-op without
    threadpoolctl). The libraries are looked up once, on first use."""
    global _controller
    if ThreadpoolController is None:
        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")


def single_threaded(solve):
    """``solve`` run inside ``one_blas_thread``."""

    @functools.wraps(solve)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return solve(*args, **kwargs)

    return wrapper


_pool = None


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


MOST_WORKERS = 4  # threads at most, whatever the cores


def workers() -> int:
    """The threads a piece of work may be split between (``in_parallel``)."""
    return min(cores(), MOST_WORKERS)


def in_parallel(work, parts: list) -> list:
    """``[work(part) for part in parts]``, the parts on threads of their own where there are
    cores for them: numpy lets go of the interpreter lock for its array work, so parts of one
    solve (its frames) run side by side. Each part's work must touch nothing the others do."""
    global _pool
    if len(parts) < 2 or workers() < 2:
        return [work(part) for part in parts]
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=workers(), thread_name_prefix="welman-ik")
    return list(_pool.map(work, parts))
