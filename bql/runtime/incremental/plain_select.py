"""Select lists that build their row as a plain dict, without ``SelectList.evaluate``'s general steps.

``SelectList.evaluate`` (``runtime/projection.py``) first merges the wildcard-level items (``*``,
``s:*``, ``x AS *``), then sets each explicit item at its label path (``AS x.y[3]`` creates maps and
arrays on the way). Most statements have neither: every item sets one top-level key. Then the row is
``{label: fn(env) for label, fn in items}`` — the same keys in the same order (a repeated label keeps
its first place and takes its last value, as repeated assignment does), the same values, and the same
first error, since the items are evaluated in select-list order either way.

``plain_items`` recognises that shape; for a grouping select list ``plain_group_items`` also marks the
items that are just one of the group's aggregate calls, whose value the kernel already holds.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...ast import KeyStep, Projection
from ..projection import SelectList
from .field_access import MISSING, plain_field

Compiled = Callable[[Any], Any]
Field = tuple[str, str] | None  # (alias, key) of a plain field item


def plain_items(select_list: SelectList,
                projections: Sequence[Projection]) -> list[tuple[str, Compiled]] | None:
    """``[(label, fn)]`` when every item sets one top-level key (no wildcard level, no label path)."""
    if select_list.wild or len(select_list.explicit) != len(projections):
        return None
    out = []
    for steps, fn in select_list.explicit:
        if len(steps) != 1 or type(steps[0]) is not KeyStep:
            return None
        out.append((steps[0].key, fn))
    return out


def plain_group_items(select_list: SelectList, projections: Sequence[Projection], calls: Sequence[Any],
                      aliases: tuple[str, ...]) -> list[tuple[str, int, Compiled | None, Field]] | None:
    """``[(label, aggregate index, fn, field)]``: an item that is exactly the aggregate call ``calls[i]``
    has index ``i`` and no ``fn`` (its value is ``Env.aggregates[i]``); other items have index -1 and,
    when they read a plain field of the group's first row, its ``(alias, key)`` (``field_access``)."""
    items = plain_items(select_list, projections)
    if items is None:
        return None
    calls = list(calls)
    out: list[tuple[str, int, Compiled | None, Field]] = []
    for proj, (label, fn) in zip(projections, items):
        if proj.expr in calls:
            out.append((label, calls.index(proj.expr), None, None))
        else:
            out.append((label, -1, fn, plain_field(proj.expr, aliases)))
    return out


def plain_evaluator(select_list: SelectList, projections: Sequence[Projection],
                    aliases: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    """``select_list.evaluate`` or an equal function over ``plain_items``; plain-field items are read
    inline (``field_access``: a MISSING value calls the item's closure, which raises the error)."""
    items = plain_items(select_list, projections)
    if items is None:
        return select_list.evaluate
    fields = [plain_field(p.expr, aliases) for p in projections]
    if len(items) == 2 and fields[0] is not None and fields[1] is not None:
        (l1, f1), (l2, f2) = items
        (a1, k1), (a2, k2) = fields

        def two_fields(env: Any) -> dict[str, Any]:
            tuples = env.tuples
            d = tuples[a1].data
            v1 = d.get(k1, MISSING) if type(d) is dict else MISSING
            if v1 is MISSING:
                v1 = f1(env)
            d = tuples[a2].data
            v2 = d.get(k2, MISSING) if type(d) is dict else MISSING
            if v2 is MISSING:
                v2 = f2(env)
            return {l1: v1, l2: v2}  # a repeated label keeps its first place and its last value

        return two_fields
    steps = [(label, fn, field) for (label, fn), field in zip(items, fields)]

    def plain(env: Any) -> dict[str, Any]:
        tuples = env.tuples
        row: dict[str, Any] = {}
        for label, fn, field in steps:
            if field is None:
                row[label] = fn(env)
                continue
            d = tuples[field[0]].data
            v = d.get(field[1], MISSING) if type(d) is dict else MISSING
            row[label] = fn(env) if v is MISSING else v
        return row

    return plain
