"""``sbpy_native``: the journal source of the native tier — a file segment's lines, handed to the JVM.

Same options, offsets and seq-range partitions as ``sbpy_stateless`` (whose chain option it takes too).
What a partition yields, in ``OUTPUT_SCHEMA``, for each file segment (``journal_segments``) without
``timestamp_field`` whose bytes are still on disk as journaled (length and CRC: ``read_chunk``):

- option ``lines=jvm`` and the segment's bytes are valid UTF-8: one ``lines`` *descriptor* row —
  ``seq`` = the block's first seq, ``ts``, ``input``, ``data`` = the file's path, ``event`` =
  ``"start,end,crc,n,skip,count"`` (``descriptor_row``) — that ``native_query.expand_lines`` turns into
  the block's ``line`` rows in the JVM (``sbpy_file_lines``, ``java/FileLines.java``: the same bytes read
  again on the executor, checked against the descriptor, split exactly as below). No line passes
  through Python;
- otherwise (``lines=arrow``, the default, or a segment with bytes that are not UTF-8): one ``line``
  row per line of its range — ``seq``, ``ts`` (the segment's), ``input``, ``data`` = the line's text
  with its newline (split at ``\n`` only: a ``\r`` stays in the line; the last line may lack its
  newline) — built without a per-line Python step (newline offsets found with numpy, the chunk's bytes
  used as the Arrow string buffer); a block whose own lines are not valid UTF-8 runs the Python way;
- in both cases one ``seg`` row (``seq`` = the range's first seq, ``data`` = the file's path, ``idx``
  = the line number of seq 0, ``event`` = the range's last seq) that the driver needs to count the
  lines read and to name a refused line.

Everything else (tuples journaled by other sources, end markers, segments with ``timestamp_field``, a
segment no longer on disk as journaled) runs through the chain's Python pipeline right here, exactly as
in ``sbpy_stateless``, and yields that pipeline's rows (``out``/``dropped``/``stat``/``end``).

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
DESCRIPTOR = "lines"  # the kind of a descriptor row
LINES_OPTION = "lines"  # "jvm": descriptors for sbpy_file_lines; "arrow" (default): the lines themselves
MAX_SEQS = 2_000_000  # default cap per micro-batch: a line stays in the JVM, only out rows reach the driver
TAIL_SLACK = 8  # a batch also takes a rest of at most 1/8 of its cap (an end marker after N lines)


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


class SegmentLines(NamedTuple):
    """Lines ``first .. last`` of a segment entry at ``seq0`` whose bytes Python checked (on disk as
    journaled, valid UTF-8) and the JVM reads (sorts with journal rows by its first seq)."""

    first: int
    input: str
    ts: int
    seq0: int
    last: int
    path: str
    line0: int
    seg: dict


def segment_lines(seq: int, ts_us: int, seg: dict[str, Any], input_name: str, after: int, upto: int) -> list:
    """A ``journal_format`` segment expander for ``lines=jvm``: ``line_blocks``' answer, with a block whose
    chunk is valid UTF-8 turned into a ``SegmentLines`` the JVM reads (a chunk that is not UTF-8 keeps the
    Arrow path's per-block decision)."""
    found = line_blocks(seq, ts_us, seg, input_name, after, upto)
    if len(found) != 1 or type(found[0]) is not LineBlock or not _utf8(found[0].chunk):
        return found
    b = found[0]
    return [SegmentLines(b.first, b.input, b.ts, b.seq0, b.last, b.path, b.line0, b.seg)]


def _utf8(chunk: bytes) -> bool:
    if chunk.isascii():
        return True
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def descriptor_row(block: SegmentLines) -> tuple:
    """The ``lines`` row of a block (``OUTPUT_COLUMNS`` order): what ``sbpy_file_lines`` reads."""
    seg = block.seg
    spec = (f"{int(seg['start'])},{int(seg['end'])},{int(seg['crc'])},{int(seg['n'])},"
            f"{block.first - block.seq0},{block.last - block.first + 1}")
    return (DESCRIPTOR, None, block.first, 0, block.ts, block.path, None, block.input, spec)


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


def seg_row(block: LineBlock | SegmentLines) -> tuple:
    """The ``seg`` row naming a block's file (``OUTPUT_COLUMNS`` order)."""
    return ("seg", None, block.first, block.line0, block.ts, block.path, None, block.input, str(block.last))


class NativeStreamReader(StatelessStreamReader):
    """``StatelessStreamReader`` whose segments yield descriptors or raw ``line`` rows (see the module
    docstring)."""

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        mode = options.get(LINES_OPTION) or "arrow"
        if mode not in ("jvm", "arrow"):
            raise ValueError(f"the sbpy_native source's '{LINES_OPTION}' option is 'jvm' or 'arrow', not '{mode}'")
        self.jvm_lines = mode == "jvm"
        if not options.get("max_seqs"):
            self.max_seqs = MAX_SEQS

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """The journal reader's end offset (HEAD, capped at ``max_seqs`` after ``start``), stretched to
        HEAD when what the cap leaves is at most 1/``TAIL_SLACK`` of it: a file of exactly the cap's
        lines and its end marker are one micro-batch, not a second one (a whole trigger's fixed cost)
        for one seq. A line costs the driver nothing unless it is an output, so the cap is
        ``MAX_SEQS`` unless the query sets ``max_seqs``."""
        end = super().latestOffset(start, limit)
        if start is None or self.max_seqs <= 0:
            return end
        head = jf.read_head(self.dir)
        if 0 < head - int(end["seq"]) <= self.max_seqs // TAIL_SLACK:
            return {"seq": head}
        return end

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from .stateless_query import chain_pipeline, run_rows

        rows = jf.read_entries(self.dir, self.inputs, partition.after, partition.upto,  # type: ignore[attr-defined]
                               expand=segment_lines if self.jvm_lines else line_blocks)
        python_rows: list[tuple] = []
        batches: list[Any] = []
        metas: list[tuple] = []
        descriptors: list[tuple] = []
        for row in rows:
            if type(row) is SegmentLines:
                descriptors.append(descriptor_row(row))
                metas.append(seg_row(row))
            elif type(row) is LineBlock:
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
        out.extend(descriptors)  # last, in seq order: their lines follow the rows above, as batches do
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
