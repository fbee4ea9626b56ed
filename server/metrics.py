"""``GET /metrics``: the server's metrics in Prometheus' text format (``prometheus_client``).

Nothing is counted twice: at each scrape ``TopologyCollector`` reads the counters the REST status
endpoints show (``Topology.node_statuses()``, built from each node's ``status.Counters``) and the state
of each running query (``nodes.consumer.Consumer``, plus Spark's last progress report for queries that
run on Spark). Per node, labelled ``topology``, ``node`` and ``kind`` (``source``, ``stream``, ``sink``):

- ``sbpy_node_tuples_in_total``: tuples a stream or sink received (``input_stats.num_received_total``);
- ``sbpy_node_input_tuples_total`` (also ``input``): the same per input node, the graph's edges;
- ``sbpy_node_tuples_out_total``: tuples a source or stream emitted (``output_stats.num_sent_total``);
- ``sbpy_node_tuples_dropped_total``: tuples a source or stream could not hand to a reader whose
  ``BUFFER SIZE`` was full (``output_stats.num_dropped``);
- ``sbpy_node_errors_total``: tuples a stream failed to process or a sink failed to write
  (``input_stats.num_errors``);
- ``sbpy_node_input_buffer_size`` (also ``input``): a stream's ``BUFFER SIZE`` for that input;
- ``sbpy_node_state`` (also ``state``): 1 for the node's state, 0 for the other five.

Per query (one per INSERT INTO, ad-hoc SELECT and shared stream), labelled ``topology``, ``query``
(the consumer's id: the sink's name, ``select-N``, or the stream's name) and ``kind`` (``sink``,
``cursor``, ``journal``): ``sbpy_query_running``, ``sbpy_query_restarts_total``,
``sbpy_query_last_batch_id`` and, for queries on Spark once they reported progress,
``sbpy_query_last_batch_duration_seconds``, ``sbpy_query_last_batch_input_rows``,
``sbpy_query_input_rows_per_second``, ``sbpy_query_processed_rows_per_second`` and
``sbpy_query_journal_lag`` (journal entries after the last one the query has read).

The same registry holds the REST request metrics (``request_metrics.py``) and ``prometheus_client``'s
process and Python collectors. Each app has its own registry (several apps in one process, as in the
tests, never clash).

Auth: with ``network.auth_token`` set, ``/metrics`` needs ``Authorization: Bearer <token>`` like
``/api/``, unless ``network.public_metrics`` is true (Prometheus sends the token with
``authorization: {credentials: <token>}`` in its scrape config). The answer is OpenMetrics when the
scraper asks for it (``Accept``), else the classic text format.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from .api.errors import UNAUTHORIZED, error_response
from .config import NetworkConfig
from .nodes import status as st
from .request_metrics import RequestMetrics
from .topology import Topology

METRICS_URL = "/metrics"
NODE_KINDS = {"source": "source", "box": "stream", "sink": "sink"}  # REST node_type -> kind label
NODE = ("topology", "node", "kind")
QUERY = ("topology", "query", "kind")


class NodeFamilies:
    """The metric families of one scrape, filled node by node from their REST status maps."""

    def __init__(self) -> None:
        self.tuples_in = CounterMetricFamily("sbpy_node_tuples_in", "Tuples a stream or sink received.",
                                             labels=NODE)
        self.input_tuples = CounterMetricFamily("sbpy_node_input_tuples", "Tuples a stream or sink "
                                                "received from each input node.", labels=(*NODE, "input"))
        self.tuples_out = CounterMetricFamily("sbpy_node_tuples_out", "Tuples a source or stream emitted.",
                                              labels=NODE)
        self.dropped = CounterMetricFamily("sbpy_node_tuples_dropped", "Tuples a source or stream dropped "
                                           "because a reader's BUFFER SIZE was full.", labels=NODE)
        self.errors = CounterMetricFamily("sbpy_node_errors", "Tuples a stream failed to process or a "
                                          "sink failed to write.", labels=NODE)
        self.buffer_size = GaugeMetricFamily("sbpy_node_input_buffer_size", "A stream's BUFFER SIZE "
                                             "for each input node.", labels=(*NODE, "input"))
        self.state = GaugeMetricFamily("sbpy_node_state", "1 for the node's current state, 0 for the "
                                       "others.", labels=(*NODE, "state"))

    def add(self, topology: str, kind: str, name: str, status: dict[str, Any]) -> None:
        """One node's ``status`` map (``nodes/status.py``: ``source_status``, ``stream_status``, ...)."""
        node = (topology, name, kind)
        for state in st.STATES:
            self.state.add_metric((*node, state), 1.0 if status["state"] == state else 0.0)
        inputs = status.get("input_stats")
        if inputs is not None:
            self.tuples_in.add_metric(node, inputs["num_received_total"])
            self.errors.add_metric(node, inputs["num_errors"])
            for sender, stats in sorted(inputs["inputs"].items()):
                self.input_tuples.add_metric((*node, sender), stats["num_received"])
                if kind == "stream":
                    self.buffer_size.add_metric((*node, sender), stats["queue_size"])
        outputs = status.get("output_stats")
        if outputs is not None:
            self.tuples_out.add_metric(node, outputs["num_sent_total"])
            self.dropped.add_metric(node, outputs["num_dropped"])

    def families(self) -> list[Metric]:
        return [self.tuples_in, self.input_tuples, self.tuples_out, self.dropped, self.errors,
                self.buffer_size, self.state]


class QueryFamilies:
    """The per-query metric families of one scrape."""

    def __init__(self) -> None:
        self.running = GaugeMetricFamily("sbpy_query_running", "1 while the query runs, 0 once it ended, "
                                         "was stopped or failed for good.", labels=QUERY)
        self.restarts = CounterMetricFamily("sbpy_query_restarts", "Times the query was restarted from its "
                                            "checkpoint after a failure.", labels=QUERY)
        self.last_batch = GaugeMetricFamily("sbpy_query_last_batch_id", "Id of the last micro-batch whose "
                                            "rows were fully handled.", labels=QUERY)
        self.duration = GaugeMetricFamily("sbpy_query_last_batch_duration_seconds", "Duration of the last "
                                          "micro-batch Spark reported.", labels=QUERY)
        self.input_rows = GaugeMetricFamily("sbpy_query_last_batch_input_rows", "Journal rows the last "
                                            "micro-batch Spark reported read.", labels=QUERY)
        self.input_rate = GaugeMetricFamily("sbpy_query_input_rows_per_second", "Rows per second arriving, "
                                            "as of Spark's last progress report.", labels=QUERY)
        self.processed_rate = GaugeMetricFamily("sbpy_query_processed_rows_per_second", "Rows per second "
                                                "processed, as of Spark's last progress report.", labels=QUERY)
        self.lag = GaugeMetricFamily("sbpy_query_journal_lag", "Journal entries (of any node) written after "
                                     "the last one the query has read.", labels=QUERY)

    def add(self, topology: Topology, consumer: Any) -> None:
        labels = (topology.name, consumer.id, consumer.kind)
        ended = consumer.stopped or consumer.done or consumer.error is not None
        self.running.add_metric(labels, 0.0 if ended else 1.0)
        self.restarts.add_metric(labels, consumer.restarts)
        if consumer.last_batch is not None:
            self.last_batch.add_metric(labels, consumer.last_batch)
        progress = spark_progress(consumer.handle)
        if not progress:
            return
        self.duration.add_metric(labels, (progress.get("batchDuration") or 0) / 1000.0)
        self.input_rows.add_metric(labels, progress.get("numInputRows") or 0)
        self.input_rate.add_metric(labels, progress.get("inputRowsPerSecond") or 0.0)
        self.processed_rate.add_metric(labels, progress.get("processedRowsPerSecond") or 0.0)
        read = journal_position(progress)
        if read is not None:
            self.lag.add_metric(labels, max(0, topology.journal.head - read))

    def families(self) -> list[Metric]:
        return [self.running, self.restarts, self.last_batch, self.duration, self.input_rows,
                self.input_rate, self.processed_rate, self.lag]


def spark_progress(handle: Any) -> dict[str, Any] | None:
    """Spark's last progress report of a query started on Spark (a ``QueryHandle``), else None (not
    started yet, or a test's stand-in runner)."""
    if handle is None:
        return None
    from sbpy.bql.spark.query import QueryHandle

    if not isinstance(handle, QueryHandle):
        return None
    return handle.last_progress


def journal_position(progress: dict[str, Any]) -> int | None:
    """The journal seq a query has read up to: its journal source's ``endOffset`` (``{"seq": N}``)."""
    for source in progress.get("sources") or ():
        offset = source.get("endOffset")
        if isinstance(offset, str):
            try:
                offset = orjson.loads(offset)
            except orjson.JSONDecodeError:
                continue
        if isinstance(offset, dict) and isinstance(offset.get("seq"), int):
            return offset["seq"]
    return None


class TopologyCollector(Collector):
    """Reads the live node counters and query states of every topology at scrape time."""

    def __init__(self, topologies: Callable[[], Iterable[Topology]]):
        self._topologies = topologies

    def collect(self) -> Iterator[Metric]:
        nodes, queries = NodeFamilies(), QueryFamilies()
        for topology in self._topologies():
            for node_type, name, status in topology.node_statuses():
                nodes.add(topology.name, NODE_KINDS[node_type], name, status)
            for consumer in list(topology.consumers.values()):
                queries.add(topology, consumer)
        yield from nodes.families()
        yield from queries.families()


def bearer_ok(request: Request, token: str) -> bool:
    """True if the request carries ``Authorization: Bearer <token>`` (compared in constant time)."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(given.strip().encode(), token.encode())


def install_metrics(app: FastAPI, network: NetworkConfig) -> RequestMetrics:
    """Create the app's registry (``app.state.metrics_registry``) with the topology, process and
    Python collectors, add ``GET /metrics``, and return the ``RequestMetrics`` the request middleware
    (``request_metrics.RequestMetricsMiddleware``) records into."""
    registry = CollectorRegistry()
    for default in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(default)
    registry.register(TopologyCollector(lambda: app.state.manager.list()))
    request_metrics = RequestMetrics(registry)
    app.state.metrics_registry = registry
    token = None if network.public_metrics else network.auth_token

    @app.get(METRICS_URL, tags=["monitoring"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
    def metrics(request: Request) -> Response:
        """Node, query, REST request and process metrics in Prometheus' text format (OpenMetrics when
        asked for). Needs the bearer token when ``network.auth_token`` is set, unless
        ``network.public_metrics`` is true."""
        if token and not bearer_ok(request, token):
            return error_response(request, 401, UNAUTHORIZED, "The request requires a valid bearer token.",
                                  headers={"WWW-Authenticate": 'Bearer realm="sbpy"'})
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(registry), media_type=content_type)

    return request_metrics
