"""A re-plan's split is durable on its own (``server/nodes/replan.py``): a server killed after a split but
before the statement that caused it was persisted (or whose late consumer was dropped since) restarts
with the split plan — the stream computed on its own from its prepared checkpoint, the owner reading its
journal with the state handed over to it — so every output comes exactly once with the right window
values (Spark-free, with the in-process query runner; the kill -9 version is the ``replan`` point of
``tests/e2e/test_crash_random.py`` and ``tests/stress/crash_random.py``)."""
from __future__ import annotations

import json

import pytest
from local_runner import start_local
from sbpy.bql.runtime.testing import run_query
from sbpy.bql.spark import journal_format as jf
from sbpy.server.nodes import replan
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology
from topology_util import Ctx, lines, run

N = 80
QUERY = "SELECT RSTREAM count(*) AS n, max(a) AS last FROM src [RANGE 5 TUPLES]"


class Dormant:
    """A query handle that never runs a batch: the new queries of a split cut by the kill."""

    is_active, error = True, None

    def stop(self) -> None:
        pass


class Starter:
    """The in-process runner reading its start seq back from the checkpoint as Spark's journal source
    does (``jf.pin_start_seq``); ``dormant``: the queries it starts from now on never run."""

    def __init__(self):
        self.dormant = False

    def __call__(self, **spec):
        if self.dormant:
            return Dormant()
        spec["start_seq"] = jf.pin_start_seq(spec["checkpoint_dir"], spec["start_seq"])
        return start_local(**spec)


def _script(src, k1) -> str:
    return f"""
        CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = 0.01;
        CREATE STREAM x AS {QUERY};
        CREATE SINK k1 TYPE file WITH path = "{k1}";
        INSERT INTO k1 FROM x;
        RESUME SOURCE src;"""


@pytest.mark.parametrize("persisted", ["without_the_late_insert", "late_sink_dropped_since"])
def test_restart_after_a_split_plans_the_split_chain_and_resumes_exactly(tmp_path, persisted):
    rows = [{"a": i} for i in range(N)]
    src, k1, k2 = tmp_path / "in.jsonl", tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"src": rows})
    data = tmp_path / "data"
    late = f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM x;'

    starter = Starter()
    before = Topology("t", Ctx(data), query_starter=starter)
    try:
        run(before, _script(src, k1))
        assert wait_until(lambda: len(lines(k1)) >= 10, 30)
        starter.dormant = True
        run(before, late)  # the split; the kill comes before its queries run a batch
        owner, computing = before.consumers["k1"], before.consumers["x"]
        assert owner.chain.inputs == ["x"] and computing.stage_names == ["x"]
        prepared = {c.id: c.checkpoint_dir for c in (owner, computing)}
        for ck in prepared.values():
            assert (ck / jf.START_SEQ_FILE).exists() and replan.handed_state(ck) is not None
        handed = replan.handed_state(prepared["k1"])
        handled = len(lines(k1))
    finally:
        before.stop()  # the kill: nothing of the split was persisted but its checkpoints
    assert 10 <= len(lines(k1)) == handled < N

    after = Topology("t", Ctx(data), query_starter=Starter())
    try:
        after.recovering, after.defer_consumers = True, True
        replayed = _script(src, k1)
        if persisted == "late_sink_dropped_since":
            replayed += late + "DROP SINK k2;"
        run(after, replayed)
        assert replan.rematerialize(after) == ["x"]
        after.start_deferred()
        after.recovering = False
        owner, computing = after.consumers["k1"], after.consumers["x"]
        assert owner.chain.inputs == ["x"] and owner.stage_names == []
        assert {c.id: c.checkpoint_dir for c in (owner, computing)} == prepared  # they find their own
        assert owner.initial_state == handed
        assert wait_until(lambda: len(lines(k1)) >= N, 60)
        assert wait_until(lambda: after.node("stream", "x")["state"] == "stopped", 30)
    finally:
        after.stop()
    assert lines(k1) == expected  # exactly once, windows kept across the split and the restart


def test_prepare_replaces_a_stale_folder_atomically(tmp_path):
    ck = tmp_path / "checkpoints" / "x-abc-v1"
    (ck / "offsets").mkdir(parents=True)
    (ck / "offsets" / "0").write_text("stale")
    replan.prepare(ck, 42, b"state")
    assert sorted(p.name for p in ck.iterdir()) == sorted([jf.START_SEQ_FILE, replan.HANDED_STATE_FILE])
    assert jf.pin_start_seq(ck, 7) == 42  # the query reads the handed-over start back
    assert replan.handed_state(ck) == b"state"
    assert not list(ck.parent.glob(".*"))  # no temporary folder left
    replan.prepare(ck, 43, None)
    assert replan.handed_state(ck) is None and jf.pin_start_seq(ck, 7) == 43
