"""``sbpy runfile``'s progress: tuples read and written per node, their rate and the elapsed time.

``counts_of(node_statuses)`` reads a topology's node statuses (``Topology.node_statuses()``: the
same counters as ``GET /topologies/<t>/<kind>s/<name>``) into ``NodeCount``s: a source has written
(``num_sent_total``), a sink has read (``num_received_total``), a stream both; ``dropped`` and
``errors`` count tuples dropped on output and failed on input.

``Progress`` shows them on a stream (stderr):

- on a terminal (``tty``) a block of one line per node plus a heading, redrawn in place on every
  ``update`` (at most every ``redraw_every`` seconds); ``paused()`` erases the block while something
  else writes (a log line), the next ``update`` redraws it;
- otherwise one plain line every ``plain_every`` seconds:
  ``runfile t: 12.0 s · src 1200 written (100/s) · wc 1200 read, 300 written · out 300 read``;
- ``note(text)`` prints ``runfile t: text`` on a line of its own (the steps before the sources run);
- ``finish`` erases the block and prints the summary: the elapsed time (and the time since
  ``resumed()``), then one line per node with its totals and average rate since the sources
  resumed::

    runfile t: done in 42.0 s (12.0 s since the sources resumed)
      source  src    1200 written               100/s
      stream  wc     1200 read      300 written  25/s
      sink    out     300 read                   25/s

A rate is the change of the node's main counter (written for sources and streams, read for sinks)
over the last ``window`` seconds while running, and its total over the time since the sources
resumed in the summary (Spark's start-up is not in the rates).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from ..logging_setup import ConsoleHandler

KINDS = {"source": "source", "box": "stream", "sink": "sink"}


@dataclass(frozen=True)
class NodeCount:
    """One node's counters; ``read``/``written`` are None where the kind has no such side."""

    kind: str  # source, stream or sink
    name: str
    state: str
    read: int | None
    written: int | None
    dropped: int = 0
    errors: int = 0

    @property
    def main(self) -> int:
        """The counter the rate is computed on."""
        return self.written if self.written is not None else (self.read or 0)


def counts_of(node_statuses: Iterable[tuple[str, str, dict[str, Any]]]) -> list[NodeCount]:
    """``NodeCount``s of ``(node_type, name, status)`` triples (``Topology.node_statuses()``)."""
    counts = []
    for node_type, name, status in node_statuses:
        inputs, outputs = status.get("input_stats"), status.get("output_stats")
        counts.append(NodeCount(
            kind=KINDS.get(node_type, node_type), name=name, state=str(status.get("state", "")),
            read=None if inputs is None else int(inputs.get("num_received_total", 0)),
            written=None if outputs is None else int(outputs.get("num_sent_total", 0)),
            dropped=0 if outputs is None else int(outputs.get("num_dropped", 0)),
            errors=0 if inputs is None else int(inputs.get("num_errors", 0))))
    return counts


def _sides(count: NodeCount) -> str:
    parts = []
    if count.read is not None:
        parts.append(f"{count.read} read")
    if count.written is not None:
        parts.append(f"{count.written} written")
    if count.dropped:
        parts.append(f"{count.dropped} dropped")
    if count.errors:
        parts.append(f"{count.errors} failed")
    return ", ".join(parts)


def _rate(per_second: float) -> str:
    return f"{per_second:.0f}/s" if per_second >= 10 else f"{per_second:.1f}/s"


class Progress:
    """Shows ``NodeCount``s of topology ``name`` on ``out`` (see the module doc)."""

    def __init__(self, out: TextIO, name: str, tty: bool, clock: Callable[[], float] = time.monotonic,
                 plain_every: float = 5.0, redraw_every: float = 0.2, window: float = 2.0):
        self.out, self.name, self.tty, self.clock = out, name, tty, clock
        self.plain_every, self.redraw_every, self.window = plain_every, redraw_every, window
        self.started = clock()
        self.resumed_at: float | None = None  # when the sources were resumed (``resumed()``)
        self._history: deque[tuple[float, dict[str, int]]] = deque()
        self._drawn_lines = 0
        self._last_output = self.started
        self._lock = threading.RLock()

    def elapsed(self) -> float:
        return self.clock() - self.started

    def rates(self, counts: list[NodeCount]) -> dict[str, float]:
        """Per node, the change of its main counter per second over the last ``window`` seconds."""
        now = self.clock()
        self._history.append((now, {c.name: c.main for c in counts}))
        while len(self._history) > 2 and now - self._history[1][0] >= self.window:
            self._history.popleft()
        then, old = self._history[0]
        span = now - then
        return {c.name: (c.main - old.get(c.name, 0)) / span if span > 0 else 0.0 for c in counts}

    def update(self, counts: list[NodeCount]) -> None:
        """Called on every poll: redraw the block (terminal) or print a plain line when one is due."""
        rates = self.rates(counts)
        now = self.clock()
        with self._lock:
            if self.tty:
                if now - self._last_output >= self.redraw_every or not self._drawn_lines:
                    self._erase()
                    self._draw(self._block(counts, rates))
                    self._last_output = now
            elif now - self._last_output >= self.plain_every:
                self.out.write(self.plain_line(counts, rates) + "\n")
                self.out.flush()
                self._last_output = now

    def plain_line(self, counts: list[NodeCount], rates: dict[str, float]) -> str:
        nodes = " · ".join(
            f"{c.name} {_sides(c)}" + (f" ({_rate(rates[c.name])})" if c.kind == "source" else "")
            for c in counts)
        return f"runfile {self.name}: {self.elapsed():.1f} s" + (f" · {nodes}" if nodes else "")

    def _block(self, counts: list[NodeCount], rates: dict[str, float]) -> list[str]:
        lines = [f"runfile {self.name} · {self.elapsed():.1f} s · Ctrl-C stops"]
        lines += self._table(counts, {c.name: _rate(rates[c.name]) for c in counts}, with_state=True)
        return lines

    @staticmethod
    def _table(counts: list[NodeCount], rates: dict[str, str], with_state: bool = False) -> list[str]:
        name_w = max((len(c.name) for c in counts), default=0)
        sides = {c.name: _sides(c) for c in counts}
        sides_w = max((len(s) for s in sides.values()), default=0)
        return [f"  {c.kind:<7} {c.name:<{name_w}}  {sides[c.name]:<{sides_w}}  {rates[c.name]:>8}"
                + (f"  {c.state}" if with_state else "") for c in counts]

    def _draw(self, lines: list[str]) -> None:
        self.out.write("".join(line + "\x1b[K\n" for line in lines))
        self.out.flush()
        self._drawn_lines = len(lines)

    def _erase(self) -> None:
        if self._drawn_lines:
            self.out.write(f"\x1b[{self._drawn_lines}F\x1b[J")
            self._drawn_lines = 0

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Erase the block while the caller writes to the same terminal (the next update redraws)."""
        with self._lock:
            self._erase()
            self.out.flush()
            yield

    def resumed(self) -> None:
        """The sources run from now: rates in the summary are over the time since."""
        self.resumed_at = self.clock()

    def note(self, text: str) -> None:
        """One line of its own (``runfile t: starting Spark``), above the block if one is drawn."""
        with self.paused():
            self.out.write(f"runfile {self.name}: {text}\n")
            self.out.flush()

    def finish(self, counts: list[NodeCount]) -> None:
        """Erase the block and print the summary."""
        now = self.clock()
        elapsed = now - self.started
        running = now - (self.resumed_at if self.resumed_at is not None else self.started)
        with self._lock:
            self._erase()
            heading = f"runfile {self.name}: done in {elapsed:.1f} s"
            if self.resumed_at is not None:
                heading += f" ({running:.1f} s since the sources resumed)"
            averages = {c.name: _rate(c.main / running if running > 0 else 0.0) for c in counts}
            lines = [heading, *self._table(counts, averages)]
            self.out.write("\n".join(line.rstrip() for line in lines) + "\n")
            self.out.flush()


class ProgressLogHandler(ConsoleHandler):
    """A stderr handler that writes each log line while the progress block is erased."""

    def __init__(self, progress: Progress):
        super().__init__("stderr")
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        try:
            with self.progress.paused():
                super().emit(record)
        except Exception:  # noqa: BLE001 - the terminal went away: logging's own error report
            self.handleError(record)
