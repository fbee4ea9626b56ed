"""``/metrics`` on Spark (issue 13): a query running on Spark reports its last micro-batch (duration,
input rows) and its journal lag from Spark's progress, next to node counters that keep moving."""
from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sbpy.server.metrics import TopologyCollector
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from e2e_util import run

pytestmark = pytest.mark.spark


def scrape(registry: CollectorRegistry) -> dict[tuple[str, frozenset], float]:
    text = generate_latest(registry).decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_spark_progress_reaches_the_query_metrics(server_context, tmp_path):
    # a source that never ends keeps the query running (a query whose input ended stops, and its
    # progress goes with it): node_statuses emits one tuple per node every interval
    t = Topology("m", server_context)
    registry = CollectorRegistry()
    registry.register(TopologyCollector(lambda: [t]))
    query = frozenset({"topology": "m", "query": "k", "kind": "sink"}.items())
    sink = frozenset({"topology": "m", "node": "k", "kind": "sink"}.items())

    def sample(name: str, labels: frozenset = query) -> float | None:
        return scrape(registry).get((name, labels))

    try:
        run(t, f"""
            CREATE SOURCE s TYPE node_statuses WITH interval = 0.2;
            CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
            INSERT INTO k FROM s;""")
        # Spark reports a batch's progress after its foreachBatch returned
        assert wait_until(lambda: (sample("sbpy_query_last_batch_input_rows") or 0) > 0, 240, 0.2)
        samples = scrape(registry)
        assert samples[("sbpy_query_running", query)] == 1
        assert ("sbpy_query_last_batch_duration_seconds", query) in samples
        assert ("sbpy_query_processed_rows_per_second", query) in samples
        assert 0 <= samples[("sbpy_query_journal_lag", query)] <= t.journal.head
        assert samples[("sbpy_query_restarts_total", query)] == 0
        assert samples[("sbpy_query_last_batch_id", query)] >= 0  # batch 0 may already hold tuples
        received = samples[("sbpy_node_tuples_in_total", sink)]
        assert 0 < received <= t.node("sink", "k")["status"]["input_stats"]["num_received_total"]
        assert wait_until(lambda: (sample("sbpy_node_tuples_in_total", sink) or 0) > received, 60, 0.2)
    finally:
        t.stop()
