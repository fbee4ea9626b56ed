"""A re-plan's split is durable on its own (``server/nodes/replan.py``): a server killed after a split but
before the statement that caused it was persisted (or whose late consumer was dropped since) restarts
with the split plan — the stream computed on its own from its prepared checkpoint, the owner reading its
journal with the state handed over to it — so every output comes exactly once with the right window
values. The owner is the query of ``y``, computed from its CREATE with the memoryless ``x`` fused; a
late sink on ``x`` splits ``x`` out; ``y``'s journal log holds the outputs its readers get (Spark-free, with the in-process query runner; the kill -9 version is the ``replan`` point of
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
from topology_util import Ctx, run

N = 80
SOURCE_FILTER = "SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a % 3 != 1"  # memoryless: fused into y's query
QUERY = "SELECT RSTREAM count(*) AS n, max(a) AS last FROM x [RANGE 5 TUPLES]"  # computed from its CREATE


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


def _script(src) -> str:
    return f"""
        CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = 0.01;
        CREATE STREAM x AS {SOURCE_FILTER};
        CREATE STREAM y AS {QUERY};
        RESUME SOURCE src;"""


def _log(data, name: str) -> list:
    """The tuples of ``name``'s journal log (a materialized stream's outputs, as its readers get them)."""
    folder = jf.journal_dir(data, "t")
    rows = jf.read_entries(folder, [name], 0, jf.read_head(folder))
    return [jf.decode_data(r[3]) for r in rows if r[3] is not None]


@pytest.mark.parametrize("persisted", ["without_the_late_insert", "late_sink_dropped_since"])
def test_restart_after_a_split_plans_the_split_chain_and_resumes_exactly(tmp_path, persisted):
    rows = [{"a": i} for i in range(N)]
    src, k2 = tmp_path / "in.jsonl", tmp_path / "k2.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"x": run_query(SOURCE_FILTER, {"src": rows})})
    data = tmp_path / "data"
    late = f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM x;'

    starter = Starter()
    before = Topology("t", Ctx(data), query_starter=starter)
    try:
        run(before, _script(src))
        assert wait_until(lambda: len(_log(data, "y")) >= 10, 30)
        starter.dormant = True
        run(before, late)  # the split; the kill comes before its queries run a batch
        owner, computing = before.consumers["y"], before.consumers["x"]  # y's query had x fused
        assert owner.chain.inputs == ["x"] and computing.stage_names == ["x"]
        prepared = {c.id: c.checkpoint_dir for c in (owner, computing)}
        for ck in prepared.values():
            assert (ck / jf.START_SEQ_FILE).exists()
        handed = replan.handed_state(prepared["y"])
        assert handed is not None  # y's windows (x is memoryless: its snapshot may be empty)
        handled = len(_log(data, "y"))
    finally:
        before.stop()  # the kill: nothing of the split was persisted but its checkpoints
    assert 10 <= len(_log(data, "y")) == handled < len(expected)

    after = Topology("t", Ctx(data), query_starter=Starter())
    try:
        after.recovering, after.defer_consumers = True, True
        replayed = _script(src)
        if persisted == "late_sink_dropped_since":
            replayed += late + "DROP SINK k2;"
        run(after, replayed)
        assert replan.rematerialize(after) == ["x", "y"]
        after.start_deferred()
        after.recovering = False
        owner, computing = after.consumers["y"], after.consumers["x"]
        assert owner.chain.inputs == ["x"] and owner.stage_names == ["y"]
        assert {c.id: c.checkpoint_dir for c in (owner, computing)} == prepared  # they find their own
        assert owner.initial_state == handed
        assert wait_until(lambda: after.node("stream", "y")["state"] == "stopped", 60)
    finally:
        after.stop()
    assert _log(data, "y") == expected  # exactly once, windows kept across the split and the restart


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
