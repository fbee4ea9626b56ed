"""``WAIT IF FULL`` (the default drop mode): a source is held back while a reader's backlog is full.

In SensorBee every input of a box has a queue of ``BUFFER SIZE`` tuples (default 1024); with ``WAIT``
a sender blocks while the queue is full. Here the journal is the queue and a query takes its input a
micro-batch at a time: the tuples of a source a query has *taken* are those up to the end of its newest
planned batch (``checkpoint_positions.planned_after``; Spark logs a batch's end offset before it runs
it), and the source's tuples after that position are the query's backlog — what sits in its buffer.

``Backpressure.room()`` is, over the queries reading the source with a ``WAIT`` buffer, the smallest
``buffer size - backlog`` (None when no query holds the source back). The source's context commits at
most that many buffered tuples and waits (``wait_for_room``) while it is 0, so a query's backlog never
exceeds its buffer.

A ``file`` source's chunks journaled by reference (segments) are held against a larger buffer:
``SEGMENT_BACKLOG`` lines (the native tier's micro-batch admission limit, ``native_source.MAX_SEQS``:
a file of that many lines read at once is one micro-batch there), or the query's buffer if larger; a chunk is admitted whole once there is room. Holding them at 1024 lines would
only cut the query's batches to one chunk each (a fixed cost per micro-batch for nothing: a chunk costs
the journal ~200 bytes, its lines stay in the file), while an endless ``repeat = -1`` source is still
bounded.

Which queries hold a source back: a live consumer (started, neither stopped nor done) whose chain reads
the source (``chain.inputs``) and whose query has pinned its checkpoint (its position is known); the
buffer is the smallest ``WAIT`` buffer of the FROM items reading the source in its stages
(``buffers.wait_buffers``), or ``DEFAULT_BUFFER_SIZE`` when no FROM item reads it (a sink fed by the
source, a UDSF's input). FROM items that all ``DROP OLDEST|NEWEST`` do not hold it back: they drop
(``buffers.overflow``), as before. A source nobody reads is never held back.
"""
from __future__ import annotations

import functools
from typing import Any

from sbpy.bql.spark.buffers import DEFAULT_BUFFER_SIZE, wait_buffers
from sbpy.bql.spark.checkpoint_positions import planned_after

POLL = 0.01  # seconds between two looks at the readers' checkpoints while the source waits
SEGMENT_BACKLOG = 2_000_000  # lines: the buffer a file segment is held against (module doc)


@functools.lru_cache(maxsize=256)
def _stage_waits(text: str) -> dict[str, int | None]:
    try:
        return wait_buffers(text)
    except Exception:  # noqa: BLE001 - a stage text the parser refuses holds nothing back
        return {}


def wait_size(chain: Any, source: str) -> int | None:
    """The ``WAIT`` buffer with which ``chain`` reads ``source`` (None: it does not hold it back)."""
    if chain is None or source not in chain.inputs:
        return None
    sizes: list[int] = []
    read = False
    for _name, text, inputs in chain.stages:
        if source not in inputs:
            continue
        waits = _stage_waits(text)
        if source in waits:
            read = True
            if waits[source] is not None:
                sizes.append(waits[source])
    if not read:
        return DEFAULT_BUFFER_SIZE
    return min(sizes) if sizes else None


class Backpressure:
    """The WAIT buffers of one source's readers (see the module doc)."""

    def __init__(self, topology: Any, source: str):
        self.topology = topology
        self.source = source
        self._positions: dict[str, int] = {}  # consumer id -> its last known planned position

    def _readers(self) -> list[tuple[Any, int]]:
        out = []
        for c in list(self.topology.consumers.values()):
            if c.handle is None or c.stopped or c.done or c.checkpoint_dir is None:
                continue
            size = wait_size(c.chain, self.source)
            if size is not None:
                out.append((c, size))
        return out

    def room(self, refresh: bool = False, at_least: int = 0) -> int | None:
        """How many more tuples the source may commit now (None: no limit). ``refresh``: read every
        reader's position from its checkpoint (otherwise only when the remembered one leaves no room);
        ``at_least``: a buffer smaller than this counts as this large (segments)."""
        journal = self.topology.journal
        room: int | None = None
        lowest: int | None = None
        readers = self._readers()
        for cid in [cid for cid in self._positions if cid not in {c.id for c, _ in readers}]:
            del self._positions[cid]
        for c, size in readers:
            size = max(size, at_least)
            pos = None if refresh else self._positions.get(c.id)
            free = size - journal.backlog(self.source, pos) if pos is not None else 0
            if free <= 0:
                pos = planned_after(c.checkpoint_dir)
                if pos is None:  # not pinned yet (or a stand-in runner without a checkpoint)
                    continue
                self._positions[c.id] = pos
                free = size - journal.backlog(self.source, pos)
            room = free if room is None else min(room, free)
            lowest = pos if lowest is None else min(lowest, pos)
        if lowest is not None:
            journal.forget_marks(self.source, lowest)
        return None if room is None else max(room, 0)

    def wait_for_room(self, stop: Any, at_least: int = 0) -> int | None:
        """Block while the room is 0 (looking again every ``POLL`` s); returns it (None: no limit).
        ``stop`` (a ``threading.Event``) ends the wait early: 0. ``at_least``: see ``room``."""
        room = self.room(at_least=at_least)
        while room == 0:
            if stop.wait(POLL):
                return 0
            room = self.room(refresh=True, at_least=at_least)
        return room
