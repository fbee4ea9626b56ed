"""What the web console shows of a topology, read from its live objects: ``topology_snapshot`` (nodes,
edges, queries) and ``stream_explain`` (the plan a stream runs with).

The counters are the ones the REST node status and ``GET /metrics`` show (``Topology.node_statuses()``,
built from each node's ``status.Counters``), so the three never disagree. Per node:

- ``in``: tuples a stream or sink received (``input_stats.num_received_total``; None for a source);
- ``out``: tuples a source or stream emitted (``output_stats.num_sent_total``; None for a sink);
- ``dropped``: tuples a source or stream could not hand to a reader whose ``BUFFER SIZE`` was full
  (``output_stats.num_dropped``; None for a sink);
- ``errors``: tuples a stream failed to process or a sink failed to write (``input_stats.num_errors``;
  None for a source);
- ``error``: the node's error message (a failed source, a sink that failed to close), else None.

Edges (``sender`` → ``receiver``) carry the tuples the receiver got from that sender
(``Topology.edge_statuses()``). Queries are the topology's consumers (one per INSERT INTO, ad-hoc
SELECT and shared stream): their id, kind, the nodes they compute, whether they run, restarts and error.
"""
from __future__ import annotations

from typing import Any

from sbpy.bql.plan.explain import render

from ..nodes import graph
from ..topology import Topology

KINDS = {"source": "source", "box": "stream", "sink": "sink"}  # REST node_type -> console kind


def _node(kind: str, name: str, status: dict[str, Any], component: Any) -> dict[str, Any]:
    inputs = status.get("input_stats")
    outputs = status.get("output_stats")
    return {
        "kind": kind,
        "name": name,
        "type": component.type_name if kind != "stream" else "stream",
        "state": status["state"],
        "inputs": list(component.inputs) if kind != "source" else [],
        "in": inputs["num_received_total"] if inputs is not None else None,
        "out": outputs["num_sent_total"] if outputs is not None else None,
        "dropped": outputs["num_dropped"] if outputs is not None else None,
        "errors": inputs["num_errors"] if inputs is not None else None,
        "error": status.get("error") or None,
        "rewindable": bool(component.rewindable) if kind == "source" else False,
    }


def _components(topology: Topology, kind: str) -> dict[str, Any]:
    if kind == "source":
        return dict(topology.sources)
    if kind == "stream":
        return dict(topology.streams)
    return dict(topology.sinks)


def _query(consumer: Any) -> dict[str, Any]:
    ended = consumer.stopped or consumer.done or consumer.error is not None
    nodes = list(consumer.stage_names) if consumer.chain is not None else []
    if consumer.sink is not None:
        nodes.append(consumer.sink.name)
    plan = consumer.plan
    return {
        "id": consumer.id,
        "kind": consumer.kind,
        "target": consumer.target,
        "nodes": nodes,
        "running": not ended,
        "restarts": consumer.restarts,
        "error": consumer.error,
        "last_batch": consumer.last_batch,
        "execution": plan.execution.value if plan is not None else None,
    }


def topology_snapshot(topology: Topology) -> dict[str, Any]:
    """``{"topology", "nodes", "edges", "queries"}``: the console's view of ``topology`` now.
    Nodes are in the order sources, streams, sinks (each in creation order)."""
    components = {kind: _components(topology, kind) for kind in ("source", "stream", "sink")}
    nodes = []
    for node_type, name, status in topology.node_statuses():
        kind = KINDS[node_type]
        component = components[kind].get(name)
        if component is None:  # dropped between the two reads
            continue
        nodes.append(_node(kind, name, status, component))
    edges = [{"sender": e["sender"]["node_name"], "receiver": e["receiver"]["node_name"],
              "received": e["stats"]["num_received"]} for e in topology.edge_statuses()]
    queries = [_query(c) for c in list(topology.consumers.values())]
    return {"topology": topology.name, "nodes": nodes, "edges": edges, "queries": queries}


def _running_consumer(topology: Topology, name: str) -> Any:
    """The live consumer whose query computes stream ``name``: the stream's own (materialized) query
    first, else the query it is fused into."""
    found = None
    for consumer in list(topology.consumers.values()):
        if consumer.plan is None or consumer.stopped or consumer.chain is None:
            continue
        if consumer.kind == "journal" and consumer.target == name:
            return consumer
        if found is None and name in consumer.stage_names:
            found = consumer
    return found


def stream_explain(topology: Topology, name: str) -> dict[str, Any]:
    """The plan of stream ``name`` as ``EXPLAIN`` renders it (``sbpy.bql.plan.explain``):

    - ``running``: the plan of the query that computes the stream now (``query`` names it; a stream
      fused into a sink's query shows that whole query);
    - ``idle``: no query reads the stream: the plan ``EXPLAIN CREATE STREAM`` gives for it against
      the current graph (its inputs and one stage: the stream itself).

    Answers ``{"stream", "statement", "mode", "query", "plan"}``; raises ``LookupError`` for an
    unknown stream."""
    stream = topology.streams.get(name.lower())
    if stream is None:
        raise LookupError(name)
    statement = f"CREATE STREAM {stream.name} AS {stream.text}"
    consumer = _running_consumer(topology, stream.name)
    if consumer is not None:
        return {"stream": stream.name, "statement": statement, "mode": "running", "query": consumer.id,
                "plan": render(consumer.plan)}
    inputs = list(stream.inputs)
    chain = graph.plan_reading(inputs, dict(topology.sources), dict(topology.streams),
                               set(topology.materialized), (stream.name, stream.text, inputs))
    return {"stream": stream.name, "statement": statement, "mode": "idle", "query": None,
            "plan": render(topology.plan_query(chain))}
