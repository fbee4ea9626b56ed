"""A batch of an ISTREAM hash join of two count windows in one generated loop over light state.

``PairedStep.advance_rows_plain`` keeps, per tuple, every structure the general path and snapshots read:
an ``Entry`` and its ``EntryFacts`` in the join index, a ``Row`` per new combination with its data and
multiset key in the relation, and the ``DeltaEmitter``'s classes of the previous relation. For the
common statement — ``SELECT ISTREAM a:x AS .., b:y AS .. FROM s1 [RANGE n TUPLES] AS a, s2 [RANGE m
TUPLES] AS b WHERE a:k = b:k`` (``PairedStep.plain``; every select item a plain field of one side under
its own label) — over a long run of one input's tuples, ``LightPairs.run`` keeps what the hand-written
loop keeps:

- per side its window as a deque of records ``(tuple, join key, projected values, their multiset
  parts, eid)`` and its index: a join key's records in arrival order (they leave from the head);
- the current relation as a count per row key (the pair of the two records' multiset parts: equal keys
  are BQL-equal rows, as ``row_key``'s frozensets are).

A step: the new record joins its window and index; the oldest record of its side leaves when the window
overflows and its rows — it paired with every record of its key on the other side — leave the counts;
the new record's rows, one per record of its key on the other side in arrival order, enter. ISTREAM
emits, per row key, the last ``added - removed`` of the rows the step added (the newest rows of a key
are the ones it added), in the order they were added: ``DeltaEmitter``'s rule.

The loop checks a tuple before it changes anything (its data a map, the join key an ``int`` within
2**53 or a ``str``, each projected value an ``int``, ``str`` or non-NaN ``float``) and stops at the first
tuple it cannot take; ``process_batch`` gives it to the general step and resumes. ``load`` builds the
light state from the general one (refusing pending rows, irregular entries, unemitted changes), and
``store`` rebuilds the general state by replaying the two windows' entries in arrival order through the
general step into a fresh index, relation and emitter: the same rows in the same order and the same
previous relation, numbered from the first position on (positions are only ever compared). A run is
taken over a batch at least twice the two windows' length (and ``MIN_RUN`` tuples).
"""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from heapq import merge
from itertools import islice
from typing import Any

from .emitter import DeltaEmitter
from .field_access import MISSING, plain_field
from .group_batch import MIN_RUN
from .join_keys import _EXACT
from .relation import Relation


def light_pairs(proc: Any, paired: Any) -> LightPairs | None:
    """The light loop of ``proc``'s join (see the module doc), or None outside its shape."""
    if not paired.plain or proc.delta is None or proc.delta.kind != "istream":
        return None
    fields: list[list[tuple[str, str]]] = [[], []]  # per side: (label, field) in label order
    labels = []
    for (steps, _), projection in zip(proc.select_list.explicit, proc.select.projections):
        field = plain_field(projection.expr, proc.aliases)
        if field is None:
            return None
        label = steps[0].key  # ``paired_step``: each item sets one top-level key
        labels.append(label)
        fields[proc.aliases.index(field[0])].append((label, field[1]))
    if len(set(labels)) != len(labels):
        return None
    return LightPairs(proc, paired, labels, fields)


class LightPairs:
    """``run(tuples, start, k)``: (answers, tuples taken) for a run of FROM item ``k``'s input, or of both
    inputs (``k`` None)."""

    __slots__ = ("loop", "mixes", "paired", "proc", "record", "source")

    def __init__(self, proc: Any, paired: Any, labels: list[str], fields: list[list[tuple[str, str]]]):
        self.proc = proc
        self.paired = paired
        keys = paired.key_names
        where = {label: (side, i) for side in (0, 1) for i, (label, _) in enumerate(fields[side])}
        lines = []
        for k in (0, 1):
            lines += [f"def record{k}(d):", *_check_lines(keys[k], fields[k], "return None", "    "),
                      "    return key, vals, parts", ""]
        bodies = [_body(k, keys[k], fields[k], labels, where) for k in (0, 1)]
        # tuples of either input (``SIDE``: input -> FROM item; a run of one input is such a run too), each
        # side's window, index and size by number
        lines += ["def loop(tuples, w0, w1, i0, i1, counts, s0, s1, eid):", "    out = []",
                  "    append = out.append", "    for tup in tuples:", "        k = SIDE.get(tup.input)",
                  "        if k is None:", "            append(None)", "            continue",
                  "        if k == 0:", *_side(bodies[0], ("w0", "w1", "i0", "i1", "s0")),
                  "        else:", *_side(bodies[1], ("w1", "w0", "i1", "i0", "s1")),
                  "    return out, eid", ""]
        self.source = "\n".join(lines) + "\n"
        readers = Counter(name for slot in proc.slots for name in slot.sources)
        side = {name: slot.index for slot in proc.slots for name in slot.sources if readers[name] == 1}
        self.mixes = all(n == 1 for n in readers.values())  # each input read by one FROM item
        scope: dict[str, Any] = {"MISSING": MISSING, "EXACT": _EXACT, "deque": deque, "EMITTED": _emitted,
                                 "SIDE": side}
        exec(compile(self.source, "<pair batch>", "exec"), scope)  # noqa: S102 - generated from the AST
        self.record: list[Callable[[Any], Any]] = [scope["record0"], scope["record1"]]
        self.loop: Callable[..., Any] = scope["loop"]

    def takes(self, n: int) -> bool:
        """Whether a run over ``n`` tuples is worth its load and store."""
        slots = self.proc.slots
        return n >= MIN_RUN and n >= 2 * (len(slots[0].window.entries) + len(slots[1].window.entries))

    def gap(self, k: int | None) -> int:
        """How many tuples (of FROM item ``k``; None: of both inputs) a tuple the loop stopped at stays in
        its window."""
        slots = self.proc.slots
        if k is None:
            return len(slots[0].window.entries) + len(slots[1].window.entries)
        return len(slots[k].window.entries)

    def run(self, tuples: list[Any], start: int, k: int | None) -> tuple[list[Any], int] | None:
        """The answers (output maps, or None) of the first tuples of ``tuples[start:]`` (FROM item ``k``'s;
        None: of both inputs) the loop takes and how many it took; None when the general state is not one
        it can load; -1 tuples when the loop raised (the general state is untouched)."""
        state = self.load()
        if state is None:
            return None
        wins, indexes, counts = state
        proc = self.proc
        rest = islice(tuples, start, None) if start else tuples
        slots = proc.slots
        try:
            answers, eid = self.loop(rest, wins[0], wins[1], indexes[0], indexes[1], counts,
                                     slots[0].window.size, slots[1].window.size, proc.next_eid)
        except Exception:  # a value its checks let through and it cannot take: nothing general changed yet
            return [], -1
        if answers:
            self.store(wins, eid)
            proc.emitted += sum(map(len, filter(None, answers)))
        return answers, len(answers)

    def load(self) -> tuple[list[deque[Any]], list[dict[Any, deque[Any]]], dict[Any, int]] | None:
        """The light state of the processor's general state, or None (see the module doc)."""
        proc = self.proc
        index, relation = proc.index, proc.relation
        if (proc.delegate or relation.pending or relation.added or relation.removed or any(index.irregular)
                or proc.delta.nans.pos):
            return None
        wins: list[deque[Any]] = [deque(), deque()]
        indexes: list[dict[Any, deque[Any]]] = [{}, {}]
        by_eid: dict[int, Any] = {}
        for k in (0, 1):
            record = self.record[k]
            win, side = wins[k], indexes[k]
            for entry in proc.slots[k].window.entries:
                found = record(entry.tuple.data)
                if found is None:
                    return None
                key, vals, parts = found
                rec = (entry.tuple, key, vals, parts, entry.eid)
                win.append(rec)
                by_eid[entry.eid] = rec
                same = side.get(key)
                if same is None:
                    side[key] = deque((rec,))
                else:
                    same.append(rec)
        counts: dict[Any, int] = {}
        for row in relation.rows.values():
            if row.data is None or row.nan or len(row.ids) != 2:
                return None
            a, b = by_eid.get(row.ids[0]), by_eid.get(row.ids[1])
            if a is None or b is None:
                return None
            rk = (a[3], b[3])
            counts[rk] = counts.get(rk, 0) + 1
        return wins, indexes, counts

    def store(self, wins: list[deque[Any]], eid: int) -> None:
        """Rebuild the general state of the two windows by replaying their entries (see the module doc);
        ``eid``: the next one."""
        proc = self.proc
        for slot in proc.slots:
            slot.window.entries.clear()
        proc.index = proc.join.new_index()
        proc.relation = Relation(track=proc.relation.track)
        proc.delta = DeltaEmitter(proc.delta.kind)
        advance = self.paired.advance_rows
        sides = [[(rec[4], k, rec[0]) for rec in wins[k]] for k in (0, 1)]
        for e, k, tup in merge(*sides):
            proc.next_eid = e
            advance(tup, k)
        proc.next_eid = eid


def _side(body: list[str], names: tuple[str, ...]) -> list[str]:
    """A side's step inside the loop (``_body`` with its window, index and size names)."""
    return ["            " + line.format(*names) for line in body]


def _body(k: int, key_name: str, fields: list[tuple[str, str]], labels: list[str],
          where: dict[str, tuple[int, int]]) -> list[str]:
    """One step of FROM item ``k`` in the loop over ``tup`` (see the module doc), its window, the other
    window, their indexes and ``k``'s size left as the format fields 0-4; ``break`` where the loop stops."""
    mine = ["vals" if where[label][0] == k else "o[2]" for label in labels]
    cells = ", ".join(f"{label!r}: {src}[{where[label][1]}]" for label, src in zip(labels, mine))
    rk = "(parts, o[3])" if k == 0 else "(o[3], parts)"
    ork = "(oparts, o[3])" if k == 0 else "(o[3], oparts)"
    checks = [line.replace("{", "{{").replace("}", "}}")
              for line in _check_lines(key_name, fields, "break", "")]
    cells = cells.replace("{", "{{").replace("}", "}}")
    return [
        "d = tup.data", *checks,
        "rec = (tup, key, vals, parts, eid)", "eid += 1", "{0}.append(rec)", "same = {2}.get(key)",
        "if same is None:", "    {2}[key] = deque((rec,))", "else:", "    same.append(rec)", "gone = None",
        "if len({0}) > {4}:", "    old = {0}.popleft()", "    okey = old[1]", "    same = {2}[okey]",
        "    same.popleft()", "    if not same:", "        del {2}[okey]", "    others = {3}.get(okey)",
        "    if others:", "        oparts = old[3]", "        gone = {{}}", "        for o in others:",
        f"            rk = {ork}", "            n = counts[rk] - 1", "            if n:",
        "                counts[rk] = n", "            else:", "                del counts[rk]",
        "            gone[rk] = gone.get(rk, 0) + 1",
        "others = {3}.get(key)", "if not others:", "    append(None)", "    continue", "rows = []",
        "for o in others:", f"    rk = {rk}", "    counts[rk] = counts.get(rk, 0) + 1",
        f"    rows.append((rk, {{{{{cells}}}}}))",
        "if gone is None or not any(rk in gone for rk, _ in rows):", "    append([data for _, data in rows])",
        "else:", "    append(EMITTED(rows, gone) or None)",
    ]


def _emitted(rows: list[tuple[Any, dict[str, Any]]], gone: dict[Any, int]) -> list[dict[str, Any]]:
    """ISTREAM's rows of a step that added ``rows`` and removed rows of keys ``gone`` (key: how many):
    of each key's added rows the last ``added - removed`` (those after its first ``removed``), in the order
    they were added."""
    seen: dict[Any, int] = {}
    out = []
    for rk, data in rows:
        i = seen.get(rk, 0)
        seen[rk] = i + 1
        if i >= gone.get(rk, 0):
            out.append(data)
    return out


def _check_lines(key_name: str, fields: list[tuple[str, str]], fail: str, indent: str) -> list[str]:
    """Lines reading ``d``'s join key (``key``) and projected fields (``vals``, their multiset ``parts``),
    ``fail`` when one is outside what the loop takes."""
    lines = ["if type(d) is not dict:", f"    {fail}", f"kv = d.get({key_name!r}, MISSING)", "t = type(kv)",
             "if t is str:", "    key = ('s', kv)", "elif t is int and -EXACT <= kv <= EXACT:",
             "    key = float(kv)", "else:", f"    {fail}"]
    for i, (_, name) in enumerate(fields):
        lines += [f"v{i} = d.get({name!r}, MISSING)", f"t = type(v{i})", "if t is int:", f"    p{i} = v{i}",
                  "elif t is str:", f"    p{i} = ('s', v{i})", f"elif t is float and v{i} == v{i}:",
                  f"    p{i} = v{i}", "else:", f"    {fail}"]
    n = len(fields)
    lines.append(f"vals = ({''.join(f'v{i}, ' for i in range(n))})")
    lines.append(f"parts = ({''.join(f'p{i}, ' for i in range(n))})")
    return [indent + line for line in lines]
