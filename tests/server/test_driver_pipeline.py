"""``driver_query.DriverPipeline``: per-batch snapshot files make a replayed batch restart from the state
before it (windows exactly once), while UDS effects of the replayed batch happen again (at-least-once)."""
from __future__ import annotations

import datetime as _dt

from sbpy.bql.parser import parse_one
from sbpy.bql.runtime import ProcessorContext
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.driver_query import DriverPipeline, output_dicts, tuple_batch
from sbpy.bql.spark.operator import StageSpec
from sbpy.plugins import PluginRegistries
from sbpy.plugins.examples import counter
from sbpy.server.states import StateManager
from sbpy.server.uds_storage import InMemoryStorage

STAGES = [StageSpec("x", 'SELECT RSTREAM sum(a) AS s, my_next_count("c") AS id FROM src [RANGE 3 TUPLES]',
                    ("src",))]
T0 = _dt.datetime(2024, 1, 1, tzinfo=_dt.timezone.utc)


def context():
    regs = PluginRegistries()
    counter.register(regs)
    plugins = regs.for_topology("t")
    states = StateManager("t", InMemoryStorage(), plugins)
    plugins.bind_states(states)
    states.create(parse_one("CREATE STATE c TYPE my_counter"))
    return ProcessorContext(functions=plugins.functions, udsfs=plugins.udsfs, states=states, topology="t")


def batch(first, values):
    return [(first + i, "src", jf.ts_to_us(T0), jf.encode_data({"a": v}), False) for i, v in enumerate(values)]


def outs(rows):
    return [r["data"] for r in output_dicts(rows) if r["kind"] == "out"]


BATCHES = [batch(1, [1, 2]), batch(3, [3, 4]), batch(5, [5, 6])]


def test_replayed_batch_restarts_from_the_snapshot_before_it(tmp_path):
    ctx = context()
    d = DriverPipeline(STAGES, "t", ctx, tmp_path / "driver-state")
    first = [outs(d.run_batch(i, b)) for i, b in enumerate(BATCHES)]
    assert [[r["s"] for r in o] for o in first] == [[1, 3], [6, 9], [12, 15]]
    assert [r["id"] for o in first for r in o] == [1, 2, 3, 4, 5, 6]
    assert d.snapshots() == [1, 2]  # older ones are removed once the next batch is saved
    assert d.restores == 0  # consecutive batches run on the warm pipeline

    # the query failed after running batch 2 but before Spark committed it: Spark replays batch 2
    again = outs(d.run_batch(2, BATCHES[2]))
    assert d.restores == 1
    assert [r["s"] for r in again] == [12, 15]  # the window state came from snapshot 1: exactly once
    assert [r["id"] for r in again] == [7, 8]  # the UDS is not rolled back: at-least-once effects

    # a crash: a new process (new DriverPipeline, same files, the UDS recreated) replays batch 2
    fresh = DriverPipeline(STAGES, "t", context(), tmp_path / "driver-state")
    replay = outs(fresh.run_batch(2, BATCHES[2]))
    assert [r["s"] for r in replay] == [12, 15] and [r["id"] for r in replay] == [1, 2]
    nxt = outs(fresh.run_batch(3, batch(7, [7])))
    assert [r["s"] for r in nxt] == [18] and fresh.restores == 1


def test_a_new_query_starts_empty_and_a_torn_temp_file_is_ignored(tmp_path):
    state = tmp_path / "driver-state"
    state.mkdir()
    (state / "0.tmp").write_bytes(b"torn")
    d = DriverPipeline(STAGES, "t", context(), state)
    assert [r["s"] for r in outs(d.run_batch(0, BATCHES[0]))] == [1, 3]
    assert d.restores == 0 and d.snapshots() == [0]


def test_output_dicts_decodes_a_repeated_text_once_and_gives_each_row_its_own_map(monkeypatch):
    flat, nested = jf.encode_data({"k": 1, "n": 2.5}), jf.encode_data({"k": 2, "m": {"u": [1]}})
    texts = [flat, nested, flat, nested, flat]
    rows = [("out", "x", seq, seq, 0, text, None, "x", None) for seq, text in enumerate(texts)]
    decoded = []
    real = jf.decode_data

    def counting(text):
        decoded.append(text)
        return real(text)

    monkeypatch.setattr(jf, "decode_data", counting)
    maps = [r["data"] for r in output_dicts(rows)]
    assert maps == [real(r[5]) for r in rows]
    assert len({id(m) for m in maps}) == 5  # every row its own map
    assert decoded == [flat, nested, nested]  # the flat text once, the nested one for each of its rows
    maps[0]["k"] = 9
    assert maps[2] == {"k": 1, "n": 2.5}


def test_tuple_batch_hands_out_rows_as_pairs_and_keeps_the_other_rows_in_order():
    rows = [("out", "x", 1, 0, 10, jf.encode_data({"k": 1}), None, "x", None),
            ("dropped", "x", 2, 0, 20, jf.encode_data({"k": "bad"}), "boom", "x", None),
            ("out", "x", 3, 0, 30, jf.encode_data({"k": 3}), None, "x", None),
            ("stat", "x", 4, 0, 40, jf.encode_data({"n": 2}), None, "x", None)]
    dicts = output_dicts(rows)
    decoded = tuple_batch(rows)
    assert not decoded.encoded
    assert decoded.outs == [(d["ts"], d["data"]) for d in dicts if d["kind"] == "out"]
    assert decoded.others == [d for d in dicts if d["kind"] != "out"]
    texts = tuple_batch(rows, encoded=True)
    assert texts.encoded and texts.others == decoded.others
    assert texts.outs == [(r[4], r[5]) for r in rows if r[0] == "out"]  # the pipeline's text as it is
