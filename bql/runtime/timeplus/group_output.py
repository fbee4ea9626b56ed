"""A column pane group's output row in one generated function (``PaneColumns.evaluate``'s common form).

``PaneColumns.evaluate`` makes an ``Env`` for the group's first row, a ``column`` closure, calls each
aggregate's ``apply_columns`` (which loops over the call's argument positions), then
``Grouping.group_output``: another ``Env``, HAVING, and ``SelectList.evaluate``'s loop over the items.
For the common statement — no HAVING, every aggregate argument an aggregation argument (a column of
the group; ``count(*)``'s is a ``True`` per row), a select list whose items each set one top-level key
(``plain_group_items``) — ``group_output_of`` generates the same steps straight-line:

1. each aggregate in order: its columns in argument order (a column's stored first error is raised
   as ``column`` raises it, before the function runs), then the function itself, with
   ``CompiledAggregate._apply``'s error wrapping (a ``BQLError`` as is, anything else as
   ``aggregate 'name' failed: ...``);
2. the row as one dict display in select-list order: an item that is an aggregate call takes its
   value, a plain field of the first row (a GROUP BY key, ``window_start`` / ``window_end`` of the
   tagged row) is read inline (``field_access``: a MISSING value calls the item's closure, which
   raises the reference's error), any other item calls its closure with the group's environment.

Values, key order, types and errors are the general path's; tests compare the two on random groups.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import BQLError, BQLEvaluationError
from ...eval import Env
from ...eval.aggregates import CompiledAggregate
from ..incremental.field_access import MISSING
from ..incremental.plain_select import plain_group_items


def group_output_of(layout: Any, select: Any) -> Callable[[Any, Any], dict[str, Any]] | None:
    """``evaluate(group, now)`` for ``layout`` (a ``PaneColumns``), or None outside the common form."""
    grouping = layout.grouping
    if grouping.having is not None:
        return None
    aggregates = grouping.aggregates
    if any(type(agg) is not CompiledAggregate or agg.ordered or len(agg.column_fns()) != len(agg.call.args)
           for agg in aggregates):
        return None  # an argument evaluated on the first row (not a column), or ORDER BY
    items = plain_group_items(grouping.select_list, select.projections, [a.call for a in aggregates],
                              (layout.alias,))
    if items is None:
        return None
    scope: dict[str, Any] = {"MISSING": MISSING, "Env": Env, "BQLError": BQLError,
                             "BQLEvaluationError": BQLEvaluationError, "ALIAS": layout.alias}
    lines = ["def evaluate(group, now):", "    columns, errors = group.columns, group.errors",
             "    first = group.first"]
    for j, (agg, slots) in enumerate(zip(aggregates, layout.slots)):
        args = []
        for pos in range(len(agg.call.args)):
            c = slots[pos]
            if c in layout.counted:
                args.append("[True] * group.n")
                continue
            lines += [f"    e = errors[{c}]", "    if e is not None:", "        raise e"]
            args.append(f"columns[{c}]")
        scope[f"IMPL{j}"] = agg.spec.impl
        message = f"aggregate '{agg.spec.name}' failed: "
        lines += ["    try:", f"        v{j} = IMPL{j}({', '.join(args)})",
                  "    except BQLError:", "        raise", "    except Exception as err:",
                  f"        raise BQLEvaluationError({message!r} + str(err)) from err"]
    values = f"[{', '.join(f'v{j}' for j in range(len(aggregates)))}]"
    lines += ["    d = first.data", "    plain = type(d) is dict"]
    display = []
    for i, (label, index, fn, field) in enumerate(items):
        if index >= 0:
            display.append(f"{label!r}: v{index}")
            continue
        scope[f"FN{i}"] = fn
        call = f"FN{i}(Env({{ALIAS: first}}, {values}, now))"
        if field is not None and field[0] == layout.alias:
            lines += [f"    o{i} = d.get({field[1]!r}, MISSING) if plain else MISSING",
                      f"    if o{i} is MISSING:", f"        o{i} = {call}"]
        else:
            lines.append(f"    o{i} = {call}")
        display.append(f"{label!r}: o{i}")
    lines.append(f"    return {{{', '.join(display)}}}")
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<Timeplus group output>", "exec"), scope)  # noqa: S102 - labels are repr()'d
    evaluate = scope["evaluate"]
    evaluate.source = source  # type: ignore[attr-defined]
    return evaluate
