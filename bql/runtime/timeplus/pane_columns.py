"""Window panes that keep each group's aggregate arguments as columns instead of its rows.

The reference pane (``panes.Pane``) stores a tagged copy of every tuple and, when a group is emitted,
re-aggregates its rows (``Grouping.evaluate``: each aggregation argument evaluated on every row, in row
order, then the aggregate function; the other arguments, HAVING and the select list on the first row).
A tumble/hop window's bounds never move, so a group's output depends on its rows only through

- its first row (tagged with the window columns), and
- each aggregation argument's values on its rows, in row order (for an argument that raises: the first
  error, which is what the reference raises when it evaluates the group).

A *column pane* keeps exactly that per group: the first tagged row, one list of values per
aggregation argument filled as rows arrive, the first error per argument, and the row count
(``count(*)``'s argument is ``True`` on every row). Emission hands the same lists to the same function
(``CompiledAggregate.apply_columns``), so values, types and errors are the reference's; a tuple costs a
few list appends instead of a dict copy, and a pane's state is its values instead of its tuples.

Chosen (``PaneColumns.of``) when that equivalence holds: an aggregation without ``lag`` /
``emit_version``, whose aggregates have no ``ORDER BY`` and whose aggregation arguments call no volatile,
context-reading or unknown function (the reference evaluates them at emission, with that step's
``now``; here they are evaluated when the row arrives). ``SBPY_TIMEPLUS_PANES=rows`` keeps the reference
panes (tests compare the two). WHERE and the GROUP BY key are evaluated on the untagged tuple when none
of them can read a window column (the tag is then made once per group, for its first row).

*Sessions* move their bounds as tuples join, and the reference re-tags every row and regroups the pane
when it is read. Every row of a session pane has the session's non-window GROUP BY values, so when no
GROUP BY item but a plain ``window_start`` / ``window_end`` and no aggregation argument reads a window
column, the pane is one group whatever its bounds: a session column pane keeps that one group, re-tags
its first row when the bounds moved and computes the group's key from it (cached while the bounds
stand, as the reference caches its groups). Not with ``EMIT ON UPDATE``, whose per-tuple look-up by a
freshly computed key the reference does its own way (a NaN key finds no group).
"""
from __future__ import annotations

import os
from typing import Any

from ...ast import FieldRef, KeyStep, Select, Wildcard
from ...eval import Env, is_volatile
from ..grouping import Grouping
from ..incremental.field_access import plain_field
from ..processor import Tuple
from .column_steps import compile_steps
from .group_output import group_output_of
from .panes import WINDOW_END, WINDOW_START, Pane, tag
from .timecol import bound_value

LAYOUT_ENV = "SBPY_TIMEPLUS_PANES"
_WINDOW_COLUMNS = (WINDOW_START, WINDOW_END)


def _window_column(expr: Any, alias: str) -> str | None:
    """``window_start`` / ``window_end`` when ``expr`` is that plain field, else None."""
    field = plain_field(expr, (alias,))
    return field[1] if field is not None and field[1] in _WINDOW_COLUMNS else None


def reads_window(expr: Any) -> bool:
    """Whether ``expr`` may read a window column of a tagged row: a ``window_start`` / ``window_end``
    field, a whole row, ``*``, or a path that does not start with a key."""
    if expr is None:
        return False
    for node in expr.walk():
        if type(node) is Wildcard:
            return True
        if type(node) is FieldRef:
            path = node.path
            if not path or type(path[0]) is not KeyStep or path[0].key in _WINDOW_COLUMNS:
                return True
    return False


class ColumnGroup:
    """One group of a column pane: first tagged row, row count, value columns (None for ``count(*)``,
    whose values are the row count), first errors (a tuple of Nones until the first error, shared by
    the layout's groups; then the group's own list)."""

    __slots__ = ("first", "n", "columns", "errors")

    def __init__(self, first: Tuple, columns: list[list[Any] | None], errors: tuple | list, n: int = 0):
        self.first = first
        self.n = n
        self.columns = columns
        self.errors = errors


class ColumnPane:
    """``panes.Pane``'s interface for a window whose groups are ``ColumnGroup``s (a session: its one
    group, keyed under the current bounds when read)."""

    __slots__ = ("pid", "start", "end", "last", "skey", "_groups", "dirty", "dirty_all", "session", "_tagged")

    def __init__(self, pid: int, start: int | None, end: int | None, skey: Any = None, last: int | None = None,
                 session: bool = False):
        self.pid = pid
        self.start = start
        self.end = end
        self.last = last
        self.skey = skey
        self._groups: dict[Any, ColumnGroup] = {}
        self.dirty: set[Any] = set()
        self.dirty_all = False
        self.session = session
        self._tagged: tuple | None = None  # a session: the bounds its group's key was computed under

    @property
    def order(self) -> tuple[int, int]:
        return (self.start if self.start is not None else 0, self.pid)

    def set_bounds(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    def groups(self, key_fn: Any = None) -> dict[Any, ColumnGroup]:
        if self.session and self._groups and self._tagged != (self.start, self.end):
            (group,) = self._groups.values()
            first = group.first.data  # the pane's own copy, re-tagged in place like the reference's rows
            first[WINDOW_START], first[WINDOW_END] = bound_value(self.start), bound_value(self.end)
            self._groups = {key_fn(group.first): group}
            self._tagged = (self.start, self.end)
        return self._groups

    def clear_dirty(self) -> None:
        self.dirty = set()
        self.dirty_all = False

    def dirty_keys(self, key_fn: Any = None) -> list[Any]:
        groups = self.groups(key_fn)
        if self.dirty_all:
            return list(groups)
        return [k for k in groups if k in self.dirty]

    def state(self) -> tuple:
        groups = [(k, g.first, g.n, g.columns, list(g.errors)) for k, g in self._groups.items()]
        return ("columns", self.pid, self.start, self.end, groups, self.dirty, self.last, self.skey,
                self.dirty_all, self.session, self._tagged)

    @classmethod
    def load(cls, state: tuple) -> "ColumnPane":
        pane = cls(state[1], state[2], state[3])
        for key, first, n, columns, errors in state[4]:
            pane._groups[key] = ColumnGroup(first, columns, errors, n)
        pane.dirty = state[5]
        pane.last, pane.skey, pane.dirty_all, pane.session, pane._tagged = state[6:11]
        return pane


class PaneColumns:
    """The compiled column layout of one query: group key, aggregation arguments, emission."""

    def __init__(self, grouping: Grouping, select: Select, alias: str, marks_dirty: bool = True):
        self.grouping = grouping
        self.alias = alias
        # an aggregation argument reads a window column (sessions then keep tagged rows: ``reads_bounds``)
        self.args_read_window = any(reads_window(agg.call.args[pos]) for agg in grouping.aggregates
                                    for pos, fn in agg.column_fns() if fn is not None)
        self.tag_rows = (reads_window(select.where) or self.args_read_window
                         or any(_window_column(g, alias) is None and reads_window(g) for g in select.group_by))
        # per GROUP BY item: ("w", column name) | ("f", field name, closure) | ("e", closure)
        self.key_parts: list[tuple] = []
        for expr, fn in zip(select.group_by, grouping.key_fns):
            column = _window_column(expr, alias)
            field = plain_field(expr, (alias,))
            if column is not None:
                self.key_parts.append(("w", column))
            elif field is not None:
                self.key_parts.append(("f", field[1], fn))
            else:
                self.key_parts.append(("e", fn))
        # one column per aggregation argument: (aggregate, position, field name | None, closure | None)
        self.columns: list[tuple[int, int, str | None, Any]] = []
        self.slots: list[dict[int, int]] = []  # per aggregate: position -> column
        for j, agg in enumerate(grouping.aggregates):
            slots = {}
            for pos, fn in agg.column_fns():
                field = plain_field(agg.call.args[pos], (alias,)) if fn is not None else None
                slots[pos] = len(self.columns)
                self.columns.append((j, pos, field[1] if field is not None else None, fn))
            self.slots.append(slots)
        self.width = len(self.columns)
        self.no_errors = (None,) * self.width  # the errors of a group without any
        self.counted = frozenset(c for c, (*_, fn) in enumerate(self.columns) if fn is None)  # count(*)
        # per row (``column_steps``): key(row, start, end, env_of) -> the group key of the row tagged with
        # (start, end); add(pane, key, row, start, end, env_of): the row joins that group of a tumble/hop
        # pane; _append(group, row, env_of): the row's aggregation arguments join the group's columns;
        # add_to_windows(windows, row, env_of): an untagged row joins its group in each of its windows;
        # session_key(row, env_of): the key of the row's session (its GROUP BY items but the window columns)
        self.key, self._append, self.add, self.add_to_windows, self.session_key = compile_steps(
            self.key_parts, self.columns, self.tag_rows, self.no_errors, ColumnGroup, marks_dirty)
        # the common form's output row in one generated function (``group_output``), else None
        self.group_output = group_output_of(self, select)

    @classmethod
    def of(cls, select: Select, grouping: Grouping | None, alias: str, registry: Any,
           session: bool = False, on_update: bool = False, marks_dirty: bool = True) -> "PaneColumns | None":
        """The layout when it gives the reference's results (module docstring), else None; ``marks_dirty``:
        whether ``add`` marks the groups it changed (read by EMIT PERIODIC / ON UPDATE only)."""
        if grouping is None or os.environ.get(LAYOUT_ENV, "") == "rows":
            return None
        for agg in grouping.aggregates:
            if agg.ordered:
                return None
            if any(is_volatile(agg.call.args[pos], registry) for pos, _ in agg.column_fns()):
                return None
        layout = cls(grouping, select, alias, marks_dirty)
        if session and (on_update or layout.reads_bounds(select, registry)):
            return None
        return layout

    def reads_bounds(self, select: Select, registry: Any) -> bool:
        """Whether a GROUP BY item other than a plain window column, or an aggregation argument, can read
        a window column (or a GROUP BY item is volatile): a session's rows could then group differently
        as its bounds move."""
        return self.args_read_window or any(
            _window_column(g, self.alias) is None and (reads_window(g) or is_volatile(g, registry))
            for g in select.group_by)

    # ------------------------------------------------------------ a row arrives

    def add_session(self, pane: ColumnPane, row: Tuple, env_of: Any) -> None:
        """``row`` (tagged with the session's new bounds when ``tag_rows``) joins the session's one group,
        made with the row tagged if it is the first."""
        if pane._groups:
            (group,) = pane._groups.values()
        else:
            group = pane._groups[None] = ColumnGroup(row if self.tag_rows else tag(row, pane.start, pane.end),
                                                     [None if fn is None else [] for *_, fn in self.columns],
                                                     self.no_errors)
            pane._tagged = None  # keyed when read
        group.n += 1
        pane.dirty_all = True
        self._append(group, row, env_of)

    # ------------------------------------------------------------ emission

    def evaluate(self, group: ColumnGroup, now: Any) -> dict[str, Any] | None:
        """The group's output row (None: HAVING rejects it); raises the reference's error."""
        if self.group_output is not None:
            return self.group_output(group, now)
        first = Env({self.alias: group.first}, None, now)
        columns, errors, counted = group.columns, group.errors, self.counted
        slots: dict[int, int] = {}  # the current aggregate's, read by ``column`` when it is called

        def column(pos: int) -> list[Any]:
            c = slots[pos]
            if c in counted:
                return [True] * group.n
            if errors[c] is not None:
                raise errors[c]
            return columns[c]
        values = []
        for agg, slots in zip(self.grouping.aggregates, self.slots):
            values.append(agg.apply_columns(column, first))
        return self.grouping.group_output(values, first.tuples, now)

    def outputs(self, group: ColumnGroup, now: Any) -> list[dict[str, Any]]:
        """``evaluate`` as ``Grouping.evaluate`` gives it: the group's rows (none when HAVING rejects it)."""
        row = self.evaluate(group, now)
        return [] if row is None else [row]

    # ------------------------------------------------------------ stored panes

    def from_rows(self, pane: Any, key_fn: Any, env_of: Any) -> ColumnPane:
        """A reference ``Pane`` (restored from an older snapshot) as a column pane: its rows re-added
        in order, its dirty marks kept."""
        groups = pane.groups(key_fn)
        out = ColumnPane(pane.pid, pane.start, pane.end, pane.skey, pane.last, session=pane.skey is not None)
        for key, rows in groups.items():
            for row in rows:
                if out.session:
                    self.add_session(out, row, env_of)
                else:
                    self.add(out, key, row, pane.start, pane.end, env_of)
        if out.session:
            out.dirty_all = pane.dirty_all or bool(pane.dirty)
        else:
            out.dirty = set(pane.dirty) if not pane.dirty_all else set(out._groups)
        return out


def load_pane(state: tuple, columns: PaneColumns | None, key_fn: Any, env_of: Any) -> Pane | ColumnPane:
    """A stored pane (``Pane.state`` or ``ColumnPane.state``) in the layout ``columns`` says (None: the
    reference's tagged rows): tagged rows stored before the column layout are converted; columns cannot
    become rows again."""
    if state[0] == "columns":
        if columns is None:
            raise ValueError(f"a window state kept as aggregate columns cannot be read with {LAYOUT_ENV}=rows")
        return ColumnPane.load(state)
    pane = Pane.load(state)
    return pane if columns is None else columns.from_rows(pane, key_fn, env_of)
