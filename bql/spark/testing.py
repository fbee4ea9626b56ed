"""Test helpers for the Spark runtime: a minimal journal writer and stand-in processors.

They live in the package (not under tests/) so Spark's Python workers can import them by reference.
A stand-in factory is passed as ``StageSpec.factory``; it receives the ``StageSpec`` and returns a
processor following ``sbpy.bql.runtime.processor.Processor``.
"""
from __future__ import annotations

import datetime as _dt
import pickle
from pathlib import Path
from typing import Any

from sbpy.bql.runtime.processor import Dropped, StepResult, Tuple

from . import journal_format as jf


class StubGroupState:
    """The parts of ``pyspark.sql.streaming.state.GroupState`` the fused operator uses, for calling its
    ``applyInPandasWithState`` function without Spark: ``value`` is the state tuple (None = no state)."""

    def __init__(self, now_ms: int = 0, value: Any = None, timed_out: bool = False):
        self.now_ms, self.value, self.hasTimedOut = now_ms, value, timed_out
        self.timeout_ms: int | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> Any:
        return self.value

    def update(self, value: Any) -> None:
        self.value = value

    def getCurrentProcessingTimeMs(self) -> int:
        return self.now_ms

    def setTimeoutDuration(self, ms: int) -> None:
        assert ms > 0
        self.timeout_ms = ms


class TestJournal:
    """Appends entries with a topology-wide seq counter and moves HEAD after each ``append``."""

    __test__ = False

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        self.seq = jf.read_head(self.dir)

    def append(self, items: list[tuple[str, Any]]) -> list[int]:
        """``items``: (node, data dict) or (node, None) for an end marker. Returns the seqs.

        A tuple's timestamp is ``seq * 1000`` µs.
        """
        seqs = []
        for node, data in items:
            self.seq += 1
            path = jf.node_log_path(self.dir, node)
            path.parent.mkdir(parents=True, exist_ok=True)
            line = jf.encode_end(self.seq) if data is None else jf.encode_entry(self.seq, self.seq * 1000, data)
            with open(path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
            seqs.append(self.seq)
        jf.write_head(self.dir, self.seq)
        return seqs


class _Base:
    """Common no-op parts of a stand-in processor."""

    def __init__(self, spec: Any):
        self.inputs = tuple(spec.inputs)
        self.node = spec.node

    def finish(self, input_name: str) -> StepResult:
        return StepResult()

    def tick(self, now: _dt.datetime) -> StepResult:
        return StepResult()

    def snapshot(self) -> bytes:
        return pickle.dumps(self.__dict__.get("state"))

    def restore(self, data: bytes) -> None:
        self.state = pickle.loads(data)


class PassThrough(_Base):
    """Emits every tuple unchanged, adding ``via_<node>: <input>``."""

    def process(self, tup: Tuple) -> StepResult:
        data = dict(tup.data)
        data[f"via_{self.node}"] = tup.input
        return StepResult([Tuple(data, tup.ts, tup.seq, self.node)])


class RunningCount(_Base):
    """Emits ``{"n": <tuples seen so far>, "last": <data>}``; a tuple with ``fail`` raises.

    A tuple with ``drop`` is reported as dropped (without raising); one with ``stop`` ends the query
    (``done``); ``finish`` emits ``{"finished": input}``.
    """

    def __init__(self, spec: Any):
        super().__init__(spec)
        self.state = 0

    def process(self, tup: Tuple) -> StepResult:
        if tup.data.get("fail"):
            raise ValueError(f"bad tuple {tup.seq}")
        if tup.data.get("drop"):
            return StepResult(dropped=[Dropped(tup, "dropped on purpose", "input")])
        self.state += 1
        return StepResult([Tuple({"n": self.state, "last": tup.data}, tup.ts, tup.seq, self.node)],
                          done=bool(tup.data.get("stop")))

    def finish(self, input_name: str) -> StepResult:
        return StepResult([Tuple({"finished": input_name}, _dt.datetime.now(_dt.timezone.utc), 0, self.node)])


def pass_through(spec: Any) -> PassThrough:
    return PassThrough(spec)


def running_count(spec: Any) -> RunningCount:
    return RunningCount(spec)
