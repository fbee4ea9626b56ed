"""``PARTITION BY`` substreams (docs/timeplus.md).

Reference: the definition — the query without PARTITION BY run on each substream on its own (its own
processor, fed only the tuples of that key) — step by step over random inputs: each tuple's outputs are
its substream's outputs for it, the end of input flushes the substreams in order of first appearance;
``LIMIT n OFFSET m`` slices the unlimited rows. Plus the per-substream watermark against the global one,
``lag`` per substream against a plain model, snapshot/restore midway, and the analyzer's errors.
"""
import dataclasses
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.parser import parse_one
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select, run_query, run_query_detailed
from snapshot_util import assert_restore_midway_continues

T0 = 1580673600
UTC = dt.timezone.utc
events = st.lists(st.tuples(st.integers(0, 40), st.sampled_from("abc"), st.integers(-3, 9)), max_size=30)

QUERIES = [
    "SELECT RSTREAM window_start, k, count(*) AS c, sum(v) AS s FROM tumble(src, ts, 5s) "
    "GROUP BY window_start, k PARTITION BY k",
    "SELECT RSTREAM window_start, count(*) AS c, emit_version() AS ev FROM hop(src, ts, 5s, 10s) "
    "GROUP BY window_start PARTITION BY k EMIT AFTER WATERMARK WITH DELAY 2s",
    "SELECT RSTREAM window_start, window_end, count(*) AS c FROM session(src, ts, 4s) "
    "GROUP BY window_start, window_end PARTITION BY k",
    "SELECT RSTREAM k, count(*) AS c FROM src WHERE v > 0 GROUP BY k PARTITION BY k EMIT ON UPDATE",
    "SELECT v, lag(v) AS p, lag(v, 2, -1) AS p2 FROM src PARTITION BY k",
    "SELECT RSTREAM window_start, v FROM tumble(src, ts, 5s) PARTITION BY v % 2",
]


def _tuples(evs):
    return [Tuple({"ts": T0 + t, "k": k, "v": v}, dt.datetime.fromtimestamp(T0 + t, UTC), i, "src")
            for i, (t, k, v) in enumerate(evs, start=1)]


def _data(step):
    return [json_ready(t.data) for t in step.outputs]


def _by_definition(query, tuples):
    """Each substream its own processor of the query without PARTITION BY."""
    select = parse_select(query)
    key_of = {"k": lambda d: d["k"], "v % 2": lambda d: d["v"] % 2}[unparse(select.partition_by[0])]
    single = dataclasses.replace(select, partition_by=())
    parts, out = {}, []
    for tup in tuples:
        key = key_of(tup.data)
        if key not in parts:
            parts[key] = build_processor(single)
        out.append(_data(parts[key].process(tup)))
    out.append([row for proc in parts.values() for row in _data(proc.finish("src"))])
    return out


def _partitioned(query, tuples):
    proc = build_processor(parse_select(query))
    return [_data(proc.process(t)) for t in tuples] + [_data(proc.finish("src"))]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(QUERIES), events)
def test_partition_by_runs_the_query_once_per_substream(query, evs):
    tuples = _tuples(evs)
    assert _partitioned(query, tuples) == _by_definition(query, tuples)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(QUERIES[:4]), events, st.integers(0, 6), st.integers(0, 4))
def test_limit_and_offset_count_the_rows_of_all_substreams(query, evs, n, m):
    rows = [{"ts": T0 + t, "k": k, "v": v} for t, k, v in evs]
    everything = run_query(query, {"src": rows})
    limited = run_query_detailed(f"{query.split(' EMIT ')[0]} LIMIT {n} OFFSET {m}"
                                 + (f" EMIT {query.split(' EMIT ')[1]}" if " EMIT " in query else ""), {"src": rows})
    assert limited.outputs == everything[m:m + n]
    # done at the n-th row after the skipped ones (LIMIT 0: at the first row it would emit)
    assert limited.done == (len(everything) >= m + n if n else len(everything) > m)


def test_each_substream_has_its_own_watermark():
    rows = [{"ts": T0 + t, "k": k} for t, k in [(1, "a"), (12, "b"), (2, "a"), (13, "b")]]
    q = "SELECT RSTREAM k, window_start, count(*) AS c FROM tumble(src, ts, 5s) GROUP BY k, window_start"
    shared = run_query_detailed(q, {"src": rows})
    assert len(shared.dropped) == 1  # (2, a) is late after b's 12 closed [0, 5)
    split = run_query_detailed(q + " PARTITION BY k", {"src": rows})
    assert split.dropped == [] and {"k": "a", "window_start": T0, "c": 2} in split.outputs


@settings(max_examples=40, deadline=None)
@given(events)
def test_lag_looks_back_within_its_substream(evs):
    rows = [{"ts": T0 + t, "k": k, "v": v} for t, k, v in evs]
    last: dict[str, int] = {}
    want = []
    for r in rows:
        want.append({"k": r["k"], "v": r["v"], "p": last.get(r["k"], 0)})
        last[r["k"]] = r["v"]
    assert run_query("SELECT k, v, lag(v) AS p FROM src PARTITION BY k", {"src": rows}) == want


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(QUERIES), events, st.integers(0, 30))
def test_restore_midway_continues(query, evs, cut):
    arrivals = [("src", {"ts": T0 + t, "k": k, "v": v}) for t, k, v in evs]
    assert_restore_midway_continues(query, arrivals, min(cut, len(arrivals)))


def test_a_failing_key_drops_the_tuple():
    result = run_query_detailed("SELECT v FROM src PARTITION BY v + 1", {"src": [{"v": "x"}, {"v": 2}]})
    assert result.outputs == [{"v": 2}]
    assert [d.error for d in result.dropped] == ["cannot apply '+' to 'string' and 'int'"]


def test_seed_partition_by_form_parses_and_unparses():
    text = ("SELECT RSTREAM cid, window_start, count() AS cnt FROM tumble(car_live_data, 5s) "
            "GROUP BY cid, window_start PARTITION BY cid LIMIT 3 EMIT ON UPDATE")
    stmt = parse_one(text)
    assert parse_one(unparse(stmt)) == stmt and unparse(stmt.partition_by[0]) == "cid"


@pytest.mark.parametrize("query,message", [
    ("SELECT RSTREAM a FROM src [RANGE 1 TUPLES] PARTITION BY a", "PARTITION BY can only be used in a Timeplus query"),
    ("SELECT a FROM src PARTITION BY count(a)", "PARTITION BY cannot contain the aggregate 'count'"),
    ("SELECT a, lag(a) AS p FROM src PARTITION BY lag(a)", "lag() can only be used in the select list"),
    ("SELECT a FROM src AS s PARTITION BY t:a", "stream 't'"),
])
def test_misplaced_partition_by_is_an_analyzer_error(query, message):
    with pytest.raises(BQLAnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_select(query)
