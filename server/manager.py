"""TopologyManager: the server's named topologies (create / get / list / delete, case-insensitive,
thread-safe), applying BQL scripts to them, and creating the topologies of the config at startup.

Scripts go through the front end in ``script_front.py`` (shared with the REST API).

Persistence (runtime work) plugs in through ``ManagerHooks``: it is told of every created and
dropped topology and every statement applied successfully.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sbpy.bql.errors import BQLError
from sbpy.bql.parsed import ParsedStatement

from .config import Config, name_error
from .script_front import QUERY_STATEMENTS, ScriptParseError, check_statement, describe, parse_statements
from .topology import Topology

log = logging.getLogger("sbpy.server.manager")


# ---------------------------------------------------------------- errors


class ManagerError(Exception):
    """Base of the manager's own errors; ``str()`` is the user-facing message."""


class InvalidNameError(ManagerError):
    def __init__(self, name: Any, reason: str):
        super().__init__(f"'{name}' cannot name a topology: {reason}")
        self.name, self.reason = name, reason


class TopologyExistsError(ManagerError):
    def __init__(self, name: str):
        super().__init__(f"topology '{name}' already exists")
        self.name = name


class TopologyNotFoundError(ManagerError):
    def __init__(self, name: str):
        super().__init__(f"topology '{name}' was not found")
        self.name = name


class StartupError(ManagerError):
    """A topology of the config could not be created or its ``bql_file`` failed."""


def _statement_failed(name: str, where: str, line: int, err: Exception, script: str) -> str:
    detail = describe(err, script) if isinstance(err, BQLError) else str(err)
    return f"{where}: topology '{name}': statement at line {line} failed: {detail}"


# ---------------------------------------------------------------- the manager


@dataclass
class ManagerHooks:
    """Callbacks for persistence; each may be None. Exceptions they raise are logged, not raised."""

    topology_created: Callable[[str], None] | None = None
    topology_dropped: Callable[[str], None] | None = None
    statement_applied: Callable[[str, ParsedStatement, dict[str, Any]], None] | None = None
    # a topology of the config: rebuild it from its persisted statements (they begin with its bql_file's
    # statements) instead of afresh; returns the restored topology or None (then it is built afresh)
    restore_configured: Callable[[str, list[ParsedStatement]], Topology | None] | None = None


class TopologyManager:
    """The named topologies of one server. Names compare case-insensitively and keep their spelling.

    ``topology_factory(name, ctx)`` builds a topology (default ``Topology``); creating or deleting
    a topology does no Spark work.

    A name being deleted (its topology stopping, then its files removed by the ``topology_dropped``
    hook) cannot be created again until the delete has finished: ``create`` waits for it (up to
    ``drop_wait`` seconds), so a DROP and a re-CREATE of the same name never touch each other's files.

    Restoring in the background (``restore.BackgroundRestore``): the names a restore thread will create
    are announced with ``expect`` first. Until ``restored`` releases a name, other threads wait (up to
    ``restore_wait`` seconds) before they create, delete or run statements on it (``wait_restored``);
    ``get`` waits only until its statements have been replayed (``replayed``, called by persistence before
    its queries start), so its nodes can be shown while its queries start.
    """

    drop_wait = 120.0
    restore_wait = 600.0

    def __init__(self, ctx: Any = None, topology_factory: Callable[[str, Any], Topology] = Topology):
        self.ctx = ctx
        self.hooks = ManagerHooks()
        self._factory = topology_factory
        self._topologies: dict[str, Topology] = {}
        self._dropping: dict[str, threading.Event] = {}  # names whose delete has not finished
        self._restoring: dict[str, threading.Event] = {}  # names a background restore has not released
        self._announced: dict[str, str] = {}  # their spelling
        self._replayed: set[str] = set()  # of those, the ones whose statements have been replayed
        self._restorer: threading.Thread | None = None  # the thread restoring them
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # a restored name was created or released

    # -- registry

    def create(self, name: Any) -> Topology:
        """Create an empty topology; ``InvalidNameError`` or ``TopologyExistsError`` on failure."""
        reason = name_error(name)
        if reason is not None:
            raise InvalidNameError(name, reason)
        self.wait_restored(name)
        deadline = time.monotonic() + self.drop_wait
        while True:
            with self._lock:
                dropping = self._dropping.get(name.lower())
                if dropping is None:
                    if name.lower() in self._topologies:
                        raise TopologyExistsError(name)
                    topology = self._factory(name, self.ctx)
                    self._topologies[name.lower()] = topology
                    break
            if not dropping.wait(max(0.0, deadline - time.monotonic())):
                raise ManagerError(f"topology '{name}' is still being deleted")
        self._notify(self.hooks.topology_created, name)
        return topology

    def get(self, name: str) -> Topology:
        """The topology called ``name`` (any case); ``TopologyNotFoundError`` otherwise. A name a
        background restore has yet to create is waited for (until it is created or released)."""
        low = name.lower()
        with self._changed:
            if threading.current_thread() is not self._restorer:
                self._changed.wait_for(lambda: low not in self._restoring or low in self._replayed,
                                       self.restore_wait)
            topology = self._topologies.get(low)
        if topology is None:
            raise TopologyNotFoundError(name)
        return topology

    def list(self) -> list[Topology]:
        with self._lock:
            return list(self._topologies.values())

    def names(self) -> list[str]:
        """The names of the topologies, with those a background restore has yet to create (the REST list:
        a restarted server lists every topology at once)."""
        with self._lock:
            names = [t.name for t in self._topologies.values()]
            return names + [n for low, n in self._announced.items() if low not in self._topologies]

    def delete(self, name: str) -> bool:
        """Stop and forget ``name``; a missing topology is fine. False if stopping it failed."""
        self.wait_restored(name)
        with self._lock:
            topology = self._topologies.pop(name.lower(), None)
            if topology is None:
                return True
            done = self._dropping[name.lower()] = threading.Event()
        try:
            ok = self._stop(topology)
            self._notify(self.hooks.topology_dropped, topology.name)
        finally:
            with self._lock:
                self._dropping.pop(name.lower(), None)
            done.set()
        return ok

    # -- background restore

    def expect(self, names: list[str], restorer: threading.Thread) -> None:
        """Announce the topologies ``restorer`` will create (see the class doc)."""
        with self._lock:
            self._restorer = restorer
            for name in names:
                self._restoring.setdefault(name.lower(), threading.Event())
                self._announced.setdefault(name.lower(), name)

    def restored(self, name: str | None = None) -> None:
        """Release ``name`` (None: every name still announced): its waiters go on."""
        with self._changed:
            names = list(self._restoring) if name is None else [name.lower()]
            events = [self._restoring.pop(n, None) for n in names]
            for n in names:
                self._announced.pop(n, None)
                self._replayed.discard(n)
            self._changed.notify_all()
        for event in events:
            if event is not None:
                event.set()

    def replayed(self, name: str) -> None:
        """``name``'s statements have been replayed (its queries may still be starting): ``get`` returns
        it, so its nodes can be read; statements still wait for ``restored``."""
        with self._changed:
            if name.lower() in self._restoring:
                self._replayed.add(name.lower())
                self._changed.notify_all()

    @property
    def restoring(self) -> list[str]:
        """The names a background restore has not released yet."""
        with self._lock:
            return list(self._restoring)

    def wait_restored(self, name: str) -> bool:
        """Wait until a background restore has released ``name`` (at once if it is not announced, or in
        the restoring thread itself); True if it waited. ``ManagerError`` after ``restore_wait`` s."""
        with self._lock:
            event = self._restoring.get(name.lower())
        if event is None or threading.current_thread() is self._restorer:
            return False
        if not event.wait(self.restore_wait):
            raise ManagerError(f"topology '{name}' is still being restored")
        return True

    def stop_all(self) -> None:
        """Stop every topology (server shutdown); they stay listed in persistence."""
        with self._lock:
            topologies = list(self._topologies.values())
            self._topologies.clear()
        for topology in topologies:
            self._stop(topology)

    # -- statements

    def apply(self, topology: Topology, parsed: ParsedStatement) -> dict[str, Any]:
        """Execute one checked non-SELECT statement on ``topology`` and tell the hooks (after a
        background restore has released the topology)."""
        self.wait_restored(topology.name)
        result = topology.execute(parsed)
        self._notify(self.hooks.statement_applied, topology.name, parsed, result)
        return result

    def run_script(self, topology: Topology, script: str) -> list[dict[str, Any]]:
        """Parse, check and apply every statement of ``script`` in order (stops at the first error)."""
        statements = [check_statement(p) for p in parse_statements(script)]
        return [self.apply(topology, parsed) for parsed in statements]

    def load_from_config(self, config: Config) -> None:
        """Create the topologies of ``config.topologies`` and run their ``bql_file``; any failure is a
        ``StartupError`` naming the topology, the file and the failing statement's line. A topology
        whose persisted statements begin with its ``bql_file``'s (the same file as at the last run) is
        resumed from its journal, checkpoints and sink commit records instead (hook
        ``restore_configured``): a restart after a crash writes no output again."""
        for name in config.topologies:
            self.load_configured(config, name)

    def check_config(self, config: Config) -> None:
        """What ``load_from_config`` reports before any statement runs: an unreadable ``bql_file``, a
        syntax error, a SELECT/EVAL in it, a statement that does not analyze (``StartupError``, same
        text). The server checks this at startup and loads the topologies in the background."""
        for name in config.topologies:
            path = config.bql_file(name)
            if path is not None:
                self._checked_script(name, self._read(name, path), str(path))

    def load_configured(self, config: Config, name: str) -> None:
        """Create the configured topology ``name`` (see ``load_from_config``)."""
        path = config.bql_file(name)
        if path is None:
            try:
                self.create(name)
            except ManagerError as err:
                raise StartupError(f"cannot create topology '{name}': {err}") from None
            return
        script = self._read(name, path)
        if self._restore_configured(name, script):
            return
        try:
            topology = self.create(name)
        except ManagerError as err:
            raise StartupError(f"cannot create topology '{name}': {err}") from None
        self._load_script(topology, script, str(path))

    @staticmethod
    def _read(name: str, path: Any) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except OSError as err:
            raise StartupError(f"cannot read '{path}' for topology '{name}': {err.strerror}") from None

    def _restore_configured(self, name: str, script: str) -> bool:
        """Let persistence resume the configured topology ``name`` from its own files (its persisted
        statements begin with the ``bql_file``'s): True if it did. A script that does not parse or holds
        a SELECT/EVAL is left to ``_load_script``, which reports it."""
        hook = self.hooks.restore_configured
        if hook is None:
            return False
        try:
            statements = parse_statements(script)
        except ScriptParseError:
            return False
        if any(isinstance(p.stmt, QUERY_STATEMENTS) for p in statements):
            return False
        try:
            return hook(name, statements) is not None
        except Exception:  # noqa: BLE001 - then it is built afresh
            log.exception("cannot resume topology '%s' from its persisted statements", name)
            return False

    def _checked_script(self, name: str, script: str, where: str) -> list[tuple[int, ParsedStatement]]:
        """``(line, checked statement)`` for every statement of a ``bql_file``; ``StartupError`` at the
        first that does not parse, is a query or does not analyze."""
        try:
            statements = parse_statements(script)
        except ScriptParseError as err:
            msg = describe(err.error, script)
            raise StartupError(f"{where}: topology '{name}': {msg}") from None
        checked = []
        for parsed in statements:
            line = script.count("\n", 0, parsed.offset) + 1
            try:
                if isinstance(parsed.stmt, QUERY_STATEMENTS):
                    raise ManagerError("SELECT, EVAL and EXPLAIN statements cannot be used in a bql_file")
                checked.append((line, check_statement(parsed)))
            except (BQLError, ManagerError) as err:
                raise StartupError(_statement_failed(name, where, line, err, script)) from None
        return checked

    def _load_script(self, topology: Topology, script: str, where: str) -> None:
        for line, parsed in self._checked_script(topology.name, script, where):
            try:
                self.apply(topology, parsed)
            except (BQLError, ManagerError) as err:
                raise StartupError(_statement_failed(topology.name, where, line, err, script)) from None

    # -- helpers

    @staticmethod
    def _stop(topology: Topology) -> bool:
        try:
            topology.stop()
        except Exception:  # noqa: BLE001 - a failing stop is reported, never raised
            log.exception("topology '%s' was not stopped correctly", topology.name)
            return False
        return True

    @staticmethod
    def _notify(hook: Callable[..., None] | None, *args: Any) -> None:
        if hook is None:
            return
        try:
            hook(*args)
        except Exception:  # noqa: BLE001
            log.exception("manager hook %r failed", hook)
