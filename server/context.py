"""The server's process-wide context: the data folder and the one shared SparkSession.

The session is created lazily on first use (``spark()``), so creating and deleting topologies never
waits for Spark; ``warm_up()`` starts it in a background thread at server start so the first query
does not pay the 5–9 s startup. ``close()`` stops every streaming query and the session.

Example::

    ctx = ServerContext.from_config(config)   # or ServerContext(data_dir="/tmp/d")
    ctx.warm_up()
    spark = ctx.spark()
    ...
    ctx.close()
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from sbpy.bql.spark.native_udf import with_jar as with_native_jar
from sbpy.bql.spark.spark_home import shadow_home
from sbpy.bql.spark.state_release import release_under

from . import gateway
from .spark_noise import driver_java_options, executor_java_options

log = logging.getLogger("sbpy.spark")

JAVA_OPTIONS = "spark.driver.extraJavaOptions"
EXECUTOR_JAVA_OPTIONS = "spark.executor.extraJavaOptions"

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

DEFAULT_CONF: dict[str, str] = {
    # the driver JVM's heap (-Xmx, set when PySpark launches it): with a local master it is the heap of every
    # task too, and Spark's 1g default made G1 collect all the time (B1, 2M lines: 2.6 s of pauses over a
    # run, a third of them forced by the ~4 MB file blocks the native tier reads; topology 1.6 -> 1.1 s and
    # the hand-written job 1.5 -> 1.2 s with 2g, README "Session 12 heap"); `spark.conf` overrides it
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "2",
    "spark.scheduler.mode": "FAIR",
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    # measured in bench/profile_batch.py (1-tuple batches): RocksDB's state commit 173 -> 27 ms with
    # changelog checkpointing; offset/commit log writes 131 -> 40 ms with the FileSystem-based checkpoint
    # manager (the default one forks chmod/readlink per file). Its rename is atomic on local and NFS
    # file systems, which data_dir must be; override both in `spark.conf` for HDFS.
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.checkpointFileManagerClass":
        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    # the Python workers fork from a daemon that has imported pyspark's worker from the installed package
    # (``bql/spark/worker_daemon.py``): each new worker skips ~0.5 s of compiling pyspark from its zip
    "spark.python.daemon.module": "sbpy.bql.spark.worker_daemon",
    # stateless micro-batches: skip the no-data batch that follows each data batch
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}


def _attr(obj: Any, *names: str, default: Any = None) -> Any:
    """``obj.a.b...`` or ``default`` when any step is missing (the config model may lack a section)."""
    for name in names:
        if obj is None:
            return default
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return default if obj is None else obj


class ServerContext:
    """Owns the data folder and the lazily created shared SparkSession. Thread-safe."""

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, master: str = "local[*]",
                 conf: dict[str, Any] | None = None, app_name: str = "sbpy", log_level: str = "WARN",
                 config: Any = None):
        if data_dir is None:
            data_dir = tempfile.mkdtemp(prefix="sbpy-data-")
        self._data_dir = Path(data_dir).expanduser().resolve()
        self.master = master or "local[*]"
        self.conf = {str(k): v for k, v in (conf or {}).items()}
        self.app_name = app_name
        self.log_level = log_level
        self.config = config
        self._lock = threading.RLock()
        self._session: Any = None
        self._warm_thread: threading.Thread | None = None
        self._warm_error: BaseException | None = None
        self._closed = False
        self._generation = 0

    @classmethod
    def from_config(cls, config: Any) -> ServerContext:
        """Build from the server's ``Config`` (attributes read defensively)."""
        data_dir = _attr(config, "data_dir") or _attr(config, "spark", "data_dir")
        if data_dir is not None and not Path(data_dir).is_absolute() and hasattr(config, "resolve"):
            data_dir = config.resolve(data_dir)
        return cls(data_dir=data_dir or Path("data").resolve(), master=_attr(config, "spark", "master"),
                   conf=dict(_attr(config, "spark", "conf", default={})), config=config)

    # ------------------------------------------------------------ properties

    @property
    def data_dir(self) -> Path:
        """The folder holding journals, checkpoints and persisted topologies."""
        return self._data_dir

    @property
    def started(self) -> bool:
        """True once the session exists (without creating it)."""
        return self._session is not None

    # ------------------------------------------------------------ session

    def spark(self) -> Any:
        """The shared SparkSession, created on first use (or re-created if it was stopped). If its JVM
        died this raises until ``drop_dead_session`` (the supervisor's job: it also re-attaches the
        queries of the dead session, ``supervisor.py``)."""
        session = self._session
        if session is not None and self._alive(session):
            return session
        with self._lock:
            if self._closed:
                raise RuntimeError("the server context is closed")
            if self._session is not None and not gateway.jvm_alive():
                raise RuntimeError("the Spark driver JVM died; Spark is restarting")
            if self._session is None or not self._alive(self._session):
                self._session = self._create()
            return self._session

    @property
    def generation(self) -> int:
        """How many sessions this context has created (a re-created session has a higher number)."""
        return self._generation

    def release_state(self, folder: str | Path) -> int:
        """Before ``folder`` is deleted: close the JVM's state-store providers of checkpoints under it
        (``state_release``: a stopped query's maintenance would otherwise upload into the deleted folder
        later). Nothing to do before the session exists, after its JVM died, or for a folder that is not
        there (a new query's fresh checkpoint: every deletion of one released its stores first)."""
        session = self._session
        if session is None or not gateway.jvm_alive() or not Path(folder).exists():
            return 0
        return release_under(session, folder)

    def jvm_pid(self) -> int | None:
        """The pid of the Spark driver JVM this process launched (None before Spark starts)."""
        return gateway.jvm_pid() if self._session is not None else None

    def jvm_alive(self) -> bool:
        """Whether the session's JVM process runs (no session: True). A hung JVM runs: the supervisor
        pings it (``gateway.ping``)."""
        return self._session is None or gateway.jvm_alive()

    def drop_dead_session(self) -> int | None:
        """Forget a session whose JVM died or hangs, without a py4j call to it: PySpark's cached gateway
        and contexts are reset, the old py4j servers closed and the JVM killed (if it still runs) and
        reaped. The next ``spark()`` launches a new JVM. Returns the old JVM's exit code."""
        with self._lock:
            self._session = None
            return gateway.discard()

    def warm_up(self) -> threading.Thread:
        """Create the session in a background thread; returns the thread (join it to wait)."""
        with self._lock:
            if self._warm_thread is None or not self._warm_thread.is_alive():
                self._warm_thread = threading.Thread(target=self._warm, name="sbpy-spark-warm-up",
                                                     daemon=True)
                self._warm_thread.start()
            return self._warm_thread

    def _warm(self) -> None:
        try:
            spark = self.spark()
            spark.range(1).collect()  # the first action pays another 2–4 s
        except BaseException as exc:  # reported when spark() is called again
            self._warm_error = exc
            log.warning("Spark warm-up failed: %s", exc)

    def recreate_session(self) -> Any:
        """Stop the current session (if any) and create a new one."""
        with self._lock:
            self._stop_session()
            self._session = self._create()
            return self._session

    def close(self) -> None:
        """Stop every streaming query, then the session. Idempotent."""
        with self._lock:
            self._closed = True
            self._stop_session()

    # ------------------------------------------------------------ internals

    @staticmethod
    def _alive(session: Any) -> bool:
        try:
            jsc = session.sparkContext._jsc
            return jsc is not None and not jsc.sc().isStopped()
        except Exception:
            return False

    def _stop_session(self) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        if not gateway.jvm_alive():  # nothing to stop: py4j calls would only fail
            gateway.discard()
            return
        try:
            for query in session.streams.active:
                try:
                    query.stop()
                except Exception as exc:  # keep stopping the others
                    log.warning("stopping query %s failed: %s", query.name, exc)
            session.stop()
        except Exception as exc:
            log.warning("stopping the Spark session failed: %s", exc)

    def session_conf(self) -> dict[str, str]:
        """The settings the session is created with (defaults overridden by ``spark.conf``)."""
        conf = dict(DEFAULT_CONF)
        conf["spark.pyspark.python"] = sys.executable
        conf["spark.pyspark.driver.python"] = sys.executable
        conf["spark.sql.streaming.checkpointLocation"] = str(self._data_dir / "checkpoints-default")
        for key, value in self.conf.items():
            conf[key] = str(value).lower() if isinstance(value, bool) else str(value)
        conf[JAVA_OPTIONS] = driver_java_options(conf.get(JAVA_OPTIONS))
        conf[EXECUTOR_JAVA_OPTIONS] = executor_java_options(conf.get(EXECUTOR_JAVA_OPTIONS))
        jars = with_native_jar(conf.get("spark.jars"))  # the native tier's JVM function (bql/spark/native_udf)
        if jars:
            conf["spark.jars"] = jars
        return conf

    def _create(self) -> Any:
        # PySpark takes the workers' interpreter from $PYSPARK_PYTHON (read by the driver), not from the
        # conf: on a cluster ``spark.conf: {spark.pyspark.python: ...}`` names the executors' interpreter
        os.environ["PYSPARK_PYTHON"] = self.session_conf()["spark.pyspark.python"]
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        # the JVM's own Python processes read pyspark from a copy of its zip with bytecode (bql/spark/spark_home)
        home = shadow_home()
        if home is not None:
            os.environ["SPARK_HOME"] = str(home)
        from pyspark.sql import SparkSession
        from sbpy.bql.spark.journal_source import register as register_journal
        from sbpy.bql.spark.native_udf import register as register_native

        from .spark_noise import quiet_expected_stops

        self._data_dir.mkdir(parents=True, exist_ok=True)
        builder = SparkSession.builder.master(self.master).appName(self.app_name)
        for key, value in self.session_conf().items():
            builder = builder.config(key, value)
        log.info("starting Spark (master %s)", self.master)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel(self.log_level)
        quiet_expected_stops(session)
        register_journal(session)
        register_native(session)
        self._warm_error = None
        self._generation += 1
        return session
