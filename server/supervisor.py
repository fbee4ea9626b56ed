"""The Spark supervisor: a watchdog thread that notices a dead (or hung) Spark driver JVM, reports it and
brings every query back from its checkpoint.

Every ``interval`` seconds it asks the launched JVM process whether it still runs (``Popen.poll``, no
py4j call); every ``ping_every`` seconds its pinger thread also makes a cheap py4j call
(``gateway.ping``), and a JVM that leaves it unanswered for ``hang_timeout`` seconds counts as dead (it
is killed). Once the JVM is dead:

1. it logs one ERROR line and ``status()`` reports ``restarting`` (``GET /runtime_status`` answers 503);
   the streams and sinks of topologies with running queries show ``starting`` with the reason as their
   ``error`` (sources keep journaling: nothing they read is lost);
2. it forgets the dead queries (their handles; no call reaches the dead JVM) and the dead session
   (``ServerContext.drop_dead_session``: PySpark's cached gateway reset, the old JVM reaped);
3. it creates a new session and, under each topology's statement lock, starts every query again with
   its plan, checkpoint and callbacks (``Topology.start_query``): each resumes from its last committed
   micro-batch; a batch the sink already wrote is skipped by its ``(query, batch)`` commit record, so
   nothing is lost and nothing written twice;
4. the nodes it marked are ``running`` again and ``status()`` says ``running``; one INFO line.

If the new session cannot start it reports ``failed`` and tries again every ``retry`` seconds.

Example::

    supervisor = Supervisor(ctx, manager.list).start()
    ...
    supervisor.stop()
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from . import gateway
from .nodes import status as st

log = logging.getLogger("sbpy.supervisor")

IDLE = "idle"  # Spark has not started yet
RUNNING = "running"
RESTARTING = "restarting"
FAILED = "failed"


class Supervisor:
    """Watches ``ctx``'s Spark driver JVM; ``topologies()`` lists the topologies whose queries it
    re-attaches after a restart."""

    def __init__(self, ctx: Any, topologies: Callable[[], list[Any]], interval: float = 0.5,
                 ping_every: float = 5.0, hang_timeout: float = 60.0, retry: float = 10.0):
        self.ctx = ctx
        self.topologies = topologies
        self.interval, self.ping_every, self.hang_timeout, self.retry = interval, ping_every, hang_timeout, retry
        self.state = IDLE
        self.error: str | None = None
        self.restarts = 0  # sessions re-created after a lost JVM
        self._pending: dict[Any, list[Any]] | None = None  # topology -> queries still to re-attach
        self._marked: list[Any] = []
        self._next_ping = 0.0
        self._ping_asked: float | None = None  # when the outstanding ping was asked
        self._ping_due = threading.Event()  # wakes the pinger
        self._ping_answered = threading.Event()
        self._next_retry = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> Supervisor:
        self._thread = threading.Thread(target=self._run, name="sbpy-spark-supervisor", daemon=True)
        self._thread.start()
        threading.Thread(target=self._pinger, name="sbpy-spark-pinger", daemon=True).start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._ping_due.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def status(self) -> dict[str, Any]:
        """``{"state", "error"?, "restarts", "jvm_pid"?}`` (``GET /runtime_status`` reads it)."""
        out: dict[str, Any] = {"state": self.state, "restarts": self.restarts}
        if self.error:
            out["error"] = self.error
        pid = self.ctx.jvm_pid()
        if pid is not None:
            out["jvm_pid"] = pid
        return out

    @property
    def healthy(self) -> bool:
        return self.state in (IDLE, RUNNING)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception:
                log.exception("the Spark supervisor's check failed")

    # ------------------------------------------------------------ one round

    def check(self) -> None:
        """One round: notice a lost JVM, or retry a recovery that could not start Spark."""
        if self._pending is not None:
            if time.monotonic() >= self._next_retry:
                self._restart()
            return
        if not self.ctx.started:
            return
        if not self.ctx.jvm_alive():
            self._lost("died")
        else:
            silent = self._unanswered()
            if silent is None:
                self.state = RUNNING
                return
            self._lost(f"has not answered for {silent:.0f} s (it is killed)")
        self._restart()

    def _unanswered(self) -> float | None:
        """Ask the pinger when a ping is due; how long a ping has waited once that exceeds
        ``hang_timeout`` (a hung JVM), else None."""
        now = time.monotonic()
        if self._ping_asked is not None:
            if self._ping_answered.is_set():
                self._ping_asked = None
            elif now - self._ping_asked > self.hang_timeout:
                silent, self._ping_asked = now - self._ping_asked, None
                return silent
        if self._ping_asked is None and now >= self._next_ping and self._thread is not None:
            self._ping_asked, self._next_ping = now, now + self.ping_every
            self._ping_answered.clear()
            self._ping_due.set()
        return None

    def _pinger(self) -> None:
        """Makes the pings in a thread of its own (one py4j connection; a hung JVM blocks only it)."""
        while True:
            self._ping_due.wait()
            self._ping_due.clear()
            if self._stop.is_set():
                return
            gateway.ping()
            self._ping_answered.set()

    def _lost(self, what: str) -> None:
        pid = self.ctx.jvm_pid()
        pending = {t: [c for c in list(t.consumers.values())
                       if c.handle is not None and not c.stopped and not c.done] for t in self.topologies()}
        count = sum(len(cs) for cs in pending.values())
        self.state = RESTARTING
        self.error = f"the Spark driver JVM (pid {pid}) {what}; Spark is restarting"
        log.error("the Spark driver JVM (pid %s) %s: restarting Spark and re-attaching %d queries from "
                  "their checkpoints", pid, what, count)
        for topology, consumers in pending.items():
            for c in consumers:
                c.handle = None  # dead: never called again (``Consumer.failed`` ignores a missing handle)
            if consumers:
                self._mark(topology)
        self._pending = pending
        self.ctx.drop_dead_session()

    def _mark(self, topology: Any) -> None:
        for node in [*list(topology.streams.values()), *list(topology.sinks.values())]:
            if node.state == st.RUNNING:
                node.state, node.error = st.STARTING, self.error
                self._marked.append(node)

    def _restart(self) -> None:
        started = time.monotonic()
        try:
            self.ctx.spark()
        except Exception as exc:  # noqa: BLE001 - reported; tried again
            self.state, self.error = FAILED, f"Spark could not be restarted: {exc}"
            self._next_retry = time.monotonic() + self.retry
            log.error("Spark could not be restarted (next try in %.0f s): %s", self.retry, exc)
            return
        pending, self._pending = self._pending or {}, None
        attached = sum(self._reattach(t, cs) for t, cs in pending.items())
        marked, self._marked = self._marked, []
        for node in marked:
            if node.state == st.STARTING and node.error == self.error:
                node.state, node.error = st.RUNNING, None
        self.state, self.error = RUNNING, None
        self.restarts += 1
        log.info("Spark restarted in %.1f s (JVM pid %s); %d queries re-attached from their checkpoints",
                 time.monotonic() - started, self.ctx.jvm_pid(), attached)

    @staticmethod
    def _reattach(topology: Any, consumers: list[Any]) -> int:
        """Start ``consumers``' queries again on the new session (under the topology's statement lock; a
        query dropped or restarted meanwhile is left alone). Returns how many started."""
        started = 0
        with topology._lock:
            for c in consumers:
                if c.stopped or c.done or c.handle is not None or topology.consumers.get(c.id) is not c:
                    continue
                try:
                    c.handle = topology.start_query(c)
                    started += 1
                except Exception as exc:  # noqa: BLE001 - this query stays down; the others come back
                    c.error = str(exc)
                    log.error("query '%s' of topology '%s' could not be re-attached: %s", c.id,
                              topology.name, exc)
        return started
