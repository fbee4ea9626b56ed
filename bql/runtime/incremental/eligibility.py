"""Which SELECT statements the incremental kernel runs (decided per statement, never approximated).

The incremental kernel evaluates expressions fewer times than the reference (a group's select list and
HAVING only when its rows change, a join's one-alias conditions once per entry), which is exact only
for deterministic expressions. A statement stays on the reference ``SelectProcessor`` when it

- calls a volatile function (``now()``, ``random()`` ...), a function that reads the evaluation
  context, or a function the registry does not know (``eval.is_volatile``);
- has a ``RANGE n TUPLES`` window with ``n < 1`` (a new entry would leave its window in its own step);
- reads a FROM item the BQL kernel does not read (the reference raises the error);
- has DISTINCT or ORDER BY (the reference shapes each step's whole relation, ``relation_shape.py``).
- is a LEFT JOIN (``left_join.py`` computes it; ``build_processor`` never asks).
"""
from __future__ import annotations

from typing import Any

from ...ast import Select, StreamRef, UdsfCall
from ...eval import is_volatile


def ineligible_reason(select: Select, registry: Any = None) -> str | None:
    """Why ``select`` must use the reference kernel, or None when the incremental kernel is exact."""
    for item in select.from_items:
        if not isinstance(item, (StreamRef, UdsfCall)):
            return f"a {type(item).__name__} in FROM"
        window = item.window
        if window is not None and window.unit == "tuples" and window.value < 1:
            return "a window of fewer than one tuple"
    if select.distinct or select.order_by:
        return "DISTINCT / ORDER BY shape each step's whole relation"
    if select.left_join_on is not None:
        return "a LEFT JOIN runs in its own kernel (runtime/left_join.py)"
    exprs = [p.expr for p in select.projections] + list(select.group_by)
    exprs += [e for e in (select.where, select.having) if e is not None]
    for e in exprs:
        if is_volatile(e, registry):
            return "a volatile or unknown function"
    return None
