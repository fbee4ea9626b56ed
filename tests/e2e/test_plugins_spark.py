"""Plugins and UDS on Spark: a UDS-backed function in two queries (driver mode), a stateless plugin UDF
and UDSF on the executors (rebuilt from the plugin module names), a ``uds`` sink training a model."""
from __future__ import annotations

import pytest

from sbpy.bql.parser import parse_script
from sbpy.plugins.loader import load_modules
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology
from sbpy.server.uds_storage import InMemoryStorage

from e2e_util import lines, run, write

pytestmark = pytest.mark.spark


@pytest.fixture
def topo(server_context):
    load_modules(["sbpy.plugins.examples"])
    server_context.uds_storage = InMemoryStorage()
    t = Topology("plugins_e2e", server_context)
    yield t
    t.stop()


def test_plugins_and_uds_on_spark(topo, tmp_path):
    from sbpy.plugins.examples import tweets

    n = 40
    write(tmp_path / "a.jsonl", [{"src": "a", "k": i, "text": f"x{i} y"} for i in range(n)])
    write(tmp_path / "b.jsonl", [{"src": "b", "k": i} for i in range(n)])
    write(tmp_path / "train.jsonl", tweets.generate(120, seed=1))
    run(topo, f"""
        CREATE STATE c TYPE my_counter WITH start = 1;
        CREATE STATE m TYPE jubaclassifier_arow WITH label_field = "gender";
        CREATE PAUSED SOURCE a TYPE file WITH path = "{tmp_path}/a.jsonl";
        CREATE PAUSED SOURCE b TYPE file WITH path = "{tmp_path}/b.jsonl";
        CREATE PAUSED SOURCE tr TYPE file WITH path = "{tmp_path}/train.jsonl";
        CREATE STREAM ia AS SELECT RSTREAM my_next_count("c") AS id, src, k FROM a [RANGE 1 TUPLES];
        CREATE STREAM ib AS SELECT RSTREAM my_next_count("c") AS id, src, k FROM b [RANGE 1 TUPLES];
        CREATE STREAM w AS SELECT RSTREAM my_inc(k) AS k1, my_join("p", text, "-") AS j, text AS word
            FROM word_splitter("a", "text") [RANGE 1 TUPLES];
        CREATE STREAM fv AS SELECT RSTREAM gender, {{"t": nlp_weight_tf(nlp_split(text, " "))}} AS feature_vector
            FROM tr [RANGE 1 TUPLES] WHERE gender != "";
        CREATE SINK ka TYPE file WITH path = "{tmp_path}/oa.jsonl";
        CREATE SINK kb TYPE file WITH path = "{tmp_path}/ob.jsonl";
        CREATE SINK kw TYPE file WITH path = "{tmp_path}/ow.jsonl";
        CREATE SINK trainer TYPE uds WITH name = "m";
        INSERT INTO ka FROM ia;
        INSERT INTO kb FROM ib;
        INSERT INTO kw FROM w;
        INSERT INTO trainer FROM fv;
        RESUME SOURCE a; RESUME SOURCE b; RESUME SOURCE tr;""")
    on_driver = {cid: c.on_driver for cid, c in topo.consumers.items()}
    assert on_driver["ka"] and on_driver["kb"] and not on_driver["kw"] and not on_driver["trainer"]
    labelled = sum(1 for t in tweets.generate(120, seed=1) if t["gender"])
    assert wait_until(lambda: len(lines(tmp_path / "oa.jsonl")) == n and len(lines(tmp_path / "ob.jsonl")) == n
                      and len(lines(tmp_path / "ow.jsonl")) == 2 * n
                      and topo.node("sink", "trainer")["status"]["input_stats"]["num_received_total"] == labelled,
                      240, 0.1)
    ids = [r["id"] for r in lines(tmp_path / "oa.jsonl") + lines(tmp_path / "ob.jsonl")]
    assert sorted(ids) == list(range(1, 2 * n + 1))  # one counter shared by two Spark queries
    words = lines(tmp_path / "ow.jsonl")
    assert words[:2] == [{"k1": 1, "j": "p-x0", "word": "x0"}, {"k1": 1, "j": "p-y", "word": "y"}]
    assert sorted(topo.states.get("m").weights) == ["female", "male"]
    label = topo.execute(parse_script('EVAL juba_classified_label(jubaclassify("m", {"t": {"football": 1.0, '
                                      '"beard": 1.0, "beer": 1.0}}));')[0])["result"]
    assert label == "male"
