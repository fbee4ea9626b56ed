"""A topology's user-defined states (UDS): CREATE / DROP / SAVE / LOAD / UPDATE STATE.

``StateManager(topology, storage, registry)`` owns the live UDS instances of one topology. ``registry``
is the UDS type registry (``TopologyPlugins.uds_types``, or anything with ``uds_types``). Every failure
is a ``BQLExecutionError`` with the statement's span (the REST API answers E0007); a plugin's
exception never escapes as anything else.

Rules (SensorBee's): the tag defaults to ``default`` and is case-insensitive; LOAD STATE needs the
type's ``load_state`` and fails when nothing was saved, unless OR CREATE IF NOT SAVED (then CREATE
with the WITH parameters); the type must match an existing state of that name; an existing instance
with ``load`` is updated in place, otherwise a new instance replaces it and the old one is terminated.

    >>> from sbpy.bql.parser import parse_one
    >>> from sbpy.plugins import PluginRegistries
    >>> from sbpy.plugins.examples.counter import Counter
    >>> from sbpy.server.uds_storage import InMemoryStorage
    >>> regs = PluginRegistries(); regs.add_uds_type("my_counter", Counter)
    >>> states = StateManager("t", InMemoryStorage(), regs)
    >>> states.create(parse_one("CREATE STATE c TYPE my_counter WITH start = 5"))
    >>> states.get("c").next()
    5
    >>> states.save(parse_one("SAVE STATE c TAG v1"))
    >>> states.get("c").next()
    6
    >>> states.load(parse_one("LOAD STATE c TYPE my_counter TAG v1"))
    >>> states.get("c").next()
    6
"""
from __future__ import annotations

import logging
import re
import threading
from typing import Any

from sbpy.bql import ast
from sbpy.bql.errors import BQLExecutionError

from .node_update import call_plugin, fail, fold_params, updater
from .uds_storage import NotSavedError

log = logging.getLogger("sbpy.states")

DEFAULT_TAG = "default"
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_fail = fail


class StateNotFoundError(BQLExecutionError):
    """A state name that does not exist in the topology."""


class StateManager:
    """The UDSs of one topology. Thread-safe: statements and UDF lookups may run concurrently."""

    def __init__(self, topology_name: str, storage: Any, registry: Any):
        self.topology = topology_name
        self.storage = storage
        self.types = getattr(registry, "uds_types", registry)
        self._states: dict[str, tuple[str, Any]] = {}  # name → (type name, instance)
        self._lock = threading.RLock()

    # ------------------------------------------------------------ lookups

    def get(self, name: str) -> Any:
        """The instance called ``name``; ``StateNotFoundError`` when there is none."""
        entry = self._states.get(name.lower()) if isinstance(name, str) else None
        if entry is None:
            raise StateNotFoundError(f"state '{name.lower() if isinstance(name, str) else name}' was not found")
        return entry[1]

    def find(self, name: str) -> Any | None:
        """The instance called ``name`` or None."""
        entry = self._states.get(name.lower())
        return None if entry is None else entry[1]

    def type_name(self, name: str) -> str:
        self.get(name)
        return self._states[name.lower()][0]

    def names(self) -> list[str]:
        return sorted(self._states)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._states

    def list(self) -> list[dict[str, str]]:
        """``[{"name", "type"}]`` sorted by name."""
        return [{"name": n, "type": t} for n, (t, _) in sorted(self._states.items())]

    # ------------------------------------------------------------ statements

    def execute(self, stmt: Any) -> None:
        """Dispatch a state statement (CREATE / DROP / SAVE / LOAD / UPDATE STATE)."""
        if isinstance(stmt, ast.CreateState):
            self.create(stmt)
        elif isinstance(stmt, ast.DropNode) and stmt.kind.lower() == "state":
            self.drop(stmt.name, stmt)
        elif isinstance(stmt, ast.SaveState):
            self.save(stmt)
        elif isinstance(stmt, ast.LoadState):
            self.load(stmt)
        elif isinstance(stmt, ast.UpdateNode) and stmt.kind.lower() == "state":
            self.update(stmt)
        else:
            raise _fail(f"{type(stmt).__name__} is not a state statement", stmt)

    def create(self, stmt: ast.CreateState) -> None:
        """CREATE STATE name TYPE t [WITH k = v, ...]."""
        name = stmt.name.lower()
        with self._lock:
            if name in self._states:
                raise _fail(f"state '{name}' already exists", stmt)
            type_name, creator = self._creator(stmt.type_name, stmt)
            state = self._call(stmt, f"cannot create state '{name}'", creator.create, _params(stmt.params))
            self._states[name] = (type_name, state)

    def drop(self, name: str, stmt: Any = None) -> None:
        """DROP STATE name: the instance is removed and terminated."""
        key = name.lower()
        with self._lock:
            entry = self._states.pop(key, None)
        if entry is None:
            raise _fail(f"state '{key}' was not found", stmt)
        _terminate(key, entry[1])

    def save(self, stmt: ast.SaveState) -> None:
        """SAVE STATE name [TAG t]: the state's ``save(writer, params)`` into the storage."""
        name, tag = stmt.name.lower(), _tag(stmt.tag, stmt)
        with self._lock:
            entry = self._states.get(name)
            if entry is None:
                raise _fail(f"state '{name}' was not found", stmt)
            state = entry[1]
            if not callable(getattr(state, "save", None)):
                raise _fail(f"state '{name}' does not support saving", stmt)
            what = f"cannot save state '{name}'"
            writer = self._call(stmt, what, self.storage.save, self.topology, name, tag)
            try:
                self._call(stmt, what, state.save, writer, {})
            except BaseException:
                writer.abort()
                raise
            self._call(stmt, what, writer.commit)  # a failed commit keeps the previous save

    def load(self, stmt: ast.LoadState) -> None:
        """LOAD STATE name TYPE t [TAG tag] [SET ...] [OR CREATE IF NOT SAVED [WITH ...]]."""
        name, tag = stmt.name.lower(), _tag(stmt.tag, stmt)
        with self._lock:
            type_name, creator = self._creator(stmt.type_name, stmt)
            if not callable(getattr(creator, "load_state", None)):
                raise _fail(f"state type '{type_name}' does not support LOAD STATE", stmt)
            existing = self._states.get(name)
            if existing is not None and existing[0] != type_name:
                raise _fail(f"state '{name}' has type '{existing[0]}', not '{type_name}'", stmt)
            try:
                reader = self.storage.load(self.topology, name, tag)
            except NotSavedError:
                if not stmt.create_if_not_saved:
                    raise _fail(f"state '{name}' was not saved with tag '{tag}'", stmt) from None
                state = self._call(stmt, f"cannot create state '{name}'", creator.create,
                                   _params(stmt.create_params))
                self._replace(name, type_name, state)
                return
            with reader:
                params = _params(stmt.set_params)
                if existing is not None and callable(getattr(existing[1], "load", None)):
                    self._call(stmt, f"cannot load state '{name}'", existing[1].load, reader, params)
                    return
                state = self._call(stmt, f"cannot load state '{name}'", creator.load_state, reader, params)
            self._replace(name, type_name, state)

    def save_all(self, tag: str = DEFAULT_TAG) -> list[str]:
        """Save every state that supports saving under ``tag`` (``sbpy runfile -s TAG`` after the run);
        returns the saved names. A failing state raises after the others were saved."""
        saved, errors = [], []
        for name in self.names():
            if callable(getattr(self.find(name), "save", None)):
                try:
                    self.save(_SaveStmt(name, tag))  # type: ignore[arg-type]
                    saved.append(name)
                except BQLExecutionError as err:
                    errors.append(err.message)
        if errors:
            raise BQLExecutionError("; ".join(errors))
        return saved

    def update(self, stmt: ast.UpdateNode) -> None:
        """UPDATE STATE name SET k = v: the state's ``update(params)``."""
        name = stmt.name.lower()
        with self._lock:
            state = self._states.get(name)
            if state is None:
                raise _fail(f"state '{name}' was not found", stmt)
            update = updater("state", name, state[1], stmt)
            self._call(stmt, f"cannot update state '{name}'", update, _params(stmt.params))

    def close(self) -> None:
        """Terminate every state (topology stopped or deleted)."""
        with self._lock:
            entries, self._states = self._states, {}
        for name, (_, state) in sorted(entries.items()):
            _terminate(name, state)

    # ------------------------------------------------------------ helpers

    def _creator(self, type_name: str, stmt: Any) -> tuple[str, Any]:
        key = type_name.lower()
        creator = self.types.get(key) if self.types is not None else None
        if creator is None:
            raise _fail(f"state type '{key}' is not registered", stmt)
        return key, creator

    def _replace(self, name: str, type_name: str, state: Any) -> None:
        old = self._states.get(name)
        self._states[name] = (type_name, state)
        if old is not None and old[1] is not state:
            _terminate(name, old[1])

    _call = staticmethod(call_plugin)


class _SaveStmt:
    """A SAVE STATE without source text (``save_all``)."""

    span = None

    def __init__(self, name: str, tag: str):
        self.name, self.tag = name, tag


def _tag(tag: str | None, stmt: Any) -> str:
    if tag is None:
        return DEFAULT_TAG
    if not _TAG.match(tag):
        raise _fail(f"invalid tag '{tag}'", stmt)
    return tag.lower()


_params = fold_params


def _terminate(name: str, state: Any) -> None:
    terminate = getattr(state, "terminate", None)
    if callable(terminate):
        try:
            terminate()
        except Exception as err:  # noqa: BLE001 - logged, the state is gone anyway
            log.warning("state '%s' failed to terminate: %s", name, err)
