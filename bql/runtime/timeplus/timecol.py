"""Event time for the Timeplus window operator: everything is integer microseconds since the epoch.

Integers keep window arithmetic exact (``[start, end)`` boundaries, epoch alignment, ``end <= C``);
floats would misplace events sitting exactly on a boundary. The time column of a window function may
hold epoch seconds (int or float), a timestamp, or a string that converts to a timestamp; omitted, the
tuple timestamp is used; a call of ``now64()`` or ``now()`` makes the windows processing-time windows
(``is_processing_time``): a tuple's time is the moment it reached the operator (``utc_now``, or the
clock a test injects). Window bounds go back to BQL as epoch seconds: an int when the bound is a whole
second, a float otherwise (MILLISECONDS sizes).
"""
from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from ...ast import Expr, FunctionCall, Interval
from ...errors import BQLEvaluationError
from ...values import cast

US = 1_000_000
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_ONE_US = _dt.timedelta(microseconds=1)


def datetime_micros(value: _dt.datetime) -> int:
    """An aware (or naive = UTC) datetime as epoch microseconds."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return (value - EPOCH) // _ONE_US


def to_micros(value: Any) -> int:
    """A time-column value as epoch microseconds; NULL or a non-time value is an evaluation error."""
    if isinstance(value, bool) or value is None:
        raise BQLEvaluationError(f"the window time column must be epoch seconds or a timestamp, not {value!r}")
    if isinstance(value, int):
        return value * US
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BQLEvaluationError(f"the window time column is not a finite number: {value!r}")
        return round(value * US)
    if isinstance(value, _dt.datetime):
        return datetime_micros(value)
    if isinstance(value, str):
        return datetime_micros(cast(value, "timestamp"))
    raise BQLEvaluationError(
        f"the window time column must be epoch seconds or a timestamp, not {type(value).__name__}")


def interval_micros(iv: Interval) -> int:
    """An interval literal (``n SECONDS | MILLISECONDS``) in microseconds (at least 1)."""
    factor = 1000 if iv.unit == "milliseconds" else US
    return max(1, round(iv.value * factor))


def bound_value(us: int) -> int | float:
    """A window bound as BQL epoch seconds: int when whole, float otherwise."""
    if us % US == 0:
        return us // US
    return us / US


def micros_datetime(us: int) -> _dt.datetime:
    """Epoch microseconds as an aware UTC datetime (for output timestamps of wall-clock ticks)."""
    return EPOCH + _dt.timedelta(microseconds=us)


PROCESSING_TIME_FUNCTIONS = frozenset({"now64", "now"})


def utc_now() -> _dt.datetime:
    """The wall clock as an aware UTC datetime (the operator's default processing-time source)."""
    return _dt.datetime.now(_dt.timezone.utc)


def is_processing_time(time_expr: Expr | None) -> bool:
    """Whether a window function's time column is the processing time: ``now64(...)`` or ``now()``."""
    return isinstance(time_expr, FunctionCall) and time_expr.name.lower() in PROCESSING_TIME_FUNCTIONS
