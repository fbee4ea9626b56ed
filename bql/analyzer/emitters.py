"""Emitters: RSTREAM, ISTREAM or DSTREAM is required, except for Timeplus-style queries.

A Timeplus-style query (a window function such as ``tumble(...)`` in FROM, or an EMIT clause)
defaults to RSTREAM and accepts only RSTREAM; so does a Timeplus streaming tail (one stream without
RANGE, no emitter, no EMIT: ``timeplus_query.is_streaming_tail``). MATCH_RECOGNIZE produces rows once per match, so
ISTREAM/DSTREAM (diffs of successive relations) make no sense there either.

SensorBee's emitter options (``RSTREAM [LIMIT n]`` etc., ``ast.EmitterOption``) are checked as its
``transform_plan.go`` does, with its error texts: LIMIT must not be negative, EVERY's count or period
must be positive, SAMPLE's percentage must lie in [0, 100]. Go formats the float parameters with
``%d``, hence texts such as ``not %!d(float64=-2)`` (reproduced with ``go_sprintf``).
"""
from __future__ import annotations

from ..ast import EmitterOption, MatchRecognize, Select, Statement, WindowFunction
from ..functions.go_format import go_sprintf
from ..timeplus_query import is_streaming_tail
from .context import Context, fail, selects_of

EMITTERS = ("rstream", "istream", "dstream")


def is_timeplus(select: Select) -> bool:
    """True for a window-function query or one with an EMIT clause."""
    return select.emit is not None or any(isinstance(f, WindowFunction) for f in select.from_items)


def emitter_option_value(option: EmitterOption) -> float:
    """The option's parameter as SensorBee's plan holds it: EVERY x MILLISECONDS in seconds (x * 0.001)."""
    if option.kind == "every_time" and option.unit == "milliseconds":
        return float(option.value) * 0.001
    return float(option.value)


def check_emitter_options(select: Select) -> None:
    """SensorBee's checks of ``[LIMIT n]``, ``[EVERY ...]`` and ``[SAMPLE x%]``, in written order."""
    for option in select.emitter_options:
        if option.kind == "limit":
            if option.value < 0:
                raise fail(f"LIMIT parameter must have a positive value, not {option.value}", option)
            continue
        value = emitter_option_value(option)
        if option.kind == "sample":
            if value < 0 or value > 100:
                raise fail(go_sprintf("SAMPLE parameter must have a value between 0 and 100, not %d",
                                      [value]), option)
        elif value <= 0:
            raise fail(go_sprintf("EVERY parameter must have a positive value, not %d", [value]), option)


def check_emitter(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        check_emitter_options(select)
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
