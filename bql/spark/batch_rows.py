"""What a query's ``on_batch`` callback receives besides a list of row dicts (``query._collect``): the
``out`` rows in the form their consumer reads them, every other row (``stat``, ``dropped``, ``end``) as
an ``on_batch`` dict. ``server/nodes/consumer.py`` reads both."""
from __future__ import annotations

from typing import Any

from sbpy.bql.runtime.incremental.relation import is_flat

from . import journal_format as jf


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


def pairs_batch(stamps: list[int], texts: list[str], others: list[dict[str, Any]], encoded: bool,
                shared: bool = True) -> TupleBatch:
    """A ``TupleBatch`` of the ``out`` rows whose times are ``stamps`` and tagged JSON ``texts``: the texts
    decoded (``decoded_maps``; ``shared`` False: texts read back through Arrow, each its own object, decoded
    each without looking for a text held twice — ~1.3 µs a row less), or with ``encoded`` kept as they
    are."""
    if encoded:
        return TupleBatch(list(zip(stamps, texts)), others, True)
    if shared:
        return TupleBatch(list(zip(stamps, decoded_maps(texts))), others, False)
    decode = jf.decode_data
    return TupleBatch([(ts, None if text is None else decode(text)) for ts, text in zip(stamps, texts)],
                      others, False)


def decoded_maps(texts: list[str | None]) -> list[Any]:
    """Each tagged-JSON text decoded (None stays None). A text the batch holds more than once as one object
    (a map the pipeline emitted again, its text reused: ``Pipeline._flush``) is decoded once; each later
    row gets its own copy of that map when it holds no map or array (``is_flat``: a ``dict.copy`` is then
    a copy), else decodes it again."""
    out: list[Any] = []
    seen: dict[int, tuple[str, dict[str, Any]]] = {}
    for text in texts:
        if text is None:
            out.append(None)
            continue
        hit = seen.get(id(text))
        if hit is not None and hit[0] is text:
            out.append(hit[1].copy())
            continue
        data = jf.decode_data(text)
        if type(data) is dict and is_flat(data):
            seen[id(text)] = (text, data.copy())
        out.append(data)
    return out
