"""Timeplus-style window functions and EMIT policies (design/timeplus-semantics.md).

- A window function is the only FROM item; intervals are positive; ``hop``'s slide may not exceed its size; a session's max duration may
  not be shorter than its gap.
- An aggregating ``tumble``/``hop`` query groups by ``window_start`` and/or ``window_end``.
- ``EMIT AFTER WATERMARK`` needs a window function (a bare stream has no windows to close);
  ``ON UPDATE`` and ``PERIODIC`` work on a bare stream too.
"""
from __future__ import annotations

from ..ast import FieldRef, Interval, KeyStep, Select, Statement, WindowFunction
from .aggregates import WINDOW_COLUMNS, is_aggregating
from .context import Context, fail, selects_of

_INTERVALS = {"tumble": (1, 1), "hop": (2, 2), "session": (1, 2)}


def _show(iv: Interval) -> str:
    return iv.shorthand or f"{iv.value} {iv.unit.upper()}"


def _check_window(w: WindowFunction) -> None:
    kind = w.kind.lower()
    if kind not in _INTERVALS:
        raise fail(f"unknown window function '{w.kind}'", w)
    lo, hi = _INTERVALS[kind]
    if not lo <= len(w.intervals) <= hi:
        raise fail(f"wrong number of intervals for window function '{kind}'", w)
    for iv in w.intervals:
        if iv.value <= 0:
            raise fail(f"the interval of '{kind}' must be positive: {_show(iv)}", iv if iv.span else w)
    if kind == "hop":
        slide, size = w.intervals
        if slide.seconds() > size.seconds():
            raise fail(
                f"the slide of 'hop' ({_show(slide)}) must not be larger than its size ({_show(size)})",
                slide if slide.span else w,
            )
    if kind == "session" and len(w.intervals) == 2:
        gap, longest = w.intervals
        if longest.seconds() < gap.seconds():
            raise fail(
                f"the max duration of 'session' ({_show(longest)}) must not be shorter than its gap ({_show(gap)})",
                longest if longest.span else w,
            )


def _groups_by_window(select: Select) -> bool:
    for g in select.group_by:
        if isinstance(g, FieldRef) and len(g.path) == 1 and isinstance(g.path[0], KeyStep):
            if g.path[0].key in WINDOW_COLUMNS:
                return True
    return False


def check_window_functions(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        windows = [f for f in select.from_items if isinstance(f, WindowFunction)]
        for w in windows:
            _check_window(w)
        if windows and len(select.from_items) > 1:
            raise fail(f"window function '{windows[0].kind.lower()}' must be the only item in FROM", windows[0])
        if select.emit is not None and select.emit.kind == "after_watermark" and not windows:
            raise fail("EMIT AFTER WATERMARK needs a window function such as tumble() in FROM", select.emit)
        for w in windows:
            if w.kind.lower() in ("tumble", "hop") and is_aggregating(select, ctx) and not _groups_by_window(select):
                raise fail(
                    f"an aggregation over '{w.kind.lower()}' must GROUP BY window_start or window_end",
                    select.group_by[0] if select.group_by else w,
                )
