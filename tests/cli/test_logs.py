"""``sbpy run``'s log: the JVM output parser, start-up noise, the JSON lines format, the pipe router,
and (Spark) a real server's log in one format."""
from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from sbpy.server.config import config_from_dict
from sbpy.server.logging_jvm import JvmOutputParser, JvmOutputRouter, with_log4j_config
from sbpy.server.logging_setup import JsonLinesFormatter, configure_logging, log_format

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [^\s:]+: ")


def parse(lines: list[str]) -> list[tuple[str, int, str]]:
    parser = JvmOutputParser()
    records = [parser.feed(line) for line in lines] + [parser.flush()]
    return [(r.logger, r.level, r.message) for r in records if r is not None]


def test_parser_groups_stack_traces_and_maps_levels():
    assert parse([
        "2026-11-24 21:00:01,123 WARN org.apache.spark.util.Utils: Your hostname resolves",
        "26/11/24 21:00:02 ERROR TaskSetManager: Task 0 failed",
        "java.lang.RuntimeException: boom",
        "\tat a.b.C(C.java:1)",
        "2026-11-24 21:00:03,000 FATAL x.Y: gone",
        "WARNING: Using incubator modules: jdk.incubator.vector",
        "Traceback (most recent call last):",
        '  File "w.py", line 1',
        "",
    ]) == [
        ("org.apache.spark.util.Utils", logging.WARNING, "Your hostname resolves"),
        ("TaskSetManager", logging.ERROR, "Task 0 failed\njava.lang.RuntimeException: boom\n\tat a.b.C(C.java:1)"),
        ("x.Y", logging.CRITICAL, "gone"),
        ("jvm", logging.WARNING, "Using incubator modules: jdk.incubator.vector"),
        ("jvm.stderr", logging.WARNING, 'Traceback (most recent call last):\n  File "w.py", line 1'),
    ]


def test_blank_lines_alone_are_no_record():
    assert parse(["", "  "]) == []


def test_router_logs_through_a_pipe_and_tames_startup_noise(caplog):
    read_end, write_end = os.pipe()
    router = JvmOutputRouter(read_end)
    router.start()
    with caplog.at_level(logging.DEBUG):
        os.write(write_end, b"2026-11-24 21:00:01,123 WARN org.apache.spark.util.Utils: Your hostname, vm, "
                            b"resolves to a loopback address: 127.0.0.1; using 10.0.0.1 instead\n"
                            b"2026-11-24 21:00:01,124 WARN org.apache.spark.X: a real warning\n"
                            b"Setting default log level to \"WARN\".\npartial line without newline")
        os.close(write_end)
        router.join(timeout=30)
    assert not router.is_alive()
    got = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name != "asyncio"]
    assert got == [
        ("org.apache.spark.util.Utils", "DEBUG",
         "Your hostname, vm, resolves to a loopback address: 127.0.0.1; using 10.0.0.1 instead"),
        ("org.apache.spark.X", "WARNING", "a real warning"),
        ("jvm.stderr", "DEBUG", 'Setting default log level to "WARN".\npartial line without newline'),
    ]


def test_log4j_option_respects_the_users_config():
    assert with_log4j_config("-Xss32m").startswith("-Xss32m -Dlog4j2.configurationFile=file:")
    assert with_log4j_config("-Dlog4j.configurationFile=mine.xml") == "-Dlog4j.configurationFile=mine.xml"


def test_json_lines_formatter():
    try:
        raise ValueError("bad")
    except ValueError:
        record = logging.LogRecord("sbpy.x", logging.ERROR, __file__, 1, "failed %s", ("here",), sys.exc_info())
    record.created = 1764018001.5
    entry = orjson.loads(JsonLinesFormatter().format(record))
    assert entry["time"] == "2025-11-24T21:00:01.500Z"
    assert (entry["level"], entry["logger"], entry["message"]) == ("ERROR", "sbpy.x", "failed here")
    assert entry["exception"].endswith("ValueError: bad")


def test_log_format_choice(monkeypatch):
    monkeypatch.delenv("SBPY_LOG_FORMAT", raising=False)
    assert log_format(None) == "text"
    monkeypatch.setenv("SBPY_LOG_FORMAT", "JSON")
    assert log_format(None) == "json" and log_format("text") == "text"
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        log_format("xml")


def test_configure_logging_to_a_file_as_json(tmp_path):
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging(config_from_dict({"logging": {"target": str(tmp_path / "log.jsonl")}}), "json",
                          route_jvm=False)
        logging.getLogger("sbpy.test_logs").info("hello")  # (uvicorn's loggers may have levels of their own)
        logging.getLogger("sbpy.test_logs").debug("not at info")
        root.handlers[0].flush()
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], level = saved
        root.setLevel(level)
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [(e["logger"], e["message"]) for e in map(orjson.loads, lines)] == [("sbpy.test_logs", "hello")]


def _records(text: str) -> list[str]:
    """The first line of each record of a text log (a record's other lines are tracebacks)."""
    return [line for line in text.splitlines() if TEXT_LINE.match(line)]


@pytest.mark.spark
@pytest.mark.slow
def test_a_server_run_logs_in_one_format(tmp_path):
    """A real ``sbpy run`` that starts Spark (at DEBUG, so the tamed start-up warnings show): every
    line of its log is a record in the text format or a traceback line of one, the JVM's lines
    included; no start-up warning is left at WARN."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
    from server_process import new_server

    server = new_server(tmp_path)
    server.config.write_text(server.config.read_text().replace("min_log_level: warn", "min_log_level: debug"))
    server.start()
    try:
        deadline = time.monotonic() + 300
        while not re.search(r"^\S+ \S+ DEBUG (jvm|org\.apache\.\S+): ", server.log.read_text(), re.MULTILINE):
            assert time.monotonic() < deadline and server.proc.poll() is None, server.tail()
            time.sleep(0.2)
    finally:
        server.proc.send_signal(signal.SIGINT)
        try:
            server.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
    text = server.log.read_text()
    lines = text.splitlines()
    assert "Spark driver JVM started" in text
    strays = [line for line in lines if not TEXT_LINE.match(line)
              and not line.startswith(("\t", " ", "Traceback", "Caused by", "java.", "py4j."))]
    assert strays == [], text[-3000:]
    noise = re.compile(r"loopback address|native-hadoop|Setting default log level|log4j profile|incubator modules")
    assert [line for line in lines if noise.search(line) and " DEBUG " not in line] == []


def test_the_console_handler_writes_to_the_stderr_of_the_moment(monkeypatch):
    """A handler installed while stderr was a capture (a test, a redirect) that has since been closed
    writes to the current stderr instead of raising "I/O operation on closed file"."""
    import io

    from sbpy.server.logging_setup import ConsoleHandler

    handler = ConsoleHandler()
    record = logging.LogRecord("sbpy.t", logging.ERROR, __file__, 1, "query %s failed", ("q",), None)
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    handler.emit(record)
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    monkeypatch.setattr(logging, "raiseExceptions", True)
    handler.handleError = lambda rec: (_ for _ in ()).throw(AssertionError("the handler failed"))
    handler.emit(record)
    assert second.getvalue() == "query q failed\n"


def test_runfile_gives_the_root_handlers_back(monkeypatch):
    """``runfile`` called in-process (tests, an embedding program) restores the root logger's handlers
    and level when it ends, so no handler bound to its progress display outlives it."""
    import io

    from sbpy.server.cli import runfile
    from sbpy.server.cli.progress import Progress

    monkeypatch.setattr("sbpy.server.logging_jvm.install", lambda: None)
    root = logging.getLogger()
    before_handlers, before_level = list(root.handlers), root.level
    restore = runfile.configure_logging(Progress(io.StringIO(), "t", tty=False), config_from_dict({}))
    assert root.handlers != before_handlers
    restore()
    assert (root.handlers, root.level) == (before_handlers, before_level)
