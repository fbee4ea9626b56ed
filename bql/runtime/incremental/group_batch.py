"""A batch of a one-FROM-item RSTREAM or ISTREAM GROUP BY in one generated loop over light state.

``GroupedStep.advance_rows`` keeps, per tuple, every structure the general path and snapshots read: an
``Entry``, a ``Row`` with its ``Env``, the relation's maps, each group's members and aggregate states and
an output ``GroupItem``. Over a long batch of the common statement — one plain GROUP BY field (an ``int``
or ``str`` value) or the global group, ``count(*)``, ``count``, ``sum``, ``avg`` of plain fields, a select
list of those aggregates and the key field, a HAVING over those aggregates alone (operators and
literals), RSTREAM, or ISTREAM when rows of two groups cannot be equal (the key field selected, or the
global group), a count window or a time window whose tuples arrive in timestamp order —
``LightBatch.run`` keeps instead what the hand-written loop keeps:

- the window as a deque of its rows' groups (None: WHERE was false), with their timestamps in a time
  window — its entries are the last arrivals, its rows the last rows, so their tuples, eids and
  positions follow from the batch and the next ones;
- each group as a list ``[positions, key, key value, (values, ints, int total, abs total, chain) per
  summed field, current row]`` — its rows leave from its head, as the window's do;
- RSTREAM: the output order as two lists (each shown group's first position, its output map), changed
  only where a group changed: the group whose first row left moves to its next row's place, a new
  group is last, a group HAVING rejects has no place; ISTREAM: each group's current row, compared with
  its new one when the group changes (``group_loops.changed_loop``).

Each aggregate's value is computed by the formula of its state class (``aggregates.py``): ``wrap_int64``
of the int total, the left-to-right float sum kept as a chain (extended as rows join, recomputed over
the group's values after one left) when one is a float,
``avg``'s exact int path up to 2**53 — the same value, the same type.

The loop checks each tuple before it changes anything (its data a map, the key an ``int``/``str``, each
summed value an ``int``/``float``, a counted one present, WHERE's generated predicate decided, the time
window still in order) and stops at the first tuple it cannot take; ``process_batch`` gives that tuple to
the general step and resumes. Light state lives for one run: ``load`` builds it from the general state
(O(window)), ``store`` rebuilds the general state from its window by ``GroupedStep.absorb`` (the general
step without its output), then evaluates each group's item — the structures the general path would hold,
so snapshots, the general step and the next batch continue exactly (ISTREAM's emitter is loaded only when
it holds exactly the groups' items, and stored as them: ``DeltaEmitter.holds_exactly`` / ``reset``).
A run is taken only over a batch at
least twice the window's length (and ``MIN_RUN`` tuples): loading and storing cost O(window).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from itertools import islice, takewhile
from operator import itemgetter
from typing import Any

from ...ast import Between, BinaryOp, FunctionCall, InList, IsNull, Literal, UnaryOp
from ...eval import Env
from ...eval.analysis import is_aggregate_call
from ...functions.builtin_aggregate import float_sum, wrap_int64
from ...values import INT_MAX, INT_MIN
from ..stage_codegen import FALLBACK
from ..windows import Entry
from .aggregates import _EXACT_FLOAT_INTS, AvgState, CountAllState, CountState, SumState
from .field_access import MISSING
from .group_loops import SLOTS, Shape, aggregate_fields, changed_loop, rstream_loop, value_lines
from .relation import Row

MIN_RUN = 32  # a run shorter than this many tuples (or than twice the window) keeps the general step
_LIGHT = (CountAllState, CountState, SumState, AvgState)


def light_batch(proc: Any, key_name: str | None, predicate: Any) -> LightBatch | None:
    """The light loop of ``proc``'s statement (``GroupedStep``'s shape, key field ``key_name`` or the
    global group; ``predicate``: WHERE's generated predicate), or None when the statement is outside the
    shape of the module doc."""
    groups = proc.groups
    alias = proc.aliases[0]
    window = proc.slots[0].window
    if not groups.all_stateful or not _plain_having(proc.select.having, proc.context.functions):
        return None
    if proc.delta is not None and (proc.delta.kind != "istream" or not (  # rows of two groups differ
            key_name is None or any(j < 0 for _, j, _, _ in groups.output))):
        return None
    if (window.span is None and window.size < 1) or (proc.where is not None and predicate is None):
        return None
    if any(f not in _LIGHT for f in groups.factories):
        return None
    needs: dict[str, bool] = {}  # summed or counted field -> whether it must be a number
    for j, field, _ in groups.stateful:
        if field is None or field[0] != alias:
            return None
        needs[field[1]] = needs.get(field[1], False) or groups.factories[j] in (SumState, AvgState)
    for _, j, _, field in groups.output:
        if j < 0 and (key_name is None or field != (alias, key_name)):
            return None
    return LightBatch(proc, key_name, needs, predicate)


class LightBatch:
    """``run(tuples)``: (answers, tuples taken) — see the module doc."""

    __slots__ = ("key_of", "loop", "proc", "source")

    def __init__(self, proc: Any, key_name: str | None, needs: dict[str, bool], predicate: Any):
        self.proc = proc
        window = proc.slots[0].window
        fields = list(needs)
        sums = [m for m, f in enumerate(fields) if needs[f]]
        at = {m: 3 + SLOTS * i for i, m in enumerate(sums)}  # a summed field's slots in a group
        index = {f: m for m, f in enumerate(fields)}
        values = [value_lines(factory, at.get(index[field[1]]) if field is not None else None)
                  for factory, field in aggregate_fields(proc.groups)]
        cells = [(label, j) for label, j, _, _ in proc.groups.output]
        shape = Shape(key_name, fields, needs, sums, at, values, cells)
        scope: dict[str, Any] = {"MISSING": MISSING, "WRAP": wrap_int64, "EXACT": _EXACT_FLOAT_INTS,
                                 "FSUM": float_sum,
                                 "deque": deque, "bisect_left": bisect_left,
                                 "PREDICATE": predicate, "FALLBACK": FALLBACK, "SPAN": window.span,
                                 "SIZE": window.size, "takewhile": takewhile,
                                 "INT_MIN": INT_MIN, "INT_MAX": INT_MAX,
                                 "HAVING": proc.groups.grouping.having,
                                 "Env": Env, "NO_TUPLES": {}, "FIRST_ITEM": itemgetter(0)}
        lines = ["def key_of(d):", *shape.checks("return None", "    "),
                 f"    return key, kv, ({''.join(f'(a{m}, t{m}), ' for m in sums)})", ""]
        where, timed = proc.where is not None, window.span is not None
        having = proc.select.having is not None
        if proc.delta is None and not having:
            lines += rstream_loop(shape, where, timed)
        else:
            floats = [j for j, (factory, _) in enumerate(aggregate_fields(proc.groups))
                      if factory in (SumState, AvgState)]
            lines += changed_loop(shape, where, timed, proc.delta is not None, having, floats)
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, "<group batch>", "exec"), scope)  # noqa: S102 - generated from the AST
        self.loop: Callable[..., Any] = scope["loop"]
        self.key_of: Callable[[Any], Any] = scope["key_of"]

    def takes(self, n: int) -> bool:
        """Whether a run over ``n`` tuples is worth its load and store."""
        return n >= MIN_RUN and n >= 2 * len(self.proc.slots[0].window.entries)

    def gap(self, k: int | None) -> int:
        """How many tuples a tuple the loop stopped at stays in the window."""
        return len(self.proc.slots[0].window.entries)

    def run(self, tuples: list[Any], start: int, k: int | None = None) -> tuple[list[Any], int] | None:
        """The answers (output maps, or None) of the first tuples of ``tuples[start:]`` the loop takes and
        how many it took; None when the general state is not one it can load; -1 tuples when the loop
        raised (the general state is untouched: the general step takes the batch's rest)."""
        state = self.load()
        if state is None:
            return None
        win, groups, poss, datas, arrivals, keys = state
        proc = self.proc
        try:
            answers, pos = self.loop(islice(tuples, start, None) if start else tuples, win, groups, poss,
                                     datas, proc.relation.next_pos)
        except Exception:  # a value its checks let through and it cannot take: nothing general changed yet
            return [], -1
        taken = len(answers)
        if taken:
            arrivals += tuples[max(start, start + taken - len(win)):start + taken]
            self.store(win, groups, pos, proc.next_eid + taken, arrivals[len(arrivals) - len(win):], keys)
            proc.emitted += sum(map(len, filter(None, answers)))
        return answers, taken

    def load(self) -> tuple[deque[Any], dict[Any, list[Any]], list[int], list[dict[str, Any]], list[Any],
                            dict[int, Any]] | None:
        """The light state of the processor's general state (window, groups, output order, the window's
        tuples, the general key of each group by its light group's id), or None when it holds what the
        loop does not (a row waiting for its key, a failed step's leftovers, an irregular value, an
        unordered window)."""
        proc = self.proc
        window, relation, table = proc.slots[0].window, proc.relation, proc.table
        if (proc.delegate or relation.pending or table.touched or table.gone or table.empty_done
                or (window.span is not None and window.descents)):
            return None
        by_eid = relation.by_eid
        win: deque[Any] = deque()
        # in the general table's order (a general key is the light key in a 1-tuple, the global one ())
        groups: dict[Any, list[Any]] = {gkey[0] if gkey else (): [] for gkey in table.groups}
        timed = window.span is not None
        light_rows = 0
        arrivals = []
        eid = proc.next_eid - len(window.entries)
        for entry in window.entries:
            row = by_eid.get(entry.eid)
            tup = entry.tuple
            if entry.eid != eid:  # the window's entries are the last arrivals (each arrival has an eid)
                return None
            eid += 1
            arrivals.append(tup)
            if row is None:
                win.append((tup.ts, None) if timed else None)
                continue
            found = self.key_of(tup.data) if type(row) is Row else None
            if found is None:
                return None
            key, kv, summed = found
            g = groups.get(key)
            if not g:
                g = groups[key] = [deque(), key, kv]
                for _ in summed:
                    g += [deque(), 0, 0, 0, 0.0]
                g.append(None)  # its current row (set below)
            g[0].append(row.pos)
            for i, (v, t) in enumerate(summed):
                _add(g, 3 + SLOTS * i, v, t)
            win.append((tup.ts, g) if timed else g)
            light_rows += 1
        if light_rows != len(relation.rows) or not all(groups.values()):
            return None
        # each group's general key: the key of the row that made it, which may have left (2.0, now 2s)
        # (held with its light group, so that no group made later takes its id), and its current row
        keys = {}
        items = []
        for gkey, group in table.groups.items():
            g = groups[gkey[0] if gkey else ()]
            keys[id(g)] = (g, gkey)
            if group.item is not None:
                g[-1] = group.item.data
                items.append(group.item)
        if proc.delta is not None and not proc.delta.holds_exactly(items):
            return None
        shown = [g for g in sorted(groups.values(), key=_first) if g[-1] is not None]
        return win, groups, [g[0][0] for g in shown], [g[-1] for g in shown], arrivals, keys

    def store(self, win: deque[Any], groups: dict[Any, list[Any]], pos: int, eid: int, tups: list[Any],
              keys: dict[int, Any]) -> None:
        """Rebuild the general state of ``win`` (see the module doc), its groups in the order of ``groups``
        and, those ``load`` found, under their general keys ``keys``; ``pos``, ``eid``: the next ones;
        ``tups``: the window's tuples. The window's entries are the last arrivals and its rows the last
        rows, so their eids and positions follow from the next ones."""
        proc = self.proc
        window, relation, table = proc.slots[0].window, proc.relation, proc.table
        window.entries.clear()
        relation.rows.clear()
        relation.by_eid.clear()
        table.groups.clear()
        grouped = proc.grouped
        absorb = grouped.absorb
        entries = window.entries
        timed = window.span is not None
        groups_of = [entry[1] for entry in win] if timed else win
        p = pos - sum(1 for g in groups_of if g is not None)
        for e, tup, g in zip(range(eid - len(win), eid), tups, groups_of):
            if g is None:  # WHERE was false or failed: an entry without a row (never evaluated again)
                entries.append(Entry(e, tup))
                continue
            proc.next_eid, relation.next_pos = e, p
            absorb(tup)
            p += 1
        proc.next_eid, relation.next_pos = eid, pos
        general = table.groups  # in the light groups' order, which is the general path's
        table.groups = {}
        for key, g in groups.items():
            found = keys.get(id(g))
            gkey = found[1] if found is not None else (key,) if key != () else ()
            group = table.groups[gkey] = general[gkey]
            group.key = gkey
        item = grouped.item
        for group in table.groups.values():
            group.item = item(group)
        if proc.delta is not None:
            proc.delta.reset([group.item for group in table.groups.values() if group.item is not None])
        table.touched.clear()
        grouped.order.forget()


def _add(g: list[Any], at: int, v: Any, t: type) -> None:
    g[at].append(v)
    g[at + 4] += v  # the chain (ints within int64: no overflow)
    if t is not float:
        g[at + 1] += 1
        g[at + 2] += v
        g[at + 3] += abs(v)


def _first(g: list[Any]) -> int:
    return g[0][0]


_HAVING_NODES = (BinaryOp, UnaryOp, Literal, IsNull, Between, InList)


def _plain_having(having: Any, registry: Any) -> bool:
    """Whether HAVING (None: none) reads only its aggregates' values (operators over aggregate calls and
    literals), so that the loop can evaluate it over a light group's values alone."""
    if having is None:
        return True
    stack = [having]
    while stack:
        node = stack.pop()
        if type(node) is FunctionCall:
            if not is_aggregate_call(node, registry):
                return False
            continue
        if not isinstance(node, _HAVING_NODES):
            return False
        stack.extend(node.children())
    return True
