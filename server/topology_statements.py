"""The statements that change a topology's graph: CREATE SOURCE / STREAM / SINK, INSERT INTO, DROP and
PAUSE / RESUME / REWIND SOURCE. A mixin of ``topology.Topology``, which runs each under its statement lock
(``Topology.execute``); every check raises before anything changes, so a failed statement leaves the
graph as it was.

- CREATE SOURCE instantiates the registered type with its folded WITH parameters (inside the server's
  file roots) and starts its thread, which journals tuples; a restored source whose journal ended stays
  stopped.
- CREATE STREAM checks its inputs, builds its processor once (dry build: errors surface now) and, when its
  outputs depend on earlier tuples, starts its own query (``graph.computed_from_create``,
  ``nodes/from_create.py``).
- INSERT INTO attaches a sink consumer; DROP detaches what reads the node (a stream's computing query is
  handed over first) and closes or ends it.
"""
from __future__ import annotations

from typing import Any

from sbpy.bql import ast
from sbpy.bql.errors import BQLError, UnsupportedFeatureError
from sbpy.bql.parsed import ParsedStatement

from . import history
from .node_update import fail, fold_params
from .nodes import from_create, graph
from .nodes import status as st
from .nodes.consumer import Consumer
from .nodes.sink_node import SinkNode
from .nodes.source_node import SourceNode
from .nodes.stream_node import StreamNode, select_inputs, select_text

_fail = fail


class TopologyStatements:
    """CREATE / INSERT INTO / DROP / source control (see the module docstring)."""

    name: str
    context: Any
    plugins: Any
    recovering: bool
    defer_consumers: bool
    sources: dict[str, SourceNode]
    streams: dict[str, StreamNode]
    sinks: dict[str, SinkNode]
    consumers: dict[str, Consumer]
    materialized: set[str]

    def _check_new_name(self, name: str, stmt: Any) -> None:
        for kind, nodes in (("source", self.sources), ("stream", self.streams), ("sink", self.sinks)):
            if name in nodes:
                raise _fail(f"{kind} '{name}' already exists", stmt)

    def _make_plugin(self, kind: str, types: Any, stmt: Any, name: str, **kwargs: Any) -> Any:
        """Instantiate the registered source/sink type of a CREATE SOURCE/SINK statement with its
        folded WITH parameters; an unknown type or a failing constructor is a statement error. The
        server's file roots (``context.file_roots``, set by ``sbpy run``; None: unrestricted) are in
        force while it runs (``sbpy.plugins.builtin.paths``)."""
        from sbpy.plugins.builtin.paths import allowed_roots

        cls = types.get(stmt.type_name)
        if cls is None:
            raise _fail(f"{kind} type '{stmt.type_name.lower()}' is not registered", stmt)
        params = fold_params(stmt.params)
        try:
            with allowed_roots(getattr(self.context, "file_roots", None)):
                return cls(params, **kwargs)
        except BQLError as e:
            raise _fail(f"cannot create {kind} '{name}': {e.message}", stmt) from None
        except Exception as e:  # noqa: BLE001 - a plugin's failure is a statement error
            raise _fail(f"cannot create {kind} '{name}': {e}", stmt) from None

    def _create_source(self, parsed: ParsedStatement) -> None:
        stmt: ast.CreateSource = parsed.stmt
        name = stmt.name.lower()
        self._check_new_name(name, stmt)
        impl = self._make_plugin("source", self.plugins.source_types, stmt, name)
        journal = self.journal
        if not self.recovering:
            journal.reset(name)
        history.retain_history(self, name, stmt)  # WITH history = n: kept for table() (server/history.py)
        node = SourceNode(self, name, stmt.type_name.lower(), impl, journal, stmt.paused, self._source_stopped,
                          skip=journal.count(name))
        self.sources[name] = node
        if self.recovering and journal.ended(name):
            node.state = st.STOPPED
            return
        node.start()

    def _create_stream(self, parsed: ParsedStatement) -> None:
        stmt: ast.CreateStreamAsSelect = parsed.stmt
        name = stmt.name.lower()
        self._check_new_name(name, stmt)
        inputs = self._check_inputs(stmt.select, stmt, own=name)
        self._dry_build(stmt.select, stmt)
        node = StreamNode(name, stmt.select, select_text(parsed.text, stmt), inputs)
        node.own_query = graph.computed_from_create(self._describe(node))
        if self.defer_consumers:  # restored: its query starts once the replay has ended
            node.state = st.STARTING
        self.streams[name] = node
        if node.own_query is not None and not self.defer_consumers and from_create.reachable(self, name):
            try:
                self.compute_from_create(name)
            except Exception:  # its query did not start: the statement fails, the stream is not created
                del self.streams[name]
                own = self.consumers.pop(name, None)
                if own is not None:
                    own.stop(remove_checkpoint=True)
                self.materialized.discard(name)
                raise
        self.cascade()

    def _describe(self, node: StreamNode) -> Any:
        """The planner's facts of ``node``'s stage (memoryless or not, calls reaching states)."""
        from sbpy.bql.plan.planner import describe_stage

        return describe_stage(node.name, node.text, node.inputs, self.processor_context(),
                              self.plugins.stateful_calls)

    def compute_from_create(self, name: str) -> None:
        """Start the query computing stream ``name`` from now on, as SensorBee connects a stream to its
        inputs at CREATE (``graph.computed_from_create``; when: ``nodes/from_create.py``); a memoryless
        upstream stream it shares with another running query is split out first (computed once)."""
        self.materialize_shared([name], [])
        self.materialize(name)

    def _check_inputs(self, select: Any, stmt: Any, own: str | None = None) -> list[str]:
        inputs = select_inputs(select)
        for inp in inputs:
            if inp == own:
                raise _fail(f"stream '{own}' cannot read from itself", stmt)
            if inp in self.sinks:
                raise _fail(f"'{inp}' is a sink and cannot be read from", stmt)
            if inp not in self.sources and inp not in self.streams:
                raise _fail(f"stream '{inp}' was not found", stmt)
        history.check_tables(self, select, stmt, own)  # table(x): a source with history (server/history.py)
        return inputs

    def _dry_build(self, select: Any, stmt: Any) -> None:
        from sbpy.bql.runtime import build_processor

        try:
            build_processor(select, self.processor_context())
        except BQLError as e:
            if e.span is None:
                e.span = getattr(stmt, "span", None)
            raise
        except Exception as e:  # noqa: BLE001 - a plugin (UDSF constructor) failed
            raise _fail(f"cannot build the query: {type(e).__name__}: {e}", stmt) from None

    def _create_sink(self, parsed: ParsedStatement) -> None:
        stmt: ast.CreateSink = parsed.stmt
        name = stmt.name.lower()
        self._check_new_name(name, stmt)
        impl = self._make_plugin("sink", self.plugins.sink_types, stmt, name, recovering=self.recovering)
        self.sinks[name] = SinkNode(name, stmt.type_name.lower(), impl)
        if self.defer_consumers:  # restored: fed once the replay has ended
            self.sinks[name].state = st.STARTING

    def _insert_into(self, parsed: ParsedStatement) -> None:
        stmt: ast.InsertInto = parsed.stmt
        sink_name, src = stmt.sink.lower(), stmt.stream.lower()
        sink = self.sinks.get(sink_name)
        if sink is None:
            raise _fail(f"sink '{sink_name}' was not found", stmt)
        if src not in self.sources and src not in self.streams:
            raise _fail(f"stream '{src}' was not found", stmt)
        if src in sink.inputs:
            raise _fail(f"sink '{sink_name}' already receives tuples from '{src}'", stmt)
        sink.inputs.append(src)
        cid = sink_name if len(sink.inputs) == 1 else f"{sink_name}-{src}"
        try:
            self._attach(Consumer(self, cid, "sink", src, None, sink=sink))
        except Exception:
            sink.inputs.remove(src)
            raise

    def _drop(self, parsed: ParsedStatement) -> None:
        stmt: ast.DropNode = parsed.stmt
        kind, name = stmt.kind.lower(), stmt.name.lower()
        if kind == "state":
            self._state_statement(parsed)
            return
        nodes = {"source": self.sources, "stream": self.streams, "sink": self.sinks}.get(kind)
        if nodes is None:
            raise UnsupportedFeatureError(f"DROP {kind.upper()} is not supported yet", stmt.span)
        node = nodes.get(name)
        if node is None:
            raise _fail(f"{kind} '{name}' was not found", stmt)
        if kind == "source":
            node.stop(end=True)
            del self.sources[name]
        elif kind == "stream":
            for c in list(self.consumers.values()):
                if name in c.stage_names or name in c.chain.inputs:
                    if c.id != name:
                        from_create.hand_over(self, c, dropped=name)
                    self._detach(c, remove_checkpoint=True)
            del self.streams[name]
            self.materialized.discard(name)
        else:
            for c in list(self.consumers.values()):
                if c.sink is node:
                    from_create.hand_over(self, c)
                    self._detach(c, remove_checkpoint=True)
            node.close()
            del self.sinks[name]
        if not self.recovering:
            from_create.start_reachable(self)
        self.cascade()

    def _control(self, parsed: ParsedStatement) -> None:
        stmt: ast.SourceControl = parsed.stmt
        name, action = stmt.name.lower(), stmt.action.lower()
        node = self.sources.get(name)
        if node is None:
            raise _fail(f"source '{name}' was not found", stmt)
        if action == "rewind" and not node.rewindable:
            raise _fail(f"source '{name}' is not rewindable", stmt)
        if node.state == st.STOPPED:
            if self.recovering:
                return
            raise _fail(f"source '{name}' has already stopped", stmt)
        if action == "pause":
            node.pause()
        elif action == "resume":
            if not self.defer_consumers:
                from_create.before_resume(self, name)  # pending streams downstream see its tuples
            node.resume()
        elif not self.recovering:  # a replayed REWIND would emit the file again
            node.rewind()
