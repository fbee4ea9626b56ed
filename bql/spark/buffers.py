"""``BUFFER SIZE n, DROP OLDEST|DROP NEWEST IF FULL``: bounded input queues in front of a micro-batch.

SensorBee gives each input of a box a queue of ``BUFFER SIZE`` tuples (default 1024); when it is full
the sender waits (``WAIT IF FULL``, the default), or the oldest queued tuple (``DROP OLDEST``) or the
arriving one (``DROP NEWEST``) is dropped. On Spark a stage has no queue: the tuples of one input that
arrived since the last micro-batch are what would have queued up while the stage was busy, so the
operator admits at most ``n`` of them per batch and input — the newest ``n`` (DROP OLDEST) or the
oldest ``n`` (DROP NEWEST) — and reports the rest as dropped input tuples. ``WAIT`` (the default) never
drops: the journal is the durable queue, and the *source* is held back while the tuples a reading query
has not taken yet exceed the buffer (``wait_buffers`` gives the sizes; ``server/nodes/backpressure.py``
holds the source). Outputs of a fused upstream stage are delivered at once, tuple by tuple, so only
journal inputs can overflow. As in SensorBee, drops happen only under load.

A stage with several FROM items over one input (a self-join) gets the smallest dropping buffer of them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_BUFFER_SIZE = 1024  # SensorBee's default; ``BUFFER SIZE 0`` means it too


@dataclass(frozen=True)
class Buffer:
    size: int
    mode: str  # "drop_oldest" | "drop_newest"

    def describe(self) -> str:
        mode = "DROP OLDEST" if self.mode == "drop_oldest" else "DROP NEWEST"
        return f"BUFFER SIZE {self.size}, {mode} IF FULL"


def stream_refs(stmt: Any) -> list[Any]:
    """The windowed stream references of a SELECT, SELECT UNION or CREATE STREAM (a MATCH_RECOGNIZE's
    input included), in FROM order."""
    from sbpy.bql.ast import CreateStreamAsSelect, MatchRecognize, SelectUnion, StreamRef, SubqueryRef

    if isinstance(stmt, CreateStreamAsSelect):
        stmt = stmt.select
    selects = stmt.selects if isinstance(stmt, SelectUnion) else (stmt,)
    refs = []
    for select in selects:
        for item in getattr(select, "from_items", ()):
            if isinstance(item, MatchRecognize):
                item = item.input
            if isinstance(item, SubqueryRef):  # its SELECT's references read the journal
                refs += stream_refs(item.select)
            if isinstance(item, StreamRef):
                refs.append(item)
    return refs


def stage_buffers(bql_text: str) -> dict[str, Buffer]:
    """The dropping buffers of a stage's journal-facing inputs, by input name (lower-case)."""
    if not bql_text:
        return {}
    from sbpy.bql.parser import parse_one

    out: dict[str, Buffer] = {}
    for ref in stream_refs(parse_one(bql_text)):
        window = ref.window
        if window is None or window.drop_mode not in ("drop_oldest", "drop_newest"):
            continue
        size = window.buffer_size or DEFAULT_BUFFER_SIZE
        name = ref.name.lower()
        if name not in out or size < out[name].size:
            out[name] = Buffer(size, window.drop_mode)
    return out


def overflow(seqs_by_input: dict[str, Sequence[int]], buffers: dict[str, Buffer]) -> dict[int, Buffer]:
    """The seqs a stage must not admit this batch (each with the buffer that dropped it).

    ``seqs_by_input``: per input, the batch's seqs of that input in arrival order."""
    dropped: dict[int, Buffer] = {}
    for name, buf in buffers.items():
        seqs = seqs_by_input.get(name, ())
        excess = len(seqs) - buf.size
        if excess <= 0:
            continue
        victims = seqs[:excess] if buf.mode == "drop_oldest" else seqs[buf.size:]
        for seq in victims:
            dropped[seq] = buf
    return dropped


def wait_buffers(bql_text: str) -> dict[str, int | None]:
    """Per journal-facing input (lower-case) of a stage: the smallest ``WAIT`` buffer reading it, or
    None when every FROM item reading it drops instead (``DROP OLDEST|NEWEST``). An input read only
    through something else (a UDSF's argument) is not listed."""
    if not bql_text:
        return {}
    from sbpy.bql.parser import parse_one

    out: dict[str, int | None] = {}
    for ref in stream_refs(parse_one(bql_text)):
        window = ref.window
        name = ref.name.lower()
        if window is not None and window.drop_mode in ("drop_oldest", "drop_newest"):
            out.setdefault(name, None)
            continue
        size = (window.buffer_size if window is not None else None) or DEFAULT_BUFFER_SIZE
        known = out.get(name)
        out[name] = size if known is None else min(known, size)
    return out
