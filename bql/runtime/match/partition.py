"""One partition's rows: the ORDER BY reorder buffer and the matched-order row store.

Rows are fed to the matcher in ORDER BY order. A row that arrives out of order is held back: with a
numeric (or timestamp) first ORDER BY key, rows are released once their key is at most the watermark
``largest key seen - delay`` (``delay`` in key units, seconds for timestamps; the largest key is the
partition's own, or with the ``global`` setting the clock shared by every partition), so rows up to
``delay`` late are put back in order; a row older than that is *late* and dropped. A row more than
``ahead`` beyond the largest key is dropped too; beyond ``row_limit`` held rows the oldest is released
at once (and later rows older than it are late). Other key types (and NaN) are taken in arrival order. Rows
with equal keys keep their arrival order; later ORDER BY keys order the held rows with an equal first
key (``Desc`` reverses a DESC key). ``end()`` releases everything (``time_order.py`` has the settings).

The store keeps rows by absolute position (``base`` = position of the first kept row); positions
before ``base`` were trimmed because nothing can read them any more.
"""
from __future__ import annotations

import bisect
import datetime as _dt
from collections import deque
from typing import Any

from ...values import sort_key
from ..processor import Tuple
from .time_order import shift
from .views import Blocked


def _numeric(v: Any) -> bool:
    """A time the reorder buffer orders by: an int, a float other than NaN (which no time is before
    or after: it is taken in arrival order, as a key of another type), a timestamp."""
    t = type(v)
    if t is float:
        return v == v
    return t is int or isinstance(v, _dt.datetime)


class Desc:
    """A DESC ORDER BY key value: compares in reverse (equal values stay equal)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: Any) -> bool:
        return self.value == other.value

    def __lt__(self, other: Any) -> bool:
        return other.value < self.value

    def __le__(self, other: Any) -> bool:
        return other.value <= self.value

    def __gt__(self, other: Any) -> bool:
        return other.value > self.value

    def __ge__(self, other: Any) -> bool:
        return other.value >= self.value

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (Desc, (self.value,))


LATE, AHEAD = "late", "ahead"


def _skey(key: tuple) -> tuple:
    return tuple(Desc(sort_key(v.value)) if type(v) is Desc else sort_key(v) for v in key)


def _le(a: tuple, b: tuple) -> bool:
    try:
        return a <= b
    except TypeError:
        return _skey(a) <= _skey(b)


class Rows:
    """The ordered rows of a partition plus its reorder buffer. ``clock``: the object whose ``max0``
    is the largest key seen (a shared ``StreamClock`` for the global watermark, else the rows)."""

    def __init__(self, bound: float, ahead: float | None = None, row_limit: int | None = None,
                 clock: Any = None):
        self.rows: list[Tuple] = []
        self.keys: list[tuple] = []
        self.base = 0
        self.ended = False
        self.bound = bound
        self.ahead = ahead
        self.row_limit = row_limit
        self.clock = self if clock is None else clock
        self.held: list = []       # sorted by (key, arrival): [(key, arrival, tuple)]
        self.max0: Any = None      # largest first key seen (of this partition)
        self.floor: Any = None     # first key of the last row the row limit released
        self.arrival = 0

    # ------------------------------------------------------------ store (matcher side)

    @property
    def avail(self) -> int:
        return self.base + len(self.rows)

    def get(self, idx: int) -> Tuple | None:
        """The row at ``idx``; None outside the partition; ``Blocked`` if it may still arrive."""
        if idx < self.base:
            return None
        i = idx - self.base
        if i < len(self.rows):
            return self.rows[i]
        if self.ended:
            return None
        raise Blocked(idx)

    def key0(self, idx: int) -> Any:
        return self.keys[idx - self.base][0] if self.keys[idx - self.base] else None

    def trim(self, keep_from: int) -> None:
        """Forget rows before ``keep_from`` (amortised)."""
        k = keep_from - self.base
        if k > 64 and k * 2 >= len(self.rows):
            del self.rows[:k]
            del self.keys[:k]
            self.base = keep_from

    # ------------------------------------------------------------ reorder buffer (input side)

    def _watermark(self) -> Any:
        mx = self.clock.max0
        if mx is None:
            return None
        if isinstance(mx, _dt.datetime):
            return mx - _dt.timedelta(seconds=self.bound)
        return mx - self.bound

    def offer(self, tup: Tuple, key: tuple) -> str | None:
        """Accept a row; else why it is dropped: ``LATE`` (older than the watermark, or than a row the
        row limit released) or ``AHEAD`` (beyond the largest key by more than ``ahead``)."""
        clock = self.clock
        mx = clock.max0
        k0 = key[0] if key else None
        if not _numeric(k0) or (mx is not None and type(k0) is not type(mx)
                                and not (isinstance(k0, (int, float)) and isinstance(mx, (int, float)))):
            self._release_all()
            self._append(tup, key)
            return None
        wm = self._watermark()
        if wm is not None and k0 < wm:
            return LATE
        if self.floor is not None and k0 < self.floor:
            return LATE
        if self.ahead is not None and mx is not None and k0 > shift(mx, self.ahead):
            return AHEAD
        if mx is None or k0 > mx:
            clock.max0 = k0
        if self.max0 is None or k0 > self.max0:
            self.max0 = k0
        self.arrival += 1
        held = self.held
        entry = (key, self.arrival, tup)
        if not held or _le(held[-1][0], key):
            held.append(entry)
        else:
            sk = _skey(key)
            bisect.insort(held, entry, key=lambda e: (_skey(e[0]), e[1]) if e is not entry else (sk, e[1]))
        self.release(self._watermark())
        limit = self.row_limit
        if limit is not None and len(held) > limit:
            n = len(held) - limit
            for e in held[:n]:
                self._append(e[2], e[0])
            self.floor = held[n - 1][0][0]
            del held[:n]
        return None

    def release(self, wm: Any) -> int:
        """Move the held rows whose first key is at most ``wm`` to the store; how many moved."""
        held = self.held
        n = 0
        while n < len(held) and held[n][0][0] <= wm:
            n += 1
        for e in held[:n]:
            self._append(e[2], e[0])
        del held[:n]
        return n

    def _release_all(self) -> None:
        for e in self.held:
            self._append(e[2], e[0])
        self.held.clear()

    def _append(self, tup: Tuple, key: tuple) -> None:
        self.rows.append(tup)
        self.keys.append(key)

    def end(self) -> None:
        """The partition ends (its input finished): release every held row."""
        self._release_all()
        self.ended = True

    # ------------------------------------------------------------ snapshot

    def to_state(self) -> dict:
        return {"rows": self.rows, "keys": self.keys, "base": self.base, "ended": self.ended,
                "held": self.held, "max0": self.max0, "floor": self.floor, "arrival": self.arrival}

    def from_state(self, st: dict) -> None:
        for k, v in st.items():
            setattr(self, k, v)


class Partition:
    """One partition: its rows, its matcher, the events waiting to be rendered and, with the compiled
    lane, the lane's ``feed`` and ``flush`` (``lane.py``)."""

    __slots__ = ("values", "rows", "matcher", "pending", "feed", "flush", "sync_keys")

    def __init__(self, values: tuple, engine: Any, order: Any, clock: Any):
        """``order``: the clause's ``TimeOrder``; ``clock``: the global ``StreamClock`` or None."""
        self.values = values
        self.rows = Rows(order.delay, order.ahead, order.row_limit, clock)
        self.matcher = engine(self.rows)
        self.pending: deque = deque()
        # the lane's (``MatchRecognizeProcessor._new_partition``)
        self.feed = self.flush = self.sync_keys = None

    def sync(self) -> None:
        """Write the lane's cells back to ``rows`` / ``matcher`` (before anything else reads them)."""
        if self.flush is not None:
            self.flush()
