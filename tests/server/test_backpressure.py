"""WAIT backpressure (Spark-free): a fast source and a slow consumer (a query that plans a batch only
when the test permits one). Under ``WAIT`` the source is held while the consumer's backlog is full: it
never exceeds ``BUFFER SIZE`` and nothing is lost; under ``DROP OLDEST|NEWEST`` the source is not held
and the buffer drops as before, counted on the source. Also the unit rules of ``backpressure.wait_size``."""
from __future__ import annotations

import pytest

from sbpy.bql.parser import parse_script
from sbpy.server.journal import JournalWriter
from sbpy.server.nodes import graph
from sbpy.server.nodes.backpressure import wait_size
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from test_journal_prune_topology import Ctx, starter
from topology_util import lines

N = 1000


def _run(t, script):
    for p in parse_script(script):
        t.execute(p)


@pytest.fixture
def slow(tmp_path, monkeypatch):
    """A topology whose queries are gated, and the largest backlog of source ``s`` seen at any commit
    against the reading query's planned position."""
    queries: list = []
    t = Topology("t", Ctx(tmp_path / "data"), query_starter=starter(queries, gated=True))
    seen = {"max": 0, "commits": 0}
    append = JournalWriter.append

    def measured(self, node, items, batch=None):
        seq = append(self, node, items, batch)
        if node == "s" and queries:
            seen["max"] = max(seen["max"], self.backlog("s", queries[0].planned))
            seen["commits"] += 1
        return seq

    monkeypatch.setattr(JournalWriter, "append", measured)
    yield t, queries, seen
    t.stop()


def _script(out, window, n=N):
    return f"""
        CREATE PAUSED SOURCE s TYPE counter WITH n = {n};
        CREATE STREAM x AS SELECT RSTREAM i FROM s [{window}];
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM x;
        RESUME SOURCE s;"""


def test_wait_holds_the_source_while_the_backlog_is_full(slow, tmp_path):
    t, queries, seen = slow
    out = tmp_path / "out.jsonl"
    _run(t, _script(out, "RANGE 1 TUPLES, BUFFER SIZE 100, WAIT IF FULL"))
    q = queries[0]
    rounds = 0
    while True:
        # the source fills the buffer exactly, then waits for the query to take it
        assert wait_until(lambda: t.journal.ended("s") or t.journal.backlog("s", q.planned) == 100, 30)
        if t.journal.ended("s"):
            break
        planned = q.planned
        assert t.journal.count("s") == planned + 100  # held: seqs are the tuples here (one node, no gaps)
        rounds += 1
        q.permit()
        assert wait_until(lambda planned=planned: q.planned > planned, 30)
    q.permit(5)
    assert wait_until(lambda: len(lines(out)) == N, 30)
    assert rounds >= N // 100 - 1
    assert seen["max"] <= 100
    assert lines(out) == [{"i": i} for i in range(N)]
    assert t.sources["s"].counters.num_dropped == 0


def test_the_default_mode_is_wait_with_1024(slow, tmp_path):
    t, queries, seen = slow
    out = tmp_path / "out.jsonl"
    _run(t, _script(out, "RANGE 1 TUPLES", n=3000))
    assert wait_until(lambda: t.journal.backlog("s", queries[0].planned) >= 1024, 30)
    assert not t.journal.ended("s") and t.journal.count("s") == 1024
    queries[0].permit(50)
    assert wait_until(lambda: len(lines(out)) == 3000, 30)
    assert lines(out) == [{"i": i} for i in range(3000)]
    assert seen["max"] <= 1024


@pytest.mark.parametrize("mode,kept", [("DROP OLDEST", range(N - 100, N)), ("DROP NEWEST", range(100))])
def test_drop_modes_do_not_hold_the_source(slow, tmp_path, mode, kept):
    t, queries, seen = slow
    out = tmp_path / "out.jsonl"
    _run(t, _script(out, f"RANGE 1 TUPLES, BUFFER SIZE 100, {mode} IF FULL"))
    assert wait_until(lambda: t.journal.ended("s"), 30)  # all of it journaled while no batch ran
    assert seen["max"] == N
    queries[0].permit(5)
    assert wait_until(lambda: t.sources["s"].counters.num_dropped == N - 100, 30)
    assert wait_until(lambda: len(lines(out)) == 100, 30)
    assert lines(out) == [{"i": i} for i in kept]


def test_file_segments_are_held_against_the_segment_backlog(slow, tmp_path, monkeypatch):
    from sbpy.plugins.builtin import sources
    from sbpy.server.nodes import backpressure

    monkeypatch.setattr(sources, "CHUNK_BYTES", 64)  # ~6 lines a segment
    monkeypatch.setattr(backpressure, "SEGMENT_BACKLOG", 40)
    t, queries, _seen = slow
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(f'{{"i":{i}}}\n' for i in range(300)))
    _run(t, f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE STREAM x AS SELECT RSTREAM i FROM s [RANGE 1 TUPLES, BUFFER SIZE 5, WAIT IF FULL];
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM x;
        RESUME SOURCE s;""")
    q = queries[0]
    # held once 40 lines wait (not 5: a segment is held against the larger buffer), admitted whole
    assert wait_until(lambda: t.journal.backlog("s", q.planned) >= 40, 30)
    assert not t.journal.ended("s") and t.journal.backlog("s", q.planned) < 40 + 10
    q.permit(200)
    assert wait_until(lambda: len(lines(out)) == 300, 30)
    assert lines(out) == [{"i": i} for i in range(300)]


def test_a_source_nobody_reads_is_not_held(slow):
    t, _queries, _seen = slow
    _run(t, f"CREATE SOURCE s TYPE counter WITH n = {N};")
    assert wait_until(lambda: t.journal.ended("s"), 30)
    assert t.journal.count("s") == N


def test_wait_size_rules():
    def chain(*stages, inputs=("s",)):
        return graph.Chain(inputs=list(inputs), stages=[(f"x{k}", text, ["s"]) for k, text in enumerate(stages)])

    wait = "SELECT RSTREAM * FROM s [RANGE 1 TUPLES, BUFFER SIZE 7, WAIT IF FULL]"
    default = "SELECT RSTREAM * FROM s [RANGE 1 TUPLES]"
    drop = "SELECT RSTREAM * FROM s [RANGE 1 TUPLES, BUFFER SIZE 5, DROP OLDEST IF FULL]"
    assert wait_size(chain(wait), "s") == 7
    assert wait_size(chain(default), "s") == 1024
    assert wait_size(chain(drop), "s") is None
    assert wait_size(chain(drop, wait), "s") == 7  # another stage waits
    assert wait_size(chain(), "s") == 1024  # a sink fed by the source itself
    assert wait_size(chain(wait), "other") is None  # not an input
    self_join = ("SELECT RSTREAM * FROM s [RANGE 1 TUPLES, BUFFER SIZE 9] AS a, "
                 "s [RANGE 1 TUPLES, BUFFER SIZE 3, DROP NEWEST IF FULL] AS b")
    assert wait_size(chain(self_join), "s") == 9
