"""When a topology's journal may be pruned: per node log, the lowest position any of its readers may
still read after.

The journal is the durable queue between a topology's sources (and materialized streams) and its
queries. An entry may go once no reader will ever ask for it again, in this run or after a restart.
A consumer reads only its chain's inputs (``chain.inputs``), so each node log has its own floor: the
lowest position of its readers; a log nobody reads keeps only its newest file. A reader's position:

- a consumer whose query has a checkpoint resumes, after a crash or a restart, from the end of its
  newest *committed* batch (Spark re-runs an uncommitted batch from there; so does a keyed plan's
  sub-folder query): ``checkpoint_positions.needed_after``;
- a consumer being started (no checkpoint pinned yet) reads after its ``start_seq``/``resume_seq``; one
  not started yet (``start_seq`` still 0) holds everything back;
- a consumer that will never read again (its input ended before it started, no checkpoint) holds
  nothing;
- a new consumer starts at the journal HEAD (``Topology._start``), so it needs nothing older, and a
  re-planned one resumes from its owner's position, which the owner's checkpoint holds until the new
  queries have pinned theirs; a rewindable source re-reads its *file*, never the journal.

While persisted statements are replayed (``recovering``/``defer_consumers``) the consumers are not
attached yet, so nothing is pruned; nor while a statement runs (the topology's statement lock is held:
a re-plan moves an input from one query to another, an attach or detach changes the readers) — the
floors are computed and the files deleted under that lock. A checkpoint folder no consumer of the running topology owns
(left by a plan that is no more) does not hold the journal back.

A source created ``WITH history = n`` (``server/history.py``) keeps its last ``n`` tuples for
``table()`` whatever its readers' positions: ``JournalWriter.prune`` lowers each node's floor to its
``history_floor`` (and to the range of a ``table()`` read in progress), so these floors need not know.

``maybe_prune(topology)`` is called after each source commit and each consumer micro-batch; the journal
throttles it (``JournalWriter.prune_due``: a closed file exists, at most every ``PRUNE_EVERY`` s). A query
that ends by itself (its input ended) prunes once more, unthrottled, after it stopped
(``Consumer.stop_later``): its own micro-batches prune before Spark commits them.
"""
from __future__ import annotations

import logging
from typing import Any

from sbpy.bql.spark.checkpoint_positions import needed_after

log = logging.getLogger("sbpy.journal")


def consumer_floor(consumer: Any) -> int | None:
    """The lowest seq after which ``consumer`` may still read (None: it never reads again)."""
    ck = consumer.checkpoint_dir
    if ck is not None:
        pos = needed_after(ck)
        if pos is not None:
            return pos
    if consumer.handle is None and (consumer.done or consumer.stopped):
        return None
    return consumer.resume_seq if consumer.resume_seq is not None else consumer.start_seq


def prune_floors(topology: Any) -> dict[str, int] | None:
    """Per journal node, the seq at and below which no consumer of ``topology`` reads it (a consumer
    reads only its chain's inputs); a node no consumer reads is not listed (its floor is the HEAD).
    None: do not prune now."""
    if topology.recovering or topology.defer_consumers:
        return None
    floors: dict[str, int] = {}
    for consumer in list(topology.consumers.values()):
        if consumer.deferred or consumer.chain is None:
            return None
        pos = consumer_floor(consumer)
        if pos is None:
            continue
        for name in consumer.chain.inputs:
            floors[name] = min(floors.get(name, pos), pos)
    return floors


def maybe_prune(topology: Any, force: bool = False) -> int:
    """Prune ``topology``'s journal below its floors if due (``force``: whenever a closed file exists, as
    after a query's last commit); returns the bytes freed."""
    journal = topology.journal
    if not journal.prune_due(force):
        return 0
    lock = topology._lock  # the statement lock: consumers are attached, re-planned and detached under it
    if not lock.acquire(blocking=False):
        return 0  # a statement is changing the consumers (a re-plan moves an input between queries)
    try:
        floors = prune_floors(topology)
        if floors is None:
            return 0
        return journal.prune(floors, journal.head)
    except OSError as e:  # a full or read-only disk: keep running, try again later
        log.warning("topology '%s': pruning the journal failed: %s", topology.name, e)
        return 0
    finally:
        lock.release()
