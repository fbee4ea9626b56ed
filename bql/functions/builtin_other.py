"""Time, array and other scalar built-ins: ``distance_us``, ``clock_timestamp``, ``now``,
``array_length``, ``coalesce``.

``now()`` is the time processing of the current tuple started (``Env.now``, set by the kernel; the wall
clock when unset) and cannot be used in EVAL; ``clock_timestamp()`` is the wall clock at each call.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from .registry import FunctionSpec
from .signatures import array, timestamp

_UTC = _dt.timezone.utc


def _distance_us(u: Any, v: Any) -> int:
    a = timestamp("distance_us", "u", u)
    b = timestamp("distance_us", "v", v)
    d = b - a
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _clock_timestamp() -> _dt.datetime:
    return _dt.datetime.now(_UTC)


def _now(env: Any) -> _dt.datetime:
    now = getattr(env, "now", None)
    return now if now is not None else _dt.datetime.now(_UTC)


def _array_length(a: Any) -> int:
    return len(array("array_length", "a", a))


def _coalesce(*args: Any) -> Any:
    for a in args:
        if a is not None:
            return a
    return None


SPECS = [
    FunctionSpec("distance_us", _distance_us, 2, 2, null_on_null=True),
    FunctionSpec("clock_timestamp", _clock_timestamp, 0, 0, volatile=True),
    FunctionSpec("now", _now, 0, 0, volatile=True, stream_only=True, context=True),
    FunctionSpec("array_length", _array_length, 1, 1, null_on_null=True),
    FunctionSpec("coalesce", _coalesce, 1, None),
]
