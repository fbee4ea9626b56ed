"""``WindowProcessor``'s snapshot and restore (a mixin: it reads and writes the processor's own state).

The snapshot is a pickled dict of the open and pending panes, the window bookkeeping, the LIMIT
counters, the streaming calls, the timeout, the EMIT LAST range, the watermark, the sessions, the EMIT
policy; each pane says its own layout (``pane_columns.load_pane``): row panes restore into the column
layout (converted), not the other way round.
"""
from __future__ import annotations

import heapq
import pickle
from typing import Any

from .pane_columns import load_pane


class WindowSnapshot:
    """``snapshot`` / ``restore`` of a ``WindowProcessor``."""

    def snapshot(self: Any) -> bytes:
        state = {
            "panes": [p.state() for p in self.panes.values()],
            "pending": [p.state() for p in self.pending],
            "by_bounds": self.by_bounds,
            "global_pid": self.global_pid,
            "next_pid": self.next_pid,
            **self.out.state(),
            "calls": self.calls.state() if self.calls is not None else None,
            "timeout": self.timeout.last_arrival if self.timeout is not None else None,
            "last_range": self.last_range.state() if self.last_range is not None else None,
            "finished": self.finished,
            "last": self.last,
            "watermark": self.watermark.state(),
            "sessions": self.sessions.state() if self.sessions is not None else None,
            "policy": self.policy.state(),
        }
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self: Any, data: bytes) -> None:
        state = pickle.loads(data)
        self.panes = {}
        for ps in state["panes"]:
            pane = load_pane(ps, self.columns, self._key, self._env)
            self.panes[pane.pid] = pane
        self.ends = [(p.end, p.pid) for p in self.panes.values() if p.end is not None]
        heapq.heapify(self.ends)
        self.pending = [load_pane(ps, self.columns, self._key, self._env) for ps in state["pending"]]
        self.by_bounds = dict(state["by_bounds"])
        self.global_pid = state["global_pid"]
        self.next_pid = state["next_pid"]
        self.out.load(state)
        if self.calls is not None and state.get("calls") is not None:
            self.calls.load(state["calls"])
        if self.timeout is not None:
            self.timeout.last_arrival = state.get("timeout")
        if self.last_range is not None and state.get("last_range") is not None:
            self.last_range.load(state["last_range"])
        self.finished = state["finished"]
        self.last = state["last"]
        self.watermark.load(state["watermark"])
        if self.sessions is not None:
            self.sessions.load(state["sessions"])
        self.policy.load(state["policy"])
