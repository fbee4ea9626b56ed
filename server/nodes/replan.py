"""Re-planning: a stream fused into a running query gains another consumer.

SensorBee computes a stream once however many nodes read it, so a later consumer must not compute its
own copy. The query that has the stream fused (the *owner*) is stopped at a batch boundary; from its
last committed journal position and its operator state (``bql/spark/handoff.py``) two queries continue:
one computing the stream (its output journaled, as for any stream with several consumers) and the owner
re-planned to read the stream's journal. Each starts from the owner's position with the processor
snapshots of its own stages, so windows, emitters and counters go on as if nothing happened; the stream's
outputs for the tuples between that position and the journal HEAD are journaled after HEAD, which the
new consumer (starting at HEAD) also sees — it starts from the stream's current output.

The owner's old checkpoint is removed once both queries run; their checkpoints are named by their chains
(``Topology._start``), so a server restart plans the same chains and resumes from them.

An owner that runs on the driver (UDS-backed calls) hands over the snapshot file of its last batch
(``driver_query.DriverPipeline``). Owners with a keyed MATCH_RECOGNIZE plan are not split (their
state is spread over partitions; the new consumer computes its own copy, as before); this is logged.
"""
from __future__ import annotations

import logging
import shutil
import time
from typing import Any

from sbpy.bql.spark import handoff
from sbpy.bql.spark.driver_query import STATE_DIR

from . import graph

log = logging.getLogger("sbpy.runtime")


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


def _position_and_state(topology: Any, handle: Any, owner: Any) -> tuple[int, bytes | None]:
    """Where the stopped owner's query got to and its pipeline snapshot there."""
    if hasattr(handle, "handoff"):  # a runner that knows both itself (the in-process stand-in of tests)
        return handle.handoff()
    batch = owner.last_batch  # the last batch whose rows the consumer fully handled
    pos = handoff.position(owner.checkpoint_dir, batch)
    if pos is None:
        return topology.journal.head, None
    if batch is None:
        return pos, None
    if owner.on_driver:
        path = owner.checkpoint_dir / STATE_DIR / f"{batch}.snap"
        return pos, path.read_bytes() if path.exists() else None
    return pos, handoff.read_snapshot(topology.context.spark(), owner.checkpoint_dir, batch)


def split(topology: Any, owner: Any, stream: str) -> bool:
    """Split ``stream`` out of ``owner``'s query (see the module doc); False if it cannot be split."""
    why = _splittable(owner)
    if why is not None:
        log.warning("stream '%s' gains a consumer but %s: the new consumer computes its own copy", stream, why)
        return False
    handle, old_stages, old_ck = owner.handle, list(owner.stage_names), owner.checkpoint_dir
    temporary, owner.temporary = owner.temporary, False  # keep the checkpoint: its state is read below
    _quiesce(owner, handle)
    owner.stop()
    owner.temporary, owner.freezing = temporary, False
    pos, snap = _position_and_state(topology, handle, owner)

    own = graph.plan(stream, topology.sources, topology.streams, topology.materialized, consumer=stream).stage_names
    for name in own:  # before its query starts (its consumer id is the stream's name): its first counts count
        if name in topology.streams:
            topology.streams[name].stats_owner = stream
    topology.materialize(stream, pos, handoff.split_snapshot(snap, old_stages, own))

    owner.stopped, owner.handle, owner.last_batch = False, None, None
    owner.chain = topology.plan_chain(owner)
    owner.resume_seq = pos
    owner.initial_state = handoff.split_snapshot(snap, old_stages, owner.stage_names)
    topology._start(owner)
    if old_ck is not None and old_ck != owner.checkpoint_dir:
        shutil.rmtree(old_ck, ignore_errors=True)
    log.info("stream '%s' split out of query '%s' at seq %d", stream, owner.id, pos)
    return True
