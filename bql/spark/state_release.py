"""Release the JVM's state-store providers of checkpoints about to be deleted.

A stateful query's RocksDB state-store providers stay loaded in the JVM after the query stops: Spark's
maintenance thread (every ``spark.sql.streaming.stateStore.maintenanceInterval``, 60 s) first runs each
provider's maintenance — with changelog checkpointing (``ServerContext``'s default) that *uploads the
snapshots its commits queued* into the checkpoint folder, creating missing parent folders — and only then
unloads the providers whose query is gone. A topology dropped (or a temporary query's checkpoint removed)
within that minute got its folder deleted, then re-created by the upload: a dropped topology left a folder
behind, and a new topology of the same name could find a stale snapshot of the old one in its checkpoint.

``release_under(spark, root)`` closes, before the folder is deleted, every provider loaded in this JVM
whose checkpoint lies under ``root``: taken out of the loaded providers and out of the queue of unloaded
providers awaiting their last maintenance, and closed (a RocksDB provider's close drops the snapshots it
had queued for upload), after any maintenance already running on it has finished. Spark has no public
call to list them, so this reads ``StateStore``'s private members through Java reflection (Spark 4.x); a
Spark whose members differ gets a warning and nothing released, and the deletion goes on as before.
Only the driver JVM is reached: in local mode it runs every task; on a cluster the executors' providers
are unloaded by their own maintenance, whose uploads land in the deleted folder's place.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("sbpy.spark")

STATE_STORE = "org.apache.spark.sql.execution.streaming.state.StateStore$"
WAIT_S = 30.0  # at most this long for a maintenance already running on a released provider
POLL_S = 0.02
ATTEMPTS = 3


class _StateStore:
    """``StateStore``'s module object and the private members read here, through py4j."""

    def __init__(self, spark: Any):
        gw = spark.sparkContext._gateway
        self.jvm = gw.jvm
        self.cls = self.jvm.java.lang.Class.forName(STATE_STORE)
        self.module = self.cls.getField("MODULE$").get(None)
        self.no_types = gw.new_array(self.jvm.java.lang.Class, 0)
        self.no_args = gw.new_array(self.jvm.java.lang.Object, 0)

    def private(self, name: str) -> Any:
        method = self.cls.getDeclaredMethod(name, self.no_types)
        method.setAccessible(True)
        return method.invoke(self.module, self.no_args)

    def loaded(self) -> list[Any]:
        """The ids of the loaded providers (a copy of the map's keys)."""
        return _items(self.private("loadedProviders").keys())

    def pending_close(self) -> list[Any]:
        """The (id, provider, request) entries of providers unloaded but not yet closed."""
        return list(self.private("unloadedProvidersToClose").toArray())

    def busy(self) -> list[Any]:
        """The ids a maintenance thread works on now (snapshot upload or cleanup)."""
        return [i for name in ("snapshotPartitions", "cleanupPartitions") for i in _items(self.private(name))]


def _items(collection: Any) -> list[Any]:
    """The elements of a Scala collection (copied into a Scala list first)."""
    items = collection.toList()
    return [items.apply(i) for i in range(items.size())]


def _location(provider_id: Any) -> Path:
    text = str(provider_id.storeId().checkpointRootLocation())
    if text.startswith("file:"):
        text = text[len("file:"):]
        while text.startswith("//"):
            text = text[1:]
    return Path(text)


def _under(provider_id: Any, root: Path) -> bool:
    try:
        return _location(provider_id).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


def loaded_under(spark: Any, root: str | Path) -> int:
    """How many providers loaded in this JVM (or awaiting their close) keep a checkpoint under ``root``."""
    store, base = _StateStore(spark), Path(root).resolve()
    return (sum(_under(i, base) for i in store.loaded())
            + sum(_under(e._1(), base) for e in store.pending_close()))


def release_under(spark: Any, root: str | Path) -> int:
    """Close every state-store provider of this JVM whose checkpoint lies under ``root`` (module doc);
    returns how many. Never raises: a failure is logged and the caller deletes the folder anyway."""
    base = Path(root).resolve()
    for attempt in range(ATTEMPTS):
        try:
            return _release(spark, base)
        except Exception as e:  # noqa: BLE001 - another Spark's internals, a JVM going away: delete anyway
            # the maps are read without Spark's lock: a read racing a maintenance pass may fail; try again
            if attempt + 1 == ATTEMPTS:
                log.warning("could not release the state stores under %s before deleting it: %s", base, e)
    return 0


def _release(spark: Any, base: Path) -> int:
    store = _StateStore(spark)
    released = 0
    _wait_idle(store, base)
    for provider_id in store.loaded():
        if _under(provider_id, base):
            store.module.removeFromLoadedProvidersAndClose(provider_id)
            released += 1
    queue = store.private("unloadedProvidersToClose")
    for entry in store.pending_close():
        if _under(entry._1(), base) and queue.remove(entry):
            entry._2().close()
            released += 1
    _wait_idle(store, base)
    if released:
        log.info("released %d state-store provider(s) under %s", released, base)
    return released


def _wait_idle(store: _StateStore, base: Path) -> None:
    """Until no maintenance thread works on a provider under ``base`` (at most ``WAIT_S``)."""
    deadline = time.monotonic() + WAIT_S
    while any(_under(i, base) for i in store.busy()):
        if time.monotonic() > deadline:
            log.warning("state-store maintenance under %s still runs after %.0f s", base, WAIT_S)
            return
        time.sleep(POLL_S)
