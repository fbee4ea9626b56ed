"""Re-planning: a stream fused into a running query gains another consumer.

SensorBee computes a stream once however many nodes read it, so a later consumer must not compute its
own copy. The query that has the stream fused (the *owner*) is stopped at a batch boundary; from its
last committed journal position and its operator state (``bql/spark/handoff.py``) two queries continue:
one computing the stream (its output journaled, as for any stream with several consumers) and the owner
re-planned to read the stream's journal. Each starts from the owner's position with the processor
snapshots of its own stages, so windows, emitters and counters go on as if nothing happened; the stream's
outputs for the tuples between that position and the journal HEAD are journaled after HEAD, which the
new consumer (starting at HEAD) also sees — it starts from the stream's current output.

Their checkpoints are named by their chains (``Topology.name_query``), so a server restart that plans
the same chains resumes from them. A kill may land anywhere in a split, before the statement that caused
it (the new consumer's ``INSERT INTO``) is persisted, so a split is made durable on its own, in this order:

1. the owner's query is stopped; its old checkpoint stays, the truth until step 3;
2. ``prepare`` writes each new query's checkpoint folder complete — the handed-over start seq and
   pipeline snapshot (``handed_state``) — in a temporary folder renamed into place, the owner's first and
   the stream's last: the stream's checkpoint folder appearing is the split's commit point;
3. both queries start (nothing ran or wrote outputs before the commit point); the old checkpoint goes.

A restart replays the persisted statements, which may not hold the new consumer; ``rematerialize`` then
finds the stream's committed checkpoint and computes the stream on its own again, so the owner's chain is
the split one: killed before the commit point, a restart resumes the old fused query from its old
checkpoint; after it, both new queries from the handed-over position and state (a replayed batch 0
included). The same holds when the new consumer is dropped later: its stream stays computed on its own.

The owner's position is the last batch its consumer handled in this run; an owner restarted that has
handled none yet starts the split from the newest batch its checkpoint committed, once Spark has re-run
a planned batch it had not committed (``_await_replayed``) — from its pinned start, the new queries
would deliver every earlier output again.

An owner that runs on the driver (UDS-backed calls) hands over the snapshot file of its last batch
(``driver_query.DriverPipeline``). Owners with a keyed MATCH_RECOGNIZE plan are not split (their
state is spread over partitions; the new consumer computes its own copy, as before); this is logged.
"""
from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from sbpy.bql.durable import fsync_dir
from sbpy.bql.spark import checkpoint_positions, handoff
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.driver_query import STATE_DIR

from . import graph
from .consumer import Consumer
from .source_node import wait_until

log = logging.getLogger("sbpy.runtime")

HANDED_STATE_FILE = "sbpy-handed-state"  # the pipeline snapshot a split handed to a new query


def owner_of(topology: Any, stream: str) -> Any:
    """The running consumer whose query has ``stream`` fused as a stage (None if none)."""
    for c in topology.consumers.values():
        if not c.stopped and not c.done and not c.deferred and stream in c.stage_names:
            return c
    return None


def _splittable(owner: Any) -> str | None:
    """Why ``owner`` cannot be split (None: it can)."""
    ck = owner.checkpoint_dir
    if ck is not None and ck.is_dir() and any(p.name.startswith("keyed") for p in ck.iterdir()):
        return "its query is keyed by a MATCH_RECOGNIZE partition"
    return None


def _quiesce(owner: Any, handle: Any, timeout: float = 60.0) -> None:
    """Bring the owner's query to rest with its last handled batch committed: from now on a new batch
    fails in the callback, before the sink (so it is neither delivered nor committed); wait until no
    batch is running (a batch whose callback returned is committed before the next one starts)."""
    owner.freezing = True  # the monitor leaves a freezing query alone (``Consumer.failed``)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = getattr(handle, "status", None)
        if not isinstance(status, dict) or not handle.is_active or not status.get("isTriggerActive"):
            return
        time.sleep(0.05)


def _await_replayed(owner: Any, handle: Any, timeout: float = 60.0) -> None:
    """After a restart the owner's query has handled no batch yet (``last_batch`` None) but its checkpoint
    may hold a planned batch it did not commit, whose rows may have reached the sink before the kill:
    Spark re-runs it first (the sink recognises it), so wait until it has, or the query is no longer
    running, before the split takes the newest committed batch as the owner's position."""
    ck = owner.checkpoint_dir
    if owner.last_batch is not None or ck is None or not checkpoint_positions.uncommitted(ck):
        return
    wait_until(lambda: owner.last_batch is not None or handle is None or not handle.is_active, timeout, 0.05)
    if owner.last_batch is None:
        log.warning("query '%s': its uncommitted batch did not run again before the split", owner.id)


def _last_handled(owner: Any) -> int | None:
    """The last batch whose rows the consumer fully handled: this run's (``last_batch``), else — a query
    restarted that handled none yet — the newest batch its checkpoint committed (before the restart)."""
    if owner.last_batch is not None or owner.checkpoint_dir is None:
        return owner.last_batch
    return checkpoint_positions.last_committed(owner.checkpoint_dir)


def _position_and_state(topology: Any, handle: Any, owner: Any) -> tuple[int, bytes | None]:
    """Where the stopped owner's query got to and its pipeline snapshot there."""
    if hasattr(handle, "handoff"):  # a runner that knows both itself (the in-process stand-in of tests)
        return handle.handoff()
    batch = _last_handled(owner)
    pos = handoff.position(owner.checkpoint_dir, batch)
    if pos is None:
        return topology.journal.head, None
    if batch is None:
        return pos, None
    if owner.on_driver:
        path = owner.checkpoint_dir / STATE_DIR / f"{batch}.snap"
        return pos, path.read_bytes() if path.exists() else None
    stages, name = (handle.spec.stages, handle.spec.topology) if handle is not None else ((), "")
    return pos, handoff.read_snapshot(topology.context.spark(), owner.checkpoint_dir, batch, stages, name)


def prepare(checkpoint: Path, seq: int, state: bytes | None) -> None:
    """Write the checkpoint folder of a query a split starts: its pinned start seq (``jf.pin_start_seq``,
    which the query reads back) and its handed-over pipeline snapshot, synced, in a temporary folder
    renamed to ``checkpoint`` (replacing a stale one): the folder appears complete or not at all."""
    tmp = checkpoint.parent / f".{checkpoint.name}.handoff"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    jf.pin_start_seq(tmp, seq)
    if state is not None:
        with open(tmp / HANDED_STATE_FILE, "wb") as f:
            f.write(state)
            f.flush()
            os.fsync(f.fileno())
    fsync_dir(tmp)
    shutil.rmtree(checkpoint, ignore_errors=True)
    os.replace(tmp, checkpoint)
    fsync_dir(checkpoint.parent)


def handed_state(checkpoint: Path | None) -> bytes | None:
    """The pipeline snapshot a split handed to the query checkpointed at ``checkpoint`` (None if none).
    The query starts from it only while Spark's state holds no snapshot of its own (its batch 0)."""
    try:
        return (checkpoint / HANDED_STATE_FILE).read_bytes() if checkpoint is not None else None
    except FileNotFoundError:
        return None


def rematerialize(topology: Any) -> list[str]:
    """Before a restored topology plans its consumers: compute every stream whose own query has a
    checkpoint (it was computed on its own when the server stopped, e.g. split out of a query, even if
    the statement that split it was not persisted) on its own again, upstream first. Returns them."""
    done = []
    for name in list(topology.streams):  # creation order: a stream's inputs come before it
        if name in topology.materialized:
            continue
        chain = graph.plan(name, topology.sources, topology.streams, topology.materialized, consumer=name)
        probe = Consumer(topology, name, "journal", name, chain)
        topology.name_query(probe)
        if probe.checkpoint_dir.is_dir():
            topology.materialize(name)
            done.append(name)
    if done:
        log.info("streams %s of topology '%s' are computed on their own again (their queries' checkpoints)",
                 done, topology.name)
    return done


def split(topology: Any, owner: Any, stream: str) -> bool:
    """Split ``stream`` out of ``owner``'s query (see the module doc); False if it cannot be split."""
    why = _splittable(owner)
    if why is not None:
        log.warning("stream '%s' gains a consumer but %s: the new consumer computes its own copy", stream, why)
        return False
    handle, old_stages, old_ck = owner.handle, list(owner.stage_names), owner.checkpoint_dir
    temporary, owner.temporary = owner.temporary, False  # keep the checkpoint: its state is read below
    _await_replayed(owner, handle)
    _quiesce(owner, handle)
    owner.stop()
    owner.temporary, owner.freezing = temporary, False
    pos, snap = _position_and_state(topology, handle, owner)

    chain = graph.plan(stream, topology.sources, topology.streams, topology.materialized, consumer=stream)
    own = chain.stage_names
    computing = Consumer(topology, stream, "journal", stream, chain)  # names the stream's checkpoint
    topology.name_query(computing)
    topology.materialized.add(stream)
    owner.stopped, owner.handle, owner.last_batch = False, None, None
    owner.chain = topology.plan_chain(owner)
    owner.resume_seq = pos
    owner.initial_state = handoff.split_snapshot(snap, old_stages, owner.stage_names)
    topology.name_query(owner)
    own_state = handoff.split_snapshot(snap, old_stages, own)
    for folder in dict.fromkeys((old_ck, owner.checkpoint_dir, computing.checkpoint_dir)):
        if folder is not None:  # the stopped query's state stores: nothing of them written later
            topology.release_checkpoint(folder)
    prepare(owner.checkpoint_dir, pos, owner.initial_state)
    prepare(computing.checkpoint_dir, pos, own_state)  # the commit point (module doc)

    for name in own:  # before its query starts (its consumer id is the stream's name): its first counts count
        if name in topology.streams:
            topology.streams[name].stats_owner = stream
    started = topology.materialize(stream, pos, own_state)
    topology._start(owner)
    if started.checkpoint_dir != computing.checkpoint_dir:  # planning is deterministic; say so if not
        log.error("stream '%s' split: its query's checkpoint %s is not the prepared %s", stream,
                  started.checkpoint_dir, computing.checkpoint_dir)
    if old_ck is not None and old_ck != owner.checkpoint_dir:
        shutil.rmtree(old_ck, ignore_errors=True)  # released above
    log.info("stream '%s' split out of query '%s' at seq %d", stream, owner.id, pos)
    return True
