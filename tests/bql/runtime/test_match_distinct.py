"""``agg(DISTINCT x)`` in MATCH_RECOGNIZE (seed 000's ``COUNT(DISTINCT B1.zone_id)``): the aggregate over the
first row of each distinct value of ``x`` among the rows it aggregates (2 and 2.0 are one value), checked
against a model computed from ``array_agg`` of the same rows."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from match_util import run
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.parser import parse_one
from sbpy.bql.runtime.testing import parse_select
from sbpy.bql.values import multiset_key

BODY = ("ORDER BY t MEASURES array_agg(A.v) AS vs, count(DISTINCT A.v) AS n, sum(DISTINCT A.v) AS s, "
        "array_agg(DISTINCT A.v) AS ds, count(DISTINCT v) AS n_all "
        "PATTERN (A+ B) DEFINE A AS A.k = 1, B AS B.k = 2")
VALUES = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from([1.0, 2.0, 0.5]))


def _distinct(values):
    seen, out = set(), []
    for v in values:
        if multiset_key(v) not in seen:
            seen.add(multiset_key(v))
            out.append(v)
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 1, 2]), VALUES), max_size=20))
def test_distinct_aggregates_equal_the_model(rows):
    data = [{"t": i, "k": k, "v": v} for i, (k, v) in enumerate(rows)]
    for row in run(BODY, data):
        vs = row["vs"]
        distinct = _distinct(vs)
        present = [v for v in distinct if v is not None]
        assert row["ds"] == distinct
        assert row["n"] == len(present)
        assert row["s"] == (sum(present) if present else None)
        assert row["n_all"] >= row["n"]


def test_seed_measures_example():
    rows = [{"ts": 100, "button": 1, "device_id": 3, "zone_id": 0},
            {"ts": 200, "button": 1, "device_id": 3, "zone_id": 1},
            {"ts": 300, "button": 1, "device_id": 3, "zone_id": 1},
            {"ts": 400, "button": 2, "device_id": 1, "zone_id": 1}]
    q = ("ORDER BY ts MEASURES COUNT(DISTINCT B1.zone_id) AS count_zones, count(B1.zone_id) AS n "
         "PATTERN (B1+ B2) DEFINE B1 AS B1.button = 1, B2 AS B2.button = 2")
    assert run(q, rows) == [{"count_zones": 2, "n": 3}]


@pytest.mark.parametrize("query,message", [
    ("SELECT RSTREAM count(DISTINCT x) FROM s [RANGE 2 TUPLES]", "can only be used in MATCH_RECOGNIZE"),
    ("SELECT RSTREAM * FROM s MATCH_RECOGNIZE (MEASURES abs(DISTINCT A.x) AS a PATTERN (A) DEFINE A AS true)",
     "DISTINCT can only be used in an aggregate call"),
])
def test_distinct_placement_errors(query, message):
    with pytest.raises(BQLAnalysisError, match=message):
        parse_select(query)


def test_unparse_round_trips():
    stmt = parse_one(f"SELECT RSTREAM * FROM s MATCH_RECOGNIZE ({BODY})")
    assert "count(DISTINCT " in unparse(stmt)
    assert parse_one(unparse(stmt)) == stmt
