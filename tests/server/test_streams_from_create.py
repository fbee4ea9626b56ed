"""A stream computes from its CREATE, as in SensorBee (issue 14; ``graph.computed_from_create``):
a stream whose outputs depend on earlier tuples is materialized when it is created, so a consumer
attaching later gets what SensorBee's stream would send it — a ``[RANGE 10 TUPLES]`` count is already 10
— while a memoryless stream is still fused into its consumer's query (Spark-free, with the in-process
query runner; the expected rows come from the reference runtime ``run_query`` over the whole input)."""
from __future__ import annotations

import json
import threading

import pytest

from sbpy.bql.parser import parse_script
from sbpy.bql.runtime.testing import run_query
from sbpy.plugins.registry import PluginRegistries
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local
from topology_util import Ctx, lines, run

N = 60
COUNT = "SELECT RSTREAM count(*) AS n, max(a) AS last FROM src [RANGE 10 TUPLES]"


GATE = threading.Event()


class GatedRows:
    """``gated``: ``{"a": i}`` for ``i < n``; the rows from ``first`` on only once ``GATE`` is set, so a
    test acts between the two parts without racing the source's end."""

    def __init__(self, params):
        self.n, self.first = int(params["n"]), int(params["first"])

    def run(self, ctx):
        for i in range(ctx.skip, self.n):
            if i == self.first:
                ctx.flush()
                while not GATE.wait(0.05):
                    if ctx.stopping:
                        return
            ctx.emit({"a": i})


class GatedCtx(Ctx):
    def __init__(self, data_dir):
        super().__init__(data_dir)
        self.plugin_registries = PluginRegistries()
        self.plugin_registries.add_source_type("gated", GatedRows)


@pytest.fixture
def topo(tmp_path):
    GATE.clear()
    t = Topology("t", GatedCtx(tmp_path / "data"), query_starter=start_local)
    yield t
    t.stop()


def _parsed(text: str):
    (parsed,) = parse_script(text)
    return parsed


def _source(tmp_path, n: int = N) -> tuple[str, list[dict]]:
    rows = [{"a": i} for i in range(n)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path), rows


def _received(t: Topology, stream: str, sender: str) -> int:
    inputs = t.node("stream", stream)["status"]["input_stats"]["inputs"]
    return inputs.get(sender, {}).get("num_received", 0)


def _gated(first: int, stream: str) -> str:
    """A paused gated source, ``stream`` created over it, then the source resumed: ``first`` rows flow."""
    return f"""CREATE PAUSED SOURCE src TYPE gated WITH n = {N}, first = {first};
               CREATE STREAM w AS {stream};
               RESUME SOURCE src;"""


def test_a_late_sink_gets_full_windows(topo, tmp_path):
    expected = run_query(COUNT, {"src": [{"a": i} for i in range(N)]})
    out = tmp_path / "out.jsonl"
    run(topo, _gated(15, COUNT))
    assert "w" in topo.materialized and topo.consumers["w"].stage_names == ["w"]  # running from its CREATE
    assert wait_until(lambda: _received(topo, "w", "src") == 15, 30)  # 15 rows before any reader
    run(topo, f'CREATE SINK k TYPE file WITH path = "{out}"; INSERT INTO k FROM w;')
    assert topo.consumers["k"].chain.inputs == ["w"] and topo.consumers["k"].stage_names == []
    GATE.set()
    assert wait_until(lambda: len(lines(out)) == N - 15, 30), lines(out)
    got = lines(out)
    assert got[0]["n"] == 10  # the window was full when the sink attached
    assert got == expected[15:]  # the stream's own outputs from the attach on; those before were dropped
    assert _received(topo, "w", "src") == N  # every tuple since its CREATE, counted once


def test_a_select_cursor_sees_a_full_window_and_leaves_the_stream_running(topo, tmp_path):
    expected = run_query(COUNT, {"src": [{"a": i} for i in range(N)]})
    run(topo, _gated(12, COUNT))
    assert wait_until(lambda: _received(topo, "w", "src") == 12, 30)
    cursor = topo.select(_parsed("SELECT RSTREAM n, last FROM w [RANGE 1 TUPLES];"))
    GATE.set()
    first = cursor.get(timeout=30)
    assert first == expected[12]  # n = 10: a full window, not a window started by the SELECT
    cursor.close()
    assert wait_until(lambda: not any(c.id.startswith("select-") for c in topo.consumers.values()), 10)
    w = topo.consumers["w"]
    # its last reader left: it is not detached and goes on to the end of its input (then stops by itself)
    assert "w" in topo.materialized and (not w.stopped or w.done) and w.error is None
    assert wait_until(lambda: _received(topo, "w", "src") == N, 30)
    assert wait_until(lambda: topo.node("stream", "w")["state"] == "stopped", 30) and w.done
    run(topo, "DROP STREAM w;")
    assert w.stopped and "w" not in topo.consumers and "w" not in topo.materialized


def test_memoryless_streams_fuse_and_read_a_computed_stream(topo, tmp_path):
    path, rows = _source(tmp_path)
    out = tmp_path / "out.jsonl"
    run(topo, f"""
        CREATE SOURCE src TYPE gated WITH n = {N}, first = 0;
        CREATE STREAM f AS SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a % 2 = 0;
        CREATE STREAM w AS SELECT RSTREAM count(*) AS n, max(a) AS last FROM f [RANGE 10 TUPLES];
        CREATE STREAM big AS SELECT RSTREAM n, last FROM w [RANGE 1 TUPLES] WHERE n = 10;""")
    assert topo.node("stream", "f")["status"] is not None
    assert sorted(topo.consumers) == ["w"] and topo.consumers["w"].stage_names == ["f", "w"]
    assert topo.streams["f"].own_query is None and topo.streams["big"].own_query is None
    assert topo.streams["w"].own_query == "GROUP BY / aggregates over a window"
    plan = topo.execute(_parsed("EXPLAIN SELECT RSTREAM * FROM big [RANGE 1 TUPLES];"))["plan"]
    assert plan["inputs"] == ["w"] and [s["node"] for s in plan["stages"]] == ["big", "(select)"]
    assert any("w is computed by its own query" in line for line in plan["text"].splitlines())
    run(topo, f'CREATE SINK k TYPE file WITH path = "{out}"; INSERT INTO k FROM big;')
    GATE.set()
    assert topo.consumers["k"].chain.inputs == ["w"] and topo.consumers["k"].stage_names == ["big"]
    assert sorted(topo.consumers) == ["k", "w"]  # the memoryless big runs fused in the sink's query
    evens = run_query("SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a % 2 = 0", {"src": rows})
    counts = run_query("SELECT RSTREAM count(*) AS n, max(a) AS last FROM f [RANGE 10 TUPLES]", {"f": evens})
    expected = [r for r in counts if r["n"] == 10]
    assert wait_until(lambda: topo.node("stream", "big")["state"] == "stopped", 30)
    assert wait_until(lambda: lines(out) == expected, 10), (lines(out), expected)


def test_explain_create_stream_says_it_runs_from_its_create(topo, tmp_path):
    path, _ = _source(tmp_path)
    run(topo, f'CREATE PAUSED SOURCE p TYPE file WITH path = "{path}";')
    run(topo, f"CREATE SOURCE src TYPE gated WITH n = {N}, first = 0;")
    stateful = topo.execute(_parsed(f"EXPLAIN CREATE STREAM w AS {COUNT};"))["plan"]
    assert "w is computed by its own query from its CREATE" in stateful["text"]
    paused = topo.execute(_parsed(f"EXPLAIN CREATE STREAM w AS {COUNT.replace('src', 'p')};"))["plan"]
    assert "its first reader's query computes it, fused, until a source upstream resumes" in paused["text"]
    fused = topo.execute(_parsed("EXPLAIN CREATE STREAM f AS SELECT RSTREAM a FROM src [RANGE 1 TUPLES];"))
    assert "own query" not in fused["plan"]["text"]
    assert not topo.consumers and not topo.streams  # EXPLAIN creates and starts nothing


def test_a_stream_created_after_its_inputs_ended_is_stopped_and_its_readers_end(topo, tmp_path):
    path, rows = _source(tmp_path, 5)
    run(topo, f'CREATE SOURCE src TYPE file WITH path = "{path}";')
    assert wait_until(lambda: topo.node("source", "src")["state"] == "stopped", 30)
    run(topo, f"CREATE STREAM w AS {COUNT};")
    assert topo.node("stream", "w")["state"] == "stopped"
    cursor = topo.select(_parsed("SELECT RSTREAM * FROM w [RANGE 1 TUPLES];"))
    assert list(cursor) == []  # the stream's log ended: the SELECT ends too


def test_a_stream_whose_query_cannot_start_is_not_created(tmp_path):
    def starter(**spec):
        if spec["query_id"] == "t.w":
            raise RuntimeError("no Spark")
        return start_local(**spec)

    t = Topology("t", GatedCtx(tmp_path / "data"), query_starter=starter)
    try:
        with pytest.raises(RuntimeError, match="no Spark"):
            run(t, f"CREATE SOURCE src TYPE gated WITH n = {N}, first = 0; CREATE STREAM w AS {COUNT};")
        assert "w" not in t.streams and "w" not in t.consumers and "w" not in t.materialized
        run(t, "CREATE STREAM f AS SELECT RSTREAM a FROM src [RANGE 1 TUPLES];")  # memoryless: starts nothing
        assert sorted(t.streams) == ["f"] and not t.consumers
    finally:
        t.stop()


def test_paused_sources_keep_one_fused_query_and_a_dropped_sink_hands_the_stream_over(topo, tmp_path):
    """Created while its source is paused, ``w`` is pending: the sink attached before RESUME computes it
    fused (one query, as a script builds it). Dropping that sink splits ``w`` out with its windows: a
    later sink still gets full windows, the very outputs ``w`` computes from its CREATE."""
    expected = run_query(COUNT, {"src": [{"a": i} for i in range(N)]})
    k1, k2 = tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    run(topo, f"""
        CREATE PAUSED SOURCE src TYPE gated WITH n = {N}, first = 15;
        CREATE STREAM w AS {COUNT};
        CREATE SINK k1 TYPE file WITH path = "{k1}";
        INSERT INTO k1 FROM w;""")
    assert sorted(topo.consumers) == ["k1"] and topo.consumers["k1"].stage_names == ["w"]
    run(topo, "RESUME SOURCE src;")
    assert sorted(topo.consumers) == ["k1"]  # w is computed (fused): nothing else starts
    assert wait_until(lambda: len(lines(k1)) == 15, 30)
    run(topo, "DROP SINK k1;")
    assert "w" in topo.materialized and topo.consumers["w"].stage_names == ["w"]  # split out, not lost
    run(topo, f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM w;')
    GATE.set()
    assert wait_until(lambda: len(lines(k2)) == N - 15, 30), lines(k2)
    assert lines(k1) == expected[:15] and lines(k2) == expected[15:]  # windows went on through the drop
