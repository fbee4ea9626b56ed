"""One step of a one-FROM-item ``SELECT RSTREAM ... GROUP BY`` in one function (the hand loop's shape).

``IncrementalSelectProcessor`` runs a grouping statement's step through ``_step`` → ``_advance`` →
``_advance_single`` → ``_group`` → ``IncrementalGrouping.evaluate`` → ``_output`` → ``_item`` →
``current``: seven calls of general code (any number of FROM items, pending rows carried over from a
failed step, ISTREAM/DSTREAM keys, the global group, HAVING) around a few dictionary updates. For the
common statement — one FROM item, RSTREAM, one GROUP BY expression (a plain field) or none (the global
group, key ``()``: a moving average), a select list whose items each set one top-level key, no HAVING,
no LIMIT, no UDSF — ``GroupedStep.advance`` does the same work on the
same data (window, ``Relation``, ``GroupTable``, aggregate states) in one function, generated for the
statement (``GroupedStep.source``: the aggregates' updates and the output row unrolled):

1. the new entry joins its window; the entries that leave take their row out of the relation and out
   of its group (``IncrementalGrouping.remove_row``);
2. WHERE decides the new row (the generated predicate of ``stage_codegen`` when WHERE is in its subset,
   else the compiled closure); the row enters the relation, its group key is read inline (an ``int`` or
   ``str`` field; any other value through ``IncrementalGrouping.row_key``) and it joins its group
   (``IncrementalGrouping.add_row`` unrolled: ``count(*)`` counters inline, the other states offered the
   argument read inline, a MISSING or refused value marks the row irregular);
3. the touched groups are evaluated in the order of their first rows — from the aggregate states when no
   row is irregular (``IncrementalGrouping._item`` unrolled: the plain-field items read from the group's
   first row, a MISSING one through its closure, which raises the reference's error), else through
   ``IncrementalGrouping._output`` — and only then committed;
4. the output is every group's item in the order of its first row, each with its own copy (the global
   group over no rows — WHERE kept none of the window — and the step after it run
   ``IncrementalGrouping.evaluate`` for its row over zero rows) — from the
   order the previous step emitted with this step's commits applied (``OutputOrder``), not gathered
   and sorted again.

The steps raise where the general path raises, after the same changes (windows and relation change,
a row whose key raised stays pending, touched groups stay touched), so ``process`` reports the same
``Dropped`` and the next step (the general path, while something is pending) continues exactly. The
state is the general path's, so snapshots and the two paths mix freely.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from ...eval import Env
from ..kernel import _copy, truth
from ..processor import Tuple, stamped
from ..stage_codegen import FALLBACK, generate
from ..windows import Entry
from .aggregates import CountAllState
from .field_access import MISSING, plain_field
from .groups import Group, GroupItem
from .relation import _SCALARS, Row


def grouped_step(proc: Any) -> GroupedStep | None:
    """The fused grouping step of an ``IncrementalSelectProcessor``, or None when the statement is not
    of the shape the module doc describes."""
    groups = proc.groups
    if (groups is None or not proc.single or proc.delta is not None or proc.limit is not None
            or proc.has_udsf or proc.fast or groups.output is None):
        return None
    grouping = groups.grouping
    if grouping.having is not None:
        return None
    if grouping.global_group:  # aggregates without GROUP BY: one group, key ()
        return GroupedStep(proc, None)
    if len(grouping.key_fns) != 1:
        return None
    key_field = plain_field(proc.select.group_by[0], proc.aliases)
    if key_field is None:
        return None
    return GroupedStep(proc, key_field[1])


class GroupedStep:
    """The generated step of one statement: ``advance(tup)`` (the state stays on the processor, whose
    ``restore`` replaces windows, relation and table; the step reads them at every call)."""

    __slots__ = ("advance", "advance_rows", "order", "source")

    def __init__(self, proc: Any, key_name: str | None):
        self.order = OutputOrder()
        groups = proc.groups
        alias = proc.aliases[0]
        scope: dict[str, Any] = {
            "PROC": proc, "GROUPS": groups, "Entry": Entry, "Row": Row, "Env": Env, "Group": Group,
            "GroupItem": GroupItem, "NEW_ITEM": GroupItem.__new__,
            "MISSING": MISSING, "FALLBACK": FALLBACK, "truth": truth, "SCALARS": _SCALARS,
            "ROW_KEY": groups.row_key, "OUTPUT": groups._output,
            "FIRST_POS": _first_pos, "ORDER": self.order,
            "WHERE": proc.where, "FACTORIES": groups.factories, "ALIAS": alias, "COPY": _copy,
        }
        where_ast = proc.select.where
        scope["PREDICATE"] = generate(where_ast, [], alias) if where_ast is not None else None
        lines = (_advance_lines(proc, key_name, scope) + _emit_lines(key_name is None) + _remove_lines(groups)
                 + _item_lines(groups, alias, scope))
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, "<grouped step>", "exec"), scope)  # noqa: S102 - generated from the AST
        # the step answering the output maps (each its own copy), for ``process_batch``; ``advance`` gives
        # them as output ``Tuple``s, for ``process``
        advance_rows: Callable[[Tuple], list[dict]] = scope["advance_rows"]
        self.advance_rows = advance_rows
        self.advance: Callable[[Tuple], list[Tuple]] = lambda tup: stamped(advance_rows(tup), tup)


def _advance_lines(proc: Any, key_name: str | None, scope: dict[str, Any]) -> list[str]:
    """``advance_rows(tup)``: window, relation, the new row's group, then ``emit``'s part (see module doc)."""
    groups = proc.groups
    lines = [
        "def advance_rows(tup):",
        "    proc = PROC",
        "    window, relation, table = proc.slots[0].window, proc.relation, proc.table",
        "    rows, by_eid = relation.rows, relation.by_eid",
        "    eid = proc.next_eid",
        "    proc.next_eid = eid + 1",
    ]
    if proc.timed:
        lines += ["    left = window.add(Entry(eid, tup))", "    left += window.prune(tup.ts)",
                  "    for old in left:"]
    else:  # ``OrderedWindow.add`` of a count window inline: what exceeds the count leaves from the head
        lines += ["    entries = window.entries", "    entries.append(Entry(eid, tup))",
                  "    while len(entries) > window.size:", "        old = entries.popleft()"]
    lines += [
        "        gone = by_eid.pop(old.eid, None)",
        "        if type(gone) is Row:",
        "            if rows.pop(gone.pos, None) is not None and gone.gkey is not None:",
        "                remove(table, gone)",
        "        elif gone is not None:  # several rows (a snapshot of an older version)",
        "            for row in gone:",
        "                if rows.pop(row.pos, None) is not None and row.gkey is not None:",
        "                    remove(table, row)",
        "    d = tup.data",
        "    env = Env({ALIAS: tup})",
    ]
    if proc.where is not None:
        lines += [
            "    verdict = PREDICATE(d) if PREDICATE is not None else FALLBACK",
            "    if verdict is FALLBACK:",
            "        passes = truth(WHERE(env), 'WHERE')",
            "    else:",
            "        passes = verdict is not None",
            "    if not passes:",
            "        return emit(table)",
        ]
    lines += [
        "    pos = relation.next_pos",
        "    relation.next_pos = pos + 1",
        "    row = Row(pos, (eid,), env)",
        "    rows[pos] = row",
        "    by_eid[eid] = row  # a new entry: no row of it yet",
    ]
    if key_name is None:  # the global group (``Grouping.row_key`` of no GROUP BY expression)
        lines.append("    key = ()")
    else:
        lines += [
            f"    v = d.get({key_name!r}, MISSING) if type(d) is dict else MISSING",
            "    t = type(v)",
            "    if t is int:",
            "        key = (v,)",
            "    elif t is str:",
            "        key = (('s', v),)",
            "    else:",
            "        try:",
            "            key = ROW_KEY(env)",
            "        except Exception:",
            "            relation.pending = [row]  # as ``_group``: the key is computed again next step",
            "            raise",
        ]
    lines += [
        "    row.gkey = key",
        "    gmap = table.groups",
        "    group = gmap.get(key)",
        "    if group is None:",
        "        group = gmap[key] = Group(key, [f() if f is not None else None for f in FACTORIES])",
        "    group.members[pos] = row",
        "    states = group.states",
    ]
    for j in groups.count_all:
        lines.append(f"    states[{j}].n += 1")
    for j, field, fn in groups.stateful:
        if field is not None:
            lines += [f"    v = d.get({field[1]!r}, MISSING) if type(d) is dict else MISSING",
                      f"    if v is MISSING or not states[{j}].offer(pos, v):",
                      f"        group.irregular[{j}].add(pos)"]
        else:
            scope[f"ARG{j}"] = fn
            lines += ["    try:", f"        v = ARG{j}(env)", "    except Exception:",
                      f"        group.irregular[{j}].add(pos)", "    else:",
                      f"        if not states[{j}].offer(pos, v):",
                      f"            group.irregular[{j}].add(pos)"]
    lines += [
        "    table.touched[key] = None",
        "    return emit(table)",
        "",
    ]
    return lines


def _emit_lines(global_group: bool) -> list[str]:
    """``emit(table)``: the touched groups evaluated and committed (each commit applied to ``ORDER``, the
    output order kept from the previous step), then every group's output map (its own copy) in the order
    of its first row. The global group over no rows, and the step after it, take the general path's
    ``IncrementalGrouping.evaluate`` (its ``empty_item``)."""
    lines = ["def emit(table):"]
    if global_group:
        lines += [
            "    if not table.groups or table.empty_done:",
            "        ORDER.forget()",
            "        GROUPS.evaluate(table)",
            "        return [it.data.copy() if it.flat else COPY(it.data) for it in GROUPS.current(table)]",
        ]
    return lines + [
        "    order = ORDER",
        "    kept = order.table is table",
        "    touched = table.touched",
        "    if touched:",
        "        gmap = table.groups",
        "        if len(touched) == 1:",
        "            (key,) = touched",
        "            group = gmap[key]",
        "            it = item(group)",
        "            if kept:",
        "                order.replace(group.item, it)",
        "            group.item = it",
        "        else:  # evaluated in first-row order; committed once all are evaluated",
        "            changed = [gmap[k] for k in touched]",
        "            changed.sort(key=FIRST_POS)",
        "            items = [item(g) for g in changed]",
        "            for group, it in zip(changed, items):",
        "                if kept:",
        "                    order.replace(group.item, it)",
        "                group.item = it",
        "        touched.clear()",
        "    if table.gone:",
        "        if kept:",
        "            order.drop(table.gone)",
        "        table.gone = []",
        "    if order.table is not table:",
        "        order.rebuild(table)",
        "    return order.copies()",
        "",
    ]


def _remove_lines(groups: Any) -> list[str]:
    """``remove(table, row)``: ``IncrementalGrouping.remove_row`` with the aggregates unrolled."""
    lines = ["def remove(table, row):", "    key = row.gkey", "    group = table.groups[key]", "    pos = row.pos",
             "    members = group.members", "    del members[pos]", "    states = group.states"]
    for j in groups.count_all:
        lines.append(f"    states[{j}].n -= 1")
    for j, _, _ in groups.stateful:
        lines += [f"    odd = group.irregular[{j}]", "    if odd and pos in odd:", "        odd.discard(pos)",
                  "    else:", f"        states[{j}].remove(pos)"]
    lines += ["    if members:", "        table.touched[key] = None", "        return",
              "    del table.groups[key]", "    table.touched.pop(key, None)",
              "    if group.item is not None:", "        table.gone.append(group.item)", ""]
    return lines


def _item_lines(groups: Any, alias: str, scope: dict[str, Any]) -> list[str]:
    """``item(group)``: ``IncrementalGrouping._output`` / ``_item`` without HAVING, unrolled."""
    lines = ["def item(group):"]
    if not groups.all_stateful:
        lines.append("    return OUTPUT(group)")
        return lines
    n = len(groups.factories)
    if n:
        lines.append("    irregular = group.irregular")
        lines.append(f"    if {' or '.join(f'irregular[{j}]' for j in range(n))}:")
        lines.append("        return OUTPUT(group)")
        lines.append("    states = group.states")
    for j in range(n):  # the aggregate values in aggregate order (the first to raise raises)
        lines.append(f"    v{j} = states[{j}].n" if groups.factories[j] is CountAllState
                     else f"    v{j} = states[{j}].result()")
    values = f"[{', '.join(f'v{j}' for j in range(n))}]"
    lines += ["    for first in group.members.values():", "        break",
              "    tuples = first.env.tuples", "    fd = tuples[ALIAS].data"]
    cells, flat = [], []
    for i, (label, j, fn, field) in enumerate(groups.output):
        if j >= 0:
            cells.append((label, f"v{j}"))
            continue
        scope[f"ITEM{i}"] = fn
        if field is not None and field[0] == alias:
            lines += [f"    f{i} = fd.get({field[1]!r}, MISSING) if type(fd) is dict else MISSING",
                      f"    if f{i} is MISSING:", f"        f{i} = ITEM{i}(Env(tuples, {values}, None))"]
        else:
            lines.append(f"    f{i} = ITEM{i}(Env(tuples, {values}, None))")
        cells.append((label, f"f{i}"))
        flat.append(f"type(f{i}) in SCALARS")
    # a repeated label keeps its first place and its last value, as the general path's assignments
    lines.append(f"    data = {{{', '.join(f'{label!r}: {v}' for label, v in cells)}}}")
    lines += ["    it = NEW_ITEM(GroupItem)", "    it.pos = first.pos", "    it.data = data",
              "    it.ekey = None", "    it.nan = False",
              # aggregate states give scalars (numbers, bools, NULL); only the fields may hold containers
              f"    it.flat = {' and '.join(flat) if flat else 'True'}",
              "    return it"]
    return lines


def _first_pos(group: Any) -> int:
    return next(iter(group.members))


_ITEM_POS = attrgetter("pos")


class OutputOrder:
    """The output relation of the last step the generated step emitted, in output order: the groups'
    items' positions and maps (``table``: the ``GroupTable`` it describes, None when it describes none).

    RSTREAM emits every group at every step, in the order of their first rows, while a step changes one
    or two groups: instead of gathering and sorting every group's item each step, the step applies its
    commits (``replace``, ``drop``) to the order it emitted last. Whatever else changes the items — the
    general path's step, a restore (another table) — makes it describe no table (``forget``), and the
    next step gathers the order again (``rebuild``) as the general path does."""

    __slots__ = ("datas", "flat", "poss", "table")

    def __init__(self) -> None:
        self.table: Any = None
        self.poss: list[int] = []
        self.datas: list[dict[str, Any]] = []
        self.flat = True  # no map holds a container: a copy is a ``dict.copy``

    def forget(self) -> None:
        self.table = None
        self.poss, self.datas = [], []

    def rebuild(self, table: Any) -> None:
        current = [group.item for group in table.groups.values() if group.item is not None]
        current.sort(key=_ITEM_POS)
        self.poss = [it.pos for it in current]
        self.datas = [it.data for it in current]
        self.flat = all(it.flat for it in current)
        self.table = table

    def replace(self, old: Any, new: Any) -> None:
        """A group's item ``old`` (None: a new group) is ``new`` now (None: the group has no row out)."""
        poss, datas = self.poss, self.datas
        if old is not None:
            i = bisect_left(poss, old.pos)
            if i == len(poss) or datas[i] is not old.data:  # not what this order holds: gather it again
                self.forget()
                return
            if new is not None and new.pos == old.pos:
                datas[i] = new.data
                self.flat = self.flat and new.flat
                return
            del poss[i], datas[i]
        if new is not None:
            i = bisect_left(poss, new.pos)
            poss.insert(i, new.pos)
            datas.insert(i, new.data)
            self.flat = self.flat and new.flat

    def drop(self, items: list[Any]) -> None:
        """The items of groups that lost their last row leave the order."""
        for it in items:
            self.replace(it, None)

    def copies(self) -> list[dict[str, Any]]:
        """Each map of the order, its own copy."""
        if self.flat:
            return list(map(dict.copy, self.datas))
        return [_copy(data) for data in self.datas]
