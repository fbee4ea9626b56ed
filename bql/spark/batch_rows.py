"""What a query's ``on_batch`` callback receives besides a list of row dicts (``query._collect``): the
``out`` rows in the form their consumer reads them, every other row (``stat``, ``dropped``, ``end``) as
an ``on_batch`` dict. ``server/nodes/consumer.py`` reads both."""
from __future__ import annotations

from typing import Any


class EncodedBatch:
    """A micro-batch whose ``out`` rows are already the sink's JSON lines: ``lines`` (in arrival order)
    and every other row (``stat``, ``dropped``, ``end``) as ``on_batch`` dicts, in order."""

    def __init__(self, lines: list[str], others: list[dict[str, Any]]):
        self.lines = lines
        self.others = others


class TupleBatch:
    """A micro-batch whose ``out`` rows are ``(ts_us, data)`` pairs in arrival order — ``data`` a decoded
    map, or with ``encoded`` its tagged-JSON text (for a journal: ``JournalWriter.append_encoded``) — and
    every other row (``stat``, ``dropped``, ``end``) as ``on_batch`` dicts, in order: what a consumer reads
    of an ``out`` row, without a dict of every column per row."""

    def __init__(self, outs: list[tuple[int, Any]], others: list[dict[str, Any]], encoded: bool = False):
        self.outs = outs
        self.others = others
        self.encoded = encoded
