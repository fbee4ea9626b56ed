"""Bringing a starting server's topologies back in a background thread, so the REST API answers at once.

At startup the lifespan checks the config's ``bql_file`` s (``TopologyManager.check_config``: unreadable
file, syntax error, a query in it, a statement that does not analyze still abort startup), then starts
``BackgroundRestore``. Its thread creates the configured topologies (``load_configured``: resumed from
their persisted statements or built from their ``bql_file``) and then replays the other persisted ones
(``persistence.restore``); restoring waits for Spark (queries restart from their checkpoints), which
takes seconds to minutes.

Meanwhile the API answers: ``/runtime_status`` and the topology list at once, a restored topology's nodes
as soon as its replay has created them (streams and sinks ``starting`` until their queries run). Anything
that changes a topology being restored, or reads one not created yet, waits for the restore
(``TopologyManager.expect`` / ``wait_restored``). A configured topology failing in the background is
logged at ERROR (the server keeps running with the others). ``hold`` runs first in the thread (tests
hold the restore with it); ``stop`` asks the thread to stop between topologies and waits for it.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from . import persistence
from .manager import StartupError, TopologyManager

log = logging.getLogger("sbpy.server")


class BackgroundRestore:
    """One background restore of ``manager``'s configured and persisted topologies."""

    def __init__(self, manager: TopologyManager, config: Any, hold: Callable[[], None] | None = None):
        self.manager = manager
        self.config = config
        self.hold = hold
        self.done = threading.Event()
        self.failed: dict[str, str] = {}  # configured topology -> why it could not be created
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sbpy-restore", daemon=True)

    def names(self) -> list[str]:
        """The topologies this restore will create: the configured ones, then the persisted others."""
        names = list(self.config.topologies)
        store = getattr(self.manager, "persistence", None)  # set by ``persistence.install``
        if store is not None:
            configured = {n.lower() for n in names}
            names += [n for n in store.persisted() if n.lower() not in configured]
        return names

    def start(self) -> BackgroundRestore:
        self.manager.expect(self.names(), self._thread)
        self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop between topologies and wait up to ``timeout`` s (a replay under way finishes first)."""
        self._cancel.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            if self.hold is not None:
                self.hold()
            for name in self.config.topologies:
                if self._cancel.is_set():
                    return
                try:
                    self.manager.load_configured(self.config, name)
                except StartupError as err:
                    self.failed[name] = str(err)
                    log.error("topology '%s' of the config could not be created: %s", name, err)
                finally:
                    self.manager.restored(name)
            if getattr(self.manager, "persistence", None) is not None and not self._cancel.is_set():
                # config topologies were built first and win over persisted ones of the same name
                persistence.restore(self.manager, self.config)
        except Exception:
            log.exception("restoring the topologies failed")
        finally:
            self.manager.restored()
            self.done.set()
            log.info("topologies restored")
