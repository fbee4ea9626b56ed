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
