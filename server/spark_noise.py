"""Quiet logs for *expected* query stops (DROP, a closed SELECT, re-planning, shutdown); real errors stay.

Stopping a Spark streaming query cancels the job of its running micro-batch, so the foreachBatch
callback raises. Left alone, one stop logs:

- Python side: py4j's ``There was an exception while executing the Python Proxy on the Python Side``
  at ERROR, with a Python traceback and the Java stack of the cancelled job (``[SPARK_JOB_CANCELLED] Job
  N cancelled Query t.k [...] was stopped``) or of a batch a re-planned query refused on purpose;
- Java side: a ~1,100-line ``java.lang.StackOverflowError``. py4j hands the JVM the Python traceback as
  text; to tell a stop from a failure Spark matches it with ``Py4JJavaError: An error occurred while
  calling((.|\\r\\n|\\r|\\n)*)(...)`` (``StreamExecution.PROXY_ERROR``), and Java's regex engine recurses
  once per character of that ~12 kB text: the stream thread's default 1 MB stack overflows. With a
  larger thread stack (``JAVA_THREAD_STACK``, ``-Xss``; virtual memory, committed only as used) the match
  completes, Spark sees the cancelled job of a stopped query and ends it quietly as "Stopped";
- Java side: ``WARN Shell: Interrupted while joining on ...`` with a ``java.lang.InterruptedException``
  stack, ``WARN DAGScheduler: Failed to cancel job group ... Cannot find active jobs for it`` and
  ``WARN TaskSetManager: Lost task ... TaskKilled (Stage cancelled: [SPARK_JOB_CANCELLED] ... was
  stopped)``.

``driver_java_options(user_options)`` adds the stack size to ``spark.driver.extraJavaOptions`` (unless the
user set ``-Xss``); ``quiet_expected_stops(session)`` denies the three Java messages above (log4j
``RegexFilter`` on those loggers only) and attaches ``ExpectedStopFilter`` to py4j's logger, which drops
its record only when the exception is the cancel or interrupt of a stopped query, or a refused batch.
Every other py4j record and Java log line is kept: a query that really fails is still logged (Spark's
"Query ... terminated with error", ``QueryHandle``'s "query ... failed"). A stop's one INFO line is the
consumer's own.

Start-up warnings known to be harmless (``STARTUP_NOISE``: the loopback-hostname and native-hadoop
warnings, the JVM's "Using incubator modules", the lines Spark prints when its default log4j profile
is used, sbpy's data sources registered again by a new session, adaptive execution disabled for a
streaming query, a query's FAIR scheduler pool created on first use) are logged at DEBUG by the JVM
output router (``sbpy.server.logging_jvm``); ``is_startup_noise(logger, message)`` tells them.

A dead JVM is reported by the supervisor in one ERROR line; the echoes of the loss are quieted:
py4j's root-logger "Exception while sending command." with a traceback per failing call
(``DeadJvmFilter``, only while ``gateway.lost()``) and the ``EOFError`` traceback PySpark's accumulator
server prints when the JVM's connection ends (logged at DEBUG).
"""
from __future__ import annotations

import logging
import re
import sys
from typing import Any

from . import gateway

log = logging.getLogger("sbpy.spark")

PROXY_LOGGER = "py4j.clientserver"
JAVA_THREAD_STACK = "-Xss32m"
# HotSpot leaves methods over 8000 bytes of bytecode to the interpreter; Spark's whole-stage code for a
# native chain with arithmetic (native_arith: a Project per computed value) passes that size, and ran
# 1.3-2x slower interpreted (README "Session 24")
HUGE_METHODS = "-XX:-DontCompileHugeMethods"

# an exception raised inside foreachBatch because its query is being stopped, or refused on purpose
EXPECTED_STOP = re.compile(
    r"\[SPARK_JOB_CANCELLED\][^\n]*was stopped"  # the job of a stopped query was cancelled
    r"|java\.lang\.InterruptedException"
    r"|java\.nio\.channels\.ClosedByInterruptException"
    r"|java\.io\.InterruptedIOException"
    r"|is being re-planned: batch \d+ is left uncommitted")  # ``Consumer.before_batch``

# Java log lines a stop causes: (logger, regex the whole formatted message must match to be denied)
JAVA_STOP_NOISE: tuple[tuple[str, str], ...] = (
    ("org.apache.hadoop.util.Shell", "Interrupted while joining on.*"),
    ("org.apache.spark.scheduler.DAGScheduler", "Failed to cancel job group .*Cannot find active jobs.*"),
    ("org.apache.spark.scheduler.TaskSetManager",
     ".*TaskKilled \\(Stage cancelled: \\[SPARK_JOB_CANCELLED\\].* was stopped.*"),
)


# (last part of the logger's name, regex searched in the message): harmless warnings at Spark's start-up
STARTUP_NOISE: tuple[tuple[str, str], ...] = (
    ("jvm", r"^Using incubator modules"),
    ("stderr", r"^Using Spark's default log4j profile"),
    ("stderr", r"^Setting default log level to"),
    ("stderr", r"^To adjust logging level use sc\.setLogLevel"),
    ("Utils", r"resolves to a loopback address|^Set SPARK_LOCAL_IP if you need to bind"),
    ("NativeCodeLoader", r"^Unable to load native-hadoop library"),
    ("DataSourceManager", r"^The data source sbpy_\w+ replaced a previously registered data source"),
    ("ResolveWriteToStream", r"^spark\.sql\.adaptive\.enabled is not supported in streaming"),  # each query
    ("FairSchedulableBuilder", r"A job was submitted with scheduler pool \S+, which has not been configured"),
)
_STARTUP_NOISE = tuple((name, re.compile(pattern)) for name, pattern in STARTUP_NOISE)


def is_startup_noise(logger: str, message: str) -> bool:
    """Whether a JVM log record (``logger`` its Java or ``jvm``/``jvm.stderr`` name) is a known harmless
    start-up warning."""
    short = logger.rsplit(".", 1)[-1]
    return any(short == name and pattern.search(message) for name, pattern in _STARTUP_NOISE)


def driver_java_options(user_options: str | None) -> str:
    """``spark.driver.extraJavaOptions`` with the thread stack size and ``HUGE_METHODS`` added (the user's
    ``-Xss`` / ``DontCompileHugeMethods`` win)."""
    options = (user_options or "").strip()
    if "-Xss" not in options:
        options = f"{options} {JAVA_THREAD_STACK}"
    return executor_java_options(options)


def executor_java_options(user_options: str | None) -> str:
    """``spark.executor.extraJavaOptions`` with ``HUGE_METHODS`` added (the user's setting of it wins)."""
    options = (user_options or "").strip()
    if "DontCompileHugeMethods" not in options:
        options = f"{options} {HUGE_METHODS}"
    return options.strip()


def is_expected_stop(exc: BaseException | None) -> bool:
    """Whether ``exc`` (raised inside a foreachBatch callback) comes from stopping its query."""
    if exc is None:
        return False
    try:
        text = str(exc)  # a Py4JJavaError fetches its Java stack here: the JVM may be gone
    except Exception:  # noqa: BLE001
        text = repr(exc)
    return EXPECTED_STOP.search(text) is not None


class ExpectedStopFilter(logging.Filter):
    """Drops py4j's ERROR for a Python proxy call (foreachBatch) that failed because its query stopped;
    ``quieted`` counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.quieted = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info or "Python Proxy" not in str(record.msg):
            return True
        if not is_expected_stop(record.exc_info[1]):
            return True
        self.quieted += 1
        return False


class DeadJvmFilter(logging.Filter):
    """Drops py4j's "Exception while sending command." (logged on the root logger, with a traceback, for
    every call) while the JVM is lost: the supervisor reports a dead JVM in one line of its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != "root" or not str(record.msg).startswith("Exception while sending command"):
            return True
        return not gateway.lost()


EXPECTED_STOPS = ExpectedStopFilter()
_DEAD_FILTER = DeadJvmFilter()


def install_python_filter() -> None:
    """Attach ``ExpectedStopFilter`` to py4j's proxy logger and ``DeadJvmFilter`` to the root logger
    (idempotent)."""
    for logger, filter_ in ((logging.getLogger(PROXY_LOGGER), EXPECTED_STOPS), (logging.getLogger(), _DEAD_FILTER)):
        if filter_ not in logger.filters:
            logger.addFilter(filter_)


def quiet_expected_stops(session: Any) -> None:
    """Quiet the logs of expected stops for ``session`` (see the module doc). A failure is logged at
    DEBUG: the logs are only louder then."""
    install_python_filter()
    _quiet_lost_connections(getattr(session.sparkContext, "_accumulatorServer", None))
    try:
        _deny_java_messages(session.sparkContext._jvm)
    except Exception as exc:  # noqa: BLE001 - another logging backend: keep its lines
        log.debug("cannot filter Spark's stop messages: %s", exc)


def _quiet_lost_connections(server: Any) -> None:
    """PySpark's accumulator server (a ``socketserver``) prints a traceback to stderr when the JVM's
    connection to it ends (``EOFError``: the JVM stopped or was killed); that one is logged at DEBUG,
    any other error of the server as before."""
    if server is None:
        return
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (EOFError, ConnectionError)):
            log.debug("the JVM closed its accumulator connection: %r", exc)
            return
        report(request, client_address)

    server.handle_error = handle_error


def _deny_java_messages(jvm: Any) -> None:
    log4j = jvm.org.apache.logging.log4j
    core = log4j.core
    context = log4j.LogManager.getContext(False)
    for logger_name, pattern in JAVA_STOP_NOISE:
        config = context.getConfiguration()
        logger_config = config.getLoggerConfig(logger_name)
        if logger_config.getName() != logger_name:  # inherited from root: give it its own config
            core.config.Configurator.setLevel(logger_name, logger_config.getLevel())
            logger_config = context.getConfiguration().getLoggerConfig(logger_name)
        deny = core.filter.RegexFilter.createFilter(pattern, None, False, core.Filter.Result.DENY,
                                                    core.Filter.Result.NEUTRAL)
        logger_config.addFilter(deny)
    context.updateLoggers()
