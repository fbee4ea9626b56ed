"""The UDS example of the "Server Programming" chapter: the ``my_counter`` state and ``my_next_count``.

    CREATE STATE my_counter_instance TYPE my_counter WITH start = 100;
    CREATE STREAM events_with_id AS
        SELECT RSTREAM my_next_count("my_counter_instance") AS id, * FROM events [RANGE 1 TUPLES];
    SAVE STATE my_counter_instance;
    LOAD STATE my_counter_instance TYPE my_counter;

The saved form is the count as a little-endian int64, like the Go example.

>>> c = Counter(start=3); c.next(), c.next()
(3, 4)
"""
from __future__ import annotations

import struct
import threading
from typing import Any, BinaryIO

from sbpy.plugins.api import Context, SharedState


class Counter(SharedState):
    """A monotonically increasing counter; ``start`` is the first value ``next`` returns."""

    type_name = "my_counter"

    def __init__(self, start: Any = 1):
        from sbpy.bql.conversions import to_int

        self.c = to_int(start) - 1
        self.lock = threading.Lock()

    def next(self) -> int:
        with self.lock:
            self.c += 1
            return self.c

    def save(self, w: BinaryIO, params: dict[str, Any]) -> None:
        with self.lock:
            w.write(struct.pack("<q", self.c))

    def load(self, r: BinaryIO, params: dict[str, Any]) -> None:
        c = _read(r)
        with self.lock:
            self.c = c

    @classmethod
    def load_state(cls, r: BinaryIO, params: dict[str, Any]) -> Counter:
        cnt = cls()
        cnt.c = _read(r)
        return cnt

    def __getstate__(self) -> dict[str, Any]:
        return {"c": self.c}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.c, self.lock = state["c"], threading.Lock()


def _read(r: BinaryIO) -> int:
    data = r.read(8)
    if len(data) != 8:
        raise ValueError("the saved counter is truncated")
    return struct.unpack("<q", data)[0]


def next_count(ctx: Context, uds: str) -> int:
    """``my_next_count(name)``: the next value of the counter state ``name``."""
    return ctx.state(uds, Counter).next()


def register(regs: Any) -> None:
    regs.add_uds_type("my_counter", Counter)
    regs.add_udf("my_next_count", next_count, volatile=True)
