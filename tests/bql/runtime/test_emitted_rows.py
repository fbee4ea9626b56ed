"""``incremental.relation.emitted``: the incremental kernel emits a flat row it holds as itself (later
steps may emit the same map again), a row holding a map or array as its own deep copy. The property tests
(``incremental_util.Ledger``) check that no emitted map changes afterwards."""
from __future__ import annotations

import datetime as dt

import pytest
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import group_batch
from sbpy.bql.runtime.incremental.relation import emitted
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select

START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def test_a_flat_row_is_emitted_as_itself_a_nested_one_as_a_deep_copy():
    flat = {"a": 1, "b": "x", "c": None, "d": 2.5}
    assert emitted(flat) is flat
    nested = {"a": 1, "m": {"u": [1, 2]}}
    out = emitted(nested)
    assert out == nested and out is not nested
    assert out["m"] is not nested["m"] and out["m"]["u"] is not nested["m"]["u"]


@pytest.mark.parametrize("batch, light", [(True, True), (True, False), (False, False)])
def test_an_unchanged_group_is_emitted_again_as_the_same_map(monkeypatch, batch, light):
    """RSTREAM GROUP BY emits every group each step; a group the step did not change is the map the
    previous step emitted (the batch's light loop, the generated step, the per-tuple step alike)."""
    monkeypatch.setattr(group_batch.LightBatch, "takes", lambda self, n: light)
    query = "SELECT RSTREAM k, count(*) AS n FROM s [RANGE 10 TUPLES] GROUP BY k"
    proc = build_processor(parse_select(query), ProcessorContext())
    tuples = [Tuple({"k": k}, START, seq, "s") for seq, k in enumerate([1, 2, 2, 2], 1)]
    if batch:
        answers = proc.process_batch("s", tuples)
    else:
        answers = [[t.data for t in proc.process(tup).outputs] for tup in tuples]
    assert answers[-1] == [{"k": 1, "n": 1}, {"k": 2, "n": 3}]
    assert answers[-1][0] is answers[1][0] is answers[2][0]  # group 1 unchanged since the first tuple
    assert answers[-1][1] is not answers[-2][1]  # group 2 changed: a new map
    assert answers[1][1] == {"k": 2, "n": 1}  # the earlier map as it was emitted
