"""The driver's side of the native tier: a packed micro-batch back into the consumer's rows.

Every column the executors ship costs the executor→driver Arrow conversion once per row, whether it
holds a value or a NULL (measured: ten columns of which seven are NULL cost 1.8× ``seq`` and ``data``
alone). So ``native_query.pack`` ships three, ``k``, ``seq`` and ``data``:

=================  ==========  ===========  ===================================================
row                ``k``       ``seq``      ``data``
=================  ==========  ===========  ===================================================
native output      NULL        its seq      the output (the sink's line, or tagged JSON)
refused line       ``K_FB``    its seq      the raw line (the kernel decides it here)
skipped line       1 + depth   NULL         NULL (only counted: it passed ``depth`` stages)
any other row      ``K_OTHER`` its seq      JSON of the row's ``OUTPUT_COLUMNS``
=================  ==========  ===========  ===================================================

"Any other row" is what the reader or the Python tiers produced: ``seg`` rows (a block of lines:
``seq`` its first, ``event`` its last, ``ts``, ``input``, ``data`` the file), and the ``out``,
``dropped``, ``stat`` and ``end`` rows of journal rows that are no file lines. A native output's
``ts`` is its block's, rebuilt from the ``seg`` rows; the rest is what the kernel's last stage emits:
``input`` that stage's name, ``idx`` 0, ``node``, ``error`` and ``event`` NULL.

The refused lines are parsed exactly as the file source's reader parses them
(``journal_segments.parse_line``) and run through the chain's pipeline, so their outputs, drops and
errors are the kernel's; everything is merged by ``(seq, idx)``, which restores arrival order.

A large micro-batch for a JSON-lines sink is not collected through Arrow at all when nothing needs that
merge: the executors write its rows and the driver reads the files (``native_written``).
"""
from __future__ import annotations

import logging
import shutil
from collections import Counter
from itertools import pairwise
from typing import Any

import orjson
from sbpy.bql.jsonio import JsonLines

from . import journal_format as jf
from . import journal_segments as js
from . import native_written as nw
from .operator import OUTPUT_COLUMNS
from .query import QuerySpec

log = logging.getLogger("sbpy.native")

K_OTHER = 0
K_FB = 1
SKIP_BASE = 1  # a skipped line's k is SKIP_BASE + the stages it passed (at least one)


class NativeCollector:
    """Turns a packed micro-batch into the consumer's rows: ``EncodedBatch`` (JSON sinks), ``TupleBatch``
    (``QuerySpec.out_rows`` tuples / texts) or ``on_batch``
    dicts, in arrival order, with the ``stat`` rows of what the native tier decided first."""

    def __init__(self, spec: QuerySpec):
        self.spec = spec
        self.nodes = [s.node for s in spec.stages]
        self.inputs = [s.inputs[0] for s in spec.stages]
        self.incomplete = False  # a written batch lacked files: the query collects through Arrow from then on

    def __call__(self, batch_df: Any, batch_id: int) -> Any:
        if self.spec.out_format == "json" and not self.incomplete and self._large(batch_id):
            written = self._written(batch_df)
            if written is not None:
                return written
        return self._collected(batch_df)

    def _large(self, batch_id: int) -> bool:
        """Whether batch ``batch_id`` covers at least ``WRITE_MIN_SEQS`` journal seqs (offset log)."""
        from .driver_query import batch_range

        seqs = batch_range(self.spec.checkpoint_dir, batch_id)
        return seqs is not None and seqs[1] - seqs[0] >= nw.WRITE_MIN_SEQS

    def _written(self, batch_df: Any) -> Any:
        """The batch written by the executors and read back (``native_written``), or None where the
        driver must merge rows by seq (refused lines, Python-tier outputs, blocks out of order)."""
        folder = nw.batch_folder(self.spec.checkpoint_dir)
        try:
            files = nw.write_rows(batch_df, folder)
            if not nw.complete(files, nw.partitions_to_check(batch_df)):
                log.warning("query '%s': a written batch lacks partitions' files (executors writing to disks "
                            "of their own?): its batches are collected through Arrow", self.spec.query_id)
                self.incomplete = True
                return None
            rows = nw.read_rows(files)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        texts: list[str] = []
        depths: Counter[int] = Counter()
        for row in rows.marked:
            k = row.get("k")
            if k is None:
                raise ValueError("a native output line is NULL")
            if k == K_OTHER:
                texts.append(row["data"])
            elif k == K_FB:
                return None
            else:
                depths[k - SKIP_BASE] += 1
        segs, others = _split_others(texts)  # the seg rows in file order
        if any(r["kind"] == "out" for r in others) or any(a["seq"] >= b["seq"] for a, b in pairwise(segs)):
            return None
        return _lines_batch(rows.lines, self._native_stats(len(rows.lines), depths, segs, 0), others)

    def _collected(self, batch_df: Any) -> Any:
        """The batch through Arrow (``toArrow``), merged by ``(seq, idx)`` on the driver."""
        import pyarrow.compute as pc

        table = batch_df.toArrow()
        k = table.column("k")
        segs, others = _split_others(table.filter(pc.equal(k, K_OTHER)).column("data").to_pylist())
        segs.sort(key=lambda r: r["seq"])
        fb = table.filter(pc.equal(k, K_FB))
        skipped = pc.value_counts(pc.subtract(k.filter(pc.greater(k, SKIP_BASE)), SKIP_BASE))
        depths = dict(zip(skipped.field("values").to_pylist(), skipped.field("counts").to_pylist()))
        stats = self._native_stats(pc.sum(pc.is_null(k)).as_py() or 0, depths, segs, fb.num_rows)
        outs = _in_order(table.filter(pc.is_null(k)))
        json = self.spec.out_format == "json"
        if json and not fb.num_rows and not any(r["kind"] == "out" for r in others):
            return _lines_batch(_json_lines(outs.column("data")), stats, others)
        rows = _native_rows(outs, segs, self.nodes[-1]) + [tuple(r[c] for c in OUTPUT_COLUMNS) for r in others]
        rows.extend(self._fallback(fb, segs))
        rows.sort(key=lambda r: (r[2], r[3]))
        if not json and self.spec.out_rows == "dicts":
            return stats + _decoded([dict(zip(OUTPUT_COLUMNS, r)) for r in rows])
        from .batch_rows import EncodedBatch, pairs_batch

        # the out rows apart: a JSON sink's lines, or ``QuerySpec.out_rows``' (ts, data) pairs
        outs = [r for r in rows if r[0] == "out"]
        others = stats + _decoded([dict(zip(OUTPUT_COLUMNS, r)) for r in rows if r[0] != "out"])
        if json:
            return EncodedBatch([r[5] for r in outs], others)
        return pairs_batch([r[4] for r in outs], [r[5] for r in outs], others, self.spec.out_rows == "texts",
                           shared=False)  # read through Arrow (a row's text its own object)

    def _native_stats(self, full: int, depths: dict[int, int], segs: list[dict[str, Any]],
                      refused: int) -> list[dict[str, Any]]:
        """``stat`` rows of the lines the native tier decided: every line of the blocks read but the
        refused ones entered the first stage; ``full`` outputs passed every stage, ``depths[j]`` skipped
        lines passed ``j`` stages."""
        lines = sum(int(s["event"]) - s["seq"] + 1 for s in segs)
        decided = lines - refused
        if decided <= 0:
            return []
        counts = [decided]
        for j in range(1, len(self.nodes) + 1):  # entered stage j + 1: outputs and lines past j stages
            counts.append(full + sum(n for depth, n in depths.items() if depth >= j))
        stats = []
        for j, node in enumerate(self.nodes):
            if counts[j]:
                data = {"received": {self.inputs[j]: counts[j]}, "sent": counts[j + 1], "dropped": 0}
                stats.append(dict(zip(OUTPUT_COLUMNS, ("stat", node, 0, 0, 0, data, None, None, None))))
        return stats

    def _fallback(self, fb: Any, segs: list[dict[str, Any]]) -> list[tuple]:
        """What the chain's pipeline (on the driver) makes of the refused lines, as ``OUTPUT_COLUMNS`` tuples."""
        from .stateless_query import chain_pipeline, run_rows

        if not fb.num_rows:
            return []
        block = _blocks(fb.column("seq"), segs)
        journal_rows = []
        for seq, line, b in zip(fb.column("seq").to_pylist(), fb.column("data").to_pylist(), block):
            seg = segs[b] if b >= 0 else {"ts": 0, "input": None, "data": "?", "idx": 0}
            row = fallback_row(seq, seg["input"], seg["ts"], line, seg["data"], seg["idx"])
            if row is not None:
                journal_rows.append(row)
        if not journal_rows:
            return []
        spec = self.spec
        pipeline = chain_pipeline(spec.query_id + "/driver", spec.stages, spec.topology, spec.out_format)
        return run_rows(pipeline, journal_rows)


def _split_others(texts: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``K_OTHER`` rows (their ``data``) as ``OUTPUT_COLUMNS`` dicts: the ``seg`` rows and the rest, each
    in the given order."""
    rows = [_other(text) for text in texts]
    return [r for r in rows if r["kind"] == "seg"], [r for r in rows if r["kind"] != "seg"]


def _lines_batch(lines: Any, stats: list[dict[str, Any]], others: list[dict[str, Any]]) -> Any:
    """A JSON sink's batch whose outputs are all native (``lines``, in arrival order): the ``stat`` rows,
    then the other rows by ``(seq, idx)``."""
    from .batch_rows import EncodedBatch

    return EncodedBatch(lines, stats + _decoded(sorted(others, key=_order)))


def _other(text: str) -> dict[str, Any]:
    """A ``K_OTHER`` row's ``OUTPUT_COLUMNS`` (``to_json`` leaves NULL fields out)."""
    row = orjson.loads(text)
    return {c: row.get(c) for c in OUTPUT_COLUMNS}


def _order(row: dict[str, Any]) -> tuple[int, int]:
    return row["seq"], row["idx"]


def _blocks(seq: Any, segs: list[dict[str, Any]]) -> Any:
    """For each seq, the index of the ``seg`` block holding it (blocks sorted by first seq; -1: none)."""
    import numpy as np

    firsts = np.array([s["seq"] for s in segs], dtype=np.int64)
    return np.searchsorted(firsts, seq.to_numpy(zero_copy_only=False), side="right") - 1


def _native_rows(outs: Any, segs: list[dict[str, Any]], input_name: str) -> list[tuple]:
    """The native outputs as ``OUTPUT_COLUMNS`` tuples, as the kernel's last stage emits them: ``ts``
    their block's, ``input`` that stage's name."""
    if not outs.num_rows:
        return []
    seqs = outs.column("seq").to_pylist()
    block = _blocks(outs.column("seq"), segs).tolist()
    ts = [s["ts"] for s in segs]
    data = outs.column("data").to_pylist()
    return [("out", None, seq, 0, ts[b], d, None, input_name, None) for seq, b, d in zip(seqs, block, data)]


def _json_lines(column: Any) -> JsonLines:
    """The sink lines of a string column (each value a line without its newline), as ``JsonLines`` over
    Arrow value buffers (the newlines added in one vectorized step, no per-line Python step)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        raise ValueError("a native output line is NULL")
    column = pc.binary_join_element_wise(column, pa.scalar("", column.type), pa.scalar("\n", column.type))
    parts = []
    for chunk in column.chunks:
        n = len(chunk)
        if not n:
            continue
        if chunk.null_count:
            raise ValueError("a native output line is NULL")
        _validity, offsets, values = chunk.buffers()
        dtype = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        at = np.frombuffer(offsets, dtype=dtype, count=chunk.offset + n + 1)
        parts.append(memoryview(values)[int(at[chunk.offset]):int(at[chunk.offset + n])])
    return JsonLines(parts, len(column))


def _in_order(table: Any) -> Any:
    """``table`` sorted by ``seq``; as it is when its seqs already increase (the usual case: partitions
    come in seq order, and a partition's lines in the order of its blocks)."""
    import pyarrow.compute as pc

    if table.num_rows < 2:
        return table
    seq = table.column("seq").combine_chunks()
    if pc.all(pc.greater(seq.slice(1), seq.slice(0, len(seq) - 1))).as_py():
        return table
    return table.take(pc.sort_indices(table, [("seq", "ascending")]))


def _decoded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``on_batch`` dicts with their tagged-JSON ``data`` decoded (as ``query._collect`` gives them)."""
    for row in rows:
        if row["data"] is not None:
            row["data"] = jf.decode_data(row["data"])
    return rows


def fallback_row(seq: int, input_name: str, ts: int, line: str, path: str, line0: int) -> tuple | None:
    """The journal row of one refused line, as ``journal_segments.expand`` makes it (None: blank)."""
    raw = line.encode("utf-8").strip()
    if not raw:
        return None
    try:
        _value, text = js.parse_line(raw)
    except ValueError as e:
        return (seq, input_name, ts, None, False, f"file source: {path}:{line0 + seq}: {e}")
    return (seq, input_name, ts, text, False, None)
