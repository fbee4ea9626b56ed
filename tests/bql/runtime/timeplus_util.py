"""Helpers shared by the test_timeplus_* tests: build a WindowProcessor and feed it by hand."""
import datetime as dt

from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select

UTC = dt.timezone.utc
T0 = 1580673600  # 2020-02-02T20:00:00Z, a multiple of every window size used here


def at(seconds: float) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=round(seconds * 1_000_000))


def build(query: str):
    return build_processor(parse_select(query))


class Feeder:
    """Feeds tuples to a processor one by one (``ts`` field = tuple timestamp) and records everything."""

    def __init__(self, query: str, proc=None):
        self.proc = proc if proc is not None else build(query)
        self.seq = 0
        self.dropped = []
        self.done = False

    def _collect(self, step):
        self.dropped.extend(step.dropped)
        self.done = self.done or step.done
        return [json_ready(t.data) for t in step.outputs]

    def push(self, **data):
        self.seq += 1
        return self._collect(self.proc.process(Tuple(data, at(data["ts"]), self.seq, self.proc.inputs[0])))

    def step(self, **data):
        """Like ``push`` but returns the raw output tuples (for ts/seq checks)."""
        self.seq += 1
        result = self.proc.process(Tuple(data, at(data["ts"]), self.seq, self.proc.inputs[0]))
        self.dropped.extend(result.dropped)
        return result

    def finish(self):
        return self._collect(self.proc.finish(self.proc.inputs[0]))

    def tick(self, seconds: float):
        return self._collect(self.proc.tick(at(seconds)))

    def run(self, rows):
        out = []
        for row in rows:
            out += self.push(**row)
        return out + self.finish()
