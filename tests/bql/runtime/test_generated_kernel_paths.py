"""The incremental kernel's generated, type-guarded steps (``runtime/stage_codegen.py``), each compared row
for row with the code it replaces.

- the fast form (RSTREAM over ``[RANGE 1 TUPLES]``): ``IncrementalSelectProcessor.generated`` runs
  WHERE and the select list as one generated function; rows outside its guards take the reference
  kernel's fast path;
- one FROM item without grouping over any window (``row_step``): a new row's WHERE and projection come
  from the generated function, the window / relation / emitter bookkeeping stays the incremental one.

Each statement runs step by step against the reference kernel (``SelectProcessor``) *and* against the
incremental kernel with the generated step switched off, over random streams with 2 / 2.0, NaN, NULL,
missing fields, bools, strings, maps and arrays: the outputs (with their exact types), their time
stamps, and the dropped tuples with their error texts must be identical.
"""
from __future__ import annotations

import copy
import datetime as dt
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incremental_util import Ledger
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import IncrementalSelectProcessor
from sbpy.bql.runtime.incremental.emitter import row_key, row_key_for
from sbpy.bql.runtime.kernel import SelectProcessor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.stage_codegen import FALLBACK
from sbpy.bql.runtime.testing import parse_select

START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALUES = st.sampled_from([0, 1, 2, 2.0, -1, 1.5, 3, float("nan"), None, "p", "q", "", True, False,
                          [1, 2.0], {"u": [1]}, {"u": None}])
FIELDS = ("x", "k", "s", "m")


@st.composite
def streams(draw: Any) -> list[tuple[dict[str, Any], int]]:
    """(data, timestamp in ms): fields missing at random, values of every kind, time going back."""
    out = []
    ts = 0
    for _ in range(draw(st.integers(0, 25))):
        ts = max(0, ts + draw(st.sampled_from([0, 100, 250, 600, -300])))
        data = {f: draw(VALUES) for f in FIELDS if draw(st.integers(0, 7))}
        if draw(st.integers(0, 20)) == 0:
            data = {"x": data}  # the fields sit one level down: every plain field is missing
        out.append((data, ts))
    return out


def canonical(value: Any) -> Any:
    """A value with its types spelled out (2 / 2.0 / True differ; NaN equals NaN here)."""
    if isinstance(value, dict):
        return ("map", [(k, canonical(v)) for k, v in value.items()])  # key order counts
    if isinstance(value, list):
        return ("array", [canonical(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _observed(proc: Any, data: dict[str, Any], ts: dt.datetime, seq: int, ledger: Ledger | None = None
              ) -> tuple[Any, ...]:
    result = proc.process(Tuple(copy.deepcopy(data), ts, seq, "s1"))
    if ledger is not None:
        ledger.add(t.data for t in result.outputs)
    return ([(canonical(t.data), t.ts, t.seq, t.input) for t in result.outputs],
            [(d.error, d.event_type, d.tuple.seq) for d in result.dropped], result.done)


def batch_observed(proc: Any, name: str, batch: list[Tuple], ledger: Ledger | None = None
                   ) -> list[tuple[Any, ...]]:
    """``_observed`` of each tuple of ``batch`` (input ``name``) from one ``process_batch`` call, its rows
    stamped as the contract says (the tuple's time and seq); ``ledger`` records the maps emitted."""
    out = []
    for tup, entry in zip(batch, proc.process_batch(name, batch), strict=True):
        if ledger is not None and entry is not None:
            kind = type(entry)
            ledger.add(entry if kind is list else [entry] if kind is dict
                       else (t.data for t in entry.outputs))
        if entry is None:
            out.append(([], [], False))
        elif type(entry) is list:
            out.append(([(canonical(d), tup.ts, tup.seq, "") for d in entry], [], False))
        else:
            out.append(([(canonical(t.data), t.ts, t.seq, t.input) for t in entry.outputs],
                        [(d.error, d.event_type, d.tuple.seq) for d in entry.dropped], entry.done))
    return out


def check_batches(fused: Any, reference: Any, stream: list[tuple[dict[str, Any], int]], sizes: list[int],
                  name: str = "s1") -> None:
    """``stream`` through ``fused.process_batch`` in batches of ``sizes`` (cycled) and through
    ``reference.process`` tuple by tuple: the same rows, stamps and drops for every tuple."""
    tuples = [Tuple(copy.deepcopy(data), START + dt.timedelta(milliseconds=ms), seq, name)
              for seq, (data, ms) in enumerate(stream, 1)]
    start, k = 0, 0
    ledger = Ledger()
    while start < len(tuples):
        batch = tuples[start:start + sizes[k % len(sizes)]]
        want = [_observed(reference, t.data, t.ts, t.seq) for t in batch]
        assert batch_observed(fused, name, batch, ledger) == want, [t.seq for t in batch]
        start, k = start + len(batch), k + 1
    ledger.check()


def run_three(query: str, stream: list[tuple[dict[str, Any], int]], attribute: str) -> int:
    """Feed ``stream`` to the reference kernel, the incremental kernel and the incremental kernel with
    its generated ``attribute`` switched off; all three must agree at every step. Returns how many
    steps the generated function decided (did not hand back)."""
    stmt = parse_select(query)
    generated = build_processor(stmt, ProcessorContext())
    plain = build_processor(stmt, ProcessorContext())
    reference = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert isinstance(generated, IncrementalSelectProcessor) and type(reference) is SelectProcessor
    step = generated.generated if attribute == "generated" else generated.row_step
    assert step is not None, query
    decided = [0]

    def counting(data: Any) -> Any:
        out = step(data)
        decided[0] += out is not FALLBACK
        return out

    if attribute == "generated":
        generated.generated, plain.generated = counting, None
    else:
        generated.row_step, plain.row_step, plain.fused = counting, None, False
    ledger = Ledger()
    for seq, (data, ms) in enumerate(stream, 1):
        ts = START + dt.timedelta(milliseconds=ms)
        want = _observed(reference, data, ts, seq)
        assert _observed(plain, data, ts, seq, ledger) == want, f"step {seq}: {query}"
        assert _observed(generated, data, ts, seq, ledger) == want, f"step {seq}: {query}"
    ledger.check()
    return decided[0]


WHERES = ["", "WHERE a:x < 2", "WHERE a:x = 2.0", "WHERE 2 <= a:x", "WHERE a:s = \"p\" AND a:x >= 1",
          "WHERE NOT (a:x > 1) OR a:k = a:x", "WHERE a:x != 1.5 AND (a:s < \"q\" OR a:k <> 2)",
          "WHERE a:x > 1.5", "WHERE a:k = a:s"]
SELECTS = ["a:x AS x, a:s AS s", "a:m AS m, a:x AS v, a:k AS v", "1 AS one, a:x, \"c\" AS c",
           "a:k, a:k AS k2", "a:x AS x"]


@SETTINGS
@given(st.sampled_from(WHERES), st.sampled_from(SELECTS), streams())
def test_fast_form_generated_step_equals_the_reference(where, items, stream):
    run_three(f"SELECT RSTREAM {items} FROM s1 [RANGE 1 TUPLES] AS a {where}", stream, "generated")


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM", "RSTREAM"]), st.sampled_from(WHERES), st.sampled_from(SELECTS),
       st.sampled_from(["[RANGE 2 TUPLES]", "[RANGE 5 TUPLES]", "[RANGE 500 MILLISECONDS]",
                        "[RANGE 1 SECONDS]"]),
       streams())
def test_window_row_step_equals_the_reference(emitter, where, items, window, stream):
    run_three(f"SELECT {emitter} {items} FROM s1 {window} AS a {where}", stream, "row_step")


@pytest.mark.parametrize("query, attribute", [
    ("SELECT RSTREAM a:id AS id, a:price AS price FROM s1 [RANGE 1 TUPLES] AS a WHERE a:price < 8",
     "generated"),
    ("SELECT ISTREAM a:id AS id, a:price AS price FROM s1 [RANGE 3 TUPLES] AS a WHERE a:price < 8",
     "row_step"),
    ("SELECT DSTREAM a:id AS id, a:price AS price FROM s1 [RANGE 1 SECONDS] AS a", "row_step"),
])
def test_generated_steps_decide_plain_rows(query, attribute):
    """Rows of the types the guards cover never fall back (the generated path is the one measured)."""
    stream = [({"id": i, "price": [1, 9, 2.5, 8.0][i % 4]}, 300 * i) for i in range(40)]
    assert run_three(query, stream, attribute) == 40


def test_emitted_containers_are_copies():
    """The reference copies maps and arrays into each output row; the generated step does too."""
    for query in ("SELECT RSTREAM a:m AS m FROM s1 [RANGE 1 TUPLES] AS a",
                  "SELECT RSTREAM a:m AS m FROM s1 [RANGE 2 TUPLES] AS a"):
        proc = build_processor(parse_select(query))
        data = {"m": {"u": [1, 2]}}
        (first,) = proc.process(Tuple(data, START, 1, "s1")).outputs
        assert first.data == data and first.data["m"] is not data["m"]
        assert first.data["m"]["u"] is not data["m"]["u"]
        first.data["m"]["u"].append(3)  # a consumer changing its row changes no later row
        outs = proc.process(Tuple({"m": 1}, START, 2, "s1")).outputs
        assert [o.data for o in outs][-1] == {"m": 1} and data == {"m": {"u": [1, 2]}}


@pytest.mark.parametrize("query", [
    "SELECT RSTREAM str(ts()) AS y FROM s1 [RANGE 1 TUPLES] AS a",
    "SELECT RSTREAM * FROM s1 [RANGE 1 TUPLES] AS a WHERE a:x < 1",
    "SELECT ISTREAM a:x AS y.z FROM s1 [RANGE 3 TUPLES] AS a",
    "SELECT ISTREAM a:x AS y FROM s1 [RANGE 3 TUPLES] AS a WHERE a:ts() > a:t",
])
def test_statements_outside_the_subset_keep_the_closures(query):
    proc = build_processor(parse_select(query))
    assert isinstance(proc, IncrementalSelectProcessor)
    assert proc.generated is None and proc.row_step is None


@SETTINGS
@given(st.sampled_from(["ISTREAM", "RSTREAM"]), st.sampled_from(WHERES), st.sampled_from(SELECTS),
       st.sampled_from([" LIMIT 3", " LIMIT 12"]), streams())
def test_row_step_under_limit_equals_the_reference(emitter, where, items, limit, stream):
    """With LIMIT the step runs through ``_step`` (``_advance_single`` calls the generated function)."""
    query = f"SELECT {emitter} {items} FROM s1 [RANGE 3 TUPLES] AS a {where}{limit}"
    assert not build_processor(parse_select(query)).fused
    run_three(query, stream, "row_step")


@SETTINGS
@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True),
       st.lists(VALUES, min_size=4, max_size=4))
def test_generated_row_key_equals_row_key(labels, values):
    data = dict(zip(labels, values))
    assert row_key_for(labels)(data) == row_key(data)


@SETTINGS
@given(st.sampled_from(["RSTREAM", "ISTREAM"]),
       st.sampled_from(["a:k, count(*) AS n, sum(a:x) AS total", "count(*) AS n", "a:k AS k"]),
       st.sampled_from(["[RANGE 3 TUPLES]", "[RANGE 500 MILLISECONDS]"]), streams())
def test_group_output_order_equals_the_reference(emitter, items, window, stream):
    """``groups.current`` lists the output rows by the position of their group's first row."""
    stmt = parse_select(f"SELECT {emitter} {items} FROM s1 {window} AS a GROUP BY a:k")
    inc, ref = build_processor(stmt), build_processor(stmt, ProcessorContext(kernel="reference"))
    for seq, (data, ms) in enumerate(stream, 1):
        ts = START + dt.timedelta(milliseconds=ms)
        assert _observed(inc, data, ts, seq) == _observed(ref, data, ts, seq)
