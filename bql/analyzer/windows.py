"""RANGE windows and buffers of FROM items, and which FROM items need a window at all.

SensorBee's limits: TUPLES is a positive integer up to 1048575; SECONDS a positive number up to 86400;
MILLISECONDS a positive number up to 86400000. BUFFER SIZE is an integer up to 131071, 0 meaning the
default. A plain stream in FROM needs a window unless the query is a Timeplus global aggregation
(it has an EMIT clause) or streaming tail (no emitter, no EMIT); the input of MATCH_RECOGNIZE needs none.
"""
from __future__ import annotations

from ..ast import MatchRecognize, RangeWindow, Statement, StreamRef, UdsfCall
from ..timeplus_query import is_streaming_tail
from .context import Context, fail, selects_of

MAX_TUPLES = 1048575
MAX_SECONDS = 86400
MAX_MILLISECONDS = 86400000
MAX_BUFFER_SIZE = 131071

_LIMITS = {"tuples": MAX_TUPLES, "seconds": MAX_SECONDS, "milliseconds": MAX_MILLISECONDS}


def _windows(stmt: Statement):
    for select in selects_of(stmt):
        for item in select.from_items:
            if isinstance(item, MatchRecognize):
                item = item.input
            window = getattr(item, "window", None)
            if window is not None:
                yield window


def _number(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def check_range(window: RangeWindow) -> None:
    """Raise if a RANGE window breaks SensorBee's limits."""
    unit = window.unit.lower()
    value = window.value
    if unit not in _LIMITS:
        raise fail(f"unknown window unit '{window.unit}'", window)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail("the range of a window must be a number", window)
    if unit == "tuples" and not isinstance(value, int):
        raise fail(f"the number of tuples must be an integer: {_number(value)}", window)
    if value <= 0:
        raise fail(f"the range of a window must be positive: {_number(value)} {unit}", window)
    limit = _LIMITS[unit]
    if value > limit:
        raise fail(f"the range of a window is too large: {_number(value)} {unit} (at most {limit})", window)
    size = window.buffer_size
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int):
            raise fail("the buffer size must be an integer", window)
        if size < 0:
            raise fail(f"the buffer size must not be negative: {size}", window)
        if size > MAX_BUFFER_SIZE:
            raise fail(f"the buffer size is too large: {size} (at most {MAX_BUFFER_SIZE})", window)


def check_ranges(stmt: Statement, ctx: Context) -> None:
    """Every RANGE window of every SELECT is within SensorBee's limits."""
    for window in _windows(stmt):
        check_range(window)


def check_from_needs_window(stmt: Statement, ctx: Context) -> None:
    """A SELECT reads something; a plain stream needs ``[RANGE ...]`` unless the query has EMIT."""
    for select in selects_of(stmt):
        if not select.from_items:
            raise fail("need at least one relation to select from", select)
        if is_streaming_tail(select):  # a Timeplus streaming tail reads its stream as it comes
            continue
        for item in select.from_items:
            if isinstance(item, (StreamRef, UdsfCall)) and item.window is None and select.emit is None:
                name = item.name
                raise fail(
                    f"stream '{name}' needs a window such as [RANGE 1 TUPLES]"
                    " (or an EMIT clause for a global aggregation)",
                    item,
                )
