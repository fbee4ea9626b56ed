"""A consumer's Spark query and the driver side of its micro-batches (foreachBatch).

Kinds: ``sink`` (INSERT INTO), ``cursor`` (ad-hoc SELECT), ``journal`` (a stream read by several
consumers, computed once and appended to the journal as a node log).

``on_batch(batch_id, rows)`` handles one micro-batch's rows in this order: ``out`` rows go to the
consumer (sink write with ``(query id, batch_id)`` for idempotency, cursor queue, or journal), then
``stat`` rows update the stages' counters, ``dropped`` rows go to the topology's dropped-tuple
reporting, and last ``end`` rows stop streams; when the consumer's own input ended the query is
stopped after the batch (a cursor finishes; a sink stays running, as SensorBee's do). After a batch
the topology's journal is pruned when due (``server/journal_prune.py``: the batch before it is
committed, so the floor may have moved).

Restart policy: a query that fails is restarted from its checkpoint up to ``MAX_RESTARTS`` (10) times
with an exponential backoff of 1, 2, 4, ... s capped at ``MAX_BACKOFF`` (30 s), about 3 minutes in all
(the topology's monitor thread notices failures); after that its stages become ``stopped`` with
``status.error`` and a cursor ends. Failures are mostly transient (on a loaded machine Spark's Python
worker misses its fixed 10 s connect-back timeout), so giving up after 3 tries in 7 s lost a topology's
outputs for good (found by ``tests/stress/crash_random.py``); the cap bounds the wait once it recovers.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.batch_rows import TupleBatch

from ..journal_prune import maybe_prune
from . import status as st

log = logging.getLogger("sbpy.runtime")

MAX_RESTARTS = 10
MAX_BACKOFF = 30.0  # seconds between restarts at most


def restart_delay(restarts: int) -> float:
    """Seconds to wait before restart number ``restarts + 1``: 1, 2, 4, ... at most ``MAX_BACKOFF``."""
    return min(2.0 ** restarts, MAX_BACKOFF)


def _rows(rows: Any) -> list[dict[str, Any]]:
    if hasattr(rows, "to_dict"):  # a pandas DataFrame
        return rows.to_dict("records")
    return list(rows)


def _decode(text: Any) -> Any:
    if text is None:
        return None
    if isinstance(text, (str, bytes)):
        return jf.decode_data(text)
    return text


class Consumer:
    """One running query of a topology."""

    def __init__(self, topology: Any, cid: str, kind: str, target: str, chain: Any,
                 sink: Any = None, cursor: Any = None, checkpoint_dir: Any = None, temporary: bool = False):
        self.topology = topology
        self.id = cid
        self.kind = kind
        self.target = target
        self.chain = chain
        self.sink = sink
        self.cursor = cursor
        self.checkpoint_dir = checkpoint_dir
        self.temporary = temporary  # remove the checkpoint when the consumer goes away
        self.handle: Any = None
        self.start_seq = 0
        self.resume_seq: int | None = None  # start here instead of the journal HEAD (re-planning)
        self.initial_state: bytes | None = None  # the pipeline snapshot to start from (re-planning)
        self.deferred = False  # attached during a persistence replay; planned when it ends
        self.on_driver = False  # its stages run on the driver (UDS calls, or the small-state latency path)
        self.plan: Any = None  # its ``sbpy.bql.plan.QueryPlan`` (set when planned)
        self.select_stage: tuple[str, str, list[str]] | None = None  # an ad-hoc SELECT's own stage
        self.out_format = "tagged"  # "json": its stateless query hands the sink pre-encoded lines
        self.query_key = cid  # names the query in sink commit records: its checkpoint's name
        self.last_batch: int | None = None  # the last micro-batch whose rows were fully handled
        self.freezing = False  # re-planning: refuse new batches (they fail uncommitted) until stopped
        self.restarts = 0
        self.next_restart = 0.0
        self.done = False  # the consumer's input ended; the query is (being) stopped
        self.stopped = False
        self.error: str | None = None
        self._lock = threading.Lock()

    @property
    def stage_names(self) -> list[str]:
        return self.chain.stage_names

    # ------------------------------------------------------------ lifecycle

    def start(self, start_seq: int) -> None:
        self.start_seq = start_seq
        self.handle = self.topology.start_query(self)

    def restart(self) -> None:
        self.restarts += 1
        log.warning("restarting query '%s' (attempt %d) after: %s", self.id, self.restarts, self.error)
        self.error = None
        self.handle = self.topology.start_query(self)

    def failed(self) -> str | None:
        """The query's error if it stopped by failing (not by ``stop``/end)."""
        h = self.handle
        if h is None or self.done or self.stopped or self.freezing:  # a refused batch fails it on purpose
            return None
        try:
            if h.is_active:
                return None
            err = h.error
        except Exception as e:  # noqa: BLE001
            return str(e)
        return str(err) if err else None

    def stop(self, remove_checkpoint: bool = False) -> None:
        """Stop the query (idempotent; safe from any thread except its own foreachBatch)."""
        with self._lock:
            self.stopped = True
            h, self.handle = self.handle, None
        if h is not None:
            try:
                h.stop()
            except Exception as e:  # noqa: BLE001
                log.warning("stopping query '%s' failed: %s", self.id, e)
            else:
                log.info("query '%s' of topology '%s' stopped", self.id, self.topology.name)
        if (remove_checkpoint or self.temporary) and self.checkpoint_dir is not None:
            self.topology.remove_checkpoint(self.checkpoint_dir)

    def stop_later(self) -> None:
        """Stop from a helper thread (the caller may be the query's own foreachBatch), then prune the journal
        behind the query's last batch: ``on_batch`` prunes before Spark commits its batch, so a query that
        ends in the batch that read the rest of its input would otherwise hold that batch's rows until some
        other commit of the topology prunes (the thread holds no statement lock: ``maybe_prune`` skips
        while a statement runs)."""
        def stop_and_prune() -> None:
            self.stop()
            try:
                maybe_prune(self.topology, force=True)
            except Exception as e:  # noqa: BLE001 - a topology torn down meanwhile: nothing to prune
                log.debug("pruning after query '%s' ended: %s", self.id, e)

        threading.Thread(target=stop_and_prune, name=f"sbpy-stop-{self.id}", daemon=True).start()

    # ------------------------------------------------------------ micro-batches

    def before_batch(self, batch_id: int) -> None:
        """Refuse a batch while the query is being re-planned (it fails, uncommitted and without effects)."""
        if self.freezing:
            raise RuntimeError(f"query '{self.id}' is being re-planned: batch {batch_id} is left uncommitted")

    def on_batch(self, batch_id: int, rows: Any) -> None:
        # no ``before_batch`` here: a batch the callback accepted is delivered completely
        if self.stopped and self.kind == "cursor":
            return
        if self.out_format == "json":  # a stateless query encoded the sink's lines on the executors
            self.sink.write_json_lines(self.target, rows.lines, (self.query_key, int(batch_id)))
            self._others(rows.others)
            self.last_batch = int(batch_id)
            maybe_prune(self.topology)
            return
        if isinstance(rows, TupleBatch):  # a driver query's: its ``out`` rows as (ts, data) pairs
            outs, others, encoded = rows.outs, rows.others, rows.encoded
        else:
            others = _rows(rows)
            outs, encoded = [(r["ts"], r["data"]) for r in others if r["kind"] == "out"], False
        topo = self.topology
        if self.kind == "sink":
            tuples = [_decode(data) for _, data in outs]
            self.sink.write(self.target, tuples, (self.query_key, int(batch_id)))
        elif self.kind == "cursor":
            for _, data in outs:
                if not self.cursor.put(_decode(data)):
                    break
        elif outs and encoded:  # the stream's tagged JSON as the pipeline encoded it
            topo.journal.append_encoded(self.target, [(int(ts), text) for ts, text in outs],
                                        batch=(self.query_key, int(batch_id)))
        elif outs:
            topo.journal.append(self.target, [(int(ts), _decode(data)) for ts, data in outs],
                                batch=(self.query_key, int(batch_id)))
        self._others(others)
        self.last_batch = int(batch_id)
        maybe_prune(self.topology)

    def _reports_input(self, name: str) -> bool:
        """A source's bad input (a file line that is no tuple) is read by each of its consumers and
        reported by one: the first that reports one while the previous reporter is attached."""
        source = self.topology.sources.get(name)
        if source is None:
            return True
        if source.drop_reporter is None or source.drop_reporter not in self.topology.consumers:
            source.drop_reporter = self.id
        return source.drop_reporter == self.id

    def _others(self, rows: list[dict[str, Any]]) -> None:
        """A batch's ``stat``, ``dropped`` and then ``end`` rows (after its outputs were delivered)."""
        topo = self.topology
        for r in rows:
            kind = r["kind"]
            if kind == "stat":
                self._stat(r)
            elif kind == "dropped" and (r.get("event") != "input" or self._reports_input(r["node"])):
                topo.report_dropped(r["node"], _decode(r.get("data")), r.get("error"),
                                    r.get("event") or "other")
        ended = [r["node"] for r in rows if r["kind"] == "end"]
        for node in ended:
            self._end(node)

    def _stat(self, row: dict[str, Any]) -> None:
        node = self.topology.streams.get(row["node"])
        if node is None:
            return
        if node.stats_owner is None:
            node.stats_owner = self.id
        if node.stats_owner != self.id:
            return
        data = _decode(row.get("data")) or {}
        for inp, n in (data.get("received") or {}).items():
            node.counters.add_received(inp, int(n))
        node.counters.add_sent(int(data.get("sent") or 0))
        if data.get("dropped"):
            node.counters.add_error(int(data["dropped"]))
        for inp, n in (data.get("refused") or {}).items():  # dropped by a full BUFFER SIZE
            sender = self.topology.sources.get(inp) or self.topology.streams.get(inp)
            if sender is not None:
                sender.counters.add_dropped(int(n))

    def _end(self, name: str) -> None:
        topo = self.topology
        node = topo.streams.get(name)
        if node is not None and node.stats_owner in (None, self.id) and node.state != st.STOPPED:
            node.state = st.STOPPED
        if name == self.target and not self.done:
            self.done = True
            if self.kind == "cursor":
                self.cursor.finish()
            elif self.kind == "journal":
                topo.journal.end(self.target)
            self.stop_later()
        topo.cascade()
