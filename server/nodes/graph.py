"""The dependency graph of a topology and the fusion rule (docs/architecture.md, "Runtime on Spark").

A consumer (a sink's INSERT INTO, an ad-hoc SELECT, or a shared stream's own query) reads one node.
Its Spark query covers the chain of streams from journal'd inputs up to that node: a stream with
exactly one consumer is fused into the query (a *stage*); a source, or a stream that is *materialized*
(computed once by its own query that appends its output to the journal because several consumers read
it), is an *input* read from the journal.

A stream whose outputs depend on earlier tuples (windows over more than its tuple, aggregates,
ISTREAM/DSTREAM, MATCH_RECOGNIZE, Timeplus windows, UDSFs, calls reaching states) is materialized at its
CREATE (``computed_from_create``), as SensorBee computes a stream from its CREATE on; memoryless streams
fuse.

A stream already fused into a running query that later gains a second consumer is split out of that
query with its state (``replan.py``), so it is still computed once.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Chain:
    """What one consumer's query runs: ``inputs`` read from the journal, ``stages`` in dependency order
    (each ``(node name, select text, its input names)``)."""

    inputs: list[str] = field(default_factory=list)
    stages: list[tuple[str, str, list[str]]] = field(default_factory=list)

    @property
    def stage_names(self) -> list[str]:
        return [s[0] for s in self.stages]


def chain_tag(chain: Chain) -> str:
    """A short stable name of a chain's shape (inputs, stage names, texts, their inputs): part of its
    query's checkpoint name, so another plan never resumes a checkpoint of a different shape."""
    shape = json.dumps([list(chain.inputs), [[n, t, list(i)] for n, t, i in chain.stages]])
    return hashlib.sha1(shape.encode()).hexdigest()[:10]


def consumers_of(name: str, streams: dict[str, Any], sinks: dict[str, Any], extra: list[str] = ()) -> list[str]:
    """Nodes reading ``name``: streams with it in FROM, sinks inserting from it, ``extra`` readers."""
    out = [s.name for s in streams.values() if name in s.inputs]
    out += [k.name for k in sinks.values() if name in k.inputs]
    out += [e for e in extra if e == name]
    return out


def plan(target: str, sources: dict[str, Any], streams: dict[str, Any], materialized: set[str],
         consumer: str | None = None) -> Chain:
    """The chain a query reading ``target`` runs; ``consumer`` is the query's own stream when the query
    materializes ``target`` (then ``target`` itself is a stage, not an input)."""
    chain = Chain()
    seen: set[str] = set()

    def visit(name: str, top: bool) -> None:
        if name in seen:
            return
        seen.add(name)
        if name in sources or (name in materialized and not (top and consumer == name)):
            chain.inputs.append(name)
            return
        node = streams.get(name)
        if node is None:  # a dropped node: nothing will arrive from it
            return
        for inp in node.inputs:
            visit(inp, False)
        chain.stages.append((node.name, node.text, list(node.inputs)))

    visit(target, True)
    return chain


def plan_reading(targets: list[str], sources: dict[str, Any], streams: dict[str, Any], materialized: set[str],
                 own_stage: tuple[str, str, list[str]] | None = None) -> Chain:
    """The chain of a query reading every node of ``targets`` (their chains merged, each stage once),
    with ``own_stage`` (an ad-hoc SELECT or an explained statement: ``(node, text, inputs)``) last."""
    chain = Chain()
    for target in targets:
        sub = plan(target, sources, streams, materialized)
        chain.inputs += [i for i in sub.inputs if i not in chain.inputs]
        chain.stages += [s for s in sub.stages if s[0] not in chain.stage_names]
    if own_stage is not None:
        chain.stages.append(own_stage)
    return chain


def shared_streams(target: str, sources: dict[str, Any], streams: dict[str, Any], sinks: dict[str, Any],
                   materialized: set[str], extra: list[str] = ()) -> list[str]:
    """Streams upstream of ``target`` (inclusive) that need their own query now: several consumers and
    not yet materialized (a running query may have it fused: ``replan.split``). Upstream first."""
    out: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name in sources or name not in streams:
            return
        seen.add(name)
        for inp in streams[name].inputs:
            visit(inp)
        if name in materialized:
            return
        if len(consumers_of(name, streams, sinks, extra)) > 1:
            out.append(name)

    visit(target)
    return out


def computed_from_create(stage: Any) -> str | None:
    """Why a stream must be computed by its own query from its CREATE on (None: it need not).

    SensorBee connects a stream to its inputs when it is created: its windows, emitters and UDS calls
    see every tuple from then on, and what it emits while nothing reads it is dropped. A stream whose
    outputs can depend on earlier tuples (``stage`` is the planner's ``StagePlan``: not memoryless, or
    calling functions that reach the topology's states) therefore is materialized (its output journaled)
    from its CREATE on — as soon as a tuple can reach it (``from_create.py``); consumers attaching later read its log from the journal HEAD,
    which is what SensorBee's stream would send them. A memoryless stream's outputs do not depend on
    when computing started, so it is fused into its consumers' queries as before."""
    if stage.stateful_calls:
        return f"it calls {', '.join(stage.stateful_calls)}, which may reach the topology's states"
    if not stage.stateless:
        return stage.why
    return None


def edges(sources: dict[str, Any], streams: dict[str, Any], sinks: dict[str, Any]) -> list[tuple[Any, Any]]:
    """``(sender node, receiver node)`` pairs."""
    nodes = {**sources, **streams}
    out = []
    for s in streams.values():
        for inp in s.inputs:
            if inp in nodes:
                out.append((nodes[inp], s))
    for k in sinks.values():
        for inp in k.inputs:
            if inp in nodes:
                out.append((nodes[inp], k))
    return out
