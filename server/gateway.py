"""The Spark driver JVM behind PySpark's py4j gateway: is it alive, and forgetting it once it died.

PySpark launches one JVM per Python process (``spark-submit`` execs ``java``, so the launched process
*is* the JVM) and caches it in class attributes: ``SparkContext._gateway`` (whose ``proc`` is the
``Popen`` of the JVM), ``SparkContext._jvm``, ``SparkContext._active_spark_context``,
``SparkSession._instantiatedSession`` / ``_activeSession`` and ``SQLContext._instantiatedContext``.
After the JVM died (kill -9, OOM killer) every one of them points at a dead socket and
``SparkSession.builder.getOrCreate()`` keeps returning the dead session. ``discard()`` resets them
without any call into the dead JVM, closes the Python side of the old gateway (its py4j client
connections and the callback server foreachBatch used) and the accumulator server, kills the JVM if it
still runs (a hung one) and reaps it, so no zombie is left. The next ``getOrCreate()`` launches a new
JVM.

Nothing here imports PySpark before a gateway exists.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Any

log = logging.getLogger("sbpy.spark")


def _classes() -> tuple[Any, Any, Any] | None:
    """``(SparkContext, SparkSession, SQLContext)`` if PySpark is loaded, else None."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext
    from pyspark.sql import SparkSession, SQLContext

    return SparkContext, SparkSession, SQLContext


def current() -> Any:
    """PySpark's current gateway (None before Spark starts or after ``discard``)."""
    classes = _classes()
    return None if classes is None else classes[0]._gateway


def _process(gw: Any) -> Any:
    return getattr(gw, "proc", None) if gw is not None else None  # None: a gateway PySpark did not launch


def jvm_pid() -> int | None:
    """The pid of the JVM PySpark launched, if any."""
    proc = _process(current())
    return None if proc is None else proc.pid


def jvm_alive() -> bool:
    """False once the launched JVM has exited (``Popen.poll`` also reaps it). True without a gateway
    or for a gateway PySpark did not launch (only ``ping`` can tell then)."""
    proc = _process(current())
    return proc is None or proc.poll() is None


def ping() -> bool:
    """One cheap py4j call (``System.currentTimeMillis``): True if the JVM answered (or there is no
    gateway), False if the call failed. Blocks while a hung JVM does not answer: call it from a thread
    of its own (the supervisor's pinger)."""
    gw = current()
    if gw is None:
        return True
    try:
        gw.jvm.java.lang.System.currentTimeMillis()
    except Exception as exc:  # noqa: BLE001 - no answer
        log.debug("the JVM did not answer a ping: %s", exc)
        return False
    return True


def lost(window: float = 60.0) -> bool:
    """The JVM died, or a gateway was discarded less than ``window`` seconds ago (py4j calls on its
    objects fail until every holder has moved on)."""
    return not jvm_alive() or time.monotonic() - _discarded_at < window


_discarded_at = float("-inf")


def discard() -> int | None:
    """Forget the current gateway and everything PySpark cached on it (see the module doc); kill the JVM
    if it still runs and reap it. Returns its exit code (None if there was none)."""
    global _discarded_at
    classes = _classes()
    if classes is None:
        return None
    _discarded_at = time.monotonic()
    spark_context, spark_session, sql_context = classes
    with spark_context._lock:
        gw, active = spark_context._gateway, spark_context._active_spark_context
        spark_context._gateway = None
        spark_context._jvm = None
        spark_context._active_spark_context = None
    spark_session._instantiatedSession = None
    spark_session._activeSession = None
    sql_context._instantiatedContext = None
    if active is not None:
        active._jsc = None  # a later ``stop()`` of the old context makes no py4j call
        server = getattr(active, "_accumulatorServer", None)
        if server is not None:
            active._accumulatorServer = None
            _quietly(server.shutdown)
            _quietly(server.server_close)
    proc = _process(gw)
    if gw is not None:
        _quietly(lambda: gw.close(keep_callback_server=False, close_callback_server_connections=True))
    if proc is None:
        return None
    if proc.poll() is None:  # a hung JVM
        log.warning("killing the Spark driver JVM (pid %d), which does not answer", proc.pid)
        proc.kill()
    try:
        return proc.wait(timeout=30)
    except Exception as exc:  # noqa: BLE001
        log.warning("the Spark driver JVM (pid %d) was not reaped: %s", proc.pid, exc)
        return None


def _quietly(action: Any) -> None:
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - the other side is gone; nothing to do about it
        log.debug("closing the old gateway: %s", exc)
