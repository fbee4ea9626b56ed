"""A topology: named sources, streams and sinks, the statements that built them, and their Spark queries.

Statements run on the driver and answer at once (errors before any Spark work): CREATE [PAUSED]
SOURCE starts a source thread that journals tuples; CREATE STREAM compiles (dry build) and, when its
outputs depend on earlier tuples, starts the query computing it from now on (SensorBee connects a stream
at CREATE; ``graph.computed_from_create``; while its sources are paused it waits, ``nodes/from_create.py``),
a memoryless one starts nothing; INSERT INTO and an ad-hoc
SELECT attach a *consumer* whose Spark query runs the fused chain (``nodes/graph.py``,
``nodes/consumer.py``); DROP SOURCE writes the source's end marker so downstream
streams drain and stop; DROP STREAM stops the queries that read it; DROP SINK stops its queries and
closes (flushes) it (these statements: ``topology_statements.py``). ``stop()`` (topology deleted or
server shutdown) stops everything within seconds and keeps the journal and checkpoints, so a restored topology resumes exactly (``persistence.py``).

Plugins and states: the topology works on its own copy of the plugin registries (``self.plugins``,
``sbpy.plugins.TopologyPlugins``: functions, UDSFs, UDS/source/sink types) and owns its user-defined
states (``self.states``, ``states.StateManager``, storage from ``storage.uds``). CREATE / DROP / SAVE /
LOAD / UPDATE STATE go to ``self.states``; a query whose stages call a function or UDSF that may reach
those states runs on the driver (``sbpy.bql.spark.driver_query``), the others on Spark's workers, which
rebuild the registries from the loaded plugin modules (``StageSpec.plugins``).

Thread safety: statements are serialised by one lock; the foreachBatch side never takes it (it only
touches node counters, each with its own lock), so stopping a query under the lock cannot deadlock.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sbpy.bql import ast
from sbpy.bql.errors import UnsupportedFeatureError
from sbpy.bql.history_query import is_table_query
from sbpy.bql.parsed import ParsedStatement
from sbpy.bql.spark import journal_format as jf

from . import history
from .context import ServerContext
from .journal import JournalWriter
from .node_update import fail
from .nodes import from_create, graph, replan
from .nodes import status as st
from .nodes.consumer import Consumer
from .nodes.cursor import SelectCursor
from .nodes.sink_node import SinkNode
from .nodes.source_node import SourceNode
from .nodes.stream_node import StreamNode
from .states import StateManager
from .topology_queries import TopologyQueries
from .topology_statements import TopologyStatements
from .topology_views import NODE_TYPES, TopologyViews

log = logging.getLogger("sbpy.topology")

__all__ = ["NODE_TYPES", "SelectCursor", "Topology"]


_fail = fail


class Topology(TopologyStatements, TopologyQueries, TopologyViews):
    """One named topology. Thread-safe: REST handlers call it from a thread pool.

    ``query_starter(**spec) -> handle`` replaces the Spark launcher (tests); ``spec`` holds the fields
    of ``sbpy.bql.spark.query.QuerySpec``.
    """

    def __init__(self, name: str, context: Any = None, query_starter: Callable[..., Any] | None = None):
        from sbpy.plugins.registry import default_registries

        from .drop_log import DropLogging
        from .uds_storage import InMemoryStorage

        self.name = name
        self.context = context
        self.drop_logging = DropLogging.of(getattr(getattr(context, "config", None), "logging", None))
        registries = getattr(context, "plugin_registries", None) or default_registries()
        self.plugins = registries.for_topology(name)
        storage = getattr(context, "uds_storage", None)
        self.states = StateManager(name, storage if storage is not None else InMemoryStorage(), self.plugins)
        self.plugins.bind_states(self.states)
        data_dir = getattr(context, "data_dir", None)
        if data_dir is None:
            data_dir = tempfile.mkdtemp(prefix="sbpy-topology-")
        self.data_dir = Path(data_dir)
        self.dir = jf.topology_dir(self.data_dir, name)
        self._starter = query_starter
        self._journal: JournalWriter | None = None
        self.sources: dict[str, SourceNode] = {}
        self.streams: dict[str, StreamNode] = {}
        self.sinks: dict[str, SinkNode] = {}
        self.consumers: dict[str, Consumer] = {}
        self.materialized: set[str] = set()
        self.recovering = False  # set by persistence while it replays statements
        self.defer_consumers = False  # set by persistence: plan queries once the replay has ended
        self._lock = threading.RLock()
        self._drop_listeners: list[Callable[[dict[str, Any]], None]] = []
        self._selects = 0
        self._stopped = False
        self._monitor: threading.Thread | None = None
        self._wake = threading.Event()

    # ------------------------------------------------------------ journal

    @property
    def journal(self) -> JournalWriter:
        if self._journal is None:
            with self._lock:
                if self._journal is None:
                    self._journal = JournalWriter(jf.journal_dir(self.data_dir, self.name))
        return self._journal

    # ------------------------------------------------------------ statements

    def execute(self, parsed: ParsedStatement) -> dict[str, Any]:
        """Run one non-SELECT statement; EVAL answers ``{"result": value}``, others ``{}``."""
        stmt = parsed.stmt
        if isinstance(stmt, ast.Eval):
            from sbpy.bql.eval import evaluate_constant

            return {"result": evaluate_constant(stmt.expr, self.plugins.functions, on=stmt.on)}
        if isinstance(stmt, ast.Explain):
            return {"plan": self.explain(parsed)}
        handler = _HANDLERS.get(type(stmt))
        if handler is None:
            raise UnsupportedFeatureError(f"{type(stmt).__name__} is not supported yet", stmt.span)
        with self._lock:
            if self._stopped:
                raise _fail(f"topology '{self.name}' is stopped", stmt)
            handler(self, parsed)
        return {}

    # ------------------------------------------------------------ ad-hoc SELECT

    def select(self, parsed: ParsedStatement) -> SelectCursor:
        """Start an ad-hoc SELECT; its cursor yields JSON-ready tuples until the query ends or ``close``."""
        stmt = parsed.stmt
        with self._lock:
            if self._stopped:
                raise _fail(f"topology '{self.name}' is stopped", stmt)
            inputs = self._check_inputs(stmt, stmt)
            from_create.before_select(self, inputs)  # the cursor's query never computes them
            if isinstance(stmt, ast.Select) and is_table_query(stmt):  # bounded: runs now (server/history.py)
                return history.select_table(self, parsed)
            self._dry_build(stmt, stmt)
            self._selects += 1
            cid = f"select-{self._selects}"
            cursor = SelectCursor(on_close=lambda c: self._close_cursor(cid))
            consumer = Consumer(self, cid, "cursor", cid, None, cursor=cursor, temporary=True)
            consumer.select_stage = (cid, parsed.text.strip().rstrip(";"), inputs)
            self._attach(consumer)
            return cursor

    def _close_cursor(self, cid: str) -> None:
        consumer = self.consumers.get(cid)
        if consumer is not None:
            threading.Thread(target=self._detach_locked, args=(consumer,), name=f"sbpy-close-{cid}",
                             daemon=True).start()

    def _detach_locked(self, consumer: Consumer) -> None:
        with self._lock:
            self._detach(consumer, remove_checkpoint=True)

    # ------------------------------------------------------------ consumers

    def _attach(self, consumer: Consumer) -> None:
        """Plan and start ``consumer``'s query (materializing shared streams first: a stream fused into a
        running query is split out of it, ``nodes/replan.py``). During a persistence replay the consumer
        is only recorded; ``start_deferred`` plans it with the final graph."""
        if self.defer_consumers:
            consumer.chain, consumer.deferred = graph.Chain(), True
            self.consumers[consumer.id] = consumer
            return
        select_stage = consumer.select_stage
        targets = select_stage[2] if select_stage else [consumer.target]
        self.materialize_shared(list(targets), list(select_stage[2]) if select_stage else [])
        consumer.chain = self.plan_chain(consumer)
        self._start(consumer)

    def materialize_shared(self, targets: list[str], extra: list[str]) -> None:
        """Compute on its own every stream upstream of ``targets`` that several nodes read (``extra``:
        readers not in the graph, an ad-hoc SELECT's inputs): split out of the running query that has it
        fused (``nodes/replan.py``), or started on its own."""
        for target in targets:
            for shared in graph.shared_streams(target, self.sources, self.streams, self.sinks,
                                               self.materialized, extra):
                owner = replan.owner_of(self, shared)
                if owner is not None and replan.split(self, owner, shared):
                    continue
                self.materialize(shared)  # not fused anywhere (or its owner keeps its own copy)

    def materialize(self, stream: str, resume_seq: int | None = None, initial_state: bytes | None = None) -> Consumer:
        """Start the query that computes ``stream`` once and journals its output (its consumer id is the
        stream's name); ``resume_seq``/``initial_state``: continue where a split query stopped."""
        consumer = Consumer(self, stream, "journal", stream, None)
        consumer.chain = self.plan_chain(consumer)
        consumer.resume_seq, consumer.initial_state = resume_seq, initial_state
        self.materialized.add(stream)
        self._start(consumer)
        return consumer

    def start_deferred(self) -> None:
        """Plan and start what a persistence replay recorded (``replan.rematerialize`` has restarted the
        streams whose own queries left checkpoints): the consumers in their order, planned with the final
        graph (pending streams fused where that plan left a checkpoint, ``from_create.prefer_checkpointed``),
        then the streams computing from their CREATE that a tuple can reach (``nodes/from_create.py``)."""
        self.defer_consumers = False
        for c in [c for c in self.consumers.values() if c.deferred]:
            del self.consumers[c.id]
            c.deferred = False
            if c.sink is not None and c.sink not in self.sinks.values():
                continue
            from_create.prefer_checkpointed(self, c)
            self._attach(c)
        from_create.start_reachable(self)
        for node in [*self.streams.values(), *self.sinks.values()]:
            if node.state == st.STARTING:
                node.state = st.RUNNING

    def plan_chain(self, consumer: Consumer) -> graph.Chain:
        """The chain ``consumer``'s query runs with the current graph (a materialized stream's own query
        computes the stream as its last stage)."""
        if consumer.kind == "journal":
            return graph.plan(consumer.target, self.sources, self.streams, self.materialized,
                              consumer=consumer.target)
        select_stage = consumer.select_stage
        targets = list(select_stage[2]) if select_stage else [consumer.target]
        return graph.plan_reading(targets, self.sources, self.streams, self.materialized, select_stage)

    def name_query(self, consumer: Consumer) -> None:
        """Plan ``consumer``'s chain and name its query and checkpoint by the consumer and its chain, so
        a re-planned chain gets a fresh one and the same plan after a restart finds its own."""
        consumer.plan = self.plan_query(consumer.chain)  # planned once; its execution names the checkpoint
        consumer.query_key = f"{consumer.id}-{graph.chain_tag(consumer.chain)}-{consumer.plan.execution.value}"
        consumer.checkpoint_dir = jf.checkpoint_dir(self.data_dir, self.name, consumer.query_key)

    def _start(self, consumer: Consumer) -> None:
        """Start ``consumer``'s planned query (``name_query``). A new query starts with a fresh checkpoint,
        except one a re-plan handed over (``resume_seq``: ``replan.prepare`` wrote it); a restored query
        takes the state a re-plan handed over to it from its checkpoint, if any (``replan.handed_state``)."""
        self.name_query(consumer)
        if consumer.temporary or not (self.recovering or consumer.resume_seq is not None):
            self.remove_checkpoint(consumer.checkpoint_dir)
        elif self.recovering and consumer.initial_state is None:
            consumer.initial_state = replan.handed_state(consumer.checkpoint_dir)
        self.consumers[consumer.id] = consumer
        journal = self.journal
        if consumer.chain.inputs and all(journal.ended(i) for i in consumer.chain.inputs) \
                and not consumer.checkpoint_dir.exists() and consumer.resume_seq is None:
            # everything it would read has already ended: nothing will arrive
            for name in consumer.stage_names:
                if name in self.streams:
                    self.streams[name].state = st.STOPPED
            if consumer.kind == "journal":  # its readers see the stream's log end
                journal.end(consumer.target)
            consumer.done = True
            if consumer.cursor is not None:
                consumer.cursor.finish()
            return
        consumer.start(journal.head if consumer.resume_seq is None else consumer.resume_seq)
        self._ensure_monitor()

    def release_checkpoint(self, folder: Path) -> None:
        """Close the JVM's state stores of a query checkpoint about to be deleted or replaced: a stopped
        query's maintenance would otherwise write a snapshot into it, or into its successor, later
        (``state_release``; nothing to do without a Spark session)."""
        if isinstance(self.context, ServerContext):
            self.context.release_state(folder)

    def remove_checkpoint(self, folder: Path) -> None:
        """Delete a query checkpoint, its state stores released first."""
        self.release_checkpoint(folder)
        shutil.rmtree(folder, ignore_errors=True)

    def _detach(self, consumer: Consumer, remove_checkpoint: bool) -> None:
        self.consumers.pop(consumer.id, None)
        consumer.stop(remove_checkpoint=remove_checkpoint)
        if consumer.cursor is not None:
            consumer.cursor.finish()
        if consumer.kind == "journal":
            self.materialized.discard(consumer.target)

    # ------------------------------------------------------------ runtime callbacks

    def _source_stopped(self, node: SourceNode) -> None:
        self.cascade()

    def cascade(self) -> None:
        """Streams that no running query computes and whose inputs all stopped become ``stopped``."""
        fused = {n for c in list(self.consumers.values()) if not c.stopped and not c.done
                 for n in c.stage_names}
        changed = True
        while changed:
            changed = False
            for s in list(self.streams.values()):
                if s.state == st.STOPPED or s.name in fused:
                    continue
                if all(self._is_stopped(i) for i in s.inputs):
                    s.state = st.STOPPED
                    changed = True

    def _is_stopped(self, name: str) -> bool:
        node = self.sources.get(name) or self.streams.get(name)
        return node is None or node.state == st.STOPPED

    # ------------------------------------------------------------ stop

    def stop(self, keep_states: bool = False) -> None:
        """Stop every node and Spark query of this topology (sinks are flushed and closed), then terminate
        its states (unless ``keep_states``: ``sbpy runfile -s`` saves them first, then ``states.close()``).

        The journal and checkpoints stay (a persisted topology resumes from them at the next start)."""
        try:
            self._stop_nodes()
        finally:
            if not keep_states:
                self.states.close()

    def _stop_nodes(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._wake.set()
            for s in list(self.sources.values()):
                s.stop(end=False)
            for c in list(self.consumers.values()):
                c.stop()
                if c.cursor is not None:
                    c.cursor.finish()
            for k in list(self.sinks.values()):
                k.close()
            for s in list(self.streams.values()):
                s.state = st.STOPPED
            if self._journal is not None:
                self._journal.close()


_HANDLERS: dict[type, Callable[[Topology, ParsedStatement], None]] = {
    ast.CreateSource: Topology._create_source,
    ast.CreateStreamAsSelect: Topology._create_stream,
    ast.CreateSink: Topology._create_sink,
    ast.InsertInto: Topology._insert_into,
    ast.DropNode: Topology._drop,
    ast.SourceControl: Topology._control,
    ast.UpdateNode: Topology._update,
    ast.CreateState: Topology._state_statement,
    ast.SaveState: Topology._state_statement,
    ast.LoadState: Topology._state_statement,
}
