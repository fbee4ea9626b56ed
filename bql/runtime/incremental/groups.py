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

from ...ast import Select
from ...eval import Env, Scope, compile_expr
from ...values import multiset_key
from ..grouping import Grouping
from .aggregates import CountAllState, state_factory
from .emitter import row_key
from .field_access import MISSING, plain_field
from .plain_select import plain_group_items
from .relation import Row, is_flat


class GroupItem:
    """One output row of a group (the emitter's item)."""

    __slots__ = ("pos", "data", "ekey", "nan", "flat")

    def __init__(self, pos: int, data: dict[str, Any], keyed: bool):
        self.pos = pos
        self.data = data
        self.flat = is_flat(data)  # RSTREAM re-emits it every step: a flat map as itself (``emitted``)
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
            self.args.append(_true if factory is CountAllState else compile_expr(arg, scope))
        self.all_stateful = all(fn is not None for fn in self.args)
        # count(*) states are counters updated inline; the other states are offered each row's value,
        # (aggregate index, (alias, key) of a plain-field argument or None, compiled argument)
        self.count_all = [j for j, f in enumerate(self.factories) if f is CountAllState]
        self.stateful: list[tuple[int, tuple[str, str] | None, Any]] = [
            (j, plain_field(agg.call.args[0], aliases), fn)
            for j, (agg, fn) in enumerate(zip(grouping.aggregates, self.args))
            if fn is not None and j not in self.count_all]
        self.row_key = _row_key(grouping, select, aliases)
        self.output = (plain_group_items(grouping.select_list, select.projections,
                                         [agg.call for agg in grouping.aggregates], aliases)
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

    def adopt(self, table: GroupTable) -> None:
        """Bring a restored table to this version's states: a snapshot taken before ``count(*)`` had
        its own counter holds a ``CountState`` there (its rows are all the group's rows)."""
        for group in table.groups.values():
            for j in self.count_all:
                old = group.states[j]
                if type(old) is not CountAllState:
                    group.states[j] = counter = CountAllState()
                    counter.n = len(group.members)

    # ------------------------------------------------------------ membership

    def add_row(self, table: GroupTable, row: Row) -> None:
        key = row.gkey
        group = table.groups.get(key)
        if group is None:
            group = table.groups[key] = Group(key, [f() if f is not None else None for f in self.factories])
        pos = row.pos
        group.members[pos] = row
        states = group.states
        for j in self.count_all:
            states[j].n += 1
        if self.stateful:
            env = row.env
            tuples = env.tuples
            for j, field, fn in self.stateful:
                if field is not None:
                    data = tuples[field[0]].data
                    value = data.get(field[1], MISSING) if type(data) is dict else MISSING
                    if value is MISSING:  # the argument raises: this aggregate re-evaluates the group
                        group.irregular[j].add(pos)
                        continue
                else:
                    try:
                        value = fn(env)
                    except Exception:
                        group.irregular[j].add(pos)
                        continue
                if not states[j].offer(pos, value):
                    group.irregular[j].add(pos)
        table.touched[key] = None

    def remove_row(self, table: GroupTable, row: Row) -> None:
        key = row.gkey
        group = table.groups[key]
        pos = row.pos
        del group.members[pos]
        states, irregular = group.states, group.irregular
        for j in self.count_all:
            states[j].n -= 1
        for j, _, _ in self.stateful:
            odd = irregular[j]
            if odd and pos in odd:
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
        if len(table.touched) == 1 and not self.grouping.global_group:  # the common step
            (key,) = table.touched
            group = table.groups[key]
            item = self._output(group)
            removed, added = table.gone, []
            if group.item is not None:
                removed.append(group.item)
            group.item = item
            if item is not None:
                added.append(item)
            table.gone = []
            table.touched.clear()
            return removed, added
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
        items = list(filter(None, map(_group_item, table.groups.values())))  # items are never falsy
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
        values, tuples = genv.aggregates, genv.tuples
        data: dict[str, Any] = {}
        for label, j, fn, field in output:
            if j >= 0:
                data[label] = values[j]
            elif field is not None and field[0] in tuples:
                value = tuples[field[0]].data
                value = value.get(field[1], MISSING) if type(value) is dict else MISSING
                data[label] = fn(genv) if value is MISSING else value  # fn raises the reference's error
            else:
                data[label] = fn(genv)
        return GroupItem(pos, data, self.keyed)


def _row_key(grouping: Grouping, select: Select | None, aliases: tuple[str, ...]) -> Callable[[Env], Any]:
    """``Grouping.row_key``; for one GROUP BY expression a function giving the same key, which reads a
    plain field inline (``field_access``) and keys ints and strings without ``multiset_key``."""
    key_fns = grouping.key_fns
    if len(key_fns) != 1:
        return grouping.row_key
    (only,) = key_fns
    field = plain_field(select.group_by[0], aliases) if select is not None else None
    if field is None:
        return lambda env: (multiset_key(only(env)),)
    alias, name = field

    def field_key(env: Env) -> Any:
        data = env.tuples[alias].data
        v = data.get(name, MISSING) if type(data) is dict else MISSING
        t = type(v)
        if t is int:
            return (v,)
        if t is str:
            return (("s", v),)
        if v is MISSING:
            return (multiset_key(only(env)),)  # ``only`` raises the reference's error
        return (multiset_key(v),)

    return field_key


def _first_pos(group: Group) -> int:
    return next(iter(group.members))


_item_pos = attrgetter("pos")
_group_item = attrgetter("item")
