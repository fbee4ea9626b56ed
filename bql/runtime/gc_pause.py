"""Pausing CPython's cyclic garbage collector while a micro-batch runs.

A micro-batch allocates its rows — journal entries, tuples, their maps, output rows — and keeps them
until it ends. Every one of them survives the young collections that run while the batch is still
going (CPython collects generation 0 every 700 net allocations), so they are scanned again and again
and promoted to the old generation, where each batch's 50k–200k survivors soon trigger a *full*
collection that scans every object of the process (in the server: the web framework, PySpark, the
sources' buffers, every stage's state). Measured on the driver (README "Session 15"), a Timeplus window
batch of 50k tuples spent 30–45 % of its time in the collector.

The rows are acyclic: reference counting frees them as soon as the batch drops them, with or without
the collector. So ``paused()`` disables the collector for the duration of a batch and enables it again
when the last paused batch of the process ends (batches of several queries overlap on the driver: the
pause is counted). Cyclic garbage made meanwhile — by any thread — is collected after the pause, at the
next collection; a batch is bounded (``max_seqs``), so that garbage is too. A collector that something
else had disabled stays disabled.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_reenable = False  # whether the outermost pause found the collector enabled


@contextmanager
def paused() -> Iterator[None]:
    """The collector disabled while the body runs (nested and concurrent pauses are counted)."""
    global _depth, _reenable
    with _lock:
        if _depth == 0:
            _reenable = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _reenable:
                gc.enable()


def depth() -> int:
    """How many pauses are running (tests)."""
    return _depth
