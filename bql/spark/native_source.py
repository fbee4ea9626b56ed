"""``sbpy_native``: the journal source of the native tier — a file segment's raw lines, handed to the JVM.

Same options, offsets and seq-range partitions as ``sbpy_stateless`` (whose chain option it takes too).
What a partition yields, in ``OUTPUT_SCHEMA``:

- for each file segment (``journal_segments``) without ``timestamp_field``: one ``line`` row per line of
  its range — ``seq``, ``ts`` (the segment's), ``input``, ``data`` = the line's text with its newline —
  built without a per-line Python step (newline offsets found with numpy, the chunk's bytes used as the
  Arrow string buffer), plus one ``seg`` row (``seq`` = the range's first seq, ``data`` = the file's
  path, ``idx`` = the line number of seq 0) that the driver needs only to name a refused line;
- everything else (tuples journaled by other sources, end markers, segments with ``timestamp_field``,
  a chunk that is not valid UTF-8 or no longer on disk) runs through the chain's Python pipeline right
  here, exactly as in ``sbpy_stateless``, and yields that pipeline's rows (``out``/``dropped``/``stat``/
  ``end``).

The ``line`` rows are then classified by the chain's Spark expressions (``native_query``).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from . import journal_format as jf
from . import journal_segments as js
from .operator import OUTPUT_COLUMNS
from .stateless_source import StatelessDataSource, StatelessStreamReader, decode_chain, record_batches

NAME = "sbpy_native"


class LineBlock(NamedTuple):
    """Lines ``first .. last`` of a segment entry at ``seq0`` (sorts with journal rows by its first seq)."""

    first: int
    input: str
    ts: int
    chunk: bytes
    seq0: int
    last: int
    path: str
    line0: int  # the file line number of seq 0: line = line0 + seq
    seg: dict  # the segment entry (to read it the Python way after all)


def line_blocks(seq: int, ts_us: int, seg: dict[str, Any], input_name: str, after: int, upto: int) -> list:
    """A ``journal_format`` segment expander: a ``LineBlock`` where the raw lines can go to the JVM,
    ``journal_segments.expand``'s rows otherwise."""
    first, last = max(seq, after + 1), min(js.last_seq(seq, seg), upto)
    if first > last:
        return []
    chunk = None if seg.get("tsf") else js.read_chunk(seg)
    if chunk is None:
        return js.expand(seq, ts_us, seg, input_name, after, upto)
    return [LineBlock(first, input_name, ts_us, chunk, seq, last, seg["path"], int(seg["line"]) - seq, seg)]


def _repeat(text: str, n: int) -> Any:
    """A string array of ``n`` copies of ``text`` (built from buffers, no Python list)."""
    import numpy as np
    import pyarrow as pa

    raw = text.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(raw * n))


def block_batch(block: LineBlock) -> Any | None:
    """The ``line`` rows of a block as one Arrow record batch; None when the chunk is not valid UTF-8."""
    import numpy as np
    import pyarrow as pa

    chunk = block.chunk
    newlines = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
    starts = np.concatenate(([0], newlines + 1)).astype(np.int32)
    ends = np.append(newlines + 1, len(chunk)).astype(np.int32)  # each line with its newline
    i0, i1 = block.first - block.seq0, block.last - block.seq0
    n = i1 - i0 + 1
    offsets = np.append(starts[i0:i1 + 1], ends[i1]).astype(np.int32)
    lines = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(chunk))
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:
        return None
    columns = {
        "kind": _repeat("line", n), "node": pa.nulls(n, pa.string()),
        "seq": pa.array(np.arange(block.first, block.last + 1, dtype=np.int64)),
        "idx": pa.array(np.zeros(n, dtype=np.int64)), "ts": pa.array(np.full(n, block.ts, dtype=np.int64)),
        "data": lines, "error": pa.nulls(n, pa.string()), "input": _repeat(block.input, n),
        "event": pa.nulls(n, pa.string()),
    }
    return pa.RecordBatch.from_arrays([columns[c] for c in OUTPUT_COLUMNS], names=OUTPUT_COLUMNS)


def seg_row(block: LineBlock) -> tuple:
    """The ``seg`` row naming a block's file (``OUTPUT_COLUMNS`` order)."""
    return ("seg", None, block.first, block.line0, block.ts, block.path, None, block.input, str(block.last))


class NativeStreamReader(StatelessStreamReader):
    """``StatelessStreamReader`` whose segments yield raw ``line`` rows (see the module docstring)."""

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from .stateless_query import chain_pipeline, run_rows

        rows = jf.read_entries(self.dir, self.inputs, partition.after, partition.upto,  # type: ignore[attr-defined]
                               expand=line_blocks)
        python_rows: list[tuple] = []
        batches: list[Any] = []
        metas: list[tuple] = []
        for row in rows:
            if type(row) is LineBlock:
                batch = block_batch(row)
                if batch is None:  # not UTF-8: the Python path decides (and reports) line by line
                    python_rows.extend(js.expand(row.seq0, row.ts, row.seg, row.input, row.first - 1, row.last))
                    continue
                batches.append(batch)
                metas.append(seg_row(row))
            else:
                python_rows.append(row)
        out = list(metas)
        if python_rows:
            query_id, out_format, topology, stages = decode_chain(self.chain)
            pipeline = chain_pipeline(query_id, stages, topology, out_format)
            out.extend(run_rows(pipeline, python_rows))
        yield from record_batches(out) if out else ()
        yield from batches


class NativeDataSource(StatelessDataSource):
    """The ``sbpy_native`` streaming source (read-only)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return NativeStreamReader(dict(self.options))


def register(spark: Any) -> None:
    """Register ``sbpy_native`` with a session (idempotent)."""
    spark.dataSource.register(NativeDataSource)
