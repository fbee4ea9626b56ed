"""The fused operator's logged state layout: a base snapshot plus the journal rows applied since (Spark-free).

The snapshot layout (``state_function``) pickles the whole ``Pipeline`` into one state value every
micro-batch, so a ``[RANGE 1000000 TUPLES]`` window costs a million-tuple write per batch. The logged
layout writes what the batch changed:

- ``base``: a ``Pipeline.snapshot()`` (absent: the query's initial state, ``initial`` or scratch);
- ``log``: one entry per micro-batch since the base, the batch's journal rows as fed to ``Pipeline.run``
  (an append, ∝ the batch), numbered so a reader can put them back in order;
- ``meta``: a *stamp* (random bytes written by every batch) and the sizes of base and log.

A worker keeps its warm pipeline with the stamp it wrote; when the stored stamp equals it, the pipeline
is exactly the committed state and nothing is read. Otherwise (another worker ran the batch before, a
failed attempt was rolled back, a restart) it rebuilds the pipeline: the base restored, then every log
entry run through it in order, outputs discarded. That is exact because the kernel is deterministic
for the same rows in the same micro-batch cuts (``replayable``: no volatile or unknown function, no
UDSF, no stand-in factory; queries with wall-clock ticks keep the snapshot layout). A stage that is not
replayable gets a fresh base every batch and an empty log (the snapshot layout's cost, exact).

When the log grows past ``1 / REBASE_RATIO`` of the base's size (and ``MIN_LOG_BYTES``) the pipeline's
snapshot becomes the new base and the log is cleared: a base of ``b`` bytes is written only after
``b / REBASE_RATIO`` bytes of input, so the total written stays within ``REBASE_RATIO + 1`` times the
input, and a rebuild replays at most a quarter of a base's worth of rows. (A snapshot is larger than
the journal rows it holds — 225 against 33 bytes a tuple for a ``RANGE`` window of ``count``/``sum`` —
so with a ratio of 1 a rebuild would replay several windows' worth.)

``pin_layout`` records the layout in the checkpoint at the first start (``LAYOUT_FILE``); a checkpoint
with committed batches and no record was written by the snapshot layout and keeps it.
"""
from __future__ import annotations

import json
import os
import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .operator import Pipeline, StageSpec

LAYOUT_FILE = "fused_state.json"
SNAPSHOT, LOGGED = "snapshot", "logged-v1"
LAYOUT_ENV = "SBPY_FUSED_STATE"  # "snapshot": new checkpoints use the snapshot layout (the reference)
MIN_LOG_BYTES = 1 << 16  # a log shorter than this never triggers a new base
REBASE_RATIO = 4  # a new base once the log holds more than a base's size / REBASE_RATIO
BASE_SCHEMA = "snap binary"
LOG_SCHEMA = "n long, rows binary"
META_SCHEMA = "stamp binary, entries long, log_bytes long, base_bytes long"


# ---------------------------------------------------------------- layout choice


def wanted_layout(ticks: bool, holds_tuples: bool | None = None) -> str:
    """The layout a new checkpoint gets: the snapshot layout for wall-clock ticks, when
    ``SBPY_FUSED_STATE=snapshot``, or when the plan says no stage holds many raw tuples
    (``holds_tuples`` False: a Timeplus window's panes, a pattern's open matches, a small window — a
    snapshot smaller than a batch's rows, so logging the rows would write more, measured on B4);
    ``SBPY_FUSED_STATE=logged`` forces the logged layout; else (no plan) the logged one."""
    wanted = os.environ.get(LAYOUT_ENV, "").strip().lower()
    if ticks or wanted == SNAPSHOT:
        return SNAPSHOT
    if wanted in (LOGGED, "logged") or holds_tuples is None:
        return LOGGED
    return LOGGED if holds_tuples else SNAPSHOT


def pin_layout(checkpoint: str | os.PathLike[str], wanted: str) -> str:
    """The state layout of the fused query checkpointed at ``checkpoint``: the recorded one on every
    restart; ``SNAPSHOT`` for a checkpoint with committed batches but no record (written before the
    logged layout existed); else ``wanted``, recorded atomically. An unknown record is refused."""
    path = Path(checkpoint) / LAYOUT_FILE
    try:
        layout = str(json.loads(path.read_text())["layout"])
    except FileNotFoundError:
        layout = None
    if layout is not None:
        if layout not in (SNAPSHOT, LOGGED):
            raise ValueError(f"fused checkpoint {checkpoint} has state layout {layout!r}, which this "
                             f"release cannot read (it reads {SNAPSHOT!r} and {LOGGED!r})")
        return layout
    commits = Path(checkpoint) / "commits"
    if commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir()):
        wanted = SNAPSHOT
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{LAYOUT_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"layout": wanted}))
    os.replace(tmp, path)
    return wanted


def read_layout(checkpoint: str | os.PathLike[str]) -> str:
    """The recorded layout of ``checkpoint`` (``SNAPSHOT`` when none is recorded)."""
    try:
        return str(json.loads((Path(checkpoint) / LAYOUT_FILE).read_text())["layout"])
    except FileNotFoundError:
        return SNAPSHOT


def replayable(stages: Iterable[StageSpec]) -> bool:
    """True when rerunning the stages over the same journal rows, cut into the same micro-batches,
    rebuilds the same state: BQL stages calling only built-in functions that are not volatile and do
    not read the evaluation context, reading no UDSF."""
    from sbpy.bql.analyzer import prepare
    from sbpy.bql.ast import CreateStreamAsSelect, FunctionCall, UdsfCall
    from sbpy.bql.functions import builtin_registry
    from sbpy.bql.parser import parse_one

    registry = builtin_registry()
    for spec in stages:
        if spec.factory is not None:
            return False
        stmt = spec.statement
        if stmt is None:
            try:
                stmt = parse_one(spec.bql_text)
                if isinstance(stmt, CreateStreamAsSelect):
                    stmt = stmt.select
                stmt = prepare(stmt)
            except Exception:  # the worker reports it; nothing to replay
                return False
        for node in stmt.walk():
            if isinstance(node, UdsfCall):
                return False
            if type(node) is FunctionCall:
                fn = registry.get(node.name)
                if fn is None or fn.volatile or fn.context:
                    return False
    return True


# ---------------------------------------------------------------- one micro-batch


@dataclass(frozen=True)
class Meta:
    """The ``meta`` value: the stamp of the batch that wrote the state, the log's entry count and
    bytes, the base's bytes."""

    stamp: bytes
    entries: int
    log_bytes: int
    base_bytes: int


class LogStore(Protocol):
    """The group's state as ``LoggedPipeline`` reads and writes it (Spark's state variables, or a dict
    in tests). Writes take effect when the batch commits."""

    def base(self) -> bytes | None: ...

    def log(self) -> list[tuple[int, bytes]]: ...

    def write_base(self, snap: bytes) -> None: ...

    def clear_log(self) -> None: ...

    def append(self, n: int, rows: bytes) -> None: ...


class LoggedPipeline:
    """A worker's warm pipeline of one query and the stamp it corresponds to."""

    def __init__(self, make: Callable[[], Pipeline], initial: bytes | None = None, replay: bool = True,
                 min_log_bytes: int = MIN_LOG_BYTES):
        self.make = make
        self.min_log_bytes = min_log_bytes
        self.initial = initial
        self.replay = replay
        self.pipeline: Pipeline | None = None
        self.stamp: bytes | None = None
        self.rebuilds = 0  # pipelines rebuilt from the store (tests)

    def run(self, rows: list[tuple], meta: Meta | None, store: LogStore) -> tuple[list[tuple], Meta | None]:
        """Journal rows of one micro-batch (sorted by seq) → ``(output rows, new meta)``; the new meta
        is None when nothing was written (no rows: the state is unchanged)."""
        if not rows:
            return [], None
        if self.pipeline is None or meta is None or meta.stamp != self.stamp:
            self.pipeline = None
            self.pipeline = self._rebuild(meta, store)
        self.stamp = None  # ahead of the store until the new meta is written
        try:
            out = self.pipeline.run(rows)
        except BaseException:
            self.pipeline = None  # half-applied: rebuilt from the store on retry
            raise
        entry = pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
        entries = meta.entries if meta is not None else 0
        log_bytes = (meta.log_bytes if meta is not None else 0) + len(entry)
        base_bytes = meta.base_bytes if meta is not None else len(self.initial or b"")
        if meta is None and self.initial is not None:  # the state needs no ``initial`` to be read back
            store.write_base(self.initial)
        if not self.replay or log_bytes > max(base_bytes / REBASE_RATIO, self.min_log_bytes):
            snap = self.pipeline.snapshot()
            store.write_base(snap)
            if entries:
                store.clear_log()
            entries, log_bytes, base_bytes = 0, 0, len(snap)
        else:
            store.append(entries, entry)
            entries += 1
        stamp = os.urandom(16)
        self.stamp = stamp
        return out, Meta(stamp, entries, log_bytes, base_bytes)

    def _rebuild(self, meta: Meta | None, store: LogStore) -> Pipeline:
        self.rebuilds += 1
        if meta is None:  # the query's first batch
            return materialize(self.make, self.initial, None, [])
        return materialize(self.make, self.initial, store.base(), store.log())


def materialize(make: Callable[[], Pipeline], initial: bytes | None, base: bytes | None,
                log: Iterable[tuple[int, bytes]]) -> Pipeline:
    """A pipeline in the state ``base`` (None: ``initial`` or scratch) plus ``log`` (``(n, rows)``
    entries, any order) replayed, outputs discarded."""
    pipeline = make()
    start = base if base is not None else initial
    if start is not None:
        pipeline.restore(start)
    for _n, entry in sorted(log, key=lambda e: e[0]):
        pipeline.run(pickle.loads(entry))
    return pipeline


def materialized_snapshot(stages: list[StageSpec], topology: str, base: bytes | None,
                          log: Iterable[tuple[int, bytes]], initial: bytes | None = None) -> bytes | None:
    """The ``Pipeline.snapshot`` of a logged state (re-planning hands it over, ``handoff``)."""
    log = list(log)
    if base is None and not log:
        return initial
    return materialize(lambda: Pipeline(stages, topology), initial, base, log).snapshot()
