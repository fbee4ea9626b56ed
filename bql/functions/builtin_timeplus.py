"""Timeplus (Proton) functions: the aggregates ``latest``, ``earliest``, ``any``, ``max_k``, ``min_k`` and the
streaming functions ``lag`` and ``emit_version`` (docs/timeplus.md).

Aggregates get their argument as the list of the group's values in arrival order (or the call's ORDER
BY), like every BQL aggregate; as in Proton (ClickHouse's ``any`` / ``anyLast``, which skip NULLs), NULL
values are skipped and a group without a non-NULL value gives NULL:

- ``earliest(x)`` / ``any(x)``: the first non-NULL value; ``latest(x)``: the last one.
- ``max_k(x, k)`` / ``min_k(x, k)``: the ``k`` largest / smallest numbers as an array, largest (smallest)
  first; equal values keep their arrival order and their type (``3`` and ``3.0`` both stay). ``k`` is a
  non-negative int; an empty group gives NULL, a group with fewer values a shorter array.

``now64([precision[, zone]])`` is Proton's (ClickHouse's) current time as a timestamp cut to
``precision`` decimal places of a second (0 to 9, default 3; sbpy keeps at most microseconds). Like
``now()`` it reads the time of the evaluation (``Env.now``): in the Timeplus window operator that is the
moment the tuple reached the operator, so ``tumble(s, now64(), 5s)`` windows by processing time. ``zone``
names an IANA zone; BQL timestamps are instants, so it only has to exist.

``lag(x[, n[, default]])`` and ``emit_version()`` keep state of the query that calls them, so their
specs here only declare their arity: the Timeplus window operator (``runtime/timeplus``) replaces
them before compiling its query, and the analyzer accepts them only where that operator runs
(a non-aggregating Timeplus query for ``lag``, an aggregating one for ``emit_version``). Called
anywhere else, the placeholder implementations raise.
"""
from __future__ import annotations

import datetime as _dt
import zoneinfo
from typing import Any

from ..errors import BQLEvaluationError
from ..values import check_int
from .registry import FunctionSpec
from .signatures import number, type_error


def _present(xs: list) -> list:
    return [x for x in xs if x is not None]


def _earliest(xs: list) -> Any:
    for x in xs:
        if x is not None:
            return x
    return None


def _latest(xs: list) -> Any:
    for x in reversed(xs):
        if x is not None:
            return x
    return None


def _k(fn: str, k: Any) -> int:
    if type(k) is not int:
        raise type_error(fn, "k", "'int'", k)
    check_int(k)
    if k < 0:
        raise BQLEvaluationError(f"function '{fn}': 'k' must not be negative, got {k}")
    return k


def _top(fn: str, xs: list, k: Any, largest: bool) -> Any:
    n = _k(fn, k)
    vals = [number(fn, "x", x) for x in _present(xs)]
    if not vals:
        return None
    order = sorted(range(len(vals)), key=lambda i: (-vals[i] if largest else vals[i], i))
    return [vals[i] for i in order[:n]]


def _max_k(xs: list, k: Any) -> Any:
    return _top("max_k", xs, k, largest=True)


def _min_k(xs: list, k: Any) -> Any:
    return _top("min_k", xs, k, largest=False)


def _now64(env: Any, precision: Any = 3, zone: Any = None) -> _dt.datetime:
    if type(precision) is not int:
        raise type_error("now64", "precision", "'int'", precision)
    if not 0 <= precision <= 9:
        raise BQLEvaluationError(f"function 'now64': 'precision' must be from 0 to 9, got {precision}")
    if zone is not None:
        if not isinstance(zone, str):
            raise type_error("now64", "zone", "'string'", zone)
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise BQLEvaluationError(f"function 'now64': unknown time zone {zone!r}") from None
    now = env.now if env.now is not None else _dt.datetime.now(_dt.timezone.utc)
    if precision < 6:
        step = 10 ** (6 - precision)
        now = now.replace(microsecond=now.microsecond - now.microsecond % step)
    return now


def _streaming_only(name: str):
    def impl(*args: Any) -> Any:
        raise BQLEvaluationError(f"function '{name}' can only be used in a Timeplus streaming query")

    return impl


SPECS = [
    FunctionSpec("earliest", _earliest, 1, 1, aggregate=True),
    FunctionSpec("any", _earliest, 1, 1, aggregate=True),
    FunctionSpec("latest", _latest, 1, 1, aggregate=True),
    FunctionSpec("max_k", _max_k, 2, 2, aggregate=True, agg_params=(0,)),
    FunctionSpec("min_k", _min_k, 2, 2, aggregate=True, agg_params=(0,)),
    FunctionSpec("now64", _now64, 0, 2, volatile=True, stream_only=True, context=True),
    FunctionSpec("lag", _streaming_only("lag"), 1, 3, volatile=True, stream_only=True),
    FunctionSpec("emit_version", _streaming_only("emit_version"), 0, 0, volatile=True, stream_only=True),
]
