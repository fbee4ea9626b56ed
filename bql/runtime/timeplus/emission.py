"""EMIT policies: which groups of which panes are emitted, and when.

- ``AFTER WATERMARK`` (default; also spelled ``AFTER WINDOW CLOSE``) ``[WITH DELAY d]``: a pane's groups
  are emitted once, when the watermark closes it; at end of input every open pane closes and is
  emitted. Panes are emitted in ``window_start`` order (then creation order).
- ``ON UPDATE [WITH DELAY d]``: right after a tuple, the current rows of the groups it changed, in
  ``window_start`` order; closing a pane and the end of input emit nothing.
- ``PERIODIC n`` (wall clock, driven by ``tick(now)``): when a period boundary has passed (boundaries
  are epoch-aligned multiples of ``n``; the first tick is always due), emit the groups changed since
  the previous emission, in ``window_start`` order. Panes the watermark closed in between are kept
  until that emission so their final values are not lost, then dropped.
- ``PERIODIC n REPEAT``: at every due tick, *all* current groups (open panes and panes closed since the
  previous tick) are emitted, changed or not.
- A running topology asks the processor when to tick (``next_tick``): the next period boundary while a
  tick would emit something (REPEAT: some group exists; else: some group changed), at once if the query
  never ticked, None otherwise (an idle query does not wake up).
- At end of input a PERIODIC query makes one last emission as if a tick were due (changed groups, or
  all groups with REPEAT), so the final values of a finite input always reach the output.

A request is ``(pane, keys)``: ``keys`` None means every group of the pane.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ast import EmitClause
from .panes import KeyFn, Pane
from .timecol import interval_micros

AFTER_WATERMARK = "after_watermark"
ON_UPDATE = "on_update"
PERIODIC = "periodic"

Request = tuple[Pane, "list[Any] | None"]


def _by_order(panes: Sequence[Pane]) -> list[Pane]:
    return sorted(panes, key=lambda p: p.order)


class EmitPolicy:
    """The EMIT clause of one query (None = ``EMIT AFTER WATERMARK``)."""

    def __init__(self, emit: EmitClause | None):
        self.kind = emit.kind if emit is not None else AFTER_WATERMARK
        if self.kind not in (AFTER_WATERMARK, ON_UPDATE, PERIODIC):
            raise ValueError(f"unknown EMIT policy {self.kind!r}")
        self.delay = interval_micros(emit.delay) if emit is not None and emit.delay is not None else 0
        self.period = None
        self.repeat = False
        if self.kind == PERIODIC:
            self.period = interval_micros(emit.period)
            self.repeat = bool(emit.repeat)
        self.next_due: int | None = None

    # ------------------------------------------------------------ after one tuple

    def after_tuple(self, changed: Sequence[tuple[Pane, Any]]) -> list[Request]:
        """What to emit right after a tuple changed the groups ``changed`` (pane, group key)."""
        if self.kind != ON_UPDATE or not changed:
            return []
        per_pane: dict[int, tuple[Pane, list[Any]]] = {}
        for pane, key in changed:
            keys = per_pane.setdefault(pane.pid, (pane, []))[1]
            if key not in keys:
                keys.append(key)
        return [(pane, keys) for pane, keys in sorted(per_pane.values(), key=lambda pk: pk[0].order)]

    def on_close(self, panes: Sequence[Pane]) -> tuple[list[Request], list[Pane]]:
        """Panes the watermark just closed → (requests, panes to keep until the next periodic tick)."""
        ordered = _by_order(panes)
        if self.kind == AFTER_WATERMARK:
            return [(p, None) for p in ordered], []
        if self.kind == PERIODIC:
            keep = [p for p in ordered if self.repeat or p.dirty or p.dirty_all]
            return [], keep
        return [], []

    # ------------------------------------------------------------ wall clock

    def due(self, now: int) -> bool:
        """Whether a tick at ``now`` (epoch µs) emits; advances the next boundary when it does."""
        if self.kind != PERIODIC:
            return False
        if self.next_due is not None and now < self.next_due:
            return False
        self.next_due = (now // self.period + 1) * self.period
        return True

    def has_output(self, panes: Sequence[Pane]) -> bool:
        """Whether a due tick over ``panes`` (open and pending) would emit anything (PERIODIC only)."""
        if self.kind != PERIODIC:
            return False
        if self.repeat:
            return bool(panes)
        return any(p.dirty or p.dirty_all for p in panes)

    def periodic_requests(self, panes: Sequence[Pane], key_fn: KeyFn) -> list[Request]:
        """The emission of a due tick over the open and pending panes (dirty marks are left as they are)."""
        out: list[Request] = []
        for pane in _by_order(panes):
            if self.repeat:
                out.append((pane, None))
            elif pane.dirty or pane.dirty_all:
                out.append((pane, pane.dirty_keys(key_fn)))
        return out

    def at_finish(self, panes: Sequence[Pane], key_fn: KeyFn) -> list[Request]:
        """End of input: what the still-open (and pending) panes emit."""
        if self.kind == AFTER_WATERMARK:
            return [(p, None) for p in _by_order(panes)]
        if self.kind == PERIODIC:
            return self.periodic_requests(panes, key_fn)
        return []

    def state(self) -> int | None:
        return self.next_due

    def load(self, state: int | None) -> None:
        self.next_due = state
