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
  emission never reads the marks — AFTER WATERMARK), then ``append``;
- ``add_to_windows(windows, row, env_of)``: an untagged row (no WHERE, GROUP BY item or argument reads a
  window column, none is volatile) joins a group in each window of ``windows`` — ``(pane, start, end,
  window_start key, window_end key)`` per window, in ``window_start`` order — as ``key`` then ``add`` per
  window would do it: the key's other items, the same in every window, are computed once (raising
  before any window changes) and the plain-field arguments read once;
- ``session_key(row, env_of)``: the key of the row's session — its GROUP BY items other than the window
  columns, in order, each as ``key`` computes it (``WindowProcessor._assign_session``'s ``skey``).

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


_ROW_LINES = ["    data = row.data", "    d = data if type(data) is dict else _NO_DATA", "    env = None"]


def key_parts_source(key_parts: list[tuple], bounds: tuple[str, str] | None) -> tuple[list[str], str]:
    """``(lines, tuple)``: the lines computing each GROUP BY item other than a window column, in order
    (``data``, ``d``, ``env`` in scope), and the key tuple's expression, whose window columns are the
    expressions ``bounds`` (for ``window_start``, ``window_end``; None: left out): a window column never
    raises."""
    lines, names = [], []
    for j, part in enumerate(key_parts):
        kind = part[0]
        if kind == "w":
            if bounds is not None:
                names.append(bounds[0] if part[1] == WINDOW_START else bounds[1])
            continue
        name = f"k{j}"
        names.append(name)
        if kind == "f":
            lines += [f"    v = d.get({part[1]!r}, MISSING)",
                      "    if v is not MISSING:",
                      f"        {name} = v if type(v) is int else multiset_key(v)",
                      "    else:", *_env_line("        "),
                      f"        {name} = multiset_key(KEY_FN{j}(env))"]
        else:
            lines += [*_env_line("    "), f"    {name} = multiset_key(KEY_FN{j}(env))"]
    return lines, f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def key_source(key_parts: list[tuple]) -> list[str]:
    bounds = ("multiset_key(bound_value(start))", "multiset_key(bound_value(end))")
    lines, key = key_parts_source(key_parts, bounds)
    return ["def key(row, start, end, env_of):", *_ROW_LINES, *lines, f"    return {key}"]


def read_fields(columns: list[tuple]) -> list[str]:
    """The lines reading each plain-field argument of ``row`` once (``d`` in scope), as ``f<column>``."""
    return [f"    f{c} = d.get({field!r}, MISSING)" for c, (_, _, field, fn) in enumerate(columns)
            if fn is not None and field is not None]


def append_body(columns: list[tuple], indent: str) -> list[str]:
    """The lines appending ``row``'s arguments to ``group`` (``row``, ``env_of``, ``env`` and the fields
    ``read_fields`` read in scope)."""
    lines = [f"{indent}columns, errors = group.columns, group.errors"]
    for c, (_, _, field, fn) in enumerate(columns):
        if fn is None:
            continue  # count(*): the row count
        lines.append(f"{indent}if errors[{c}] is None:")
        inner = indent + "    "
        evaluate = [*_env_line(inner), f"{inner}try:", f"{inner}    columns[{c}].append(ARG_FN{c}(env))",
                    f"{inner}except Exception as err:  # noqa: BLE001 - raised when the group is evaluated",
                    f"{inner}    if type(errors) is tuple:  # the group's first error: errors of its own",
                    f"{inner}        errors = group.errors = list(errors)",
                    f"{inner}    errors[{c}] = err"]
        if field is None:
            lines += evaluate
            continue
        lines += [f"{inner}if f{c} is not MISSING:", f"{inner}    columns[{c}].append(f{c})", f"{inner}else:",
                  *["    " + line for line in evaluate]]
    return lines


def join_group(indent: str, first: str, columns: list[tuple], marks_dirty: bool) -> list[str]:
    """The lines making ``key``'s group of ``pane`` (with ``first``) if it is new and counting the row."""
    empty = ", ".join("None" if fn is None else "[]" for *_, fn in columns)
    return [f"{indent}group = pane._groups.get(key)",
            f"{indent}if group is None:",  # ``ColumnGroup(first, columns, NO_ERRORS)`` written out
            f"{indent}    group = pane._groups[key] = new(Group)",
            f"{indent}    group.first = {first}",
            f"{indent}    group.n = 0",
            f"{indent}    group.columns = [{empty}]",
            f"{indent}    group.errors = NO_ERRORS",
            f"{indent}group.n += 1",
            *([f"{indent}pane.dirty.add(key)"] if marks_dirty else [])]


def compile_steps(key_parts: list[tuple], columns: list[tuple], tag_rows: bool, no_errors: tuple,
                  group_class: type, marks_dirty: bool = True) -> tuple[Any, Any, Any, Any, Any]:
    """``(key, append, add, add_to_windows, session_key)`` for a layout (module docstring); ``no_errors``:
    the errors of a new group; ``group_class``: ``ColumnGroup``; ``marks_dirty``: whether ``add`` records
    the group in ``pane.dirty``."""
    ns: dict[str, Any] = {"multiset_key": multiset_key, "bound_value": bound_value, "MISSING": MISSING,
                          "_NO_DATA": _NO_DATA, "tag": tag, "Group": group_class, "new": object.__new__,
                          "NO_ERRORS": no_errors}
    for j, part in enumerate(key_parts):
        if part[0] != "w":
            ns[f"KEY_FN{j}"] = part[-1]
    for c, (_, _, _, fn) in enumerate(columns):
        if fn is not None:
            ns[f"ARG_FN{c}"] = fn
    reads = read_fields(columns)
    first = "row" if tag_rows else "tag(row, start, end)"
    key_lines, window_key = key_parts_source(key_parts, ("ws", "we"))
    session_lines, session_key = key_parts_source(key_parts, None)
    append = [*_ROW_LINES, *reads, *append_body(columns, "    ")]
    lines = [*key_source(key_parts), "",
             "def append(group, row, env_of):", *append, "",
             "def add(pane, key, row, start, end, env_of):",
             *join_group("    ", first, columns, marks_dirty), *append, "",
             "def add_to_windows(windows, row, env_of):", *_ROW_LINES, *key_lines, *reads,
             "    for pane, start, end, ws, we in windows:",
             f"        key = {window_key}",
             *join_group("        ", first, columns, marks_dirty), *append_body(columns, "        "), "",
             "def session_key(row, env_of):", *_ROW_LINES, *session_lines, f"    return {session_key}"]
    exec(compile("\n".join(lines) + "\n", "<Timeplus column steps>", "exec"), ns)  # noqa: S102
    return ns["key"], ns["append"], ns["add"], ns["add_to_windows"], ns["session_key"]
