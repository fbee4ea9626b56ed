"""The ``sbpy_stateless`` reader (``StatelessStreamReader.read``) without Spark: what a partition yields
equals the chain's ``Pipeline`` fed the journal's texts, tuple times made up front — the reader parses
each line once (``read_entries`` ``values``), makes a tuple's datetime only where a stage reads it
(``Pipeline.lazy_times``) and runs with the cyclic collector paused, enabled again afterwards."""
from __future__ import annotations

import gc
import math

import pytest
from sbpy.bql.runtime import gc_pause
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.journal_source import _Range
from sbpy.bql.spark.operator import Pipeline, StageSpec
from sbpy.bql.spark.stateless_source import StatelessStreamReader, encode_chain
from sbpy.bql.spark.testing import TestJournal

FILTER = "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8"
CHAINS = {
    "filter": [StageSpec("f", FILTER, ("src",))],
    "ts() and a cast": [StageSpec("f", "SELECT RSTREAM id, ts() AS at, price::string AS p "
                                       "FROM src [RANGE 1 TUPLES] WHERE price < 8", ("src",))],
    "two stages": [StageSpec("f", FILTER, ("src",)),
                   StageSpec("g", "SELECT RSTREAM id, ts() AS at FROM f [RANGE 1 TUPLES] WHERE id % 2 = 0",
                             ("f",))],
}


def _items(n: int) -> list[tuple]:
    """Tuples of mixed and missing types, a tagged value (a timestamp, a NaN, a ``$`` key), then the end."""
    out: list[tuple] = []
    for i in range(n):
        price = [i % 11, i % 11 + 0.5, "7", None, True, math.nan][i % 6]
        data = {"id": i, "price": price} if i % 13 else {"id": i}
        if i % 17 == 0:
            data["$note"] = {"at": jf.us_to_ts(1000 * i)}
        out.append(("src", data))
    return out + [("src", None)]


@pytest.mark.parametrize("chain", list(CHAINS))
def test_a_partition_yields_the_rows_of_the_pipeline(chain, tmp_path):
    journal = TestJournal(tmp_path)
    journal.append(_items(120))
    reader = StatelessStreamReader({"dir": str(tmp_path), "inputs": "src",
                                    "chain": encode_chain(f"q-{chain}", CHAINS[chain], "t", "tagged")})
    enabled = gc.isenabled()
    got = []
    for after, upto in ((0, 50), (50, 121)):  # two partitions; the second holds the end marker
        got += [tuple(r.values()) for b in reader.read(_Range(after, upto)) for r in b.to_pylist()]
        assert gc.isenabled() == enabled and gc_pause.depth() == 0
    want = []
    for after, upto in ((0, 50), (50, 121)):
        pipeline = Pipeline(CHAINS[chain])
        want += pipeline.run(jf.read_entries(tmp_path, ["src"], after, upto))
    assert [r[0] for r in want].count("out") > 5
    assert got == [tuple(r) for r in want]
