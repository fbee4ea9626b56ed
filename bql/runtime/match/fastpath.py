"""Shortcuts for the common shapes of a MATCH_RECOGNIZE query, each exactly the general code's result.

- ``field_key``: a PARTITION BY / ORDER BY expression that is one top-level field of the input row
  (the processor then reads it with ``dict.get`` and falls back to the compiled expression whenever
  the field is absent or of another type than its shortcut handles);
- ``OneRowMeasures``: ONE ROW PER MATCH whose MEASURES are all ``X.f`` / ``f``, ``FIRST``/``LAST``
  of one, ``CLASSIFIER()`` or ``MATCH_NUMBER()``: each is a row found from the match's labels, read
  directly, instead of a ``View`` evaluation (the same rows: the final view of the match, ``X.f`` and
  ``LAST(X.f)`` the last row mapped to a member of ``X``, ``FIRST(X.f, n)`` the ``n``-th from the
  first, NULL where there is no such row or field).
"""
from __future__ import annotations

from typing import Any

from ...ast import Classifier, FieldRef, KeyStep, MatchNumber, Navigation, PatternFieldRef
from ...errors import BQLError
from ..processor import StepResult, Tuple
from .views import Blocked

_CLASSIFIER, _MNO, _FIELD = 0, 1, 2


def field_key(expr: Any, alias: str) -> str | None:
    """The key when ``expr`` is a single top-level field of the input row (``f`` or ``alias:f``)."""
    if (type(expr) is FieldRef and expr.stream in (None, alias) and len(expr.path) == 1
            and type(expr.path[0]) is KeyStep):
        return expr.path[0].key
    return None


def _measure(expr: Any, sets: dict) -> tuple | None:
    if type(expr) is Classifier:
        return (_CLASSIFIER, None if expr.var is None else sets.get(expr.var, frozenset((expr.var,))))
    if type(expr) is MatchNumber:
        return (_MNO,)
    nth, first = 0, False
    if type(expr) is Navigation and expr.kind.lower() in ("first", "last"):
        nth = expr.offset or 0
        first = expr.kind.lower() == "first"
        expr = expr.operand
    if type(expr) is PatternFieldRef and len(expr.path) == 1 and type(expr.path[0]) is KeyStep and nth >= 0:
        return (_FIELD, None if expr.var is None else sets.get(expr.var, frozenset((expr.var,))),
                expr.path[0].key, nth, first)
    return None


def _nth(labels: list, start: int, hi: int, members: Any, n: int, first: bool) -> int | None:
    """``View.nth`` of the final view: the ``n``-th row of the match mapped to ``members``."""
    if hi < start:
        return None
    if members is None:
        idx = start + n if first else hi - n
        return idx if start <= idx <= hi else None
    rng = range(0, hi - start + 1) if first else range(hi - start, -1, -1)
    for i in rng:
        if labels[i][0] in members:
            if n == 0:
                return start + i
            n -= 1
    return None


class OneRowMeasures:
    """ONE ROW PER MATCH rendering for simple MEASURES (``render`` as ``OutputBuilder.render``).

    What a match's labels decide — per measure the offset of the row it reads, or the classifier
    value — is found once per (shared) labels tuple and cached (``_plan``); the match's output row
    is then built by the functions generated for the clause (``_source``): one dict display with the
    PARTITION BY values first and each measure read at its offset (a dict display keeps a repeated
    key's first place and its last value, as the assignments it replaces)."""

    def __init__(self, measures: list[tuple[str, tuple]], partition_names: list[str]):
        self.measures = measures
        self.partition_names = partition_names
        # id(labels tuple) -> (the tuple, per measure: the offset of the row read (None: no row), or
        # the classifier value): what a match's labels decide, for labels the replay shares
        self.plans: dict[int, tuple] = {}
        ns: dict[str, Any] = {"plans": self.plans, "make_plan": self._plan, "render": self.render,
                              "Tuple": Tuple, "StepResult": StepResult, "BQLError": BQLError,
                              "Blocked": Blocked}
        exec(compile(_source(measures, partition_names), "<MATCH_RECOGNIZE row>", "exec"), ns)  # noqa: S102
        # planned_row(stored, base, start, end, labels, mno, pv) -> (row, ts): a match whose labels are a
        # (shared) tuple, ``stored[i]`` the row at position ``base + i``, ``pv`` its PARTITION BY values
        self.planned_row = ns["planned_row"]
        # lane_deliver(rows, pv, pending, rendered) -> deliver(events, tup): a compiled lane's ``deliver``
        # (``lane.compile_lane``) for SELECT RSTREAM * of a partition with ``rows``, PARTITION BY values
        # ``pv`` and ``pending`` events: the step result of the output tuples of ``events`` (stamped
        # ``tup.seq``; each row rendered is a new dict: it is emitted as it is), or ``rendered(events,
        # tup)`` (the processor's general rendering) when events wait, an event is not a match or a
        # rendering fails (nothing was changed)
        self.lane_deliver = ns["lane_deliver"]

    @classmethod
    def compile(cls, mr: Any, exprs: list, sets: dict, partition_names: list[str]) -> "OneRowMeasures | None":
        """The renderer when ``mr`` is ONE ROW PER MATCH and every measure is simple, else None."""
        if mr.rows_per_match == "all":
            return None
        plan = []
        for m, e in zip(mr.measures, exprs):
            spec = _measure(e, sets)
            if spec is None:
                return None
            plan.append((m.alias, spec))
        return cls(plan, partition_names)

    def render(self, event: tuple, rows: Any, pvalues: tuple) -> list[tuple[dict, Any]]:
        if event[0] != "match":
            return []
        _, start, end, labels, mno = event
        stored, base = rows.rows, rows.base  # the rows of a match being rendered are all kept
        if type(labels) is tuple:
            return [self.planned_row(stored, base, start, end, labels, mno, pvalues)]
        last = end - 1
        ts = stored[(last if end > start else start) - base].ts
        row = dict(zip(self.partition_names, pvalues))
        for name, spec in self.measures:
            kind = spec[0]
            if kind == _FIELD:
                idx = _nth(labels, start, last, spec[1], spec[3], spec[4])
                if idx is None:
                    row[name] = None
                else:
                    data = stored[idx - base].data
                    row[name] = data.get(spec[2]) if type(data) is dict else None
            elif kind == _MNO:
                row[name] = mno
            else:
                idx = _nth(labels, start, last, spec[1], 0, False)
                row[name] = None if idx is None else labels[idx - start][0]
        return [(row, ts)]

    def _plan(self, labels: tuple, n: int) -> tuple:
        """What ``render`` reads for a match of ``n`` rows with ``labels``, cached by the tuple."""
        steps = []
        for _, spec in self.measures:
            kind = spec[0]
            if kind == _FIELD:
                steps.append(_nth(labels, 0, n - 1, spec[1], spec[3], spec[4]))
            elif kind == _MNO:
                steps.append(None)
            else:
                idx = _nth(labels, 0, n - 1, spec[1], 0, False)
                steps.append(None if idx is None else labels[idx][0])
        if len(self.plans) >= 10_000:
            self.plans.clear()
        plan = self.plans[id(labels)] = (labels, tuple(steps))
        return plan


def _source(measures: list[tuple[str, tuple]], partition_names: list[str]) -> str:
    """The source of ``planned_row`` and ``lane_deliver`` (``OneRowMeasures.__init__``): both find the
    plan of a match's labels (``plans``, cached by the labels tuple, else ``OneRowMeasures._plan``) and
    build its row as one dict display, the PARTITION BY values first, then each measure read at its
    offset."""
    body, shown = [], [f"{name!r}: pv[{j}]" for j, name in enumerate(partition_names)]
    for j, (name, spec) in enumerate(measures):
        kind = spec[0]
        if kind == _FIELD:
            body += [f"x = plan[{j}]",
                     "if x is None:",
                     f"    v{j} = None",
                     "else:",
                     "    d = stored[i + x].data",
                     f"    v{j} = d.get({spec[2]!r}) if type(d) is dict else None"]
            shown.append(f"{name!r}: v{j}")
        elif kind == _MNO:
            shown.append(f"{name!r}: mno")
        else:
            shown.append(f"{name!r}: plan[{j}]")
    row = ["plan = plans.get(id(labels))",
           "if plan is None or plan[0] is not labels:",
           "    plan = make_plan(labels, end - start)",
           "plan = plan[1]",
           "i = start - base",
           *body,
           "ts = stored[(end - 1 if end > start else start) - base].ts",
           "row = {" + ", ".join(shown) + "}"]
    return "\n".join([
        "def planned_row(stored, base, start, end, labels, mno, pv):",
        *("    " + line for line in row),
        "    return row, ts",
        "",
        "def lane_deliver(rows, pv, pending, rendered):",
        "    def deliver(events, tup):",
        "        if pending:",
        "            return rendered(events, tup)",
        "        out = []",
        "        stored = rows.rows",
        "        base = rows.base  # the rows of a match being rendered are all kept",
        "        seq = tup.seq",
        "        for event in events:",
        "            if event[0] != 'match':",
        "                return rendered(events, tup)",
        "            _, start, end, labels, mno = event",
        "            if type(labels) is tuple:",
        *("                " + line for line in row),
        "                out.append(Tuple(row, ts, seq, ''))",
        "            else:",
        "                try:",
        "                    out.extend([Tuple(row, ts, seq, '') for row, ts in render(event, rows, pv)])",
        "                except (BQLError, Blocked):",
        "                    return rendered(events, tup)",
        "        return StepResult(out, [])",
        "    return deliver",
    ]) + "\n"
