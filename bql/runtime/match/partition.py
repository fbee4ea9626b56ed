"""One partition's rows: the ORDER BY reorder buffer and the matched-order row store.

Rows are fed to the matcher in ORDER BY order. A row that arrives out of order is held back: with a
numeric (or timestamp) first ORDER BY key, rows are released once their key is at most
``max key seen - bound`` (``bound`` in key units, seconds for timestamps), so rows up to ``bound``
late are put back in order; a row older than that is *late* and dropped. Other key types are taken
in arrival order. Rows with equal keys keep their arrival order. ``end()`` releases everything.

The store keeps rows by absolute position (``base`` = position of the first kept row); positions
before ``base`` were trimmed because nothing can read them any more.
"""
from __future__ import annotations

import bisect
import datetime as _dt
from typing import Any

from ...values import sort_key
from ..processor import Tuple
from .exprs import Blocked


def _numeric(v: Any) -> bool:
    return (type(v) is int or type(v) is float) or isinstance(v, _dt.datetime)


def _skey(key: tuple) -> tuple:
    return tuple(sort_key(v) for v in key)


def _le(a: tuple, b: tuple) -> bool:
    try:
        return a <= b
    except TypeError:
        return _skey(a) <= _skey(b)


class Rows:
    """The ordered rows of a partition plus its reorder buffer."""

    def __init__(self, bound: float):
        self.rows: list[Tuple] = []
        self.keys: list[tuple] = []
        self.base = 0
        self.ended = False
        self.bound = bound
        self.held: list = []       # sorted by (key, arrival): [(key, arrival, tuple)]
        self.max0: Any = None      # largest first key seen
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
        if self.max0 is None:
            return None
        if isinstance(self.max0, _dt.datetime):
            return self.max0 - _dt.timedelta(seconds=self.bound)
        return self.max0 - self.bound

    def offer(self, tup: Tuple, key: tuple) -> bool:
        """Accept a row (False if it is later than the reorder bound and must be dropped)."""
        k0 = key[0] if key else None
        if not _numeric(k0) or (self.max0 is not None and type(k0) is not type(self.max0)
                                and not (isinstance(k0, (int, float)) and isinstance(self.max0, (int, float)))):
            self._release_all()
            self._append(tup, key)
            return True
        wm = self._watermark()
        if wm is not None and k0 < wm:
            return False
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
        wm = self._watermark()
        n = 0
        while n < len(held) and held[n][0][0] <= wm:
            n += 1
        for e in held[:n]:
            self._append(e[2], e[0])
        del held[:n]
        return True

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
                "held": self.held, "max0": self.max0, "arrival": self.arrival}

    def from_state(self, st: dict) -> None:
        for k, v in st.items():
            setattr(self, k, v)
