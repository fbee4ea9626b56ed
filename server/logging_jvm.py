"""The Spark driver JVM's output routed into Python's logging, so a server's log has one format.

``install()`` (called by ``sbpy run`` and ``sbpy runfile`` before Spark starts) wraps PySpark's
``launch_gateway``: each JVM it launches (the first one and any the supervisor restarts) gets

- a log4j2 configuration of ours (``LOG4J2_PROPERTIES``: one console appender on stderr whose lines
  are ``2026-11-24 21:00:01,123 WARN org.apache.spark.X: message`` followed by the exception's
  stack), unless the user's ``spark.driver.extraJavaOptions`` names a log4j configuration;
- a pipe as its stderr, read by a ``JvmOutputRouter`` thread.

The router turns lines into log records (``JvmOutputParser``):

- a log4j line (ours, or Spark's default ``26/11/24 21:00:01 WARN Utils: ...``) becomes a record of
  the Java logger's name at its level (WARN → WARNING, FATAL → CRITICAL, TRACE → DEBUG); the stack
  trace lines after it (``STACK_LINE``) are part of its message;
- the JVM's own ``WARNING: ...``/``Error: ...`` lines become records of logger ``jvm``;
- anything else (a Python worker's traceback, a stray print) is logged by ``jvm.stderr`` at
  WARNING, with every line that follows it until the next record or a pause;
- a record is emitted when the next one starts or when no line came for ``IDLE_FLUSH`` seconds;
- known harmless start-up warnings (``spark_noise.STARTUP_NOISE``) are logged at DEBUG.

Nothing changes for code that never calls ``install()`` (the in-process test servers).
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import select
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .spark_noise import is_startup_noise

log = logging.getLogger("sbpy.spark")

IDLE_FLUSH = 0.1
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
JAVA_LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
               "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
LOG4J_LINE = re.compile(r"^(?:\d{4}-\d\d-\d\d|\d\d/\d\d/\d\d) \d\d:\d\d:\d\d(?:[,.]\d+)? "
                        r"(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ([^\s:]+): ?(.*)$")
JVM_LINE = re.compile(r"^(WARNING|Warning|ERROR|Error): (.*)$")
STDERR_LOGGER = "jvm.stderr"
# a line of a Java stack trace: indented ("\tat ...", "\t... 3 more"), "Caused by: ...", "Suppressed: ...",
# or an exception's class name (dotted) alone or before ": message"
STACK_LINE = re.compile(r"^(?:\s|Caused by: |Suppressed: |[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?::|$))")

LOG4J2_PROPERTIES = """\
# sbpy: Spark's log lines in a format sbpy.server.logging_jvm parses into Python logging
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %p %c: %m%n%ex
# Spark's defaults for chatty libraries
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.jetty2.name = org.sparkproject.jetty.util.component.AbstractLifeCycle
logger.jetty2.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.hive.name = org.apache.hadoop.hive
logger.hive.level = error
# "Unable to load native-hadoop library for your platform... using builtin-java classes"
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
"""


@dataclass
class JvmRecord:
    """One log record being assembled from lines."""

    logger: str
    level: int
    lines: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return "\n".join(self.lines).rstrip()


class JvmOutputParser:
    """Lines in, ``JvmRecord``s out (see the module doc)."""

    def __init__(self) -> None:
        self.pending: JvmRecord | None = None

    def feed(self, line: str) -> JvmRecord | None:
        """Take one line (without its newline); returns the record it completed, if any."""
        line = line.rstrip("\r")
        started = self._start(line)
        if started is None:
            if self.pending is not None and (self.pending.logger == STDERR_LOGGER or STACK_LINE.match(line)):
                self.pending.lines.append(line)
                return None
            if not line.strip():
                return None
            started = JvmRecord(STDERR_LOGGER, logging.WARNING, [line])
        done, self.pending = self.pending, started
        return done

    def flush(self) -> JvmRecord | None:
        """The record being assembled (the JVM went quiet or its output ended)."""
        done, self.pending = self.pending, None
        return done

    @staticmethod
    def _start(line: str) -> JvmRecord | None:
        match = LOG4J_LINE.match(line)
        if match is not None:
            return JvmRecord(match.group(2), JAVA_LEVELS[match.group(1)], [match.group(3)])
        match = JVM_LINE.match(line)
        if match is not None:
            level = logging.WARNING if match.group(1).lower() == "warning" else logging.ERROR
            return JvmRecord("jvm", level, [match.group(2)])
        return None


def emit(record: JvmRecord) -> None:
    """Log ``record`` (harmless start-up noise at DEBUG)."""
    message = record.message
    level = logging.DEBUG if is_startup_noise(record.logger, message) else record.level
    logging.getLogger(record.logger).log(level, "%s", message)


class JvmOutputRouter(threading.Thread):
    """Reads the JVM's stderr pipe (``fd``) until it ends, logging each record."""

    def __init__(self, fd: int):
        super().__init__(name="sbpy-jvm-output", daemon=True)
        self.fd = fd
        self.parser = JvmOutputParser()

    def run(self) -> None:
        buffer = b""
        try:
            while True:
                ready, _, _ = select.select([self.fd], [], [], IDLE_FLUSH)
                if not ready:
                    self._emit(self.parser.flush())
                    continue
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._emit(self.parser.feed(line.decode("utf-8", "replace")))
            if buffer:
                self._emit(self.parser.feed(buffer.decode("utf-8", "replace")))
            self._emit(self.parser.flush())
        finally:
            os.close(self.fd)

    @staticmethod
    def _emit(record: JvmRecord | None) -> None:
        if record is None:
            return
        try:
            emit(record)
        except Exception:  # noqa: BLE001, S110 - the reader must go on, or the JVM blocks on a full pipe
            pass


def log4j2_config_file() -> Path:
    """``LOG4J2_PROPERTIES`` in a file of the temp folder (named by its content's hash)."""
    digest = hashlib.sha256(LOG4J2_PROPERTIES.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"sbpy-log4j2-{digest}.properties"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J2_PROPERTIES, encoding="utf-8")
        tmp.replace(path)
    return path


def with_log4j_config(java_options: str | None) -> str:
    """``java_options`` naming our log4j2 configuration, unless they already name one."""
    options = (java_options or "").strip()
    if "log4j.configurationFile" in options or "log4j2.configurationFile" in options:
        return options
    return f"{options} -Dlog4j2.configurationFile=file:{log4j2_config_file()}".strip()


_installed = threading.Lock()
_state: dict[str, Any] = {}


def install() -> None:
    """Route the output of every driver JVM PySpark launches from now on (idempotent)."""
    with _installed:
        if _state:
            return
        import pyspark.core.context as spark_context

        launch = spark_context.launch_gateway

        def launch_routed(conf: Any = None, popen_kwargs: dict | None = None) -> Any:
            if conf is not None:
                conf.set(JAVA_OPTIONS, with_log4j_config(conf.get(JAVA_OPTIONS, None)))
            read_end, write_end = os.pipe()
            try:
                gateway = launch(conf, popen_kwargs={**(popen_kwargs or {}), "stderr": write_end})
            except BaseException:
                os.close(read_end)
                raise
            finally:
                os.close(write_end)
            JvmOutputRouter(read_end).start()
            proc = getattr(gateway, "proc", None)  # py4j's JavaGateway: PySpark sets ``proc``
            log.info("Spark driver JVM started (pid %s); its log lines follow in this log's format",
                     proc.pid if proc is not None else "?")
            return gateway

        spark_context.launch_gateway = launch_routed
        _state["launch"] = launch
