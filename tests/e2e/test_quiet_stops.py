"""DROP STREAM while a micro-batch runs: the stop logs one INFO line and no ERROR (no py4j traceback), and
Spark ends the query as stopped, not failed (no StackOverflowError, no "terminated with error"). The
JVM's own output is read with ``capfd`` (the JVM writes to this process's stderr, captured by pytest;
under ``-s`` that part checks nothing)."""
from __future__ import annotations

import json
import logging
import threading

import pytest
from e2e_util import lines
from sbpy.bql.parser import parse_script
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.spark_noise import EXPECTED_STOPS
from sbpy.server.topology import Topology

pytestmark = pytest.mark.spark

QUERY = "SELECT RSTREAM a, sin(a) AS b FROM s [RANGE 1 TUPLES] WHERE a % 3 = 0"  # stateless, vectorized: Python batches
ATTEMPTS = 6


class Terminations:
    """A StreamingQueryListener recording each terminated query's exception (None: stopped cleanly)."""

    def __init__(self, spark):
        from pyspark.sql.streaming import StreamingQueryListener

        self.events: dict[str, str | None] = {}
        self.changed = threading.Condition()
        record = self._record

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event): pass

            def onQueryProgress(self, event): pass

            def onQueryIdle(self, event): pass

            def onQueryTerminated(self, event):
                record(str(event.id), event.exception)

        self.listener = Listener()
        spark.streams.addListener(self.listener)

    def _record(self, query_id: str, exception: str | None) -> None:
        with self.changed:
            self.events[query_id] = exception
            self.changed.notify_all()


def _in_batch(spark) -> bool:
    """Whether one of the session's queries is running a trigger that has data (``StreamingQuery.status``)."""
    for query in spark.streams.active:
        try:
            status = query.status
        except Exception:  # noqa: BLE001 - the query stopped meanwhile
            continue
        if status.get("isTriggerActive") and status.get("isDataAvailable"):
            return True
    return False


def test_drop_stream_during_a_batch_logs_no_error(server_context, tmp_path, caplog, capfd):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(200_000)))
    spark = server_context.spark()
    terminations = Terminations(spark)
    t = Topology("quiet", server_context)
    quieted_before = EXPECTED_STOPS.quieted
    stopped_ids = []
    try:
        with caplog.at_level(logging.INFO):
            for p in parse_script(f'CREATE SOURCE s TYPE file WITH path = "{src}", interval = 0.0001;'):
                t.execute(p)
            for attempt in range(ATTEMPTS):  # until a DROP lands inside a running micro-batch
                out = tmp_path / f"out{attempt}.jsonl"
                for p in parse_script(f"""CREATE STREAM x AS {QUERY};
                                          CREATE SINK k{attempt} TYPE file WITH path = "{out}";
                                          INSERT INTO k{attempt} FROM x;"""):
                    t.execute(p)
                assert wait_until(lambda out=out: len(lines(out)) >= 50, 180, 0.01)
                stopped_ids.append(t.consumers[f"k{attempt}"].handle.id)
                # DROP right after a query is seen inside a trigger with data (short batches leave gaps)
                wait_until(lambda spark=spark: _in_batch(spark), 10, 0.001)
                for p in parse_script("DROP STREAM x;"):
                    t.execute(p)
                if EXPECTED_STOPS.quieted > quieted_before:
                    break
        with terminations.changed:
            assert terminations.changed.wait_for(lambda: all(q in terminations.events for q in stopped_ids), 60)
    finally:
        t.stop()
    assert EXPECTED_STOPS.quieted > quieted_before, "no DROP hit a running micro-batch"
    assert [terminations.events[q] for q in stopped_ids] == [None] * len(stopped_ids)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    java = capfd.readouterr().err  # the JVM writes to this process's stderr
    assert "Error" not in java and "Exception" not in java and " ERROR " not in java, java[:3000]
    stops = [r for r in caplog.records if r.levelno == logging.INFO and "stopped" in r.getMessage()
             and r.getMessage().startswith("query 'k")]
    assert len(stops) == len(stopped_ids)
