"""A batch of a one-FROM-item RSTREAM GROUP BY in one generated loop over light state.

``GroupedStep.advance_rows`` keeps, per tuple, every structure the general path and snapshots read: an
``Entry``, a ``Row`` with its ``Env``, the relation's maps, each group's members and aggregate states and
an output ``GroupItem``. Over a long batch of the common statement — one plain GROUP BY field (an ``int``
or ``str`` value) or the global group, ``count(*)``, ``count``, ``sum``, ``avg`` of plain fields, a select
list of those aggregates and the key field, no HAVING, a count window or a time window whose tuples arrive
in timestamp order — ``LightBatch.run`` keeps instead what the hand-written loop keeps:

- the window as a deque of its rows' groups (None: WHERE was false), with their timestamps in a time
  window — its entries are the last arrivals, its rows the last rows, so their tuples, eids and
  positions follow from the batch and the next ones;
- each group as a list ``[positions, key, key value, (values, ints, int total, abs total) per summed
  field]`` — its rows leave from its head, as the window's do;
- the output order as two lists (each group's first position, its output map), changed only where a
  group changed: the group whose first row left moves to its next row's place, a new group is last.

Each aggregate's value is computed by the formula of its state class (``aggregates.py``): ``wrap_int64``
of the int total, the left-to-right float sum recomputed over the group's values when one is a float,
``avg``'s exact int path up to 2**53 — the same value, the same type.

The loop checks each tuple before it changes anything (its data a map, the key an ``int``/``str``, each
summed value an ``int``/``float``, a counted one present, WHERE's generated predicate decided, the time
window still in order) and stops at the first tuple it cannot take; ``process_batch`` gives that tuple to
the general step and resumes. Light state lives for one run: ``load`` builds it from the general state
(O(window)), ``store`` rebuilds the general state from its window by ``GroupedStep.absorb`` (the general
step without its output), then evaluates each group's item — the structures the general path would hold,
so snapshots, the general step and the next batch continue exactly. A run is taken only over a batch at
least twice the window's length (and ``MIN_RUN`` tuples): loading and storing cost O(window).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from itertools import islice, takewhile
from typing import Any

from ...functions.builtin_aggregate import wrap_int64
from ...values import INT_MAX, INT_MIN
from ..stage_codegen import FALLBACK
from ..windows import Entry
from .aggregates import _EXACT_FLOAT_INTS, AvgState, CountAllState, CountState, SumState
from .field_access import MISSING
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
    if proc.delta is not None or groups.grouping.having is not None or not groups.all_stateful:
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

    __slots__ = ("data_of", "key_of", "loop", "proc", "source")

    def __init__(self, proc: Any, key_name: str | None, needs: dict[str, bool], predicate: Any):
        self.proc = proc
        window = proc.slots[0].window
        fields = list(needs)
        sums = [m for m, f in enumerate(fields) if needs[f]]
        at = {m: 3 + 4 * i for i, m in enumerate(sums)}  # values, ints, int total, abs total in a group
        index = {f: m for m, f in enumerate(fields)}
        values = [_value_expr(factory, at.get(index[field[1]]) if field is not None else None)
                  for factory, field in _aggregate_fields(proc.groups)]
        cells = [(label, j) for label, j, _, _ in proc.groups.output]
        shape = _Shape(key_name, fields, needs, sums, at, values, cells)
        scope: dict[str, Any] = {"MISSING": MISSING, "WRAP": wrap_int64, "EXACT": _EXACT_FLOAT_INTS,
                                 "deque": deque, "bisect_left": bisect_left, "copy": dict.copy,
                                 "PREDICATE": predicate, "FALLBACK": FALLBACK, "SPAN": window.span,
                                 "SIZE": window.size, "takewhile": takewhile,
                                 "INT_MIN": INT_MIN, "INT_MAX": INT_MAX}
        lines = ["def data_of(g):", *shape.data("g", "    "), "    return data", "",
                 "def key_of(d):", *shape.checks("return None", "    "),
                 f"    return key, kv, ({''.join(f'(a{m}, t{m}), ' for m in sums)})", ""]
        lines += _loop_lines(shape, proc.where is not None, window.span is not None)
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, "<group batch>", "exec"), scope)  # noqa: S102 - generated from the AST
        self.loop: Callable[..., Any] = scope["loop"]
        self.data_of: Callable[[list[Any]], dict[str, Any]] = scope["data_of"]
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
                    g += [deque(), 0, 0, 0]
            g[0].append(row.pos)
            for i, (v, t) in enumerate(summed):
                _add(g, 3 + 4 * i, v, t)
            win.append((tup.ts, g) if timed else g)
            light_rows += 1
        if light_rows != len(relation.rows) or not all(groups.values()):
            return None
        order = sorted(groups.values(), key=_first)
        # each group's general key: the key of the row that made it, which may have left (2.0, now 2s)
        # (held with its light group, so that no group made later takes its id)
        keys = {}
        for gkey in table.groups:
            g = groups[gkey[0] if gkey else ()]
            keys[id(g)] = (g, gkey)
        return win, groups, [g[0][0] for g in order], [self.data_of(g) for g in order], arrivals, keys

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
        table.touched.clear()
        grouped.order.forget()


class _Shape:
    """The parts of one statement's generated loop (see ``LightBatch``)."""

    def __init__(self, key_name: str | None, fields: list[str], needs: dict[str, bool], sums: list[int],
                 at: dict[int, int], values: list[str], cells: list[tuple[str, int]]):
        self.key_name, self.fields, self.needs, self.sums, self.at = key_name, fields, needs, sums, at
        self.values, self.cells = values, cells

    def checks(self, fail: str, indent: str) -> list[str]:
        """Lines reading ``d``'s key (``key``, ``kv``) and fields (``a<m>``, ``t<m>``), ``fail`` when one
        is outside what the loop takes."""
        lines = ["if type(d) is not dict:", f"    {fail}"]
        if self.key_name is None:
            lines.append("key = kv = ()")
        else:
            lines += [f"kv = d.get({self.key_name!r}, MISSING)", "t = type(kv)", "if t is int:",
                      "    key = kv", "elif t is str:", "    key = ('s', kv)", "else:", f"    {fail}"]
        for m, f in enumerate(self.fields):
            lines.append(f"a{m} = d.get({f!r}, MISSING)")
            if self.needs[f]:
                # ints within int64 (a float of a larger one may overflow where the general step drops)
                lines += [f"t{m} = type(a{m})",
                          f"if t{m} is not float and (t{m} is not int or not INT_MIN <= a{m} <= INT_MAX):",
                          f"    {fail}"]
            else:
                lines += [f"if a{m} is MISSING or a{m} is None:", f"    {fail}"]
        return [indent + line for line in lines]

    def data(self, g: str, indent: str) -> list[str]:
        """Lines computing ``data``, the output map of light group ``g``."""
        lines = [f"v{j} = {expr.replace('g[', g + '[')}" for j, expr in enumerate(self.values)]
        cells = ", ".join(f"{label!r}: {f'v{j}' if j >= 0 else g + '[2]'}" for label, j in self.cells)
        lines.append(f"data = {{{cells}}}")
        return [indent + line for line in lines]

    def pop(self, g: str, indent: str) -> list[str]:
        """Lines taking light group ``g``'s first row out of it."""
        lines = [f"{g}[0].popleft()"]
        for m in self.sums:
            a = self.at[m]
            lines += [f"v = {g}[{a}].popleft()", "if type(v) is not float:", f"    {g}[{a + 1}] -= 1",
                      f"    {g}[{a + 2}] -= v", f"    {g}[{a + 3}] -= abs(v)"]
        return [indent + line for line in lines]

    def push(self, indent: str) -> list[str]:
        """Lines adding the new row (position ``pos``, values ``a<m>``) to light group ``g``."""
        lines = ["g[0].append(pos)"]
        for m in self.sums:
            a = self.at[m]
            lines += [f"g[{a}].append(a{m})", f"if t{m} is not float:", f"    g[{a + 1}] += 1",
                      f"    g[{a + 2}] += a{m}", f"    g[{a + 3}] += abs(a{m})"]
        return [indent + line for line in lines]

    def new_group(self) -> str:
        return "[deque(), key, kv" + ", deque(), 0, 0, 0" * len(self.sums) + "]"


def _loop_lines(shape: _Shape, where: bool, timed: bool) -> list[str]:
    """``loop(tuples, win, groups, poss, datas, pos)`` -> (answers, the next pos): one answer per tuple
    taken (an arrival's eid follows from the window's)."""
    lines = ["def loop(tuples, win, groups, poss, datas, pos):", "    out = []", "    append = out.append",
             "    for tup in tuples:", "        d = tup.data",
             *shape.checks("break", "        ")]
    if where:
        lines += ["        try:", "            verdict = PREDICATE(d)", "        except Exception:",
                  "            break", "        if verdict is FALLBACK:", "            break",
                  "        passes = verdict is not None"]
    if timed:
        lines += ["        ts = tup.ts", "        if win and ts < win[-1][0]:", "            break",
                  "        try:", "            limit = ts - SPAN", "        except Exception:",
                  "            break"]
    if where and shape.key_name is None:  # the global group keeps a row: over none it is the general path's
        leaving = ("sum(1 for e in takewhile(lambda e: e[0] < limit, win) if e[1] is not None)" if timed
                   else "(1 if len(win) >= SIZE and win[0] is not None else 0)")
        lines += ["        if not passes:", "            g = groups.get(())",
                  f"            if g is None or len(g[0]) <= {leaving}:", "                break"]
    lines += ["        moved = None"]
    if timed:
        lines += ["        while win and win[0][0] < limit:", "            og = win.popleft()[1]",
                  "            if og is not None:", *shape.pop("og", "                "),
                  "                if moved is None:", "                    moved = {}",
                  "                if og[1] not in moved:", "                    del poss[0], datas[0]",
                  "                    moved[og[1]] = og", "                if not og[0]:",
                  "                    del groups[og[1]], moved[og[1]]"]
    else:
        lines += ["        if len(win) >= SIZE:", "            og = win.popleft()",
                  "            if og is not None:",
                  *shape.pop("og", "                "), "                del poss[0], datas[0]",
                  "                if og[0]:", "                    moved = og", "                else:",
                  "                    del groups[og[1]]"]
    if timed:
        add = ["g = groups.get(key)", "if g is None:", f"    g = groups[key] = {shape.new_group()}",
               "    fresh = True", "else:", "    fresh = False", *shape.push(""),
               "win.append((ts, g))", "pos += 1"]
        again = "moved is not None and moved.get(key) is g"
        # the moved groups re-placed (a moved g among them), then g
        place = ["if moved:", "    for og in moved.values():", *shape.data("og", "        "),
                 "        fp = og[0][0]", "        i = bisect_left(poss, fp)", "        poss.insert(i, fp)",
                 "        datas.insert(i, data)",
                 "if fresh:", *shape.data("g", "    "), "    poss.append(g[0][0])", "    datas.append(data)",
                 f"elif not ({again}):", *shape.data("g", "    "),
                 "    datas[bisect_left(poss, g[0][0])] = data"]
        if where:  # g when WHERE kept its row
            place = [line.replace("if fresh:", "if g is not None and fresh:")
                     .replace(f"elif not ({again}):", f"elif g is not None and not ({again}):")
                     for line in place]
    else:  # g first (a new group is last, a moved g takes its next row's place), then a moved other group
        add = ["g = groups.get(key)", "if g is None:", f"    g = groups[key] = {shape.new_group()}",
               *shape.push("    "), *shape.data("g", "    "), "    poss.append(pos)",
               "    datas.append(data)",
               "else:", *shape.push("    "), *shape.data("g", "    "), "    if g is moved:",
               "        i = bisect_left(poss, g[0][0])", "        poss.insert(i, g[0][0])",
               "        datas.insert(i, data)", "    else:",
               "        datas[bisect_left(poss, g[0][0])] = data",
               "win.append(g)", "pos += 1"]
        place = ["if moved is not None and moved is not g:", *shape.data("moved", "    "),
                 "    fp = moved[0][0]", "    i = bisect_left(poss, fp)", "    poss.insert(i, fp)",
                 "    datas.insert(i, data)"]
    if where:
        lines += ["        if passes:", *("            " + line for line in add), "        else:",
                  f"            win.append({'(ts, None)' if timed else 'None'})", "            g = None"]
    else:
        lines += ["        " + line for line in add]
    lines += ["        " + line for line in place]
    lines += ["        append(list(map(copy, datas)) if datas else None)", "    return out, pos", ""]
    return lines


def _add(g: list[Any], at: int, v: Any, t: type) -> None:
    g[at].append(v)
    if t is not float:
        g[at + 1] += 1
        g[at + 2] += v
        g[at + 3] += abs(v)


def _first(g: list[Any]) -> int:
    return g[0][0]


def _aggregate_fields(groups: Any) -> list[tuple[Any, Any]]:
    """(state class, plain field or None) of each aggregate, in aggregate order."""
    fields: dict[int, Any] = {j: field for j, field, _ in groups.stateful}
    return [(factory, fields.get(j)) for j, factory in enumerate(groups.factories)]


def _value_expr(factory: Any, at: int | None) -> str:
    """The expression of an aggregate's value over light group ``g`` (its state class's ``result``)."""
    if factory is CountAllState or factory is CountState:
        return "len(g[0])"
    assert at is not None
    vals, ints, total, absolute = (f"g[{at + i}]" for i in range(4))
    if factory is SumState:  # a sum of floats is a float
        return (f"(sum({vals}) if not {ints} else WRAP({total}) if {ints} == len({vals}) "
                f"else sum(map(float, {vals})))")
    return (f"(sum({vals}) / len({vals}) if not {ints} else float({total}) / len({vals}) "
            f"if {ints} == len({vals}) and {absolute} <= EXACT else sum(map(float, {vals})) / len({vals}))")
