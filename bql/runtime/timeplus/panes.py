"""Window instances (*panes*) and the rows they hold.

A pane is one tumble/hop window, one session, or the single pane of a global aggregation over a bare
stream (no bounds). It keeps the tuples that entered it, each *tagged* with the pane's bounds (a copy of
the tuple data with ``window_start`` / ``window_end`` added, window columns winning over input fields
of the same name), and the tuples grouped by their GROUP BY key, groups in order of first appearance.

Tumble/hop bounds never change, so groups are maintained incrementally. A session's bounds move with
every tuple that joins it; its rows are re-tagged and regrouped lazily, only when the pane is read
(``groups``), so a long session costs O(n) per emission, not per tuple.

For ``EMIT PERIODIC`` a pane records which of its groups changed since the last tick (``dirty``;
``dirty_all`` for sessions, whose keys move with their bounds).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..processor import Tuple
from .timecol import bound_value

WINDOW_START = "window_start"
WINDOW_END = "window_end"

KeyFn = Callable[[Tuple], Any]


def tag(tup: Tuple, start: int | None, end: int | None) -> Tuple:
    """A copy of ``tup`` whose data carries the window columns (``start`` None: no window)."""
    if start is None:
        return tup
    data = dict(tup.data)
    data[WINDOW_START] = bound_value(start)
    data[WINDOW_END] = bound_value(end)
    return Tuple(data, tup.ts, tup.seq, tup.input)


class Pane:
    """One window instance with its tagged rows."""

    __slots__ = ("pid", "start", "end", "last", "skey", "rows", "tagged", "_groups", "dirty", "dirty_all")

    def __init__(self, pid: int, start: int | None, end: int | None, skey: Any = None, last: int | None = None):
        self.pid = pid
        self.start = start
        self.end = end
        self.last = last  # sessions: the latest event time in the session
        self.skey = skey  # sessions: the non-window GROUP BY key
        self.rows: list[Tuple] = []
        self.tagged = (start, end)  # the bounds the rows carry
        self._groups: dict[Any, list[Tuple]] | None = {}
        self.dirty: set[Any] = set()
        self.dirty_all = False

    @property
    def order(self) -> tuple[int, int]:
        """Emission order: by ``window_start``, then creation."""
        return (self.start if self.start is not None else 0, self.pid)

    def set_bounds(self, start: int, end: int) -> None:
        """Move a session's bounds (rows are re-tagged lazily)."""
        self.start, self.end = start, end

    def add(self, row: Tuple, key: Any) -> None:
        """Store ``row`` (already tagged with the current bounds; ``key`` its group key under them)."""
        self.rows.append(row)
        if self._groups is not None and self.tagged == (self.start, self.end):
            self._groups.setdefault(key, []).append(row)
            self.dirty.add(key)
        else:
            self._groups = None
            self.dirty_all = True

    def groups(self, key_fn: KeyFn) -> dict[Any, list[Tuple]]:
        """The rows by group key, with every row tagged with the current bounds."""
        if self.tagged != (self.start, self.end):
            if self.start is not None:
                ws, we = bound_value(self.start), bound_value(self.end)
                for row in self.rows:  # the data dicts are this pane's own copies
                    row.data[WINDOW_START] = ws
                    row.data[WINDOW_END] = we
            self.tagged = (self.start, self.end)
            self._groups = None
        if self._groups is None:
            groups: dict[Any, list[Tuple]] = {}
            for row in self.rows:
                groups.setdefault(key_fn(row), []).append(row)
            self._groups = groups
        return self._groups

    def replace_rows(self, rows: list[Tuple], key_fn: KeyFn) -> None:
        """Keep only ``rows`` (EMIT LAST's expiry); the groups are rebuilt, the dirty marks kept."""
        self.rows = rows
        self._groups = None
        self.groups(key_fn)

    def key_of(self, row: Tuple, key_fn: KeyFn) -> Any:
        """The group key of a stored row under the current bounds."""
        self.groups(key_fn)
        return key_fn(row)

    def clear_dirty(self) -> None:
        self.dirty = set()
        self.dirty_all = False

    def dirty_keys(self, key_fn: KeyFn) -> list[Any]:
        """The groups changed since the last ``clear_dirty``, in first-appearance order."""
        groups = self.groups(key_fn)
        if self.dirty_all:
            return list(groups)
        return [k for k in groups if k in self.dirty]

    # ------------------------------------------------------------ snapshot / restore

    def state(self) -> tuple:
        return (self.pid, self.start, self.end, self.last, self.skey, self.rows, self.tagged,
                self._groups, self.dirty, self.dirty_all)

    @classmethod
    def load(cls, state: tuple) -> "Pane":
        pane = cls(state[0], state[1], state[2], state[4], state[3])
        (_, _, _, _, _, pane.rows, pane.tagged, pane._groups, pane.dirty, pane.dirty_all) = state
        return pane
