"""The per-row steps of a column layout (``pane_columns.PaneColumns``), generated for its query.

Every tuple of a Timeplus aggregation computes its group key and appends its aggregation arguments to
its group's columns. Both follow the layout's lists — ``key_parts`` (per GROUP BY item a window column,
a plain field or another expression) and ``columns`` (per aggregation argument its field, or its closure,
or none for ``count(*)``) — which never change once the query is compiled, so instead of walking them
for every tuple this module writes the walk out once, as Python source with the lists' entries in it:

- ``key(row, start, end, env_of)``: ``Grouping.row_key`` of the row tagged with ``(start, end)``: each
  part in GROUP BY order — a window column's bound, a plain field read from the row (an ``int`` as it
  is, anything else through ``multiset_key``; a missing field through the item's closure, as the
  reference evaluates it), any other item through its closure — raising what the first failing item
  raises;
- ``append(group, row, env_of)``: each aggregation argument's value joins its column, in column order,
  unless the column already holds its first error (a plain field read directly when present, else the
  closure; an error is kept, not raised: the reference raises it when it evaluates the group);
- ``add(pane, key, row, start, end, env_of)``: the row joins group ``key`` of a tumble/hop pane (the
  group made with its first row, tagged unless rows are tagged already; marked dirty unless the
  emission never reads the marks — AFTER WATERMARK), then ``append``.

The environment is built at most once per call, only when a closure needs it. The source is the
generic walk with the loop unrolled: ``tests/bql/runtime/test_timeplus_pane_columns.py`` checks every
layout it produces against the reference row panes.
"""
from __future__ import annotations

from typing import Any

from ...values import multiset_key
from ..incremental.field_access import MISSING
from .panes import WINDOW_START, tag
from .timecol import bound_value

_NO_DATA: dict = {}  # a row whose data is no map reads every field as missing


def _env_line(indent: str) -> list[str]:
    return [f"{indent}if env is None:", f"{indent}    env = env_of(row)"]


def key_source(key_parts: list[tuple]) -> list[str]:
    lines = ["def key(row, start, end, env_of):", "    data = row.data",
             "    d = data if type(data) is dict else _NO_DATA", "    env = None"]
    names = []
    for j, part in enumerate(key_parts):
        name = f"k{j}"
        names.append(name)
        kind = part[0]
        if kind == "w":
            bound = "start" if part[1] == WINDOW_START else "end"
            lines.append(f"    {name} = multiset_key(bound_value({bound}))")
        elif kind == "f":
            lines += [f"    v = d.get({part[1]!r}, MISSING)",
                      "    if v is not MISSING:",
                      f"        {name} = v if type(v) is int else multiset_key(v)",
                      "    else:", *_env_line("        "),
                      f"        {name} = multiset_key(KEY_FN{j}(env))"]
        else:
            lines += [*_env_line("    "), f"    {name} = multiset_key(KEY_FN{j}(env))"]
    lines.append(f"    return ({', '.join(names)}{',' if len(names) == 1 else ''})")
    return lines


def append_body(columns: list[tuple], indent: str) -> list[str]:
    """The lines appending ``row``'s arguments to ``group`` (``row`` and ``env_of`` in scope)."""
    lines = [f"{indent}data = row.data", f"{indent}d = data if type(data) is dict else _NO_DATA",
             f"{indent}env = None", f"{indent}columns, errors = group.columns, group.errors"]
    for c, (_, _, field, fn) in enumerate(columns):
        if fn is None:
            continue  # count(*): the row count
        lines.append(f"{indent}if errors[{c}] is None:")
        inner = indent + "    "
        evaluate = [*_env_line(inner), f"{inner}try:", f"{inner}    columns[{c}].append(ARG_FN{c}(env))",
                    f"{inner}except Exception as err:  # noqa: BLE001 - raised when the group is evaluated",
                    f"{inner}    errors[{c}] = err"]
        if field is None:
            lines += evaluate
            continue
        lines += [f"{inner}v = d.get({field!r}, MISSING)", f"{inner}if v is not MISSING:",
                  f"{inner}    columns[{c}].append(v)", f"{inner}else:",
                  *["    " + line for line in evaluate]]
    return lines


def compile_steps(key_parts: list[tuple], columns: list[tuple], tag_rows: bool, width: int,
                  group_class: type, marks_dirty: bool = True) -> tuple[Any, Any, Any]:
    """``(key, append, add)`` for a layout (module docstring); ``group_class``: ``ColumnGroup``;
    ``marks_dirty``: whether ``add`` records the group in ``pane.dirty``."""
    ns: dict[str, Any] = {"multiset_key": multiset_key, "bound_value": bound_value, "MISSING": MISSING,
                          "_NO_DATA": _NO_DATA, "tag": tag, "Group": group_class, "new": object.__new__}
    for j, part in enumerate(key_parts):
        if part[0] != "w":
            ns[f"KEY_FN{j}"] = part[-1]
    for c, (_, _, _, fn) in enumerate(columns):
        if fn is not None:
            ns[f"ARG_FN{c}"] = fn
    body = append_body(columns, "    ") if width else []
    first = "row" if tag_rows else "tag(row, start, end)"
    lines = [*key_source(key_parts), "",
             "def append(group, row, env_of):", *(body or ["    return"]), "",
             "def add(pane, key, row, start, end, env_of):",
             "    group = pane._groups.get(key)",
             "    if group is None:",  # ``ColumnGroup(first, width)`` with its lists written out
             "        group = pane._groups[key] = new(Group)",
             f"        group.first = {first}",
             "        group.n = 0",
             f"        group.columns = [{', '.join(['[]'] * width)}]",
             f"        group.errors = [{', '.join(['None'] * width)}]",
             "    group.n += 1",
             *(["    pane.dirty.add(key)"] if marks_dirty else []),
             *body]
    exec(compile("\n".join(lines) + "\n", "<Timeplus column steps>", "exec"), ns)  # noqa: S102
    return ns["key"], ns["append"], ns["add"]
