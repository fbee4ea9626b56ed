"""GROUP BY / aggregates / HAVING that recompute only the groups whose rows changed.

The reference (``grouping.Grouping.evaluate``) rebuilds every group from the whole relation at every
step. Here each group keeps its rows (in relation order) and one aggregate state per aggregate call
(``aggregates.py``); a row joins its group when its key is computed and leaves it with the row. A group
whose rows changed since the last successful step is *touched*; only touched groups are re-evaluated,
in relation order of their first rows, which is the order the reference evaluates (and fails) them in —
an untouched group has the rows it had when it last evaluated without error, so it cannot fail now.

Group output order is the order of first appearance among the current rows: an item's ``pos`` is the
position of its group's first row (it moves when that row leaves). A query with aggregates and no GROUP
BY has one group also over zero rows; that group's item has position -1.

Nothing is committed when an evaluation raises: the step is dropped, the touched set stays, and the
next step evaluates those groups again (the emitter still holds the last successful relation).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from ...ast import Select, Wildcard
from ...eval import Env, Scope, compile_expr
from ...values import multiset_key
from ..grouping import Grouping
from ..kernel import _copy
from .aggregates import state_factory
from .emitter import row_key
from .plain_select import plain_group_items
from .relation import Row, is_flat


class GroupItem:
    """One output row of a group (the emitter's item)."""

    __slots__ = ("pos", "data", "ekey", "nan", "flat")

    def __init__(self, pos: int, data: dict[str, Any], keyed: bool):
        self.pos = pos
        self.data = data
        self.flat = is_flat(data)  # RSTREAM re-emits it every step: copying it is a dict.copy
        if keyed:
            self.ekey, self.nan = row_key(data)
        else:
            self.ekey, self.nan = None, False

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        """Unpickle (a snapshot of an older version has no ``flat``)."""
        for name, value in state[1].items():
            setattr(self, name, value)
        if "flat" not in state[1]:
            self.flat = is_flat(self.data)


def emitted_copies(items: list[GroupItem]) -> list[dict[str, Any]]:
    """The rows output tuples carry for ``items`` (``relation.emitted_copy``, flatness known)."""
    return [item.data.copy() if item.flat else _copy(item.data) for item in items]


class Group:
    __slots__ = ("key", "members", "states", "irregular", "item")

    def __init__(self, key: Any, states: list[Any]):
        self.key = key
        self.members: OrderedDict[int, Row] = OrderedDict()
        self.states = states
        self.irregular: list[set[int]] = [set() for _ in states]
        self.item: GroupItem | None = None  # the group's row in the emitter's previous relation


class GroupTable:
    """The groups of the current relation and what changed since the last successful step (data)."""

    __slots__ = ("groups", "touched", "gone", "empty_item", "empty_done")

    def __init__(self) -> None:
        self.groups: dict[Any, Group] = {}
        self.touched: dict[Any, None] = {}
        self.gone: list[GroupItem] = []  # items of groups that lost their last row
        self.empty_item: GroupItem | None = None  # the global group over zero rows
        self.empty_done = False


def _true(env: Env) -> bool:
    return True


class IncrementalGrouping:
    """The compiled side: key, aggregate arguments, HAVING and select list (from ``Grouping``)."""

    def __init__(self, grouping: Grouping, aliases: tuple[str, ...], registry: Any, keyed: bool,
                 select: Select | None = None):
        self.grouping = grouping
        self.keyed = keyed
        scope = Scope(aliases, registry=registry)
        self.factories = [state_factory(agg) for agg in grouping.aggregates]
        self.args: list[Any] = []
        for agg, factory in zip(grouping.aggregates, self.factories):
            if factory is None:
                self.args.append(None)
                continue
            arg = agg.call.args[0]
            self.args.append(_true if type(arg) is Wildcard and arg.stream is None else compile_expr(arg, scope))
        # (aggregate index, argument) of the aggregates kept as states
        self.stateful = [(j, fn) for j, fn in enumerate(self.args) if fn is not None]
        self.all_stateful = len(self.stateful) == len(self.args)
        key_fns = grouping.key_fns
        if len(key_fns) == 1:
            (only,) = key_fns
            self.row_key: Callable[[Env], Any] = lambda env: (multiset_key(only(env)),)
        else:
            self.row_key = grouping.row_key
        self.output = (plain_group_items(grouping.select_list, select.projections,
                                         [agg.call for agg in grouping.aggregates])
                       if select is not None else None)

    def describe(self) -> str:
        inc = [a.spec.name for a, f in zip(self.grouping.aggregates, self.factories) if f is not None]
        again = [a.spec.name for a, f in zip(self.grouping.aggregates, self.factories) if f is None]
        parts = []
        if inc:
            parts.append("incremental " + "/".join(dict.fromkeys(inc)))
        if again:
            parts.append("per-group re-evaluated " + "/".join(dict.fromkeys(again)))
        return ", ".join(parts) or "groups without aggregates"

    # ------------------------------------------------------------ membership

    def add_row(self, table: GroupTable, row: Row) -> None:
        key = row.gkey
        group = table.groups.get(key)
        if group is None:
            group = table.groups[key] = Group(key, [f() if f is not None else None for f in self.factories])
        pos = row.pos
        group.members[pos] = row
        env = row.env
        states, irregular = group.states, group.irregular
        for j, fn in self.stateful:
            state = states[j]
            try:
                value = fn(env)
            except Exception:
                irregular[j].add(pos)
                continue
            if state.accepts(value):
                state.add(pos, value)
            else:
                irregular[j].add(pos)
        table.touched[key] = None

    def remove_row(self, table: GroupTable, row: Row) -> None:
        key = row.gkey
        group = table.groups[key]
        pos = row.pos
        del group.members[pos]
        states, irregular = group.states, group.irregular
        for j, _ in self.stateful:
            odd = irregular[j]
            if pos in odd:
                odd.discard(pos)
            else:
                states[j].remove(pos)
        if group.members:
            table.touched[key] = None
            return
        del table.groups[key]
        table.touched.pop(key, None)
        if group.item is not None:
            table.gone.append(group.item)

    # ------------------------------------------------------------ evaluation

    def evaluate(self, table: GroupTable) -> tuple[list[GroupItem], list[GroupItem]]:
        """Re-evaluate the touched groups; (items that left, items that entered) the output relation.

        Raises (committing nothing) when the reference would fail this step.
        """
        results: list[tuple[Group, GroupItem | None]] = []
        groups = table.groups
        if table.touched:
            touched = [groups[k] for k in table.touched]
            if len(touched) > 1:
                touched.sort(key=_first_pos)
            for group in touched:
                results.append((group, self._output(group)))
        empty_new = None
        global_empty = self.grouping.global_group and not groups
        if global_empty and not table.empty_done:
            empty_new = self._empty_output()
        # commit
        removed, added = table.gone, []
        for group, item in results:
            if group.item is not None:
                removed.append(group.item)
            group.item = item
            if item is not None:
                added.append(item)
        if global_empty:
            if not table.empty_done:
                table.empty_item, table.empty_done = empty_new, True
                if empty_new is not None:
                    added.append(empty_new)
        elif table.empty_done:
            if table.empty_item is not None:
                removed.append(table.empty_item)
            table.empty_item, table.empty_done = None, False
        table.gone = []
        table.touched.clear()
        return removed, added

    def current(self, table: GroupTable) -> list[GroupItem]:
        """Every item of the output relation, in order (RSTREAM)."""
        items = [g.item for g in table.groups.values() if g.item is not None]
        if table.empty_item is not None:
            items.append(table.empty_item)
        items.sort(key=_item_pos)
        return items

    def _output(self, group: Group) -> GroupItem | None:
        if self.all_stateful and not any(group.irregular):
            values = [state.result() for state in group.states]
        else:
            values = []
            envs = None
            for agg, state, irregular in zip(self.grouping.aggregates, group.states, group.irregular):
                if state is None or irregular:
                    if envs is None:
                        envs = [r.env for r in group.members.values()]
                    values.append(agg.evaluate(envs))
                else:
                    values.append(state.result())
        for first in group.members.values():
            return self._item(first.pos, Env(first.env.tuples, values, None))
        raise AssertionError("a group without rows is evaluated")

    def _empty_output(self) -> GroupItem | None:
        values = [agg.evaluate([]) for agg in self.grouping.aggregates]
        return self._item(-1, Env({}, values, None))

    def _item(self, pos: int, genv: Env) -> GroupItem | None:
        having = self.grouping.having
        if having is not None and having(genv) is not True:
            return None
        output = self.output
        if output is None:
            return GroupItem(pos, self.grouping.select_list.evaluate(genv), self.keyed)
        values = genv.aggregates
        data = {label: values[j] if fn is None else fn(genv) for label, j, fn in output}
        return GroupItem(pos, data, self.keyed)


def _first_pos(group: Group) -> int:
    return next(iter(group.members))


_item_pos = attrgetter("pos")
