"""Topology persistence: every successfully applied statement of a topology is appended to
``<data_dir>/topologies/<topology>/statements.bql``; at server start the persisted topologies are
rebuilt by replaying their statements with ``Topology.recovering`` set, so sources resume from their
journal position, sinks keep their files and commit records, and queries restart from their
checkpoints (exactly once); a stream a re-plan split out of a query is computed on its own again
(``replan.rematerialize``), whether or not the statement that split it was persisted. A topology
listed in the config's ``topologies`` wins: if its persisted statements begin with its ``bql_file``'s
statements (the file did not change) it is resumed the same way (``restore_configured``, through the
manager's hook), otherwise it is rebuilt from its ``bql_file`` afresh (its old journal and checkpoints
are removed) and its persisted copy is ignored.

Removing a topology's folder (a DROP, or a new topology over an old folder) first renames it to a unique
tombstone ``<data_dir>/dropped/<name>-<random>`` (atomic), then deletes the tombstone: a crash half-way
leaves no half-deleted topology to restore (``install`` sweeps leftover tombstones), and the manager
does not let a re-CREATE of a name start before the DROP of that name has finished. Before the rename,
``release`` (the server's ``ServerContext.release_state``) closes the JVM's state stores of the folder's
checkpoints, whose later maintenance would otherwise write a snapshot into it (``state_release``).

Wiring (the server's lifespan)::

    persistence.install(manager, release=ctx.release_state)  # before manager.load_from_config(config)
    manager.load_from_config(config)
    persistence.restore(manager, config) # the remaining persisted topologies
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sbpy.bql import ast
from sbpy.bql.durable import fsync_dir
from sbpy.bql.parsed import ParsedStatement
from sbpy.bql.spark import journal_format as jf

from .nodes import replan

log = logging.getLogger("sbpy.persistence")

STATEMENTS_FILE = "statements.bql"
TOMBSTONES = "dropped"
_SKIPPED = (ast.Select, ast.SelectUnion, ast.Eval, ast.Explain)


class Persistence:
    """The manager hooks writing statements; ``restoring`` names topologies being rebuilt. ``release``
    (``ServerContext.release_state``) runs on a topology folder before it is deleted."""

    def __init__(self, data_dir: str | Path, release: Callable[[Path], Any] | None = None):
        self.data_dir = Path(data_dir)
        self.release = release
        self.restoring: set[str] = set()
        self._lock = threading.Lock()

    def path(self, topology: str) -> Path:
        return jf.topology_dir(self.data_dir, topology) / STATEMENTS_FILE

    def created(self, name: str) -> None:
        """A new topology starts with a clean folder (unless it is being restored)."""
        if name.lower() in self.restoring:
            return
        self._discard(jf.topology_dir(self.data_dir, name))
        self.path(name).parent.mkdir(parents=True, exist_ok=True)
        self.path(name).write_text("", encoding="utf-8")
        fsync_dir(self.path(name).parent, missing_ok=True)
        fsync_dir(self.path(name).parent.parent, missing_ok=True)

    def dropped(self, name: str) -> None:
        """A deleted topology forgets its statements, journal and checkpoints."""
        self._discard(jf.topology_dir(self.data_dir, name))

    def _discard(self, folder: Path) -> None:
        """Rename ``folder`` to a unique tombstone (atomic; durable once the parent is synced), then
        delete the tombstone. A missing folder is fine."""
        tombs = self.data_dir / TOMBSTONES
        tombs.mkdir(parents=True, exist_ok=True)
        tomb = tombs / f"{folder.name}-{uuid.uuid4().hex}"
        if self.release is not None and folder.exists():
            self.release(folder)  # a stopped query's state stores would write into it later
        try:
            os.rename(folder, tomb)
        except FileNotFoundError:
            return
        fsync_dir(folder.parent, missing_ok=True)
        shutil.rmtree(tomb, ignore_errors=True)

    def sweep(self) -> None:
        """Delete the tombstones a crash left behind."""
        tombs = self.data_dir / TOMBSTONES
        if tombs.is_dir():
            for tomb in tombs.iterdir():
                shutil.rmtree(tomb, ignore_errors=True)

    def applied(self, name: str, parsed: ParsedStatement, result: Any) -> None:
        if isinstance(parsed.stmt, _SKIPPED) or name.lower() in self.restoring:
            return
        text = parsed.text.strip().rstrip(";").strip()
        with self._lock:
            path = self.path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(text + ";\n")
                f.flush()
                os.fsync(f.fileno())  # an acknowledged statement survives a crash

    def statements(self, name: str) -> list[ParsedStatement] | None:
        """The persisted statements of ``name`` (None without a readable statements file)."""
        from sbpy.bql.parser import parse_script

        try:
            return list(parse_script(self.path(name).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            return None

    def persisted(self) -> list[str]:
        """Names of the topologies with a statements file."""
        root = self.data_dir / "topologies"
        if not root.is_dir():
            return []
        return sorted(p.parent.name for p in root.glob(f"*/{STATEMENTS_FILE}"))


def install(manager: Any, data_dir: str | Path | None = None,
            release: Callable[[Path], Any] | None = None) -> Persistence:
    """Attach the persistence hooks to ``manager`` (data dir: the manager's context's; ``release``: see
    ``Persistence``)."""
    if data_dir is None:
        data_dir = manager.ctx.data_dir
    p = Persistence(data_dir, release=release)
    p.sweep()
    manager.hooks.topology_created = p.created
    manager.hooks.topology_dropped = p.dropped
    manager.hooks.statement_applied = p.applied
    manager.hooks.restore_configured = lambda name, statements: restore_configured(manager, name, statements)
    manager.persistence = p
    return p


def _text(parsed: ParsedStatement) -> str:
    """A statement as ``Persistence.applied`` records it."""
    return parsed.text.strip().rstrip(";").strip()


def restore_configured(manager: Any, name: str, statements: list[ParsedStatement]) -> Any:
    """Resume the configured topology ``name`` from its persisted statements if they begin with
    ``statements`` (its ``bql_file``, unchanged since the last run): its sources continue from their
    journals, its queries from their checkpoints, its sinks keep their commit records. Returns the
    topology, or None (nothing usable persisted, or the file changed: the caller builds it afresh).
    A replay that fails removes the half-built topology and its files, and returns None."""
    p: Persistence = manager.persistence
    persisted = p.statements(name)
    own = [_text(s) for s in statements if not isinstance(s.stmt, _SKIPPED)]
    if not persisted or [_text(s) for s in persisted[:len(own)]] != own:
        return None
    try:
        topology = _replay(manager, p, name, persisted)
    except Exception as e:  # noqa: BLE001 - built afresh by the caller
        log.error("cannot resume topology '%s' (it is rebuilt from its bql_file): %s", name, e)
        manager.delete(name)
        return None
    log.info("resumed topology '%s' from its persisted statements", name)
    return topology


def sweep_checkpoint_temps(folder: Path) -> int:
    """Remove the temp files a kill left in the offset and commit logs of the checkpoints under
    ``folder`` (Spark writes each log entry to ``.<batch>.<uuid>.tmp`` and renames it; a leftover one
    in an otherwise empty ``offsets`` makes Spark refuse to start the query: "should be empty on batch
    0"). Called before a restored topology starts its queries; returns how many were removed."""
    removed = 0
    for log_dir in [*folder.glob("checkpoints/*/offsets"), *folder.glob("checkpoints/*/commits")]:
        for tmp in log_dir.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)
            removed += 1
    if removed:
        log.info("removed %d temp files of interrupted checkpoint writes under %s", removed, folder)
    return removed


def _replay(manager: Any, p: Persistence, name: str, statements: list[ParsedStatement]) -> Any:
    """Create ``name`` over its existing folder and replay ``statements`` with ``recovering`` set;
    queries are planned once the replay has ended (with the final graph, so they find their
    checkpoints). Raises on the first failing statement (the topology stays as far as it got)."""
    from .script_front import check_statement

    p.restoring.add(name.lower())
    try:
        topology = manager.create(name)
        topology.recovering = True
        topology.defer_consumers = True
        try:
            for parsed in statements:
                topology.execute(check_statement(parsed))
            sweep_checkpoint_temps(jf.topology_dir(p.data_dir, name))
            manager.replayed(name)  # readable now; its queries start next (statements wait for them)
            replan.rematerialize(topology)  # streams computed on their own (split) stay so, checkpoints and all
            topology.start_deferred()
        finally:
            topology.defer_consumers = False
            topology.recovering = False
        return topology
    finally:
        p.restoring.discard(name.lower())


def restore(manager: Any, config: Any = None) -> list[str]:
    """Rebuild every persisted topology not in ``config.topologies`` and not already present;
    returns their names. A topology whose replay fails is logged and left as far as it got."""
    from sbpy.bql.parser import parse_script

    p: Persistence = getattr(manager, "persistence", None) or install(manager)
    configured = {n.lower() for n in (getattr(config, "topologies", None) or {})}
    present = {t.name.lower() for t in manager.list()}
    done = []
    for name in p.persisted():
        if name.lower() in configured or name.lower() in present:
            continue
        try:
            _replay(manager, p, name, list(parse_script(p.path(name).read_text(encoding="utf-8"))))
            done.append(name)
            log.info("restored topology '%s'", name)
        except Exception as e:  # noqa: BLE001 - one broken topology must not stop the server
            log.error("cannot restore topology '%s': %s", name, e)
    return done
