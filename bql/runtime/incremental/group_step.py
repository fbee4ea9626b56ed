"""One step of a one-FROM-item ``SELECT ... GROUP BY`` in one function (the hand loop's shape).

``IncrementalSelectProcessor`` runs a grouping statement's step through ``_step`` → ``_advance`` →
``_advance_single`` → ``_group`` → ``IncrementalGrouping.evaluate`` → ``_output`` → ``_item`` →
``current``: seven calls of general code (any number of FROM items, pending rows carried over from a
failed step, ISTREAM/DSTREAM keys, the global group, HAVING) around a few dictionary updates. For the
common statement — one FROM item, one GROUP BY expression (a plain field) or none (the global group, key
``()``: a moving average), a select list whose items each set one top-level key, no LIMIT, no UDSF —
``GroupedStep.advance`` does the same work on the same data (window, ``Relation``, ``GroupTable``,
aggregate states, ``DeltaEmitter``) in one function, generated for the statement (``GroupedStep.source``:
the aggregates' updates and the output row unrolled):

1. the new entry joins its window; the entries that leave take their row out of the relation and out
   of its group (``IncrementalGrouping.remove_row``);
2. WHERE decides the new row (the generated predicate of ``stage_codegen`` when WHERE is in its subset,
   else the compiled closure); the row enters the relation, its group key is read inline (an ``int`` or
   ``str`` field; any other value through ``IncrementalGrouping.row_key``) and it joins its group
   (``IncrementalGrouping.add_row`` unrolled: ``count(*)`` counters inline, the other states offered the
   argument read inline, a MISSING or refused value marks the row irregular);
3. the touched groups are evaluated in the order of their first rows — from the aggregate states when no
   row is irregular (``IncrementalGrouping._item`` unrolled: HAVING first, a rejected group has no item;
   the plain-field items read from the group's first row, a MISSING one through its closure, which
   raises the reference's error), else through ``IncrementalGrouping._output`` — and only then
   committed;
4. RSTREAM emits every group's item in the order of its first row (``relation.emitted``), from the
   order the previous step emitted with this step's commits applied (``OutputOrder``), not gathered
   and sorted again; ISTREAM/DSTREAM hand the items that left and entered to the ``DeltaEmitter``
   (``evaluate``'s commit, then ``DeltaEmitter.apply``) and emit its rows. The global group over no rows
   (WHERE kept none of the window) and the step after it run ``IncrementalGrouping.evaluate`` itself,
   for its row over zero rows.

The steps raise where the general path raises, after the same changes (windows and relation change,
a row whose key raised stays pending, touched groups stay touched), so ``process`` reports the same
``Dropped`` and the next step (the general path, while something is pending) continues exactly. The
state is the general path's, so snapshots and the two paths mix freely.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...eval import Env
from ..kernel import _copy, truth
from ..processor import Tuple, stamped
from ..stage_codegen import FALLBACK, generate, leaf_scope
from ..windows import Entry
from .aggregates import CountAllState
from .emitter import row_key
from .field_access import MISSING, plain_field
from .group_batch import light_batch
from .groups import Group, GroupItem
from .output_order import OutputOrder
from .relation import _SCALARS, Row


def grouped_step(proc: Any) -> GroupedStep | None:
    """The fused grouping step of an ``IncrementalSelectProcessor``, or None when the statement is not
    of the shape the module doc describes."""
    groups = proc.groups
    if (groups is None or not proc.single or proc.limit is not None or proc.has_udsf or proc.fast
            or groups.output is None):
        return None
    grouping = groups.grouping
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

    __slots__ = ("absorb", "advance", "advance_rows", "item", "light", "order", "source")

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
        scope["PREDICATE"] = (generate(where_ast, [], alias, leaves=leaf_scope(proc)) if where_ast is not None
                              else None)
        scope["HAVING"] = groups.grouping.having
        scope["ROW_KEY_OF"] = row_key
        emit = _emit_lines(key_name is None) if proc.delta is None else _delta_emit_lines(key_name is None)
        lines = (_advance_lines(proc, key_name, scope) + emit + _remove_lines(groups)
                 + _item_lines(groups, alias, scope, proc.delta is not None)
                 + _advance_lines(proc, key_name, scope, "absorb", "None", where=False))
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, "<grouped step>", "exec"), scope)  # noqa: S102 - generated from the AST
        # the step answering the output maps (``relation.emitted``), for ``process_batch``; ``advance`` gives
        # them as output ``Tuple``s, for ``process``
        advance_rows: Callable[[Tuple], list[dict]] = scope["advance_rows"]
        self.advance_rows = advance_rows
        self.advance: Callable[[Tuple], list[Tuple]] = lambda tup: stamped(advance_rows(tup), tup)
        # the step without its groups' evaluation and output (``group_batch`` rebuilds a state with it),
        # and a group's item
        self.absorb: Callable[[Tuple], None] = scope["absorb"]
        self.item: Callable[[Group], Any] = scope["item"]
        # a long batch of the common statement in one loop over light state (``group_batch``)
        self.light = light_batch(proc, key_name, scope["PREDICATE"])


def _advance_lines(proc: Any, key_name: str | None, scope: dict[str, Any], name: str = "advance_rows",
                   tail: str = "emit(table)", where: bool = True) -> list[str]:
    """``advance_rows(tup)``: window, relation, the new row's group, then ``emit``'s part (see module doc);
    ``absorb(tup)`` (``tail`` None, not ``where``) the same for a tuple known to pass WHERE, without
    ``emit``: the touched groups stay touched."""
    groups = proc.groups
    lines = [
        f"def {name}(tup):",
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
    if proc.where is not None and where:
        lines += [
            "    verdict = PREDICATE(d) if PREDICATE is not None else FALLBACK",
            "    if verdict is FALLBACK:",
            "        passes = truth(WHERE(env), 'WHERE')",
            "    else:",
            "        passes = verdict is not None",
            "    if not passes:",
            f"        return {tail}",
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
        f"    return {tail}",
        "",
    ]
    return lines


def _emit_lines(global_group: bool) -> list[str]:
    """``emit(table)``: the touched groups evaluated and committed (each commit applied to ``ORDER``, the
    output order kept from the previous step), then every group's output map (``relation.emitted``) in
    the order of its first row. The global group over no rows, and the step after it, take the general
    path's ``IncrementalGrouping.evaluate`` (its ``empty_item``)."""
    lines = ["def emit(table):"]
    if global_group:
        lines += [
            "    if not table.groups or table.empty_done:",
            "        ORDER.forget()",
            "        GROUPS.evaluate(table)",
            "        return [it.data if it.flat else COPY(it.data) for it in GROUPS.current(table)]",
        ]
    return lines + [
        "    order = ORDER",
        "    kept = order.table is table",
        *_evaluate_lines(["if kept:", "    order.replace(group.item, it)", "group.item = it"]),
        "    if table.gone:",
        "        if kept:",
        "            order.drop(table.gone)",
        "        table.gone = []",
        "    if order.table is not table:",
        "        order.rebuild(table)",
        "    return order.emitted()",
        "",
    ]


def _delta_emit_lines(global_group: bool) -> list[str]:
    """``emit(table)`` of ISTREAM/DSTREAM: the touched groups evaluated and committed as
    ``IncrementalGrouping.evaluate`` does (the items that left and entered the output relation), then the
    emitter's rows of that change (``DeltaEmitter.apply``; ``relation.emitted``). The global group over no
    rows, and the step after it, take ``IncrementalGrouping.evaluate`` itself."""
    lines = ["def emit(table):"]
    if global_group:
        lines += [
            "    if not table.groups or table.empty_done:",
            "        removed, added = GROUPS.evaluate(table)",
            "        items = PROC.delta.apply(removed, added)",
            "        return [it.data if it.flat else COPY(it.data) for it in items]",
        ]
    return lines + [
        "    removed, added = table.gone, []",
        *_evaluate_lines(["if group.item is not None:", "    removed.append(group.item)", "group.item = it",
                          "if it is not None:", "    added.append(it)"]),
        "    table.gone = []",
        "    delta = PROC.delta  # (a restore replaces it)",
        "    items = delta.apply_one(removed, added[0]) if len(added) == 1 else delta.apply(removed, added)",
        "    return [it.data if it.flat else COPY(it.data) for it in items]",
        "",
    ]


def _evaluate_lines(commit: list[str]) -> list[str]:
    """The touched groups evaluated (``item``) in the order of their first rows, then each committed by
    the lines ``commit`` (which read ``group`` and its new item ``it``) — none if one evaluation raises."""
    return [
        "    touched = table.touched",
        "    if touched:",
        "        gmap = table.groups",
        "        if len(touched) == 1:",
        "            (key,) = touched",
        "            group = gmap[key]",
        "            it = item(group)",
        *("            " + line for line in commit),
        "        else:  # evaluated in first-row order; committed once all are evaluated",
        "            changed = [gmap[k] for k in touched]",
        "            changed.sort(key=FIRST_POS)",
        "            items = [item(g) for g in changed]",
        "            for group, it in zip(changed, items):",
        *("                " + line for line in commit),
        "        touched.clear()",
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


def _item_lines(groups: Any, alias: str, scope: dict[str, Any], keyed: bool) -> list[str]:
    """``item(group)``: ``IncrementalGrouping._output`` / ``_item`` unrolled (None: HAVING rejects the
    group; ``keyed``: the item carries its multiset key, for ISTREAM/DSTREAM)."""
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
    if groups.grouping.having is not None:  # before the select list, as ``_item``
        lines.append(f"    if HAVING(Env(tuples, {values}, None)) is not True:")
        lines.append("        return None")
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
              "    it.ekey, it.nan = ROW_KEY_OF(data)" if keyed else "    it.ekey, it.nan = None, False",
              # aggregate states give scalars (numbers, bools, NULL); only the fields may hold containers
              f"    it.flat = {' and '.join(flat) if flat else 'True'}",
              "    return it"]
    return lines


def _first_pos(group: Any) -> int:
    return next(iter(group.members))
