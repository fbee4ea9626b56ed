"""Emitters: RSTREAM, ISTREAM or DSTREAM is required, except for Timeplus-style queries.

A Timeplus-style query (a window function such as ``tumble(...)`` in FROM, or an EMIT clause)
defaults to RSTREAM and accepts only RSTREAM; so does a Timeplus streaming tail (one stream without
RANGE, no emitter, no EMIT: ``timeplus_query.is_streaming_tail``). MATCH_RECOGNIZE produces rows once per match, so
ISTREAM/DSTREAM (diffs of successive relations) make no sense there either.
"""
from __future__ import annotations

from ..ast import MatchRecognize, Select, Statement, WindowFunction
from ..timeplus_query import is_streaming_tail
from .context import Context, fail, selects_of

EMITTERS = ("rstream", "istream", "dstream")


def is_timeplus(select: Select) -> bool:
    """True for a window-function query or one with an EMIT clause."""
    return select.emit is not None or any(isinstance(f, WindowFunction) for f in select.from_items)


def check_emitter(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        emitter = select.emitter.lower() if select.emitter else None
        if emitter is not None and emitter not in EMITTERS:
            raise fail(f"unknown emitter '{select.emitter}'", select)
        if is_timeplus(select) or is_streaming_tail(select):
            if emitter not in (None, "rstream"):
                raise fail(
                    f"{emitter.upper()} cannot be used with a window function or EMIT clause; use RSTREAM",
                    select,
                )
            continue
        if emitter is None:
            raise fail("an emitter (RSTREAM, ISTREAM or DSTREAM) is required after SELECT", select)
        if emitter != "rstream" and any(isinstance(f, MatchRecognize) for f in select.from_items):
            raise fail(f"{emitter.upper()} cannot be used with MATCH_RECOGNIZE; use RSTREAM", select)
