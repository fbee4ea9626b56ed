"""The processor side of the compiled lanes (``lane.py``): ``process(tup)`` sends a tuple to its
partition's lane when the lane takes it; a lane's ``deliver`` turns the events it resolved into the
step's result; the shared unchangeable empty result (``processor.NOTHING``) is a lane's step when a row
produced nothing (most rows)."""
from __future__ import annotations

from typing import Any

from ..processor import StepResult

REFUSED = object()  # a lane ``feed``'s answer for a row it does not take (nothing was changed)


def make_process(lanes: dict, partition_key: Any, order_key: str, general: Any) -> Any:
    """``process(tup)`` of a processor with lanes: the tuple's partition's lane (``lanes``: its one
    str PARTITION BY value, or ``()`` without PARTITION BY → ``feed``) when it takes the tuple,
    else ``general(tup)``."""
    if partition_key is None:
        def process(tup: Any) -> Any:
            feed = lanes.get(())
            if feed is not None:
                out = feed(tup, tup.data.get(order_key))
                if out is not REFUSED:
                    return out
            return general(tup)
        return process

    def process_keyed(tup: Any) -> Any:
        data = tup.data
        try:  # (a missing field, a value without a lane, an unhashable value)
            pv = data[partition_key]
            feed = lanes[pv]
            k0 = data[order_key]
        except (KeyError, TypeError):
            return general(tup)
        if type(pv) is str:
            out = feed(tup, k0)
            if out is not REFUSED:
                return out
        return general(tup)
    return process_keyed


def lane_deliver(part: Any, render: Any, star: Any) -> Any:
    """``deliver(events, tup)`` of ``part``'s lane: the step result of the lane's ``events``, rendered
    by ``render(part, events, tup, result)`` (``MatchRecognizeProcessor._render``), or, for SELECT
    RSTREAM * over simple ONE ROW PER MATCH measures, ``star`` (``OneRowMeasures.lane_deliver``: the
    matches straight to output tuples, as ``_render`` + ``_emit``) when it is not None. The lane
    forgets rows itself."""

    def deliver_rendered(events: list, tup: Any) -> StepResult:
        part.sync_keys()  # the general rendering may read the rows' ORDER BY keys
        result = StepResult()
        render(part, events, tup, result)
        return result

    if star is None:
        return deliver_rendered
    return star(part.rows, part.values, part.pending, deliver_rendered)
