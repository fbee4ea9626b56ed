"""The rule that makes a SELECT a *Timeplus query* (docs/timeplus.md).

A Timeplus query runs in the Timeplus window operator (``runtime.timeplus.WindowProcessor``) instead of
a SensorBee kernel, and only there do the Timeplus readings apply (``count()``, HAVING on an alias,
OFFSET, ``lag``, ``emit_version()``; see ``analyzer.timeplus_clauses``). It is a SELECT with an EMIT
clause, or with a ``tumble`` / ``hop`` / ``session`` FROM item, or reading a bare stream without a RANGE
window. The analyzer and ``runtime.build_processor`` both decide by this one rule, so a query is checked
by the same reading it runs under. The module needs only the AST, so either side imports it without a
cycle.

A *streaming tail* (``is_streaming_tail``) is the Timeplus query written with neither an emitter nor an
EMIT clause over one bare stream: ``SELECT device, cpu_usage FROM devices_utils WHERE cpu_usage > 99``.
The stream may be a subquery or a CTE read without RANGE (seed 003's ``FROM (SELECT ...) GROUP BY
device``): the subquery's output stream is then read as it comes, as a bare stream is.
It emits each input tuple's row as it arrives (a global aggregation written so emits every
``GLOBAL_PERIOD``, Proton's default). Any other SELECT without an emitter keeps SensorBee's error.
"""
from __future__ import annotations

from .ast import Interval, Select, StreamRef, SubqueryRef, WindowFunction

GLOBAL_PERIOD = Interval(2, "seconds", "2s")  # Proton's default emission of a global aggregation


def is_timeplus_select(select: Select) -> bool:
    """Whether ``select`` runs in the Timeplus window operator (EMIT, a window function, a bare stream)."""
    if select.emit is not None:
        return True
    for item in select.from_items:
        if isinstance(item, WindowFunction):
            return True
        if is_bare(item):
            return True
    return False


def is_bare(item: object) -> bool:
    """A stream or a subquery (a CTE's reference) read without a RANGE window: Timeplus' bare stream."""
    return isinstance(item, (StreamRef, SubqueryRef)) and item.window is None


def is_streaming_tail(select: Select) -> bool:
    """Whether ``select`` is a streaming tail: no emitter, no EMIT, FROM one stream without RANGE."""
    if select.emitter is not None or select.emit is not None or len(select.from_items) != 1:
        return False
    item = select.from_items[0]
    return is_bare(item) and select.left_join_on is None
