"""``FastPipeline`` (the direct path of memoryless chains) gives ``Pipeline``'s rows, row for row.

Hypothesis draws rows of mixed and missing types (ints, floats, NaN, strings, bools, NULL, arrays,
maps, timestamps, ``$`` keys) and random chains of one to three memoryless stages (WHERE and select
lists over arithmetic, comparisons, casts, functions and paths); both pipelines run the same journal
rows, end marker included, and every output, dropped and stat row must be equal.
"""
from __future__ import annotations

import datetime as _dt
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sbpy.bql.plan import Execution, plan_query
from sbpy.bql.plan.planner import analyze_stage
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.compile import query_spec_stages
from sbpy.bql.spark.fast_chain import FastPipeline, make_pipeline
from sbpy.bql.spark.operator import Pipeline

FIELDS = ["a", "b", "c", "x:y", "arr[0]"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 2.0, -1.5, math.nan]),
    st.text(max_size=5), st.sampled_from(["", "2", "x", "$y"]),
    st.datetimes(min_value=_dt.datetime(1970, 1, 2), max_value=_dt.datetime(2100, 1, 1),
                 timezones=st.just(_dt.timezone.utc)),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["y", "z", "$k"]), inner, max_size=2), max_leaves=4)
rows = st.dictionaries(st.sampled_from(["a", "b", "c", "x", "arr", "$d"]), values, max_size=5)

atoms = st.one_of(st.sampled_from(FIELDS), st.sampled_from(["1", "2.5", "'s'", "NULL", "true", "-3"]))


def _exprs(depth: int = 2):
    if depth == 0:
        return atoms
    sub = _exprs(depth - 1)
    return st.one_of(
        atoms,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "%", "||"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, st.sampled_from(["=", "<", ">=", "!=", "AND", "OR"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, st.sampled_from(["int", "float", "string", "bool"])).map(lambda t: f"{t[0]}::{t[1]}"),
        sub.map(lambda e: f"abs({e})"), sub.map(lambda e: f"NOT {e}"), sub.map(lambda e: f"{e} IS NULL"),
        sub.map(lambda e: f"{e} IS MISSING"), sub.map(lambda e: f"str_len({e})"),
    )


def _stage(source: str):
    proj = st.lists(st.tuples(_exprs(), st.sampled_from(["p", "q", "r.s", "t[1]"])), min_size=1, max_size=3,
                    unique_by=lambda t: t[1]).map(lambda items: ", ".join(f"{e} AS {n}" for e, n in items))
    select = st.one_of(st.just("*"), proj, st.just("a, b"), st.just(f"{source}:*"))
    where = st.one_of(st.just(""), _exprs().map(lambda e: f" WHERE {e}"))
    return st.tuples(select, where).map(
        lambda t: f"SELECT RSTREAM {t[0]} FROM {source} [RANGE 1 TUPLES]{t[1]}")


@st.composite
def chains(draw):
    n = draw(st.integers(1, 3))
    stages, source = [], "src"
    for k in range(n):
        node = f"s{k}"
        stages.append((node, draw(_stage(source)), [source]))
        source = node
    return stages


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(chain=chains(), data=st.lists(rows, max_size=12))
def test_fast_path_equals_generic_pipeline(chain, data):
    assume(all(_valid(text) for _, text, _ in chain))  # a statement the analyzer rejects is no chain
    plan = plan_query(["src"], chain)
    assert plan.execution is Execution.STATELESS
    specs = query_spec_stages(plan)
    fast, generic = make_pipeline(specs, "t"), Pipeline(specs, "t")
    assert isinstance(fast, FastPipeline)
    journal = [(i + 1, "src", (i + 1) * 1000, jf.encode_data(d), False) for i, d in enumerate(data)]
    journal.append((len(data) + 1, "src", 0, None, True))
    got, want = fast.run(journal), generic.run(journal)
    assert _comparable(got) == _comparable(want)


def _valid(text: str) -> bool:
    from sbpy.bql.analyzer import analyze
    from sbpy.bql.errors import BQLError
    from sbpy.bql.runtime import build_processor

    try:
        stmt = analyze_stage(text)
        analyze(stmt, text)
        build_processor(stmt)
    except BQLError:
        return False
    return True


def _comparable(out):
    """Rows with NaN made comparable (NaN != NaN) and error texts kept."""
    return [tuple("<nan>" if isinstance(v, float) and math.isnan(v) else v for v in r) for r in out]


def test_non_path_chains_keep_the_generic_pipeline():
    plan = plan_query(["src"], [("s0", "SELECT RSTREAM a FROM src [RANGE 1 TUPLES] LIMIT 2", ["src"])])
    assert not isinstance(make_pipeline(query_spec_stages(plan), "t"), FastPipeline)
