"""The router of a keyed Timeplus window stage: the ordered pass (one group, arrival order; Spark-free).

For every tuple of the stage's input, in arrival order, ``WindowRouter`` does exactly the order-dependent
part of ``WindowProcessor._aggregate_step`` (design/timeplus-semantics.md §4, tumble/hop):

1. the event time ``t`` (a failure drops the tuple, event ``other``, as the kernel does);
2. the global watermark ``M = max(M, t)`` (before WHERE) and the late rule against the aligned
   watermark ``closed_end(M - delay)``: a late tuple is dropped here (event ``input``);
3. the tuple's windows and, per window, WHERE over the tagged row and its group key (a failure drops the
   tuple, event ``other``: the kernel's step fails before it changes a pane, and it does not close);
4. the tuple goes, with the windows it passed (``event``: a JSON list of window starts), to the bucket of
   its key (``route_key`` of the plain GROUP BY fields, ``crc32 mod n``);
5. then every open window with ``end <= M - delay`` closes *at this tuple*: for each, in ``window_start``
   order, one ``close`` row per bucket that holds rows of it. The kernel's step lists its dropped rows
   (failing groups) before its outputs, so the step reserves ``2m`` positions for its ``m`` windows:
   window ``r``'s dropped rows go to ``idx = base + r``, its outputs to ``base + m + r`` (``event``), the
   same in every bucket, and the buckets' groups merge by ``sub`` = (the group's first seq, row).

At the end of the input every open window is flushed the same way, with the last tuple's time (the
kernel's ``finish``), then the stage's ``end`` (and ``eof`` for a tail). The router keeps ``M``, the open
windows (start → buckets holding rows) and the last tuple; the received and router-dropped counts go into
its own ``stat`` row (the buckets count what they send).
"""
from __future__ import annotations

import heapq
import pickle
from collections.abc import Iterable
from typing import Any

import orjson

from sbpy.bql.eval import Env
from sbpy.bql.runtime.kernel import _message, truth
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.timeplus.panes import tag
from sbpy.bql.runtime.timeplus.timecol import bound_value, to_micros, utc_now

from . import journal_format as jf
from .keyed_buckets import bucket_of, direct_key
from .journal_values import Timestamps
from .keyed_ops import RouterCore
from .keyed_plan import KeyedPlan, route_key
from .keyed_window_plan import WINDOW_COLUMNS, plain_field
from .operator import _error_text, build_stage

STATE_VERSION = 1


class WindowRouter(RouterCore):
    """The ordered pass of a keyed window stage (``RouterCore.run`` drives it: journal rows in, routed
    rows out)."""

    def __init__(self, plan: KeyedPlan, topology: str = "", buckets: int = 1):
        if plan.upstream:
            raise ValueError("a keyed window stage reads a journal input directly")
        self.plan = plan
        self.pipeline = None
        self.proc = build_stage(plan.keyed, topology)
        self.node = plan.keyed.node
        self.route = plan.route
        self.down = set(plan.down_inputs)
        self.buckets = int(buckets)
        self.times = Timestamps()
        alias = self.proc.alias  # the plain GROUP BY fields (the route key's values)
        self.fields = tuple(f for f in (plain_field(g, alias) for g in self.proc.select.group_by)
                            if f not in WINDOW_COLUMNS)
        self._buckets_of: dict[tuple, int] = {}  # (type, value) of one str/int field -> bucket
        self._direct = [direct_key(b) for b in range(self.buckets)]
        self.delay = self.proc.watermark.delay
        self.size = self.proc.fixed.size
        self.saved: bytes | None = None
        self.dirty = False
        self._out: list[tuple] = []
        self._reset()

    def _reset(self) -> None:
        self.max_time: int | None = None
        self.open: dict[int, set[int]] = {}   # window start -> buckets holding rows of it
        self.starts: list[int] = []          # min-heap of the open windows' starts
        self.last: tuple[int, int] | None = None  # (ts µs, seq) of the latest tuple the stage received
        self.route_ended = False

    # ------------------------------------------------------------ state

    def snapshot(self) -> bytes:
        return pickle.dumps({"v": STATE_VERSION, "max_time": self.max_time, "open": self.open,
                             "last": self.last, "route_ended": self.route_ended})

    def restore(self, data: bytes) -> None:
        st = pickle.loads(data)
        if st.get("v") != STATE_VERSION:
            raise ValueError(f"unsupported window router state version {st.get('v')}")
        self.max_time, self.last, self.route_ended = st["max_time"], st["last"], st["route_ended"]
        self.open = {s: set(b) for s, b in st["open"].items()}
        self.starts = sorted(self.open)
        self.saved = data

    # ------------------------------------------------------------ one batch

    def run(self, rows: Iterable[tuple]) -> list[tuple]:
        self.received = self.dropped = 0
        self.last_seq = 0
        self._idx = 0
        out = super().run(rows)
        if self.received or self.dropped:
            counts = {"received": {self.route: self.received}, "sent": 0, "dropped": self.dropped}
            out.append(("stat", self.node, self.last_seq, 1 << 62, 0, 0, jf.encode_data(counts), None, None,
                        None, None))
        return out

    def _take(self, n: int = 1) -> int:
        """``n`` consecutive idx values (a router row's, or a closing step's reserved positions)."""
        idx = self._idx
        self._idx += n
        return idx

    def _emit(self, kind: str, node: str, seq: int, ts: int, data: Any, error: Any, input_name: Any,
              event: Any, key: str = "") -> None:
        self._out.append((kind, node, seq, self._take(), 0, ts, data, error, input_name, event, key))

    def _add(self, kind: str, seq: int, idx: int, ts: int, data: Any, error: Any, event: Any, key: str,
             node: str | None = None) -> None:
        self._out.append((kind, node or self.node, seq, idx, 0, ts, data, error, self.route, event, key))

    def _drop(self, tup: Tuple, ts: int, error: str, event: str) -> None:
        self.dropped += 1
        try:
            text = jf.encode_data(tup.data)
        except Exception:  # noqa: BLE001
            text, ts = None, 0
        self._add("dropped", tup.seq, self._take(), ts, text, error, event, "")

    def _route(self, seq: int, name: str, ts: int, text: str | None) -> None:
        try:
            data = jf.decode_data(text)
        except Exception as exc:  # noqa: BLE001 - the Pipeline drops it before the stage
            self._emit("dropped", name, seq, ts, text, _error_text(exc), name, "input")
            return
        if self.route_ended:
            return
        self.received += 1
        self.last_seq = seq
        self.last = (ts, seq)
        proc = self.proc
        whole = type(data) is dict and all(f in data for f in self.fields)
        # the tuple itself is needed only by a time expression, WHERE, a missing field or a drop
        tup = None if proc.time_fn is None and proc.where is None and whole else Tuple(data, self.times.get(ts), seq, name)
        if proc.time_fn is None:
            t = ts  # the tuple's timestamp in µs (``datetime_micros`` of the journal's time)
        else:
            try:
                t = to_micros(proc.time_fn(Env({proc.alias: tup}, None, utc_now())))
            except Exception as err:  # noqa: BLE001
                self._drop(tup, ts, _message(err), "other")
                return
        if self.max_time is None or t > self.max_time:
            self.max_time = t
        bound = self.max_time - self.delay
        threshold = proc.fixed.closed_end(bound)
        if t < threshold:
            self._drop(tup or Tuple(data, self.times.get(ts), seq, name), ts,
                       f"late tuple: its window time {bound_value(t)} is before the watermark "
                       f"{bound_value(threshold)}; its window(s) already closed", "input")
            return
        if tup is None:
            passed = [start for start, _ in proc.fixed.windows_for(t)]
        else:
            try:
                passed = self._windows(tup, t, whole)
            except Exception as err:  # noqa: BLE001
                self._drop(tup, ts, _message(err), "other")
                return
        if passed:
            bucket = self._bucket(data)
            for start in passed:
                held = self.open.get(start)
                if held is None:
                    held = self.open[start] = set()
                    heapq.heappush(self.starts, start)
                held.add(bucket)
            starts = f"[{passed[0]}]" if len(passed) == 1 else orjson.dumps(passed).decode()
            self._add("tuple", seq, self._take(), ts, text, None, starts, self._direct[bucket], node=name)
        if self.starts and self.starts[0] + self.size <= bound:
            self._close(seq, ts, bound)

    def _windows(self, tup: Tuple, t: int, whole: bool) -> list[int]:
        """The starts of ``t``'s windows whose tagged row passes WHERE: the kernel's plan step, so a failure
        here (WHERE, a GROUP BY field) is the kernel's. The group key is the plain fields and the window
        columns, so it can fail only on a missing field: when every field is there it is not evaluated."""
        proc = self.proc
        windows = proc.fixed.windows_for(t)
        if proc.where is None and whole:
            return [start for start, _ in windows]
        passed = []
        for start, end in windows:
            env = Env({proc.alias: tag(tup, start, end)}, None, utc_now())
            if proc.where is None or truth(proc.where(env), "WHERE"):
                if not whole:
                    proc.grouping.row_key(env)
                passed.append(start)
        return passed

    def _bucket(self, data: dict) -> int:
        """The bucket of the tuple's plain GROUP BY values (``route_key``, NaN as one value: a coarser key
        is still exact, the bucket groups with BQL equality); memoized for one str or int field."""
        if len(self.fields) == 1:
            value = data[self.fields[0]]
            kind = type(value)
            if kind is str or kind is int:
                memo = (kind, value)
                bucket = self._buckets_of.get(memo)
                if bucket is None:
                    if len(self._buckets_of) > 65536:
                        self._buckets_of.clear()
                    bucket = self._buckets_of[memo] = bucket_of(route_key((value,)), self.buckets)
                return bucket
        return bucket_of(route_key(tuple(data[f] for f in self.fields)), self.buckets)

    def _close(self, seq: int, ts: int, bound: int | None) -> None:
        """Close (``bound`` None: flush) the open windows with ``end <= bound``, in ``window_start`` order."""
        closing = []
        while self.starts and (bound is None or self.starts[0] + self.size <= bound):
            closing.append(heapq.heappop(self.starts))
        if not closing:
            return
        # The kernel's step lists its dropped rows before its outputs: window r's failing groups take
        # position base + r, its output rows base + m + r (``event``), the same in every bucket
        m = len(closing)
        base = self._take(2 * m)
        for r, start in enumerate(closing):
            for b in sorted(self.open.pop(start)):
                self._add("close", seq, base + r, ts, str(start), None, str(base + m + r), direct_key(b))

    def _end_route(self, seq: int) -> None:
        if self.route_ended:
            return
        self.route_ended = True
        if self.last is not None:
            self._close(seq, self.last[0], None)
        self._emit("end", self.node, seq, 0, None, None, None, None)
        if not self.plan.keyed_is_final:
            self._emit("eof", self.node, seq, 0, None, None, self.node, None)
