"""BUFFER SIZE with DROP OLDEST / DROP NEWEST IF FULL: a stage admits at most n tuples of an input per
micro-batch; the rest are dropped, reported and counted (pure Python; no Spark)."""
from __future__ import annotations

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.buffers import Buffer, overflow, stage_buffers
from sbpy.bql.spark.operator import Pipeline, StageSpec


def _rows(items, start=1):
    return [(start + i, name, (start + i) * 1000, jf.encode_data(d), False) for i, (name, d) in enumerate(items)]


def _stage(window_opts: str) -> StageSpec:
    return StageSpec("x", f"SELECT RSTREAM a FROM src [RANGE 1 TUPLES{window_opts}]", ("src",))


def _run(stage, n=5):
    out = Pipeline([stage]).run(_rows([("src", {"a": i}) for i in range(n)]))
    got = [jf.decode_data(r[5])["a"] for r in out if r[0] == "out"]
    dropped = [(r[1], jf.decode_data(r[5])["a"], r[6], r[8]) for r in out if r[0] == "dropped"]
    stat = next(jf.decode_data(r[5]) for r in out if r[0] == "stat")
    return got, dropped, stat


def test_drop_oldest_keeps_the_newest():
    got, dropped, stat = _run(_stage(", BUFFER SIZE 2, DROP OLDEST IF FULL"))
    assert got == [3, 4]
    assert dropped == [("src", 0, None, "output"), ("src", 1, None, "output"), ("src", 2, None, "output")]
    assert stat["received"] == {"src": 2} and stat["refused"] == {"src": 3}


def test_drop_newest_keeps_the_oldest():
    got, dropped, stat = _run(_stage(", BUFFER SIZE 2, DROP NEWEST IF FULL"))
    assert got == [0, 1]
    assert [d[1] for d in dropped] == [2, 3, 4]
    assert stat["refused"] == {"src": 3}


def test_wait_and_room_never_drop():
    for opts in (", BUFFER SIZE 2, WAIT IF FULL", ", BUFFER SIZE 2", ", BUFFER SIZE 5, DROP OLDEST IF FULL", ""):
        got, dropped, stat = _run(_stage(opts))
        assert got == [0, 1, 2, 3, 4] and dropped == [] and "refused" not in stat, opts


def test_each_batch_is_a_fresh_queue():
    p = Pipeline([_stage(", BUFFER SIZE 2, DROP OLDEST IF FULL")])
    p.run(_rows([("src", {"a": i}) for i in range(3)]))
    out = p.run(_rows([("src", {"a": 10}), ("src", {"a": 11})], start=4))
    assert [jf.decode_data(r[5])["a"] for r in out if r[0] == "out"] == [10, 11]


def test_stage_buffers_from_bql():
    assert stage_buffers("SELECT RSTREAM * FROM s [RANGE 1 TUPLES]") == {}
    assert stage_buffers("SELECT RSTREAM * FROM s [RANGE 1 TUPLES, BUFFER SIZE 0, DROP NEWEST IF FULL]") == \
        {"s": Buffer(1024, "drop_newest")}
    # a self-join: the smallest dropping buffer of the input wins
    assert stage_buffers("SELECT RSTREAM * FROM s [RANGE 1 TUPLES, BUFFER SIZE 8, DROP OLDEST IF FULL] AS a, "
                         "s [RANGE 1 TUPLES, BUFFER SIZE 3, DROP OLDEST IF FULL] AS b") == \
        {"s": Buffer(3, "drop_oldest")}


def test_overflow_only_touches_buffered_inputs():
    bufs = {"a": Buffer(1, "drop_oldest")}
    assert overflow({"a": [1, 3, 5], "b": [2, 4]}, bufs) == {1: bufs["a"], 3: bufs["a"]}


def test_fused_upstream_outputs_are_never_refused():
    stages = [StageSpec("up", "SELECT RSTREAM a FROM src [RANGE 1 TUPLES]", ("src",)),
              StageSpec("down", "SELECT RSTREAM a FROM up [RANGE 1 TUPLES, BUFFER SIZE 1, DROP OLDEST IF FULL]",
                        ("up",))]
    out = Pipeline(stages).run(_rows([("src", {"a": i}) for i in range(4)]))
    assert [jf.decode_data(r[5])["a"] for r in out if r[0] == "out"] == [0, 1, 2, 3]
