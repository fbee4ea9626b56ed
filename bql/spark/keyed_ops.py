"""The three segments of a keyed MATCH_RECOGNIZE query as pure-Python cores (Spark-free, testable).

Rows between segments are tuples in ``ROW_COLUMNS`` order. Besides the operator's kinds (``out``,
``dropped``, ``stat``, ``end``, see ``operator.py``) two internal kinds flow between segments:
``tuple`` (a tuple produced by ``node``, a journal input or a stage) and ``eof`` (``node`` ended).
``(seq, idx, sub)`` is the order key: the driver and the tail sort by it to restore the in-process
arrival order (``sub`` numbers the outputs of one routed row inside the keyed segment).

- ``RouterCore`` (one group) / ``JournalRouter`` (stateless, when no stage precedes K): runs the
  upstream Pipeline, computes each routed tuple's partition key
  (``keyed_plan.route_key`` of K's PARTITION BY values). ``RouterCore`` keeps the keys seen so far in
  creation order and when K's input ends sends one ``eof`` row to *every* known key (a keyed operator
  only sees the keys that have rows in a batch), then K's ``end``; ``JournalRouter`` sends one
  ``ALL_KEYS`` row instead, and each bucket finishes the keys of its own log (``keyed_buckets``).
  Rows for downstream journal inputs pass through.
- ``KeyedCore``: K's ``MatchRecognizeProcessor``, run one partition key at a time; a key's snapshot
  (one partition) is that key's state. ``keyed_buckets.BucketCore`` runs a bucket of keys through it.
- ``TailCore`` (one group): the downstream Pipeline over K's outputs and its journal inputs.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from sbpy.bql.eval import Env
from sbpy.bql.runtime.processor import StepResult, Tuple

from . import journal_format as jf
from .journal_values import Timestamps, decode_data_carried
from .keyed_plan import ALL_KEYS, ERROR_KEY, PASS_KEY, KeyedPlan, route_key
from .operator import Pipeline, _error_text, build_stage

ROW_COLUMNS = ["kind", "node", "seq", "idx", "sub", "ts", "data", "error", "input", "event", "key"]
ROW_SCHEMA = ("kind string, node string, seq long, idx long, sub long, ts long, data string, error string, "
              "input string, event string, key string")
STATE_VERSION = 1


_MAX_STR_KEYS = 65536  # memoized partition keys of str values (cleared when more)


class RouterCore:
    """The sequential head: upstream stages, partition keys, end-of-input broadcast."""

    def __init__(self, plan: KeyedPlan, topology: str = ""):
        self.plan = plan
        self.pipeline = Pipeline(plan.upstream, topology) if plan.upstream else None
        mr = build_stage(plan.keyed, topology)
        self.part_fns, self.alias = mr.part_fns, mr.in_alias
        # the one PARTITION BY expression when it is a top-level field (the processor's own shortcut key)
        self.str_field = mr.fast_keys[0] if mr.fast_keys is not None else None
        self._str_keys: dict[str, str] = {}
        self.times = Timestamps()
        self.route = plan.route
        self.down = set(plan.down_inputs)
        self.keys: dict[str, int] = {}  # partition key -> creation rank
        self.route_ended = False
        self.saved: bytes | None = None
        self.dirty = False
        self._out: list[tuple] = []
        self._key_seq, self._key_n = -1, 0

    def snapshot(self) -> bytes:
        import pickle
        return pickle.dumps({"v": STATE_VERSION, "keys": self.keys, "route_ended": self.route_ended,
                             "pipeline": self.pipeline.snapshot() if self.pipeline else None})

    def restore(self, data: bytes) -> None:
        import pickle
        st = pickle.loads(data)
        if st.get("v") != STATE_VERSION:
            raise ValueError(f"unsupported router state version {st.get('v')}")
        self.keys, self.route_ended = dict(st["keys"]), bool(st["route_ended"])
        if self.pipeline is not None:
            self.pipeline.restore(st["pipeline"])
        self.saved = data

    def run(self, rows: Iterable[tuple]) -> list[tuple]:
        """Journal rows ``(seq, input, ts_us, data_text, end[, error])`` sorted by seq → rows for the keyed
        segment."""
        self._out = []
        direct, fed = [], []
        consumers = self.pipeline.consumers if self.pipeline is not None else {}
        for r in rows:
            (fed if r[1] in consumers else direct).append(r)
        if not fed:  # nothing went through upstream stages: the journal rows in their order
            for row in direct:
                self._journal_row(row)
            out, self._out = self._out, []
            return out
        piped = self.pipeline.run(fed)
        # per seq only one lineage (keyed_plan's separability rule): a merge by seq keeps arrival order
        merged = heapq.merge(((r[0], 0, i) for i, r in enumerate(direct)),
                             ((r[2], 1, i) for i, r in enumerate(piped)))
        for _, src, i in merged:
            if src == 0:
                self._journal_row(direct[i])
            else:
                kind, node, seq, _idx, ts, data, error, input_name, event = piped[i]
                if kind == "out" and node == self.route:
                    self._route(seq, node, ts, data)
                    continue
                self._emit(kind, node, seq, ts, data, error, input_name, event)
                if kind == "end" and node == self.route:
                    self._end_route(seq)
        out, self._out = self._out, []
        return out

    def _journal_row(self, row: tuple) -> None:
        """A journal row no upstream stage reads: routed, passed on (a downstream input) or dropped."""
        seq, name, ts, text, end = row[:5]
        if text is None and not end and len(row) > 5 and row[5]:  # a file line, no tuple
            self._emit("dropped", name, seq, ts, None, row[5], name, "input")
        elif name == self.route:
            if end:
                self._end_route(seq)
            else:
                self._route(seq, name, ts, text)
        elif name in self.down:
            self._emit("eof" if end else "tuple", name, seq, ts, text, None, name, None)

    def _emit(self, kind: str, node: str, seq: int, ts: int, data: Any, error: Any, input_name: Any,
              event: Any, key: str = PASS_KEY) -> None:
        self._out.append((kind, node, seq, len(self._out), 0, ts, data, error, input_name, event, key))

    def _route(self, seq: int, name: str, ts: int, text: str | None) -> None:
        try:
            (data, carried), when = decode_data_carried(text), self.times.get(ts)
        except Exception as exc:  # noqa: BLE001 - a bad entry drops only its own step
            self._emit("dropped", name, seq, ts, text, _error_text(exc), name, "input")
            return
        key = self._key(data, when, seq, name)
        if key != ERROR_KEY:
            self._register(key)
        # a plain map goes as itself: the bucket reads it from the pack, not from a text in the pack
        self._emit("tuple", name, seq, ts, carried, None, name, None, key)

    def _key(self, data: Any, when: Any, seq: int, name: str) -> str:
        """The partition key of the tuple ``(data, when, seq, name)``; ``ERROR_KEY`` when its PARTITION BY
        values fail (K reports the drop). With one PARTITION BY field holding a str, the key is the
        str's (memoized; the same as ``route_key`` of the evaluated value)."""
        if seq == self._key_seq:
            self._key_n += 1
        else:
            self._key_seq, self._key_n = seq, 0
        field = self.str_field
        if field is not None and type(data) is dict:
            value = data.get(field)
            if type(value) is str:
                key = self._str_keys.get(value)
                if key is None:
                    if len(self._str_keys) > _MAX_STR_KEYS:
                        self._str_keys.clear()
                    key = self._str_keys[value] = route_key((value,))
                return key
        env = Env({self.alias: Tuple(data, when, seq, name)})
        try:  # a NaN value is a partition of its own: tagged by the tuple's place in the arrival order
            return route_key(tuple(f(env) for f in self.part_fns), f"{seq}.{self._key_n}")
        except Exception:  # noqa: BLE001
            return ERROR_KEY

    def _register(self, key: str) -> None:
        if key not in self.keys:
            self.keys[key] = len(self.keys)

    def _end_route(self, seq: int) -> None:
        if self.route_ended:
            return
        self.route_ended = True
        for key in self.keys:  # creation order: K finishes its partitions in this order in-process
            self._emit("eof", self.route, seq, 0, None, None, self.route, None, key)
        node = self.plan.keyed.node
        self._emit("end", node, seq, 0, None, None, None, None)
        if not self.plan.keyed_is_final:
            self._emit("eof", node, seq, 0, None, None, node, None)


class JournalRouter(RouterCore):
    """The router of a plan without upstream stages, stateless (it runs in the journal source's reads,
    ``routed_source``): it keeps no key list, so when K's input ends it sends one ``ALL_KEYS`` row, which
    reaches every bucket (``keyed_buckets.pack_rows``); each bucket finishes the keys it holds, and
    bucket 0 ends K."""

    def __init__(self, plan: KeyedPlan, topology: str = ""):
        if plan.upstream:
            raise ValueError("a plan with upstream stages needs the stateful RouterCore")
        super().__init__(plan, topology)

    def _register(self, key: str) -> None:
        pass

    def _end_route(self, seq: int) -> None:
        self._emit("eof", self.route, seq, 0, None, None, self.route, None, ALL_KEYS)


class KeyedCore:
    """K's processor, run for one partition key at a time (``load`` its state or swap its view in,
    ``run_into``, ``snapshot``); ``keyed_buckets.BucketCore`` runs the keys of a bucket through it."""

    def __init__(self, plan: KeyedPlan, topology: str = ""):
        self.plan = plan
        self.node = plan.keyed.node
        self.proc = build_stage(plan.keyed, topology)
        self.out_kind = "out" if plan.keyed_is_final else "tuple"
        self.times = Timestamps()

    def load(self, snap: bytes | None) -> None:
        """Make the processor hold exactly the partition(s) of ``snap`` (None: none)."""
        if snap is None:
            self.proc.parts, self.proc.by_str = {}, {}
            self.proc.lanes.clear()
        else:
            self.proc.restore(snap)

    def snapshot(self) -> bytes:
        return self.proc.snapshot()

    @staticmethod
    def new_counts() -> dict[str, Any]:
        """The counters ``run_into`` adds to (one ``stat`` row sums them: ``stat_row``)."""
        return {"received": {}, "sent": 0, "dropped": 0}

    def stat_row(self, last_seq: int, counts: dict[str, Any]) -> tuple:
        return ("stat", self.node, last_seq, 1 << 62, 0, 0, jf.encode_data(counts), None, None, None, None)

    def run_into(self, rows: list[tuple], out: list[tuple], counts: dict[str, Any]) -> None:
        """Rows ``(seq, idx, kind, ts, data, input)`` of one key, sorted by (seq, idx) — ``data`` the tuple's
        tagged JSON text or, as the router carries a plain map, the map itself: their output rows
        are appended to ``out`` (``sub`` = their place in ``out``, increasing within a routed row) and
        counted in ``counts``."""
        received: dict[str, int] = counts["received"]
        sent = dropped = 0
        node, proc, out_kind, times = self.node, self.proc, self.out_kind, self.times
        for seq, idx, kind, ts, text, name in rows:
            tup = None
            try:
                if kind == "eof":
                    result: StepResult = proc.finish(name)
                else:
                    received[name] = received.get(name, 0) + 1
                    data = text if type(text) is dict else jf.decode_data(text)  # a routed map, or its text
                    tup = Tuple(data, times.get(ts), seq, name)
                    result = proc.process(tup)
            except Exception as exc:  # noqa: BLE001 - a bad tuple drops only its own step
                dropped += 1
                out.append(_dropped(node, seq, idx, len(out), tup, _error_text(exc), name, "other"))
                continue
            for d in result.dropped:
                dropped += 1
                out.append(_dropped(node, seq, idx, len(out), d.tuple, d.error, name, d.event_type))
            for o in result.outputs:
                try:
                    data, ots = jf.encode_data(o.data), jf.ts_to_us(o.ts)
                except Exception as exc:  # noqa: BLE001
                    out.append(("dropped", node, seq, idx, len(out), 0, None, _error_text(exc),
                                node, "output", None))
                    continue
                sent += 1
                out.append((out_kind, node, seq, idx, len(out), ots, data, None, node, None, None))
        counts["sent"] += sent
        counts["dropped"] += dropped

    def run(self, rows: list[tuple]) -> list[tuple]:
        """``run_into`` a fresh list, with one ``stat`` row at the end when there were rows."""
        out: list[tuple] = []
        counts = self.new_counts()
        self.run_into(rows, out, counts)
        if rows:
            out.append(self.stat_row(rows[-1][0], counts))
        return out


def _dropped(node: str, seq: int, idx: int, sub: int, tup: Tuple | None, error: str, input_name: str,
             event: str) -> tuple:
    text, ts = None, 0
    if tup is not None:
        try:
            text, ts = jf.encode_data(tup.data), jf.ts_to_us(tup.ts)
        except Exception:  # noqa: BLE001
            pass
        input_name = tup.input or input_name
    return ("dropped", node, seq, idx, sub, ts, text, error, input_name, event, None)


class TailCore:
    """The downstream Pipeline: feeds ``tuple``/``eof`` rows in (seq, idx, sub) order, passes the rest."""

    def __init__(self, plan: KeyedPlan, topology: str = ""):
        self.pipeline = Pipeline(plan.downstream, topology)
        self.saved: bytes | None = None
        self.dirty = False

    def snapshot(self) -> bytes:
        return self.pipeline.snapshot()

    def restore(self, data: bytes) -> None:
        self.pipeline.restore(data)
        self.saved = data

    def run(self, rows: list[tuple]) -> list[tuple]:
        """Rows in ``ROW_COLUMNS`` order (any order) → output rows."""
        rows = sorted(rows, key=lambda r: (r[2], r[3], r[4]))
        fed = [(r[2], r[1], r[5], r[6], r[0] == "eof") for r in rows if r[0] in ("tuple", "eof")]
        out = [r for r in rows if r[0] not in ("tuple", "eof")]
        for kind, node, seq, idx, ts, data, error, input_name, event in self.pipeline.run(fed):
            out.append((kind, node, seq, idx, 0, ts, data, error, input_name, event, None))
        return out


def order_key(row: dict[str, Any]) -> tuple[int, int, int]:
    """The driver-side sort key of an output row (rows of the sequential path have no ``sub``)."""
    return (row["seq"], row["idx"], row.get("sub") or 0)
