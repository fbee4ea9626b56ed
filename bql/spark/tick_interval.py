"""The trigger interval of a query whose stages need wall-clock ticks (EMIT PERIODIC): one Spark
processing-time trigger drives every stage's ticks, so its period must divide theirs."""
from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable
from functools import reduce

from sbpy.bql.runtime.processor import tick_period_of

from .operator import StageSpec, build_stage

MIN_TICK_MS = 100  # shortest trigger interval of a query with wall-clock ticks
MAX_TICK_MS = 1000  # longest


def tick_interval_ms(stages: Iterable[StageSpec], topology: str = "") -> int:
    """The trigger interval (ms) of a query whose stages need wall-clock ticks (EMIT PERIODIC), 0 if
    none does. Runs on the driver: builds each stage once and reads its ``tick_period``.

    The interval is the gcd of the periods, lowered to a divisor of 1 s when longer (so a query is
    never idle for more than a second) and at least ``MIN_TICK_MS``; Spark starts processing-time
    triggers at epoch-aligned multiples of the interval, like the periods' boundaries.
    """
    periods = []
    for spec in stages:
        try:
            period = tick_period_of(build_stage(spec, topology))
        except Exception:  # a stage that does not build is reported by the worker
            continue
        if period is not None:
            periods.append(max(1, math.ceil(period / _dt.timedelta(milliseconds=1))))
    return tick_interval_from_periods(periods)


def tick_interval_from_periods(periods: list[int]) -> int:
    """The trigger interval (ms) for stages ticking every ``periods`` ms (0 if none); see
    ``tick_interval_ms``."""
    if not periods:
        return 0
    interval = reduce(math.gcd, periods)
    if interval > MAX_TICK_MS:
        interval = math.gcd(interval, MAX_TICK_MS)
    if interval < MIN_TICK_MS:
        interval = max(MIN_TICK_MS, min(min(periods), MAX_TICK_MS))
    return interval
