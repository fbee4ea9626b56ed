"""The DEFINE masks of a run of rows column by column: ``RowMasks.masks_run``'s result computed with
``map`` over whole columns instead of row by row (the compiled lane's batch entry, ``lane_batch.py``).

It applies when every DEFINE condition is an inline comparison (``conditions.py``: ``operand <cmp>
operand``, each a literal, a field or ``PREV`` of one). Each field the conditions read is one column
(``dict.get`` mapped over the rows' data, ``None`` before the first kept row as ``_EMPTY.get`` gives);
``PREV(f, n)`` is the same column shifted by ``n`` rows. An operand pair whose two columns (or literal)
have one and the same type on every row, a type of the pair's fast types, takes Python's comparison on
every row: exactly the inline code's fast branch. Any other run (another type on some row, a row whose
data is not exactly a dict) is left to ``masks_run``, row by row.
"""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter, eq, ge, gt, le, lt, mul, ne, or_
from typing import Any, Callable

_OPS = {"=": eq, "!=": ne, "<>": ne, "<": lt, "<=": le, ">": gt, ">=": ge}
_DATA = attrgetter("data")


def compile_columns(masks: Any) -> Callable[[Any, int, int], list] | None:
    """``masks_columns(rows, q0, q1)`` (as ``masks.masks_run``) for the ``RowMasks`` ``masks``, or None
    when a condition is not an inline comparison."""
    if not masks.only_inline:
        return None
    tops: dict[str, int] = {}  # field -> its largest look-back
    for left, right, _, _ in masks.comparisons:
        for o in (left, right):
            if o[0] == "field":
                tops[o[1]] = max(tops.get(o[1], 0), o[2])
    top = max(tops.values(), default=0)
    always = masks.always
    comparisons = [(left, right, fast, [(_OPS[op], bit) for op, bit in tests])
                   for left, right, fast, tests in masks.comparisons]
    fallback = masks.masks_run

    def masks_columns(rows: Any, q0: int, q1: int) -> list:
        n = q1 - q0
        if n <= 0 or not tops:
            return fallback(rows, q0, q1)
        lo = q0 - top
        datas = list(map(_DATA, rows.rows[lo if lo > 0 else 0:q1]))
        if set(map(type, datas)) != {dict}:
            return fallback(rows, q0, q1)
        pad = [None] * -lo if lo < 0 else []
        cols = {key: pad + list(map(dict.get, datas, repeat(key))) for key in tops}
        out = [always] * n
        for left, right, fast, tests in comparisons:
            operands = []
            for o in (left, right):
                if o[0] == "lit":
                    operands.append((repeat(o[1]), {type(o[1])}))
                else:
                    start = top - o[2]
                    col = cols[o[1]][start:start + n]
                    operands.append((col, set(map(type, col))))
            (a, ta), (b, tb) = operands
            if ta != tb or len(ta) != 1 or next(iter(ta)) not in fast:
                return fallback(rows, q0, q1)
            for op, bit in tests:
                out = list(map(or_, out, map(mul, map(op, a, b), repeat(bit))))
        return out

    return masks_columns
