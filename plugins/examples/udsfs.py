"""The UDSF and source examples of the "Server Programming" chapter.

- ``word_splitter(stream, field)``: a stream-like UDSF emitting one tuple per space-separated word.
- ``ticker(interval)``: a source-like UDSF emitting ``{"tick": i}`` every ``interval`` seconds.
- source ``ticker`` (``interval``, default 1 s; ``rewindable``): ``{"tick": i}`` forever.
- source ``lorem`` (``interval``, default 1 s; ``seed``): ``{"text": "<5 to 9 lorem words>"}``.

    CREATE SOURCE lorem TYPE lorem WITH interval = 0.1;
    SELECT RSTREAM * FROM word_splitter("lorem", "text") [RANGE 1 TUPLES];

>>> [d for d, _ in TickerSource({}).collect(3)]
[{'tick': 0}, {'tick': 1}, {'tick': 2}]
"""
from __future__ import annotations

import datetime as _dt
import itertools
import random
from typing import Any, Iterator

from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.runtime.processor import Tuple
from sbpy.plugins.api import SourceType
from sbpy.plugins.udsf import Udsf

LOREM = """lorem ipsum dolor sit amet
consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore
magna aliqua Ut enim ad minim veniam quis nostrud exercitation ullamco laboris
nisi ut aliquip ex ea commodo consequat Duis aute irure dolor in reprehenderit
in voluptate velit esse cillum dolore eu fugiat nulla pariatur Excepteur sint
occaecat cupidatat non proident sunt in culpa qui officia deserunt mollit anim
id est laborum""".replace("\n", " ").split(" ")


class WordSplitter(Udsf):
    """``word_splitter(stream, field)``."""

    def __init__(self, stream: str, field: str):
        self.input(stream)
        self.field = field

    def process(self, tup: Tuple) -> Iterator[dict[str, Any]]:
        if self.field not in tup.data:
            raise BQLEvaluationError(f"the tuple doesn't have the required field: {self.field}")
        value = tup.data[self.field]
        if not isinstance(value, str):
            raise BQLEvaluationError(f"'{self.field}' field must be string")
        for word in value.split(" "):
            yield {**tup.data, self.field: word}


def _seconds(value: Any) -> float:
    from sbpy.plugins.builtin.sources import parse_duration

    try:
        return parse_duration(value)
    except ValueError as err:
        raise BQLEvaluationError(str(err)) from None


class Ticker(Udsf):
    """``ticker(interval)``: on each runtime tick, one ``{"tick": i}`` per elapsed ``interval``."""

    def __init__(self, interval: Any):
        self.interval = _seconds(interval)
        self.next_at: _dt.datetime | None = None
        self.count = 0

    def generate(self, now: _dt.datetime) -> list[dict[str, Any]]:
        out = []
        if self.next_at is None:
            self.next_at = now
        while self.next_at <= now and len(out) < 1000:
            out.append({"tick": self.count})
            self.count += 1
            self.next_at += _dt.timedelta(seconds=self.interval or 1e-6)
        return out


class TickerSource(SourceType):
    """Source ``ticker``: ``{"tick": i}`` every ``interval`` (default 1 s)."""

    default_interval = 1.0

    def tuples(self) -> Iterator[dict[str, Any]]:
        for i in itertools.count():
            yield {"tick": i}


class SeededTextSource(SourceType):
    """Base of the example text sources: one tuple every ``interval`` (default 1 s); an integer
    ``seed`` makes the random texts repeatable."""

    default_interval = 1.0

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        seed = params.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError("seed must be an integer")
        self.seed = seed


class LoremSource(SeededTextSource):
    """Source ``lorem``: random lorem ipsum texts every ``interval`` (default 1 s); ``seed`` fixes them."""

    def tuples(self) -> Iterator[dict[str, Any]]:
        rng = random.Random(self.seed)
        while True:
            yield {"text": " ".join(rng.choice(LOREM) for _ in range(rng.randint(5, 9)))}


def register(regs: Any) -> None:
    regs.add_udsf("word_splitter", WordSplitter)
    regs.add_udsf("ticker", Ticker)
    regs.add_source_type("ticker", TickerSource)
    regs.add_source_type("lorem", LoremSource)
