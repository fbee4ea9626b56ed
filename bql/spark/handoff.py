"""Hand a stopped fused query's state over to the queries that replace it (re-planning).

When a stream fused into a running query gains a second consumer, it must be computed once: the
topology stops that query, and starts one query computing the stream (its output journaled) and one
for the rest of the old chain. Both continue where the old query stopped: from its last committed
journal position, with the processor snapshots of their stages taken from the old query's state.

- ``position(checkpoint, batch_id)``: the journal seq the last batch the consumer handled ended at
  (Spark's ``offsets/`` log; the pinned start seq when it handled none).
- ``read_snapshot(spark, checkpoint, batch_id, stages)``: the fused operator's pipeline snapshot after that
  batch (Spark's state data source, ``format("statestore")``; the operator keeps one group, so one row;
  in the logged layout its base and log, replayed through ``stages``).
- ``split_snapshot(snapshot, old_stages, new_stages)``: a pipeline snapshot for another stage list,
  each stage's processor snapshot carried over by node name (``Pipeline.snapshot`` format).
"""
from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import checkpoint_positions
from .operator import STATE_VERSION
from .state_function import read_logged_snapshot
from .state_log import LOGGED, read_layout


def position(checkpoint: str | Path, batch_id: int | None) -> int | None:
    """The journal seq batch ``batch_id`` of the query at ``checkpoint`` ended at (its offset log, which
    must hold it), or with ``batch_id`` None the query's pinned start seq (None when it never started)."""
    if batch_id is None:
        return checkpoint_positions.pinned_seq(checkpoint)
    end = checkpoint_positions.batch_end(checkpoint, batch_id)
    if end is None:
        raise FileNotFoundError(f"{Path(checkpoint) / 'offsets' / str(batch_id)}: the batch is not logged")
    return end


def read_snapshot(spark: Any, checkpoint: str | Path, batch_id: int, stages: Sequence[Any] = (),
                  topology: str = "") -> bytes | None:
    """The fused operator's pipeline snapshot after batch ``batch_id`` (``stages``, the query's
    ``StageSpec`` list, rebuild it from the logged state layout, ``state_log``).

    The batch's sink callback may have run while its commit did not (a query stopped in between); its
    state version is already in the state store then (the stateful tasks commit before the callback
    sees their rows), so it is read by batch id, not as "the last committed batch"."""
    ck = Path(checkpoint)
    if not (ck / "state").is_dir():
        return None
    if read_layout(ck) == LOGGED:
        if not stages:
            raise ValueError(f"the state of {ck} is logged: its stages are needed to read it")
        return read_logged_snapshot(spark, str(ck), batch_id, list(stages), topology)
    rows = spark.read.format("statestore").option("batchId", int(batch_id)).load(str(ck)).collect()
    if not rows:
        return None
    if len(rows) != 1:
        raise ValueError(f"expected one state group in {ck}, found {len(rows)}")
    value = rows[0]["value"]
    state = value["groupState"] if "groupState" in value.asDict() else value
    return bytes(state["snap"]) if state["snap"] is not None else None


def split_snapshot(snapshot: bytes | None, old_stages: Sequence[str], new_stages: Sequence[str]) -> bytes | None:
    """A ``Pipeline`` snapshot for ``new_stages`` built from one for ``old_stages`` (by node name)."""
    if snapshot is None:
        return None
    old = pickle.loads(snapshot)
    if old.get("v") != STATE_VERSION:
        raise ValueError(f"unsupported operator state version {old.get('v')}")
    index = {name: k for k, name in enumerate(old_stages)}
    missing = [n for n in new_stages if n not in index]
    if missing:
        raise ValueError(f"stages {missing} are not in the old pipeline {list(old_stages)}")
    ended = set(old["ended"])
    return pickle.dumps({
        "v": STATE_VERSION,
        "procs": [old["procs"][index[n]] for n in new_stages],
        "ended_inputs": [old["ended_inputs"][index[n]] for n in new_stages],
        "ended": [k for k, n in enumerate(new_stages) if index[n] in ended],
        "ended_sources": [],
    }, protocol=pickle.HIGHEST_PROTOCOL)
