"""SensorBee's dropped-tuple logging options and destinationless tuples (server/drop_log.py)."""
from __future__ import annotations

import logging
import types

import pytest

from sbpy.server.config import LoggingConfig
from sbpy.server.drop_log import DESTINATIONLESS_ERROR, MESSAGE, DropLogging, summarize
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local
from topology_util import Ctx, lines, run, write


def _topology(tmp_path, n, **options):
    ctx = Ctx(tmp_path / f"data{n}")  # a folder of its own: no journal or checkpoint of an earlier one
    ctx.config = types.SimpleNamespace(logging=LoggingConfig(**options))
    return Topology("t", ctx, query_starter=start_local)


class Records(logging.Handler):
    """The ``sbpy.dropped`` log's messages (its own handler: other tests reconfigure the root logger)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def logged():
    logger = logging.getLogger("sbpy.dropped")
    handler, level = Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.messages
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture
def make(tmp_path):
    made = []

    def factory(**options):
        made.append(_topology(tmp_path, len(made), **options))
        return made[-1]

    yield factory
    for t in made:
        t.stop()


def test_summarize_replaces_every_blob_and_copies():
    data = {"img": b"\x00\x01", "xs": [b"a", {"b": b"c", "n": 1}], "s": "text"}
    out = summarize(data)
    assert out == {"img": "(blob)", "xs": ["(blob)", {"b": "(blob)", "n": 1}], "s": "text"}
    assert data["img"] == b"\x00\x01" and data["xs"][1]["b"] == b"c"


def test_the_options_come_from_the_logging_section():
    assert DropLogging.of(None) == DropLogging(False, False, False)
    cfg = LoggingConfig(log_dropped_tuples=True, summarize_dropped_tuples=True)
    assert DropLogging.of(cfg) == DropLogging(True, False, True)


def test_a_log_line_names_the_node_the_event_and_the_tuple():
    plain = DropLogging(True, False, False).line("box", "x", "output", {"b": b"ab", "n": 2.0}, "boom")
    assert plain == (f'{MESSAGE}: node_type=box node_name=x event_type=output err=boom '
                     'tuple={"data":{"b":"YWI=","n":2.0}}')
    short = DropLogging(True, False, True).line("source", "s", "input", {"b": b"ab"}, None)
    assert short == f'{MESSAGE}: node_type=source node_name=s event_type=input tuple={{"data":{{"b":"(blob)"}}}}'


def test_a_dropped_tuple_is_logged_only_with_log_dropped_tuples(make, tmp_path, logged):
    src = tmp_path / "in.jsonl"
    write(src, [{"a": 1}, {"a": "x"}, {"a": 2}])
    script = f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE STREAM x AS SELECT RSTREAM a + 1 AS b FROM s [RANGE 1 TUPLES];
        CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
        INSERT INTO k FROM x;
        RESUME SOURCE s;"""
    for enabled in (False, True):
        logged.clear()
        t = make(log_dropped_tuples=enabled)
        run(t, script)
        assert wait_until(lambda: t.node("stream", "x")["state"] == "stopped", 60)
        t.stop()
        if not enabled:
            assert logged == []
            continue
        (line,) = logged
        assert line.startswith(f"{MESSAGE}: node_type=box node_name=x event_type=")
        assert line.endswith('tuple={"data":{"a":"x"}}') and " err=" in line


def test_tuples_nobody_reads_are_dropped_and_reported_only_when_asked(make, tmp_path, logged):
    src = tmp_path / "in.jsonl"
    rows = [{"a": i, "img": b"x".hex()} for i in range(3)]
    write(src, rows)
    for options in ({}, {"log_destinationless_tuples": True},
                    {"log_destinationless_tuples": True, "log_dropped_tuples": True}):
        for extra in ("", ", interval = 0.001"):  # journaled by reference (segments) / tuple by tuple
            logged.clear()
            t = make(**options)
            drops = tmp_path / f"drops-{len(options)}-{bool(extra)}.jsonl"
            run(t, f"""
                CREATE SOURCE d TYPE dropped_tuples;
                CREATE SINK kd TYPE file WITH path = "{drops}";
                INSERT INTO kd FROM d;
                CREATE PAUSED SOURCE s TYPE file WITH path = "{src}"{extra};""")
            # d subscribes from its own thread (SensorBee's test waits for the collector to run too)
            assert wait_until(lambda: len(t._drop_listeners) == 1, 60)
            run(t, "RESUME SOURCE s;")
            assert wait_until(lambda: t.node("source", "s")["state"] == "stopped", 60)
            reported = 3 if options else 0
            assert wait_until(
                lambda: t.node("sink", "kd")["status"]["input_stats"]["num_received_total"] == reported, 60)
            stats = t.node("source", "s")["status"]["output_stats"]
            t.stop()
            assert stats["num_dropped"] == 3 and stats["num_sent_total"] == 0
            got = lines(drops)
            assert len(got) == reported
            for row, d in zip(rows, got):
                assert d == {"node_type": "source", "node_name": "s", "event_type": "output",
                             "error": DESTINATIONLESS_ERROR, "data": row}
            assert len(logged) == (3 if options.get("log_dropped_tuples") else 0)


def test_a_source_with_a_reader_sends_and_drops_nothing(make, tmp_path):
    src = tmp_path / "in.jsonl"
    write(src, [{"a": i} for i in range(3)])
    t = make(log_destinationless_tuples=True)
    run(t, f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
        INSERT INTO k FROM s;
        RESUME SOURCE s;""")
    assert wait_until(lambda: t.node("sink", "k")["status"]["input_stats"]["num_received_total"] == 3, 60)
    stats = t.node("source", "s")["status"]["output_stats"]
    assert stats["num_sent_total"] == 3 and stats["num_dropped"] == 0


def test_while_statements_are_replayed_every_node_counts_as_read(make, tmp_path):
    t = make()
    run(t, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/none.jsonl";')
    assert not t.has_destination("s")
    t.recovering = True  # persistence replays: the readers are being restored from their checkpoints
    assert t.has_destination("s")
    t.recovering, t.defer_consumers = False, True
    assert t.has_destination("s")
    t.defer_consumers = False
    run(t, f'CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl"; INSERT INTO k FROM s;')
    assert t.has_destination("s")
