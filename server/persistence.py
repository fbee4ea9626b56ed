"""Topology persistence: every successfully applied statement of a topology is appended to
``<data_dir>/topologies/<topology>/statements.bql``; at server start the persisted topologies are
rebuilt by replaying their statements with ``Topology.recovering`` set, so sources resume from their
journal position, sinks keep their files and commit records, and queries restart from their
checkpoints (exactly once). A topology listed in the config's ``topologies`` wins: it is rebuilt from
its ``bql_file`` (fresh: its old journal and checkpoints are removed) and its persisted copy is ignored.

Wiring (the server's lifespan)::

    persistence.install(manager)         # before manager.load_from_config(config)
    manager.load_from_config(config)
    persistence.restore(manager, config) # the remaining persisted topologies
"""
from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path
from typing import Any

from sbpy.bql import ast
from sbpy.bql.parsed import ParsedStatement
from sbpy.bql.spark import journal_format as jf

log = logging.getLogger("sbpy.persistence")

STATEMENTS_FILE = "statements.bql"
_SKIPPED = (ast.Select, ast.SelectUnion, ast.Eval)


class Persistence:
    """The manager hooks writing statements; ``restoring`` names topologies being rebuilt."""

    def __init__(self, data_dir: str | Path):
        self.data_dir = Path(data_dir)
        self.restoring: set[str] = set()
        self._lock = threading.Lock()

    def path(self, topology: str) -> Path:
        return jf.topology_dir(self.data_dir, topology) / STATEMENTS_FILE

    def created(self, name: str) -> None:
        """A new topology starts with a clean folder (unless it is being restored)."""
        if name.lower() in self.restoring:
            return
        shutil.rmtree(jf.topology_dir(self.data_dir, name), ignore_errors=True)
        self.path(name).parent.mkdir(parents=True, exist_ok=True)
        self.path(name).write_text("", encoding="utf-8")

    def dropped(self, name: str) -> None:
        """A deleted topology forgets its statements, journal and checkpoints."""
        shutil.rmtree(jf.topology_dir(self.data_dir, name), ignore_errors=True)

    def applied(self, name: str, parsed: ParsedStatement, result: Any) -> None:
        if isinstance(parsed.stmt, _SKIPPED) or name.lower() in self.restoring:
            return
        text = parsed.text.strip().rstrip(";").strip()
        with self._lock:
            path = self.path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(text + ";\n")

    def persisted(self) -> list[str]:
        """Names of the topologies with a statements file."""
        root = self.data_dir / "topologies"
        if not root.is_dir():
            return []
        return sorted(p.parent.name for p in root.glob(f"*/{STATEMENTS_FILE}"))


def install(manager: Any, data_dir: str | Path | None = None) -> Persistence:
    """Attach the persistence hooks to ``manager`` (data dir: the manager's context's)."""
    if data_dir is None:
        data_dir = manager.ctx.data_dir
    p = Persistence(data_dir)
    manager.hooks.topology_created = p.created
    manager.hooks.topology_dropped = p.dropped
    manager.hooks.statement_applied = p.applied
    manager.persistence = p
    return p


def restore(manager: Any, config: Any = None) -> list[str]:
    """Rebuild every persisted topology not in ``config.topologies`` and not already present;
    returns their names. A topology whose replay fails is logged and left as far as it got."""
    from sbpy.bql.parser import parse_script

    from .manager import check_statement

    p: Persistence = getattr(manager, "persistence", None) or install(manager)
    configured = {n.lower() for n in (getattr(config, "topologies", None) or {})}
    present = {t.name.lower() for t in manager.list()}
    done = []
    for name in p.persisted():
        if name.lower() in configured or name.lower() in present:
            continue
        script = p.path(name).read_text(encoding="utf-8")
        p.restoring.add(name.lower())
        try:
            topology = manager.create(name)
            topology.recovering = True
            topology.defer_consumers = True  # queries are planned with the final graph
            try:
                for parsed in parse_script(script):
                    topology.execute(check_statement(parsed))
                topology.start_deferred()
            finally:
                topology.defer_consumers = False
                topology.recovering = False
            done.append(name)
            log.info("restored topology '%s'", name)
        except Exception as e:  # noqa: BLE001 - one broken topology must not stop the server
            log.error("cannot restore topology '%s': %s", name, e)
        finally:
            p.restoring.discard(name.lower())
    return done
