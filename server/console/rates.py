"""Tuples per second from monotonically growing counters sampled at the console's pace.

``RateTracker.update(now, counters)`` takes one sample of every counter (``{key: count}``, ``now`` in
seconds of a monotonic clock) and answers each counter's rate over the last ``window`` seconds: the
count gained since the oldest sample kept, divided by the time since it. The oldest sample kept is the
newest one at least ``window`` seconds old (so the span covers the window once enough samples exist),
and younger samples when the counter is new. A rate is None until a counter has two samples at
different times, and again right after it went down (its node was dropped and created anew): the old
samples are forgotten. Counters missing from a sample are forgotten too.

Over the samples kept, the rate is the duration-weighted mean of the rates between consecutive samples,
so it always lies between the smallest and the largest of them and is never negative.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping

DEFAULT_WINDOW = 5.0


class RateTracker:
    """Per-key rates over a sliding window of samples (one tracker per console connection)."""

    def __init__(self, window: float = DEFAULT_WINDOW):
        if window <= 0:
            raise ValueError("the rate window must be positive")
        self.window = window
        self._samples: dict[Hashable, deque[tuple[float, int]]] = {}

    def update(self, now: float, counters: Mapping[Hashable, int]) -> dict[Hashable, float | None]:
        """Record ``counters`` at ``now`` and answer ``{key: tuples per second or None}``."""
        for gone in [k for k in self._samples if k not in counters]:
            del self._samples[gone]
        return {key: self._add(key, now, count) for key, count in counters.items()}

    def _add(self, key: Hashable, now: float, count: int) -> float | None:
        samples = self._samples.get(key)
        if samples is None or (samples and (count < samples[-1][1] or now < samples[-1][0])):
            samples = self._samples[key] = deque()
        samples.append((now, count))
        # drop the oldest while the next one is still at least a window old
        while len(samples) > 2 and now - samples[1][0] >= self.window:
            samples.popleft()
        first_time, first_count = samples[0]
        if now <= first_time:
            return None
        return (count - first_count) / (now - first_time)
