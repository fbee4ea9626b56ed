"""Nexmark q0-q8, q11, q12 (examples/nexmark) through a topology, against a batch computation.

Each example script runs in a topology fed by the built-in ``nexmark`` source (a few thousand
events); its result stream goes to a file sink, and the rows must equal the pandas computation of
the same query over the same generated events (``nexmark_reference``): in order for q0-q2, as a
multiset for the windowed and joined queries, last row per key for the q4/q6 changelogs. Without
Spark the topology runs its queries with the in-process runner of the Spark-free topology tests (the
same fused pipeline Spark's operator hosts); the ``spark`` variants run them on Spark.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from e2e_util import lines
from nexmark_reference import QUERIES, REFERENCES, comparable, frames, script_for
from sbpy.bql.parser import parse_script
from sbpy.plugins.builtin.nexmark_model import NexmarkConfig
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

COUNT, RATE, SEED = 3000, 50, 7  # 60 s of event time: several 10 s windows, ~60 persons, ~180 auctions
SOURCE_WITH = f"count = {COUNT}, events_per_second = {RATE}, seed = {SEED}, unthrottled = true"


@pytest.fixture(scope="module")
def batch():
    return frames(NexmarkConfig(count=COUNT, events_per_second=float(RATE), seed=SEED))


def run_example(topology: Topology, query: str, out: Path) -> list:
    """Run examples/nexmark/<query>.bql on ``topology`` to the end of its input; the rows of ``query``."""
    try:
        for p in parse_script(script_for(query, SOURCE_WITH, {query: out})):
            topology.execute(p)
        topology.execute(parse_script("RESUME SOURCE nexmark;")[0])
        assert wait_until(lambda: topology.node("stream", query)["state"] == "stopped", 600, 0.05)
    finally:
        topology.stop()
    return lines(out)


def check(query: str, got: list, batch) -> None:
    want = REFERENCES[query](batch)
    assert want, f"{query}: the batch answer is empty; the test would prove nothing"
    assert comparable(query, got) == comparable(query, want)


@pytest.mark.parametrize("query", QUERIES)
def test_example_matches_batch_in_process(query, batch, tmp_path):
    from local_runner import start_local  # tests/server, put on sys.path by e2e_util
    from topology_util import Ctx

    t = Topology(f"nx_{query}", Ctx(tmp_path / "data"), query_starter=start_local)
    check(query, run_example(t, query, tmp_path / f"{query}.jsonl"), batch)


@pytest.mark.spark
@pytest.mark.parametrize("query", QUERIES)
def test_example_matches_batch_on_spark(query, batch, server_context, tmp_path):
    t = Topology(f"nxs_{query}", server_context)
    check(query, run_example(t, query, tmp_path / f"{query}.jsonl"), batch)
