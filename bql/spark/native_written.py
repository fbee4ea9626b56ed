"""A large native micro-batch for a JSON-lines sink: the executors write its rows, the driver reads files.

``native_collect`` receives a packed micro-batch (``native_query.pack``: ``k``, ``seq``, ``data``) through
``toArrow``: every row is converted to Arrow on an executor, gathered by the driver's JVM and handed to
Python over a socket — about half of the driver's time in a B1 profile (README "Session 27"), and on one
thread while the executors wait. For a batch over at least ``WRITE_MIN_SEQS`` journal seqs whose sink
takes JSON lines, the executors write the rows instead, as Spark's own JSON sink would (``write_rows``:
Spark's text writer, one file per partition, in parallel), one text line per row:

- a native output: its sink line as it is (a JSON object: it starts with ``{``);
- any other row (a ``seg`` row, a refused or skipped line, a Python-tier row): ``MARK`` (U+0001, which
  starts no JSON text) followed by the JSON of its ``k``, ``seq``
  and ``data``.

``read_rows`` reads the files in partition order (their names carry the partition index) and splits
each at its marked lines, so the outputs reach the sink as the files' own bytes (``jsonio.JsonLines``:
no per-line step on the driver). Partitions are seq ranges in order and a partition writes its rows in
the order it produced them, so the outputs are in arrival order; the collector checks this on the
``seg`` rows (the blocks each partition read, in the order it wrote their lines) and falls back to the
Arrow path — the same batch read again — whenever they are out of order or a row needs the driver (a
refused line, a Python-tier output): those must be merged with the outputs by seq, which the files do
not carry.
"""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from sbpy.bql.jsonio import JsonLines

WRITE_MIN_SEQS = 100_000  # a smaller batch ships its rows through Arrow (a write job costs ~tens of ms)
MARK = "\x01"
FOLDER = "native-lines"  # under the query's checkpoint: one sub-folder per written batch, removed after


class WrittenRows(NamedTuple):
    """A written batch read back: the outputs as sink lines, in file order, and the marked rows."""

    lines: JsonLines
    marked: list[dict[str, Any]]  # {"k", "seq", "data"} (``to_json`` leaves NULLs out), in file order


def text_column(k: Any, seq: Any, data: Any) -> Any:
    """The one text column the executors write: an output's line (``k`` NULL) or the marked row."""
    from pyspark.sql import functions as F

    marked = F.concat(F.lit(MARK), F.to_json(F.struct(k.alias("k"), seq.alias("seq"), data.alias("data"))))
    return F.when(k.isNull() & data.isNotNull(), data).otherwise(marked).alias("value")


def batch_folder(checkpoint: str | Path) -> Path:
    """A new folder for one batch's files (under ``FOLDER`` of the query's checkpoint)."""
    return Path(checkpoint) / FOLDER / uuid.uuid4().hex


def clear(checkpoint: str | Path) -> None:
    """Remove what a stopped or killed query left of written batches (at a query's start)."""
    shutil.rmtree(Path(checkpoint) / FOLDER, ignore_errors=True)


def write_rows(batch_df: Any, folder: Path) -> list[Path]:
    """Write the packed batch's rows (``k``, ``seq``, ``data``) as text lines under ``folder``; its part
    files in partition order."""
    from pyspark.sql import functions as F

    text = text_column(F.col("k"), F.col("seq"), F.col("data"))
    # plain text whatever the session's Hadoop output compression says
    batch_df.select(text).write.mode("error").option("compression", "none").text(str(folder))
    return sorted(p for p in folder.iterdir() if p.name.startswith("part-"))


def read_rows(files: list[Path]) -> WrittenRows:
    """The written rows split into outputs and marked rows (see the module doc)."""
    parts: list[memoryview] = []
    marked: list[bytes] = []
    outputs = 0
    for path in files:
        raw = path.read_bytes()
        if not raw:
            continue
        if not raw.endswith(b"\n"):
            raise ValueError(f"{path}: a written batch file ends without a newline")
        lines = raw.count(b"\n")
        marks = raw.count(b"\n\x01") + raw.startswith(b"\x01")
        outputs += lines - marks
        split = _split_few if marks <= FEW_MARKS else _split_many
        kept, mine = split(raw)
        parts.extend(kept)
        marked.append(mine)
    return WrittenRows(JsonLines(parts, outputs), _parse_marked(b"".join(marked)))


FEW_MARKS = 4096  # up to this many marked lines in a file, slices between them; more: numpy masks


def _split_few(raw: bytes) -> tuple[list[memoryview], bytes]:
    """``raw``'s unmarked lines as views between its marked lines, and the marked lines themselves."""
    view = memoryview(raw)
    kept, mine = [], []
    start = 0
    at = 0 if raw.startswith(b"\x01") else _next_mark(raw, 0)
    while at >= 0:
        if at > start:
            kept.append(view[start:at])
        end = raw.index(b"\n", at) + 1
        mine.append(view[at:end])
        start = end
        at = _next_mark(raw, end - 1)
    if start < len(raw):
        kept.append(view[start:])
    return kept, b"".join(mine)


def _split_many(raw: bytes) -> tuple[list[memoryview], bytes]:
    """``_split_few`` by whole-array steps: each byte's line is marked or not."""
    import numpy as np

    arr = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    per_byte = np.repeat(arr[starts] == 1, ends - starts + 1)
    return [memoryview(arr[~per_byte])], arr[per_byte].tobytes()


def _next_mark(raw: bytes, after: int) -> int:
    """Where the next marked line after the newline at or after ``after`` starts (-1: none)."""
    found = raw.find(b"\n\x01", after)
    return found + 1 if found >= 0 else -1


def _parse_marked(text: bytes) -> list[dict[str, Any]]:
    """Marked lines (``MARK`` + JSON + newline each) parsed in one call: as one JSON array."""
    if not text:
        return []
    return orjson.loads(b"[" + text[1:-1].replace(b"\n\x01", b",") + b"]")
