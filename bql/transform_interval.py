"""Parse tree → AST for Timeplus' interval shorthands and the time-zone argument of tumble / hop.

- ``<n><unit>`` (``500ms``, ``5s``, ``1m``, ``2h``, ``1d``, ``1w``) is Proton's interval shorthand: ``n`` a
  non-negative integer (the analyzer requires windows to be positive), the unit case-sensitive as in
  Proton (``M``, ``q`` and ``y`` — months, quarters, years — are not fixed lengths and are not accepted).
  It becomes ``Interval(n × factor, "seconds" | "milliseconds", shorthand=text)``, so everything that
  reads intervals (windows, EMIT delays and periods, MATCH_RECOGNIZE WITHIN) sees the usual units.
- The time zone of ``tumble(s, [time,] size, zone)`` / ``hop(s, [time,] slide, size, zone)`` is a
  string literal, in BQL's double quotes (``"UTC"``; Timeplus writes ``'UTC'``). It must name a zone
  of the IANA database (``zoneinfo``); session() takes none. Windows stay aligned to UTC epoch seconds
  (docs/timeplus.md says why), so the zone is checked and kept, not applied.
"""
from __future__ import annotations

import zoneinfo
from typing import Any

from lark import Token

from .ast import Interval, Literal
from .transform_base import INT64_MAX, StaticSyntaxError, fail, span_of

# unit → (unit of the normalised Interval, factor)
SHORTHAND_UNITS = {
    "ms": ("milliseconds", 1),
    "s": ("seconds", 1),
    "m": ("seconds", 60),
    "h": ("seconds", 3600),
    "d": ("seconds", 86400),
    "w": ("seconds", 7 * 86400),
}
ZONED_WINDOWS = frozenset({"tumble", "hop"})


def shorthand_interval(tok: Token) -> Interval:
    """``5s`` → ``Interval(5, "seconds", shorthand="5s")``; ``1m`` → 60 seconds, ``500ms`` → 500 ms."""
    text = str(tok)
    digits = text.rstrip("mshdw")
    unit, factor = SHORTHAND_UNITS[text[len(digits):]]
    value = int(digits) * factor
    if value > INT64_MAX:
        raise fail(f"the interval {text} is out of range", tok)
    return Interval(value, unit, text, span=span_of(tok))


def time_zone_name(kind: str, arg: Any) -> str:
    """The zone name of a window function's last argument, checked (a StaticSyntaxError if not valid)."""
    if isinstance(arg, Literal) and isinstance(arg.value, str):
        name, span = arg.value, arg.span
    else:
        raise fail(f"the last argument of '{kind}' must be an interval or a time zone string such as 'UTC'",
                   arg)
    if kind not in ZONED_WINDOWS:
        raise StaticSyntaxError(f"'{kind}' takes no time zone argument", span)
    if not _known_zone(name):
        raise StaticSyntaxError(f"unknown time zone '{name}' in '{kind}'", span)
    return name


def _known_zone(name: str) -> bool:
    if not name or name.startswith("/") or ".." in name:
        return False
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True
