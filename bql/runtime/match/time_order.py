"""The ORDER BY reorder buffer's settings (YQL's TimeOrderRecover) and the clock its watermark reads.

A MATCH_RECOGNIZE clause may end with ``SETTINGS name = value, ...`` (names case-insensitive, the
underscores optional, so YQL's ``TimeOrderRecoverDelay`` is accepted as written):

- ``time_order_recover_delay`` (default 10, or the processor's ``reorder_bound``): how late a row may
  be. Times are ORDER BY key units — seconds when the first key is a timestamp; an interval
  (``5 SECONDS``, ``500 MILLISECONDS``) is taken in seconds. Must be >= 0.
- ``time_order_recover_ahead`` (default: unlimited): a row whose time is more than this ahead of the
  largest time seen is dropped (reported) and does not move time. Must be > 0.
- ``time_order_recover_row_limit`` (default: unlimited): at most this many held rows per partition;
  beyond it the oldest held row is released at once and later rows older than it are late. > 0.
- ``watermark``: ``"partition"`` (default: each partition releases by its own largest time) or
  ``"global"`` (the largest time seen over all partitions moves every partition's watermark, so a
  quiet partition's finished match is emitted when any partition moves time).

The watermark is ``largest time seen - delay``: held rows with a time at or below it are released in
ORDER BY order; an arriving row below it is late and dropped. ``docs/match-recognize.md`` has the rules.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

from ...ast import Interval
from ...errors import BQLAnalysisError

DEFAULT_DELAY = 10
SCOPES = ("partition", "global")
_NAMES = {
    "timeorderrecoverdelay": "delay",
    "timeorderrecoverahead": "ahead",
    "timeorderrecoverrowlimit": "row_limit",
    "watermark": "scope",
}


@dataclass(frozen=True)
class TimeOrder:
    """How rows are put back in ORDER BY order before matching."""

    delay: float = DEFAULT_DELAY
    ahead: float | None = None
    row_limit: int | None = None
    scope: str = "partition"

    @property
    def is_default(self) -> bool:
        """Only the delay is set (the shapes ``MatchRecognizeProcessor.process`` has a shortcut for)."""
        return self.ahead is None and self.row_limit is None and self.scope == "partition"

    @classmethod
    def from_settings(cls, settings: tuple, delay: float | None = None) -> "TimeOrder":
        """The settings of a clause; ``delay`` is the default delay (None: ``DEFAULT_DELAY``).
        Raises ``BQLAnalysisError`` for an unknown name or a value out of range."""
        fields: dict[str, Any] = {"delay": DEFAULT_DELAY if delay is None else delay}
        for s in settings:
            key = _NAMES.get(s.name.lower().replace("_", ""))
            if key is None:
                known = ", ".join(("time_order_recover_delay", "time_order_recover_ahead",
                                   "time_order_recover_row_limit", "watermark"))
                raise BQLAnalysisError(f"unknown MATCH_RECOGNIZE setting '{s.name}' (known: {known})", s.span)
            fields[key] = _value(key, s)
        return cls(**fields)


def _value(key: str, s: Any) -> Any:
    v = s.value
    if key == "scope":
        if not isinstance(v, str) or v.lower() not in SCOPES:
            raise BQLAnalysisError(f"MATCH_RECOGNIZE setting '{s.name}' must be \"partition\" or \"global\"", s.span)
        return v.lower()
    if key == "row_limit":
        if type(v) is not int or v <= 0:
            raise BQLAnalysisError(f"MATCH_RECOGNIZE setting '{s.name}' must be a positive integer", s.span)
        return v
    if isinstance(v, Interval):
        v = v.seconds()
    if type(v) not in (int, float) or v < 0 or (key == "ahead" and v == 0):
        want = "a positive" if key == "ahead" else "a non-negative"
        raise BQLAnalysisError(f"MATCH_RECOGNIZE setting '{s.name}' must be {want} number or interval", s.span)
    return v


def shift(t: Any, amount: float) -> Any:
    """``t + amount`` in ORDER BY key units (seconds for a timestamp)."""
    if isinstance(t, _dt.datetime):
        return t + _dt.timedelta(seconds=amount)
    return t + amount


class StreamClock:
    """The largest first ORDER BY key seen over every partition (the ``global`` watermark's clock)."""

    __slots__ = ("max0",)

    def __init__(self) -> None:
        self.max0: Any = None
