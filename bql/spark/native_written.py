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

``read_rows`` reads the files — on a cluster only when there is one for each partition (``complete``) —
in partition order (their names carry the partition index) and splits
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


def complete(files: list[Path], partitions: int | None) -> bool:
    """Whether the driver sees every partition's file: ``partitions`` None means one filesystem (a local
    master); on a cluster there must be a file per partition — an executor writing to a disk of its own
    leaves the driver's folder without its file, and the batch must then be collected through Arrow, not
    lose those rows (a partition that wrote no row is counted missing too: only a slower batch)."""
    return partitions is None or len(files) >= partitions


def partitions_to_check(batch_df: Any) -> int | None:
    """The batch's partitions on a cluster, None on a local master (see ``complete``)."""
    if batch_df.sparkSession.sparkContext.master.startswith("local"):
        return None
    return batch_df.rdd.getNumPartitions()


def read_rows(files: list[Path]) -> WrittenRows:
    """The written rows split into outputs and marked rows (see the module doc)."""
    import numpy as np

    parts: list[memoryview] = []
    marked: list[bytes] = []
    outputs = 0
    for path in files:
        raw = path.read_bytes()
        if not raw:
            continue
        if not raw.endswith(b"\n"):
            raise ValueError(f"{path}: a written batch file ends without a newline")
        lines = int(np.count_nonzero(np.frombuffer(raw, dtype=np.uint8) == 10))
        split = _split_few(raw)
        kept, mine, marks = split if split is not None else _split_many(raw)
        outputs += lines - marks
        parts.extend(kept)
        marked.append(mine)
    return WrittenRows(JsonLines(parts, outputs), _parse_marked(b"".join(marked)))


FEW_MARKS = 4096  # up to this many marked lines in a file, slices between them; more: numpy masks


def _split_few(raw: bytes) -> tuple[list[memoryview], bytes, int] | None:
    """``raw``'s unmarked lines as views between its marked lines, the marked lines themselves and their
    number; None when there are more than ``FEW_MARKS``. A ``MARK`` byte is found with ``find`` (a
    ``memchr``); one that does not start a line is inside an output line and is passed over."""
    view = memoryview(raw)
    kept, mine = [], []
    start = 0
    at = raw.find(b"\x01")
    while at >= 0:
        if at and raw[at - 1] != 10:  # not at a line's start
            at = raw.find(b"\x01", at + 1)
            continue
        if len(mine) == FEW_MARKS:
            return None
        if at > start:
            kept.append(view[start:at])
        end = raw.index(b"\n", at) + 1
        mine.append(view[at:end])
        start = end
        at = raw.find(b"\x01", end)
    if start < len(raw):
        kept.append(view[start:])
    return kept, b"".join(mine), len(mine)


def _split_many(raw: bytes) -> tuple[list[memoryview], bytes, int]:
    """``_split_few`` by whole-array steps: each byte's line is marked or not."""
    import numpy as np

    arr = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    marks = arr[starts] == 1
    per_byte = np.repeat(marks, ends - starts + 1)
    return [memoryview(arr[~per_byte])], arr[per_byte].tobytes(), int(np.count_nonzero(marks))


def _parse_marked(text: bytes) -> list[dict[str, Any]]:
    """Marked lines (``MARK`` + JSON + newline each) parsed in one call: as one JSON array."""
    if not text:
        return []
    return orjson.loads(b"[" + text[1:-1].replace(b"\n\x01", b",") + b"]")
