"""How a topology runs its queries: launching a consumer's fused query on Spark's workers or on the
driver, restarting failed ones, and the plugin side (the ``ProcessorContext`` with the topology's
functions, UDSFs and states, and the state statements). A mixin of ``topology.Topology``.

Where a query runs: a chain whose stages call a function or UDSF that may reach the topology's states
(``TopologyPlugins.stateful_calls``: context-taking plugins such as ``my_next_count`` or
``jubaclassify``) runs on the driver (``sbpy.bql.spark.driver_query``), where the states live; every
other chain runs in ``applyInPandasWithState`` on the workers, which rebuild the functions and UDSFs
from the loaded plugin modules named in ``StageSpec.plugins``.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any

from sbpy.bql import ast
from sbpy.bql.errors import BQLError
from sbpy.bql.history_query import is_table_query
from sbpy.bql.parsed import ParsedStatement

from .history import bind_plan, explain_table
from .node_update import fail, update_node
from .nodes import status as st
from .nodes.consumer import MAX_RESTARTS, Consumer, restart_delay

log = logging.getLogger("sbpy.topology")


class TopologyQueries:
    """Query launching, the restart monitor, the plugin context and the state statements."""

    name: str
    context: Any
    plugins: Any
    states: Any
    recovering: bool
    consumers: dict[str, Consumer]
    streams: dict[str, Any]
    sources: dict[str, Any]
    sinks: dict[str, Any]

    def plan_query(self, chain: Any) -> Any:
        """The physical plan of ``chain`` (``sbpy.bql.plan``): its stages analyzed once, its execution."""
        from sbpy.bql.plan import plan_query

        lines = [name for name in chain.inputs if name in self.sources and self.sources[name].journals_lines]
        return plan_query(chain.inputs, chain.stages, self.processor_context(), self.plugins.stateful_calls,
                          line_inputs=lines)

    def explain(self, parsed: ParsedStatement) -> dict[str, Any]:
        """``EXPLAIN``: the plan a SELECT (as an ad-hoc query) or a CREATE STREAM (read by one sink) would
        run with, against the current graph; nothing is created or started."""
        import re

        from sbpy.bql.plan.explain import as_dict

        from .nodes import from_create, graph

        inner = parsed.stmt.statement
        text = re.sub(r"^\s*EXPLAIN\s+", "", parsed.text, flags=re.IGNORECASE).strip().rstrip(";")
        if isinstance(inner, ast.CreateStreamAsSelect):
            name, select, label = inner.name.lower(), inner.select, inner.name.lower()
            self._check_new_name(name, inner)
        else:
            name, select, label = "(select)", inner, "(select)"
        inputs = self._check_inputs(select, inner, own=name)
        if isinstance(select, ast.Select) and is_table_query(select):  # runs once when issued (server/history.py)
            return explain_table(select, text)
        self._dry_build(select, inner)
        chain = graph.plan_reading(list(inputs), self.sources, self.streams, self.materialized,
                                   (name, text, list(inputs)))
        plan = self.plan_query(chain)
        notes = [self._computed_note(i) for i in plan.inputs if i in self.streams]
        if isinstance(inner, ast.CreateStreamAsSelect):
            why = graph.computed_from_create(plan.stages[-1])
            reachable = not inputs or any(from_create.reachable(self, i) if i in self.streams
                                          else self.sources[i].state not in (st.PAUSED, st.STOPPED)
                                          for i in inputs)
            if why is not None and reachable:
                notes.append(f"{name} is computed by its own query from its CREATE ({why}); "
                             "its consumers read its journal log")
            elif why is not None:
                notes.append(f"{name} computes from its CREATE ({why}); no tuple can reach it yet (its "
                             "sources are paused), so its first reader's query computes it, fused, until "
                             "a source upstream resumes")
        plan = dataclasses.replace(plan, notes=(*plan.notes, *notes))
        return as_dict(plan, {name: label})

    def _computed_note(self, stream: str) -> str:
        """How a stream read from the journal is computed (an EXPLAIN note)."""
        why = self.streams[stream].own_query
        if why is not None:
            return f"{stream} is computed by its own query from its CREATE ({why}); read from its journal log"
        return f"{stream} is computed by its own query (several nodes read it); read from its journal log"

    def start_query(self, consumer: Consumer) -> Any:
        """Launch ``consumer``'s planned query (``consumer.plan``) on Spark, or with the injected starter."""
        from sbpy.bql.plan import Execution
        from sbpy.bql.spark.compile import query_spec_stages
        from sbpy.plugins.loader import loaded_plugins

        plan = consumer.plan = bind_plan(self, consumer.plan)  # table(t): its snapshot now (server/history.py)
        consumer.on_driver = plan.execution is Execution.DRIVER
        # a sink fed by a stateless query gets its JSON lines encoded on the executors (no driver decode); one
        # fed by a driver query gets them from the driver's pipeline (not tagged JSON decoded back to maps)
        json_lines = (self._starter is None and plan.execution in (Execution.STATELESS, Execution.DRIVER)
                      and consumer.kind == "sink" and consumer.sink is not None and consumer.sink.takes_json_lines)
        consumer.out_format = "json" if json_lines else "tagged"
        spec = dict(query_id=f"{self.name}.{consumer.id}", journal_dir=str(self.journal.dir),
                    inputs=tuple(plan.inputs), stages=query_spec_stages(plan, loaded_plugins()),
                    checkpoint_dir=str(consumer.checkpoint_dir), start_seq=consumer.start_seq,
                    on_batch=consumer.on_batch, before_batch=consumer.before_batch, topology=self.name,
                    initial_state=consumer.initial_state, plan=plan)
        if json_lines:
            spec["out_format"] = "json"
        elif self._starter is None and plan.execution in (Execution.STATELESS, Execution.DRIVER):
            # no dict per row; a journal takes the text as it is
            spec["out_rows"] = "texts" if consumer.kind == "journal" else "tuples"
        context = self.processor_context() if consumer.on_driver else None
        if self._starter is not None:
            return self._starter(**spec, processor_context=context)
        from sbpy.bql.spark.compile import start_planned
        from sbpy.bql.spark.query import QuerySpec

        log.info("query '%s' runs %s (tiers: %s): %s", consumer.id, plan.execution.value,
                 ", ".join(s.tier.value for s in plan.stages), plan.reason)
        return start_planned(self.context.spark(), QuerySpec(**spec), context)

    def _ensure_monitor(self) -> None:
        if self._monitor is None or not self._monitor.is_alive():
            self._monitor = threading.Thread(target=self._watch, name=f"sbpy-monitor-{self.name}", daemon=True)
            self._monitor.start()

    def _watch(self) -> None:
        """Restart failed queries (see ``nodes/consumer.py``); exits when no query is left running."""
        while not self._stopped:
            live = [c for c in list(self.consumers.values()) if not c.stopped and not c.done]
            if not live:
                return
            for c in live:
                err = c.failed()
                if err is None:
                    continue
                c.error = err
                if c.restarts < MAX_RESTARTS:
                    if not c.next_restart:
                        c.next_restart = time.monotonic() + restart_delay(c.restarts)
                    elif time.monotonic() >= c.next_restart:
                        c.next_restart = 0.0
                        try:
                            c.restart()
                        except Exception as e:  # noqa: BLE001
                            c.error = str(e)
                    continue
                self._query_failed(c, err)
            self._wake.wait(0.5)

    def _query_failed(self, c: Consumer, err: str) -> None:
        log.error("query '%s' of topology '%s' failed: %s", c.id, self.name, err)
        c.stopped = True
        for name in c.stage_names:
            node = self.streams.get(name)
            if node is not None and node.stats_owner in (None, c.id):
                node.state, node.error = st.STOPPED, err
        if c.cursor is not None:
            c.cursor.finish(err)
        self.cascade()

    def processor_context(self) -> Any:
        """The ``ProcessorContext`` of this topology: its functions, UDSFs and states."""
        from sbpy.bql.runtime import ProcessorContext

        return ProcessorContext(functions=self.plugins.functions, udsfs=self.plugins.udsfs, states=self.states,
                                topology=self.name)

    def _update(self, parsed: ParsedStatement) -> None:
        """UPDATE SOURCE | SINK | STATE name SET k = v, ... (``node_update``). While persisted statements
        are replayed an update the re-created instance refuses is logged, not raised."""
        stmt: ast.UpdateNode = parsed.stmt
        kind, name = stmt.kind.lower(), stmt.name.lower()
        if kind == "state":
            self._state_statement(parsed)
            return
        node = (self.sources if kind == "source" else self.sinks).get(name)
        if node is None:
            raise fail(f"{kind} '{name}' was not found", stmt)
        try:
            update_node(kind, name, node.impl, stmt, guard=node.update_lock)
        except BQLError as e:
            if not self.recovering:
                raise
            log.warning("topology '%s': replaying '%s' failed: %s", self.name, parsed.text.strip(), e.message)

    def _state_statement(self, parsed: ParsedStatement) -> None:
        """CREATE / DROP / SAVE / LOAD / UPDATE STATE (``states.StateManager``). While persisted statements
        are replayed at server start SAVE STATE is skipped (it would overwrite the saved state with a
        fresh one) and a failing state statement is logged, not raised (e.g. LOAD STATE of an
        ``in_memory`` save that did not survive the restart), so the rest of the topology comes back."""
        stmt = parsed.stmt
        if self.recovering and isinstance(stmt, ast.SaveState):
            return
        try:
            self.states.execute(stmt)
        except BQLError as e:
            if not self.recovering:
                raise
            log.warning("topology '%s': replaying '%s' failed: %s", self.name, parsed.text.strip(), e.message)
