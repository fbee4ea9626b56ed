"""Every host of the kernel runs a batch with CPython's cyclic collector paused (``gc_pause``): the
pipeline (driver, Spark operators, routers, tails), a bucket of keys and a bucket of windows. Their rows
are acyclic and freed by reference counting; a collection meanwhile would only rescan them."""
from __future__ import annotations

import gc

import pytest
from sbpy.bql.runtime import gc_pause
from sbpy.bql.spark.keyed_buckets import BucketCore
from sbpy.bql.spark.keyed_window_bucket import WindowBucket
from sbpy.bql.spark.operator import Pipeline, StageSpec

pytestmark = pytest.mark.usefixtures("collector_on")  # tests/conftest.py


class Recorder:
    """A stage that records whether the collector ran while it processed a tuple."""

    inputs = ("src",)

    def __init__(self, spec):
        self.seen: list[bool] = []

    def process(self, tup):
        from sbpy.bql.runtime.processor import StepResult, Tuple

        self.seen.append(gc.isenabled())
        return StepResult([Tuple(dict(tup.data), tup.ts, tup.seq, "")])

    def finish(self, input_name):
        from sbpy.bql.runtime.processor import StepResult

        return StepResult()

    def snapshot(self):
        return b""

    def restore(self, data):
        pass


def test_a_pipeline_batch_runs_with_the_collector_paused():
    from sbpy.bql.spark import journal_format as jf

    p = Pipeline([StageSpec("s1", "", ("src",), factory=Recorder)])
    rows = [(i, "src", 1000 * i, jf.encode_data({"x": i}), False) for i in range(1, 4)]
    out = p.run(rows)
    assert p.processors[0].seen == [False, False, False]
    assert len([r for r in out if r[0] == "out"]) == 3
    assert gc.isenabled() and gc_pause.depth() == 0


def test_a_failing_pipeline_batch_ends_its_pause(monkeypatch):
    def boom(self, rows):
        assert not gc.isenabled()
        raise RuntimeError("boom")

    monkeypatch.setattr(Pipeline, "_run", boom)
    with pytest.raises(RuntimeError):
        Pipeline([]).run([])
    assert gc.isenabled() and gc_pause.depth() == 0


@pytest.mark.parametrize("host", [BucketCore, WindowBucket])
def test_a_bucket_runs_with_the_collector_paused(monkeypatch, host):
    seen = []

    def record(self, *args):
        seen.append(gc.isenabled())
        return [], b"stamp"

    monkeypatch.setattr(host, "_run", record)
    bucket = object.__new__(host)
    args = ([], None, lambda k: None, lambda k, s: None) + ((lambda k: None,) if host is WindowBucket else ())
    assert bucket.run(*args) == ([], b"stamp")
    assert seen == [False] and gc.isenabled()


class Raising(Recorder):
    """A stage that raises on odd ``x`` and emits the rest."""

    def process(self, tup):
        if tup.data["x"] % 2:
            raise ValueError(f"odd {tup.data['x']}")
        return super().process(tup)


def test_a_sole_reader_step_that_raises_drops_only_its_tuple():
    """The journal loop runs a sole reader's step inline (``Pipeline._run``): a raising step is dropped
    with its tuple, input and error as ``_step`` reports it, the other tuples flow, the counts add up."""
    from sbpy.bql.spark import journal_format as jf

    p = Pipeline([StageSpec("s1", "", ("src",), factory=Raising),
                  StageSpec("s2", "", ("s1",), factory=Recorder)])
    rows = [(i, "src", 1000 * i, jf.encode_data({"x": i}), False) for i in range(1, 6)]
    out = p.run(rows)
    dropped = [r for r in out if r[0] == "dropped"]
    assert [(r[1], jf.decode_data(r[5]), r[6], r[7], r[8]) for r in dropped] == [
        ("s1", {"x": x}, f"ValueError: odd {x}", "src", "other") for x in (1, 3, 5)]
    assert [jf.decode_data(r[5]) for r in out if r[0] == "out"] == [{"x": 2}, {"x": 4}]
    stats = {r[1]: jf.decode_data(r[5]) for r in out if r[0] == "stat"}
    assert stats["s1"] == {"received": {"src": 5}, "sent": 2, "dropped": 3}
    assert stats["s2"] == {"received": {"s1": 2}, "sent": 2, "dropped": 0}


def test_a_keyed_operator_call_runs_with_the_collector_paused(monkeypatch):
    """Spark's calls into a keyed query — a bucket (its unpacking and output frame included), a router
    chunk, a sequential core — pause the collector and end the pause."""
    from sbpy.bql.spark import keyed_query as kq

    seen = []

    def record(*args):
        seen.append(gc.isenabled())
        return "result"

    for name in ("_frame", "_packed"):  # a bucket's output frame, a sequential router's packed frame
        monkeypatch.setattr(kq, name, record)
    assert kq._run_bucket(None, None, "", 0, iter([]), None, None, None) == "result"
    assert kq._run_window_bucket(None, None, "", 0, iter([]), None, None) == "result"

    class State:  # a sequential core's ValueState, empty
        def exists(self):
            return False

        def update(self, value):
            pass

    class Core:
        dirty, saved = False, None

        def run(self, rows):
            seen.append(gc.isenabled())
            return list(rows)

        def snapshot(self):
            return b""

    # a sequential core's batch: its output frame made by ``emit`` while paused
    assert kq._run_sequential("tail", ("tail-test",), Core, record, State(), iter([])) == "result"
    kq._CORES.pop(("tail-test",), None)

    # a router chunk in a journal read (``routed_source``): routed and packed while paused
    monkeypatch.setattr(kq, "pack_rows", record)
    monkeypatch.setattr(kq, "_plan_key", lambda plan: "test-plan")
    monkeypatch.setitem(kq._CORES, ("jrouter", "q", "test-plan"), Core())
    rows = [(2, "s", 0, "{}", False, None), (1, "s", 0, "{}", False, None)]
    assert kq.route_rows("q", None, "", 2, rows) == "result"
    assert seen == [False] * 5 and gc.isenabled() and gc_pause.depth() == 0


class _ArrowBatch:
    """A micro-batch DataFrame as the stateless collector reads it: only ``toArrow``."""

    def __init__(self, rows):
        self.rows = rows

    def toArrow(self):  # noqa: N802 - pyspark's name
        import pyarrow as pa

        from sbpy.bql.spark.operator import OUTPUT_SCHEMA

        names = [c.split()[0] for c in OUTPUT_SCHEMA.split(", ")]
        types = {"string": pa.string(), "long": pa.int64()}
        schema = pa.schema([(n, types[c.split()[1]]) for n, c in zip(names, OUTPUT_SCHEMA.split(", "))])
        return pa.Table.from_pylist([dict(zip(names, r)) for r in self.rows], schema=schema)


@pytest.mark.parametrize("encoded", [False, True])
def test_the_stateless_collector_decodes_in_order_with_the_collector_paused(monkeypatch, encoded):
    """``stateless_query.collect_tuples``: the batch's rows in ``(seq, idx)`` order, each ``out`` text
    decoded on its own (``pairs_batch(shared=False)``: two equal texts give two maps, equal to what the
    shared decode gives) or kept as text, the other rows decoded — all with the collector paused."""
    from sbpy.bql.spark import batch_rows
    from sbpy.bql.spark import journal_format as jf
    from sbpy.bql.spark.stateless_query import collect_tuples

    texts = [jf.encode_data({"a": i % 2, "t": jf.us_to_ts(i), "$k": [i]}) for i in range(6)]
    rows = [("out", "f", seq, 0, 100 + seq, texts[seq], None, "src", None) for seq in (5, 1, 3, 0, 4, 2)]
    rows.append(("dropped", "f", 2, 1, 0, jf.encode_data({"x": 1}), "bad", "src", None))
    want = texts if encoded else batch_rows.decoded_maps(texts)
    seen: list[bool] = []
    decode = jf.decode_data

    def recording(text):
        seen.append(gc.isenabled())
        return decode(text)

    monkeypatch.setattr(jf, "decode_data", recording)
    batch = collect_tuples(encoded)(_ArrowBatch(rows), 0)
    assert gc.isenabled() and gc_pause.depth() == 0
    assert [ts for ts, _ in batch.outs] == [100 + s for s in range(6)]
    assert [d for _, d in batch.outs] == want
    assert [(r["kind"], r["seq"], r["data"]) for r in batch.others] == [("dropped", 2, {"x": 1})]
    assert seen and not any(seen)
    if not encoded:
        assert batch.outs[0][1] is not batch.outs[2][1]
