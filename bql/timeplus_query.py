"""The rule that makes a SELECT a *Timeplus query* (docs/timeplus.md).

A Timeplus query runs in the Timeplus window operator (``runtime.timeplus.WindowProcessor``) instead of
a SensorBee kernel, and only there do the Timeplus readings apply (``count()``, HAVING on an alias,
OFFSET, ``lag``, ``emit_version()``; see ``analyzer.timeplus_clauses``). It is a SELECT with an EMIT
clause, or with a ``tumble`` / ``hop`` / ``session`` FROM item, or reading a bare stream without a RANGE
window. The analyzer and ``runtime.build_processor`` both decide by this one rule, so a query is checked
by the same reading it runs under. The module needs only the AST, so either side imports it without a
cycle.
"""
from __future__ import annotations

from .ast import Select, StreamRef, WindowFunction


def is_timeplus_select(select: Select) -> bool:
    """Whether ``select`` runs in the Timeplus window operator (EMIT, a window function, a bare stream)."""
    if select.emit is not None:
        return True
    for item in select.from_items:
        if isinstance(item, WindowFunction):
            return True
        if isinstance(item, StreamRef) and item.window is None:
            return True
    return False
