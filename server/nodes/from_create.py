"""When a stream that computes from its CREATE (``graph.computed_from_create``) gets its own query.

SensorBee connects a stream to its inputs at CREATE; what matters for its outputs is that it sees every
tuple from then on. While no tuple can reach it — every source upstream of it is paused (or has
ended) and no stream upstream of it is computed by a running query — computing it later gives the very
same outputs, so such a stream is *pending*: it starts nothing yet, and the first reader attaching
meanwhile fuses it into its own query as before (the common script ``CREATE PAUSED SOURCE ...; CREATE
STREAM ...; INSERT INTO ...; RESUME SOURCE ...`` keeps its one fused, deterministic query). A pending
stream gets its own query (materialized) as soon as a tuple could reach it:

- at CREATE, when one of its upstream sources runs or an upstream stream is computed by a query;
- at ``RESUME SOURCE`` of a source upstream of it, before the source runs on;
- before an ad-hoc SELECT reads it (a cursor's query goes away with the cursor, the stream must not);
- when the query it was fused into goes away (``DROP SINK``, ``DROP STREAM`` of a reader): it is split
  out of that query first, with its state (``replan.split``), so it goes on as if nothing happened.

A persisted topology's replay (``Topology.start_deferred``) plans each deferred consumer with its
pending streams fused when that plan's checkpoint exists (it ran so before the restart), otherwise it
materializes them first; what is still pending and reachable afterwards is materialized.
"""
from __future__ import annotations

import logging
from typing import Any

from . import replan
from . import status as st

log = logging.getLogger("sbpy.runtime")


def upstream(topology: Any, name: str) -> list[str]:
    """The streams upstream of stream ``name`` (inclusive), upstream first."""
    out: list[str] = []

    def visit(n: str) -> None:
        node = topology.streams.get(n)
        if node is None or n in out:
            return
        for inp in node.inputs:
            visit(inp)
        out.append(n)

    visit(name)
    return out


def computed(topology: Any, name: str) -> bool:
    """Whether a running query computes stream ``name`` (its own, or one it is fused into)."""
    return name in topology.materialized or replan.owner_of(topology, name) is not None


def reachable(topology: Any, name: str) -> bool:
    """Whether a tuple can reach stream ``name`` now: an upstream source runs (is not paused or ended),
    an upstream stream is computed by a query, or the stream reads no input (a generating UDSF)."""
    node = topology.streams[name]
    if not node.inputs:
        return True
    for inp in node.inputs:
        source = topology.sources.get(inp)
        if source is not None:
            if source.state not in (st.PAUSED, st.STOPPED):
                return True
        elif inp in topology.streams and (computed(topology, inp) or reachable(topology, inp)):
            return True
    return False


def pending(topology: Any, name: str) -> bool:
    """A stream computing from its CREATE that no query computes yet."""
    node = topology.streams.get(name)
    return node is not None and node.own_query is not None and not computed(topology, name)


def start_reachable(topology: Any, names: list[str] | None = None) -> None:
    """Materialize every pending stream (of ``names``; None: all) a tuple can reach now, upstream first."""
    for name in list(topology.streams) if names is None else names:
        if pending(topology, name) and reachable(topology, name):
            topology.compute_from_create(name)


def before_resume(topology: Any, source: str) -> None:
    """``RESUME SOURCE source``: pending streams downstream of it start first, so they see its tuples."""
    for name in list(topology.streams):
        if pending(topology, name) and source in _sources_upstream(topology, name):
            topology.compute_from_create(name)


def before_select(topology: Any, inputs: list[str]) -> None:
    """An ad-hoc SELECT reads ``inputs``: the pending streams among them and upstream get their own queries."""
    for inp in inputs:
        for name in upstream(topology, inp):
            if pending(topology, name):
                topology.compute_from_create(name)


def hand_over(topology: Any, consumer: Any, dropped: str | None = None) -> None:
    """``consumer``'s query goes away: split each stream computing from its CREATE (but ``dropped``) out
    of it, upstream first, with its state, so the stream goes on in its own query."""
    for name in list(consumer.stage_names):
        node = topology.streams.get(name)
        if node is None or node.own_query is None or name in topology.materialized or name == dropped:
            continue
        if dropped is not None and dropped in upstream(topology, name):
            continue  # it reads the dropped stream: nothing more will reach it
        if consumer.handle is None or not replan.split(topology, consumer, name):
            log.warning("stream '%s' restarts in its own query without its state", name)


def prefer_checkpointed(topology: Any, consumer: Any) -> None:
    """Replay: materialize the pending streams ``consumer`` would fuse unless the fused plan's checkpoint
    exists (it ran so before the restart)."""
    targets = _targets(consumer)
    topology.materialize_shared(targets, targets if consumer.select_stage else [])
    fused = [n for t in targets for n in upstream(topology, t) if pending(topology, n)]
    if not fused:
        return
    consumer.chain = topology.plan_chain(consumer)
    topology.name_query(consumer)
    if consumer.checkpoint_dir is not None and consumer.checkpoint_dir.is_dir():
        return
    for name in fused:
        if pending(topology, name):
            topology.compute_from_create(name)


def _targets(consumer: Any) -> list[str]:
    return list(consumer.select_stage[2]) if consumer.select_stage else [consumer.target]


def _sources_upstream(topology: Any, name: str) -> set[str]:
    out: set[str] = set()
    for s in upstream(topology, name):
        out.update(i for i in topology.streams[s].inputs if i in topology.sources)
    return out
