"""Built-in source type ``nexmark``: the Nexmark benchmark's persons, auctions and bids.

::

    CREATE SOURCE nexmark TYPE nexmark WITH count = 100000, events_per_second = 1000, unthrottled = true;

Parameters (all optional):

- ``count``: events to generate, then the source stops (0, the default: unbounded).
- ``seed``: the random stream (default 0); the events are a pure function of the parameters.
- ``events_per_second``: the event-time rate (default 10000, the reference's ``firstEventRate``):
  event ``n`` is stamped ``base_time + n / events_per_second``. Unless ``unthrottled`` is true the
  source also emits at that pace in wall-clock time, as the reference generator does; with
  ``unthrottled = true`` it emits as fast as the topology takes tuples (``maxEmitSpeed``).
- ``base_time``: event time of the first event (timestamp, RFC3339 string or epoch seconds;
  default 2015-07-15T00:00:00Z, Beam's ``NexmarkUtils.BASE_TIME``).
- the generator's distribution knobs with the reference defaults: ``person_proportion`` (1),
  ``auction_proportion`` (3), ``bid_proportion`` (46), ``num_active_people`` (1000),
  ``num_in_flight_auctions`` (100), ``hot_sellers_ratio`` (4), ``hot_auctions_ratio`` (2),
  ``hot_bidders_ratio`` (4), ``out_of_order_group_size`` (1), ``avg_person_byte_size`` (200),
  ``avg_auction_byte_size`` (500), ``avg_bid_byte_size`` (100), ``first_event_id`` (0).

Every tuple carries ``event_type`` (0 person, 1 auction, 2 bid) and its kind's fields (see
``nexmark_model``); its timestamp is its ``date_time``. After a restart the source resumes after the
events an earlier run journaled, so the journal holds each event once.
"""
from __future__ import annotations

import datetime as _dt
import time
from typing import Any

from sbpy.bql.spark.journal_segments import to_timestamp

from .nexmark_model import EPOCH, NexmarkConfig, event

_INT_PARAMS = ("count", "seed", "first_event_id", "person_proportion", "auction_proportion", "bid_proportion",
               "num_active_people", "num_in_flight_auctions", "hot_sellers_ratio", "hot_auctions_ratio",
               "hot_bidders_ratio", "out_of_order_group_size", "avg_person_byte_size",
               "avg_auction_byte_size", "avg_bid_byte_size")


def config_from_params(params: dict[str, Any]) -> NexmarkConfig:
    """The generator configuration of a ``nexmark`` source's WITH parameters (``ValueError`` if bad);
    unknown parameters are ignored, as for the other built-in sources."""
    kwargs: dict[str, Any] = {}
    for name in _INT_PARAMS:
        if name in params:
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be a integer")
            kwargs[name] = value
    if "events_per_second" in params:
        value = params["events_per_second"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("events_per_second must be a number")
        kwargs["events_per_second"] = float(value)
    if "base_time" in params:
        ts = to_timestamp(params["base_time"])
        kwargs["base_time_ms"] = (ts - EPOCH) // _dt.timedelta(milliseconds=1)
    return NexmarkConfig(**kwargs)


class NexmarkSource:
    """``nexmark``: the Nexmark generator as a source (parameters in the module docstring)."""

    def __init__(self, params: dict[str, Any]):
        self.config = config_from_params(params)
        unthrottled = params.get("unthrottled", False)
        if not isinstance(unthrottled, bool):
            raise ValueError("unthrottled must be a bool")  # noqa: TRY004 - a ValueError fails CREATE SOURCE
        self.unthrottled = unthrottled
        self.emitted = 0

    def status(self) -> dict[str, Any]:
        return {"events_generated": self.emitted, "count": self.config.count}

    def run(self, ctx: Any) -> None:
        """Emit events ``ctx.skip``, ``ctx.skip + 1``, ... (to ``count``), each stamped with its
        ``date_time``; throttled, event ``n`` leaves no earlier than ``start + (n - skip) / rate``."""
        c = self.config
        n = self.emitted = ctx.skip
        started = time.monotonic()
        first_ms = c.timestamp_ms(c.adjusted_number(n))
        while c.count == 0 or n < c.count:
            if not self.unthrottled:
                due = started + (c.timestamp_ms(c.adjusted_number(n)) - first_ms) / 1000.0
                delay = due - time.monotonic()
                if delay > 0 and not ctx.sleep(delay):
                    return
            data = event(c, n)
            ctx.emit(data, data["date_time"])
            n += 1
            self.emitted = n
        ctx.flush()


SOURCE_TYPES = {"nexmark": NexmarkSource}
