"""A chain the planner compiles to the native tier, through a topology on Spark: its file sink holds byte
for byte what the sequential kernel writes for the same input — typical rows decided by Spark
expressions, odd ones (strings, NULLs, missing fields, 7.50, escapes, bad and blank lines) by the kernel
on the driver — with the same drops and the same node counters; and the vectorized tier agrees too."""
from __future__ import annotations

import json

import pytest

from sbpy.bql.spark.native_udf import status
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from e2e_util import run

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")]

N = 20_000
STREAMS = """
    CREATE STREAM x AS SELECT RSTREAM id, price, name, 1 AS one FROM src [RANGE 1 TUPLES]
        WHERE price < 8 AND (name != "skip" OR id > 100);
    CREATE STREAM y AS SELECT RSTREAM price, id FROM x [RANGE 1 TUPLES] WHERE id >= 3;"""
# arithmetic (native_arith): floats written by the JVM, ints, division and remainder, a zero divisor
ARITHMETIC = """
    CREATE STREAM x AS SELECT RSTREAM id, price * 1.1 - 1 AS p, id % 7 AS m, id / 3 AS q, name, 1 AS one
        FROM src [RANGE 1 TUPLES] WHERE price * 2 < 15 AND (name != "skip" OR id > 100);
    CREATE STREAM y AS SELECT RSTREAM p, m + q AS s, -p AS n, id / (m - 1) AS r, id FROM x [RANGE 1 TUPLES]
        WHERE id >= 3 AND p / 2 < 4;"""

# JSON paths below the top level, the number functions and casts (native_arith), strings (native_text)
NESTED = """
    CREATE STREAM x AS SELECT RSTREAM id, pos.x AS px, pos.v[1] AS v1, round(price) AS r, abs(price - 4) AS a,
        price::int AS pi, name FROM src [RANGE 1 TUPLES] WHERE pos.v[0] < 9 AND (name != "skip" OR id > 100);
    CREATE STREAM y AS SELECT RSTREAM px, sqrt(px) AS q, v1 * 2 AS w, sign(a - 2) AS s, ceil(r / 3) AS c, pi, id,
        upper(name) || "/" || name AS label FROM x [RANGE 1 TUPLES] WHERE id >= 3 AND floor(px) != 2
        AND lower(name) != "s3";"""

# ``*``: the line's map as sbpy writes it (compacted by the JVM pass), keys set after it appended
STAR = """
    CREATE STREAM x AS SELECT RSTREAM *, price * 2 AS p2 FROM src [RANGE 1 TUPLES]
        WHERE price < 8 AND (name != "skip" OR id > 100);
    CREATE STREAM y AS SELECT RSTREAM x:*, p2 + id AS t FROM x [RANGE 1 TUPLES] WHERE id >= 3;"""


def _input(path):
    lines = []
    for i in range(N):
        row = {"id": i, "price": (i % 11) * 0.75, "name": "skip" if i % 13 == 0 else f"s{i % 5}",
               "pos": {"x": (i % 17) * 0.5, "v": [i % 10, i % 3]}}
        if i % 1031 == 0:
            row["pos"] = {"v": []}  # steps that are not there: the kernel decides
        if i % 1033 == 0:
            row["pos"] = 5
        if i % 997 == 0:
            row["price"] = "oops"  # a string meets 8: the kernel decides
        if i % 1009 == 0:
            del row["name"]  # missing: the kernel drops the step
        if i % 1013 == 0:
            row["price"] = None
        text = json.dumps(row)
        if i % 1019 == 0:
            text = text.replace('"price": ', '"price": 7.50, "price": ')  # duplicate key, odd number
        if i % 1021 == 0:
            text = text.replace('"s', '"\\u0073')  # an escape
        lines.append(text)
        if i % 2003 == 0:
            lines.append("{not json")
        if i % 3001 == 0:
            lines.append("   ")
    path.write_text("\n".join(lines) + "\n")


def _run(server_context, tmp_path, name, src, monkeypatch, force=None, native=True, streams=STREAMS):
    monkeypatch.setenv("SBPY_FORCE_EXECUTION", force or "")
    monkeypatch.setenv("SBPY_NATIVE", "1" if native else "0")
    out = tmp_path / f"{name}.jsonl"
    t = Topology(name, server_context)
    drops = []
    t.subscribe_dropped(drops.append)
    try:
        run(t, f"""
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";
            {streams}
            CREATE SINK k TYPE file WITH path = "{out}";
            INSERT INTO k FROM y;""")
        consumer = t.consumers["k"]
        assert wait_until(lambda: consumer.handle is not None and consumer.handle.last_progress is not None,
                          120, 0.05)
        tiers = [s.tier.value for s in consumer.plan.stages] + [consumer.handle.tier]
        run(t, "RESUME SOURCE src;")
        assert wait_until(lambda: t.node("stream", "y")["state"] == "stopped", 240, 0.1)
        stats = [t.node("stream", s)["status"] for s in ("x", "y")]
    finally:
        t.stop()
    return tiers, out.read_bytes(), sorted((d["node_name"], str(d["data"]), d.get("error")) for d in drops), stats


@pytest.mark.parametrize("streams", [STREAMS, ARITHMETIC, NESTED, STAR], ids=["filter", "arithmetic", "nested", "star"])
def test_native_equals_sequential_byte_for_byte(server_context, tmp_path, monkeypatch, streams):
    src = tmp_path / "in.jsonl"
    _input(src)
    native = _run(server_context, tmp_path, "nat", src, monkeypatch, streams=streams)
    slow = _run(server_context, tmp_path, "seq", src, monkeypatch, force="sequential", streams=streams)
    vector = _run(server_context, tmp_path, "vec", src, monkeypatch, native=False, streams=streams)
    assert native[0] == ["native-jvm"] * 3 and vector[0] == ["vectorized-python"] * 2 + [""]
    assert slow[0] == ["sequential-python"] * 2 + [""]
    assert native[1] == slow[1] == vector[1] and native[1].count(b"\n") > N // 2
    assert native[2] == slow[2] == vector[2] and len(native[2]) > 20
    for a, b in zip(native[3], slow[3]):
        assert a["input_stats"] == b["input_stats"]
        assert a["output_stats"]["num_sent_total"] == b["output_stats"]["num_sent_total"]
