"""Driver-mode fused queries: the stages run in the driver, inside ``foreachBatch``.

A user-defined state (UDS) is a Python object of the ``sbpy run`` process; a Python worker cannot reach
it. A query whose stages call a function or UDSF that may use the topology's states therefore runs its
``Pipeline`` (the same per-tuple operator ``state_function`` hosts on executors) on the driver:

    sbpy_journal (Spark reads the journal; offsets checkpointed, replayable)
      → foreachBatch(bridge) on the driver: rows sorted by seq → Pipeline.run with the topology's
        ProcessorContext (functions, UDSFs and states) → on_batch(batch_id, rows)

How a batch's journal rows reach the driver (``read``): ``"journal"`` (the default) reads them on the
driver itself, straight from the journal files: the batch's seq range ``(after, upto]`` is the end offset
Spark logged for batch N-1 (``offsets/<N-1>``; the pinned start seq for batch 0) and the one it logged
for N (``offsets/<N>``, written before the batch runs, read again on a replay), and ``read_entries`` over
that range gives exactly the rows ``sbpy_journal``'s partitions would have read — without a Spark job
(task launch, a Python worker, an Arrow transfer to the driver), which is most of a 1-tuple batch's time.
Spark still plans the batch and checkpoints its offsets, so replay and exactly-once are unchanged. Spark's
progress counts 0 input rows for such a batch (nothing ran in Spark); the handle's query
(``DriverReadQuery``) fills in the rows the driver read, so metrics and benches see them. ``"spark"`` (or
``SBPY_DRIVER_READ=spark``) collects the batch's DataFrame as before — the reference the tests compare
with; a batch whose offsets file cannot be read (a checkpoint Spark keeps elsewhere) takes it too.

The pipeline state is kept per batch: after batch N its snapshot is written to
``<checkpoint>/driver-state/<N>.snap`` (temp file + fsync + rename, so a crash never leaves a torn one).
A batch runs on the in-memory pipeline when that is the state after batch N-1; otherwise (a batch
replayed after a query failure or a server crash) the pipeline is rebuilt from the newest snapshot
before N, so the operator state is exactly once. Snapshots older than N-1 are removed once N is saved
(Spark starts batch N only after N-1 is committed). UDS are *not* part of the snapshot: what a replayed
batch does to a UDS (a counter's ``next``, a ``uds`` sink training a model) happens again — at-least-once
effects, documented in docs/architecture.md ("UDS and plugins").

    handle = start_driver_query(spark, QuerySpec(...), processor_context)
    ...
    handle.stop()
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sbpy.bql.jsonio import to_json
from sbpy.bql.runtime import gc_pause

from . import journal_format as jf
from .batch_rows import EncodedBatch, TupleBatch, decoded_maps, pairs_batch
from .handoff import position
from .journal_source import NAME as SOURCE_NAME
from .operator import OUTPUT_COLUMNS, Pipeline, StageSpec
from .query import _START_LOCK, QueryHandle, QuerySpec, _ensure_listener, register

log = logging.getLogger("sbpy.spark")

STATE_DIR = "driver-state"
READ_MODES = ("journal", "spark")


class DriverPipeline:
    """A ``Pipeline`` with per-batch snapshot files under ``state_dir`` (Spark-free)."""

    def __init__(self, stages: Iterable[StageSpec], topology: str, context: Any, state_dir: str | Path,
                 initial: bytes | None = None, encode_out: Any = None):
        self.stages = list(stages)
        self.encode_out = encode_out  # the pipeline's ``out`` rows' encoding (None: tagged JSON)
        self.initial = initial  # the state before the first batch (handed over by re-planning)
        self.topology = topology
        self.context = context
        self.dir = Path(state_dir)
        self.pipeline: Pipeline | None = None
        self.last_batch: int | None = None  # the batch the in-memory pipeline's state follows
        self.restores = 0  # rebuilt from a snapshot file (tests)
        self._lock = threading.Lock()

    def run_batch(self, batch_id: int, rows: Iterable[tuple]) -> list[tuple]:
        """Run journal rows ``(seq, input, ts_us, data, end[, error])`` (sorted by seq) as batch ``batch_id``."""
        with self._lock:
            if self.pipeline is None or self.last_batch != batch_id - 1:
                self._restore(batch_id)
            pipeline = self.pipeline
            self.last_batch = None  # half-applied until the snapshot below is saved
            try:
                out = pipeline.run(rows)
                self._save(batch_id, pipeline.snapshot())
            except BaseException:
                self.pipeline = None
                raise
            self.last_batch = batch_id
            return out

    # ------------------------------------------------------------ snapshot files

    def _path(self, batch_id: int) -> Path:
        return self.dir / f"{batch_id}.snap"

    def snapshots(self) -> list[int]:
        """Batch ids with a saved snapshot, ascending."""
        if not self.dir.is_dir():
            return []
        return sorted(int(p.stem) for p in self.dir.glob("*.snap") if p.stem.isdigit())

    def _restore(self, batch_id: int) -> None:
        pipeline = Pipeline(self.stages, self.topology, self.context)
        if self.encode_out is not None:
            pipeline.encode_out = self.encode_out
        before = [b for b in self.snapshots() if b < batch_id]
        if before:
            pipeline.restore(self._path(before[-1]).read_bytes())
            self.restores += 1
        elif self.initial is not None:
            pipeline.restore(self.initial)
        self.pipeline = pipeline

    def _save(self, batch_id: int, data: bytes) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        target = self._path(batch_id)
        tmp = target.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        for old in self.snapshots():
            if old < batch_id - 1:
                self._path(old).unlink(missing_ok=True)


def _journal_rows(batch_df: Any) -> list[tuple]:
    try:
        rows = batch_df.toArrow().to_pylist()
    except AttributeError:
        rows = [r.asDict() for r in batch_df.collect()]
    rows.sort(key=lambda r: r["seq"])
    return [(r["seq"], r["input"], r["ts"], r["data"], bool(r["end"]), r.get("error")) for r in rows]


def batch_range(checkpoint: str | Path, batch_id: int) -> tuple[int, int] | None:
    """The journal seqs ``(after, upto]`` micro-batch ``batch_id`` of the query at ``checkpoint`` covers,
    from Spark's offset log (the pinned start seq before batch 0); None when it cannot be read."""
    try:
        upto = position(checkpoint, batch_id)
        after = position(checkpoint, batch_id - 1 if batch_id > 0 else None)
    except (OSError, ValueError, KeyError, IndexError):
        return None
    if upto is None or after is None:
        return None
    return after, upto


def journal_batch_rows(journal_dir: str, inputs: Iterable[str], seqs: tuple[int, int]) -> list[tuple]:
    """The journal rows of ``inputs`` with ``after < seq <= upto``, read on the driver, in ``_journal_rows``'s
    shape and order (the rows ``sbpy_journal`` yields for that range, sorted by seq)."""
    after, upto = seqs
    if upto <= after:
        return []
    # (seq, input, ts_us, data, end, error): a map's data decoded as it is read (one parse, not two)
    return jf.read_entries(journal_dir, tuple(inputs), after, upto, values=True)


class ReadCounts:
    """Rows each recent micro-batch read on the driver, by batch id (the last ``KEEP`` batches)."""

    KEEP = 256

    def __init__(self) -> None:
        self._rows: dict[int, int] = {}
        self._lock = threading.Lock()

    def record(self, batch_id: int, rows: int) -> None:
        with self._lock:
            self._rows[batch_id] = rows
            if len(self._rows) > self.KEEP:
                del self._rows[min(self._rows)]

    def fill(self, progress: dict[str, Any] | None) -> dict[str, Any] | None:
        """``progress`` (a Spark progress report) with the rows its batch read on the driver as its
        ``numInputRows`` (and processing rate), when Spark counted none."""
        if not progress or progress.get("numInputRows"):
            return progress
        with self._lock:
            rows = self._rows.get(progress.get("batchId"))
        if not rows:
            return progress
        out = dict(progress)
        out["numInputRows"] = rows
        seconds = (out.get("batchDuration") or 0) / 1000
        if seconds > 0:
            out["processedRowsPerSecond"] = rows / seconds
        out["sources"] = [dict(src, numInputRows=rows) for src in out.get("sources") or ()]
        return out


class DriverReadQuery:
    """A driver query's ``StreamingQuery`` whose progress reports count the rows read on the driver
    (``ReadCounts.fill``); everything else is the query's own."""

    def __init__(self, query: Any, counts: ReadCounts):
        self._query = query
        self._counts = counts

    @property
    def lastProgress(self) -> dict[str, Any] | None:
        return self._counts.fill(self._query.lastProgress)

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        return [self._counts.fill(p) for p in self._query.recentProgress]

    def __getattr__(self, name: str) -> Any:  # the rest of PySpark's StreamingQuery
        return getattr(self._query, name)


_KIND, _TS, _DATA = (OUTPUT_COLUMNS.index(c) for c in ("kind", "ts", "data"))


def output_dicts(rows: list[tuple]) -> list[dict[str, Any]]:
    """The operator's row tuples as ``on_batch`` dicts (``data`` decoded: ``decoded_maps``), in emission
    order."""
    out = [dict(zip(OUTPUT_COLUMNS, r)) for r in rows]
    texts = [d["data"] for d in out]
    for d, data in zip(out, decoded_maps(texts)):
        d["data"] = data
    return out


def tuple_batch(rows: list[tuple], encoded: bool = False) -> TupleBatch:
    """The operator's row tuples as a ``TupleBatch``: each ``out`` row's ``(ts, data)`` (``data`` decoded by
    ``decoded_maps``, or with ``encoded`` left as its tagged JSON text), every other row as ``output_dicts``
    gives it."""
    outs = [r for r in rows if r[_KIND] == "out"]
    return pairs_batch([r[_TS] for r in outs], [r[_DATA] for r in outs],
                       output_dicts([r for r in rows if r[_KIND] != "out"]), encoded)


def encoded_outputs(rows: list[tuple]) -> Any:
    """The operator's row tuples as an ``EncodedBatch``: the ``out`` rows' data (a pipeline encoding with
    ``jsonio.to_json``: the sink's JSON lines) as they are, every other row as ``output_dicts`` gives it."""
    return EncodedBatch([r[_DATA] for r in rows if r[_KIND] == "out"],
                        output_dicts([r for r in rows if r[_KIND] != "out"]))


def start_driver_query(spark: Any, spec: QuerySpec, context: Any, read: str | None = None) -> QueryHandle:
    """Start ``spec`` with its stages on the driver (``context``: the topology's ``ProcessorContext``;
    ``read``: how batches reach the driver, see the module docstring; default ``SBPY_DRIVER_READ`` or
    ``"journal"``)."""
    read = read or os.environ.get("SBPY_DRIVER_READ") or "journal"
    if read not in READ_MODES:
        raise ValueError(f"read must be one of {READ_MODES}, not {read!r}")
    _ensure_listener(spark)
    reader = (spark.readStream.format(SOURCE_NAME)
              .option("dir", str(spec.journal_dir))
              .option("inputs", ",".join(spec.inputs))
              .option("start_seq", str(jf.pin_start_seq(spec.checkpoint_dir, spec.start_seq))))
    if spec.max_seqs:
        reader = reader.option("max_seqs", str(int(spec.max_seqs)))
    json_lines = spec.out_format == "json"  # a sink's JSON lines: encoded by the pipeline, never decoded
    runner = DriverPipeline(spec.stages, spec.topology, context, Path(spec.checkpoint_dir) / STATE_DIR,
                            initial=spec.initial_state, encode_out=to_json if json_lines else None)
    holder: dict[str, QueryHandle] = {}
    counts = ReadCounts()

    def bridge(batch_df: Any, batch_id: int) -> None:
        if spec.before_batch is not None:  # before the pipeline: a refused batch has no UDS effects
            spec.before_batch(batch_id)
        seqs = batch_range(spec.checkpoint_dir, int(batch_id)) if read == "journal" else None
        with gc_pause.paused():  # the batch's rows would be scanned by every collection meanwhile
            if seqs is not None:
                rows = journal_batch_rows(str(spec.journal_dir), spec.inputs, seqs)
                counts.record(int(batch_id), len(rows))
            else:
                rows = _journal_rows(batch_df)
            out = runner.run_batch(int(batch_id), rows)
            del rows
            if spec.on_batch is None:
                outputs = None
            else:
                outputs = (encoded_outputs(out) if json_lines else output_dicts(out) if spec.out_rows == "dicts"
                           else tuple_batch(out, spec.out_rows == "texts"))
        handle = holder.get("h")
        if handle is not None:
            handle.batches += 1
        if spec.on_batch is not None:
            spec.on_batch(batch_id, outputs)

    writer = (reader.load().writeStream.queryName(spec.name or spec.query_id)
              .option("checkpointLocation", str(spec.checkpoint_dir))
              .foreachBatch(bridge))
    if spec.trigger_ms:
        writer = writer.trigger(processingTime=f"{int(spec.trigger_ms)} milliseconds")
    sc = spark.sparkContext
    with _START_LOCK:
        sc.setLocalProperty("spark.scheduler.pool", spec.pool or spec.topology or spec.query_id)
        try:
            query = writer.start()
        finally:
            sc.setLocalProperty("spark.scheduler.pool", None)
    handle = register(spec, DriverReadQuery(query, counts) if read == "journal" else query)
    handle.runner = runner  # type: ignore[attr-defined]
    holder["h"] = handle
    return handle
