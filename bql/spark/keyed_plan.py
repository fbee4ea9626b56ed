"""Planning a fused query whose chain holds a MATCH_RECOGNIZE stage with PARTITION BY (pure Python).

A fused query's stages form an in-tree (every fused stream has exactly one consumer; journal inputs
are the leaves). ``plan_keyed`` picks the first MATCH_RECOGNIZE stage ``K`` with PARTITION BY whose
subtree is separable and splits the chain into three segments (docs/architecture.md, "Runtime on
Spark")::

    journal ──► router (sequential) ──► keyed K (groupBy partition key) ──► tail (sequential) ──► foreachBatch

- ``upstream``: the stages of K's subtree (K's input and what feeds it), run by the router's Pipeline;
- ``keyed``: K itself, run per partition key on executors (grouped in buckets, one map entry per key);
- ``downstream``: every other stage (they read K's output and/or journal inputs), run by the tail.

Separable means no journal input is read both inside K's subtree (upstream or K) and by a downstream
stage: then, at any ``seq``, every row descends from one journal row through one lineage and the
order key ``(seq, idx, o1, o2)`` restores the in-process arrival order exactly. Otherwise (or when no
stage qualifies) ``plan_keyed`` returns None and the query runs as one sequential operator.

``K`` may also be a Timeplus ``tumble``/``hop`` GROUP BY over plain fields (``keyed_window_plan``;
``KeyedPlan.kind`` WINDOW) that reads a journal input directly: its router is the ordered pass of
``keyed_window_route`` and its buckets hold windows (``keyed_window_bucket``).

``route_key`` turns partition values into the string Spark groups by, with BQL equality (int 2 and
float 2.0 are one partition, NULL is a partition, every NaN is a partition of its own — as
``values.multiset_key`` makes them in-process).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

import orjson

from .keyed_window_plan import window_keys
from .operator import StageSpec

MATCH = "match"     # KeyedPlan.kind: a MATCH_RECOGNIZE with PARTITION BY, by partition key
WINDOW = "window"   # a tumble/hop GROUP BY (keyed_window_plan), by its plain GROUP BY fields
PASS_KEY = ""       # rows that only pass through the keyed operator
ERROR_KEY = "!"     # a tuple whose partition values failed: the keyed processor reports the drop
ALL_KEYS = "\x01"  # K's input ended: every bucket finishes the keys it holds (``keyed_buckets``)


@dataclass(frozen=True)
class KeyedPlan:
    """The three segments of a query with a keyed MATCH_RECOGNIZE stage."""

    upstream: tuple[StageSpec, ...]
    keyed: StageSpec
    downstream: tuple[StageSpec, ...]
    up_inputs: tuple[str, ...]     # journal inputs read by upstream stages or by K
    down_inputs: tuple[str, ...]   # journal inputs read by downstream stages
    kind: str = MATCH              # MATCH: K is a MATCH_RECOGNIZE; WINDOW: a Timeplus window aggregation

    @property
    def route(self) -> str:
        """The name whose tuples are routed to K (K's only input)."""
        return self.keyed.inputs[0]

    @property
    def keyed_is_final(self) -> bool:
        return not self.downstream


def partition_exprs(spec: StageSpec) -> tuple | None:
    """The PARTITION BY expressions of a stage that is a plain ``SELECT ... FROM x MATCH_RECOGNIZE
    (PARTITION BY ...)`` (or its CREATE STREAM form), else None."""
    if spec.factory is not None or len(spec.inputs) != 1 or not spec.bql_text:
        return None
    try:
        from sbpy.bql.ast import CreateStreamAsSelect, MatchRecognize, Select
        from sbpy.bql.parser import parse_one

        stmt = parse_one(spec.bql_text)
    except Exception:  # noqa: BLE001 - not ours to report: the sequential path reports it
        return None
    if isinstance(stmt, CreateStreamAsSelect):
        stmt = stmt.select
    if not isinstance(stmt, Select) or len(stmt.from_items) != 1:
        return None
    if stmt.emitter_options:
        return None  # [LIMIT n] / [EVERY ...] / [SAMPLE x%] count the emitted tuples of all partitions
    item = stmt.from_items[0]
    if not isinstance(item, MatchRecognize) or not item.partition_by:
        return None
    if any(s.name.replace("_", "") == "watermark" and str(s.value).lower() == "global" for s in item.settings):
        return None  # the global watermark: every partition reads the others' time (one sequential group)
    return tuple(item.partition_by)


def _subtree(stages: list[StageSpec], k: int) -> set[int]:
    """Indices of the stages K's input depends on (K excluded)."""
    index = {s.node: i for i, s in enumerate(stages)}
    out: set[int] = set()
    todo = list(stages[k].inputs)
    while todo:
        name = todo.pop()
        i = index.get(name)
        if i is None or i in out:
            continue
        out.add(i)
        todo.extend(stages[i].inputs)
    return out


def plan_keyed(stages: list[StageSpec], inputs: tuple[str, ...] | list[str]) -> KeyedPlan | None:
    """The keyed split of a fused chain, or None when it must run as one sequential operator."""
    stages = list(stages)
    names = {s.node for s in stages}
    journal = set(inputs)
    for k, spec in enumerate(stages):
        kind = MATCH if partition_exprs(spec) is not None else WINDOW if window_keys(spec) is not None else None
        if kind is None:
            continue
        if kind == WINDOW and spec.inputs[0] not in journal:
            continue  # a window stage reads a journal input: one tuple per seq (the merge order of its groups)
        if spec.inputs[0] not in names and spec.inputs[0] not in journal:
            continue
        sub = _subtree(stages, k)
        upstream = [stages[i] for i in sorted(sub)]
        downstream = [s for i, s in enumerate(stages) if i not in sub and i != k]
        up_in = {n for s in upstream + [spec] for n in s.inputs if n in journal}
        down_in = {n for s in downstream for n in s.inputs if n in journal}
        if up_in & down_in:
            continue  # a journal input read on both sides: no single lineage per seq
        if upstream and upstream[-1].node != spec.inputs[0]:
            continue  # K's input is not the last upstream stage (the Pipeline's output node)
        if any(spec.node in s.inputs for s in upstream):
            continue
        if downstream and stages[-1] is spec:
            continue  # stages after K that K's output never reaches (not a fusion plan)
        if stages[-1] is not spec and not downstream:
            continue
        return KeyedPlan(tuple(upstream), spec, tuple(downstream),
                         tuple(n for n in inputs if n in up_in), tuple(n for n in inputs if n in down_in), kind)
    return None


# ---------------------------------------------------------------- partition keys


def _canon(v: Any, nan_tag: str) -> Any:
    t = type(v)
    if t is bool:
        return ["b", v]
    if t is int:
        return ["n", str(v)]
    if t is float:
        if v != v:
            return ["nan", nan_tag]  # NaN equals nothing: a partition per row
        if v.is_integer():
            return ["n", str(int(v))]
        return ["n", repr(v)]
    if t is str:
        return ["s", v]
    if v is None:
        return ["z"]
    if t is list:
        return ["a", [_canon(x, nan_tag) for x in v]]
    if t is dict:
        return ["m", [[k, _canon(v[k], nan_tag)] for k in sorted(v)]]
    if t is bytes:
        return ["x", v.hex()]
    if isinstance(v, _dt.datetime):
        return ["t", str(int((v - _EPOCH) / _dt.timedelta(microseconds=1)))]
    if isinstance(v, bool):
        return ["b", bool(v)]
    if isinstance(v, int):
        return _canon(int(v), nan_tag)
    if isinstance(v, float):
        return _canon(float(v), nan_tag)
    if isinstance(v, str):
        return ["s", str(v)]
    return ["?", repr(v)]


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def route_key(values: tuple, nan_tag: str = "") -> str:
    """The grouping key of partition ``values``: equal iff the values are one partition in-process."""
    return orjson.dumps([_canon(v, nan_tag) for v in values]).decode("utf-8")
