"""The console feed's parts without a server: ``RateTracker`` (property tests: never negative, between
the smallest and largest rate of the intervals it covers, exact for a steady counter, forgetful after a
counter went down) and the SSE wire format of ``sse_event``."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sbpy.bql.jsonio import from_json
from sbpy.server.console.events import sse_event
from sbpy.server.console.rates import RateTracker

# (seconds since the previous sample, tuples gained since it)
steps = st.lists(st.tuples(st.floats(0.01, 3.0), st.integers(0, 10_000)), min_size=1, max_size=40)


def run(tracker: RateTracker, samples: list[tuple[float, int]], start: int = 0) -> list[float | None]:
    now, count, out = 100.0, start, []
    out.append(tracker.update(now, {"k": count})["k"])
    for dt, gained in samples:
        now += dt
        count += gained
        out.append(tracker.update(now, {"k": count})["k"])
    return out


@given(steps, st.floats(0.5, 10.0))
def test_rate_lies_between_the_interval_rates_it_covers(samples, window):
    rates = run(RateTracker(window), samples)
    assert rates[0] is None  # one sample: no rate yet
    interval_rates = [gained / dt for dt, gained in samples]
    for i, r in enumerate(rates[1:]):
        assert r is not None and r >= 0
        # the window reaches back at most to the first sample, at least over the last interval
        covered = interval_rates[: i + 1]
        assert min(covered) - 1e-6 <= r <= max(covered) + 1e-6
        assert r >= 0


@given(st.floats(0.05, 2.0), st.integers(0, 5000), st.integers(2, 40), st.floats(0.5, 10.0))
def test_a_steady_counter_gives_its_rate(dt, per_step, n, window):
    rates = run(RateTracker(window), [(dt, per_step)] * n)
    for r in rates[1:]:
        assert r == pytest.approx(per_step / dt, rel=1e-9)


@given(steps, st.floats(0.5, 10.0))
def test_the_window_covers_at_least_its_span_and_no_older_than_needed(samples, window):
    """The rate equals the gain since the newest sample at least ``window`` old (or the first one)."""
    tracker = RateTracker(window)
    times, counts = [100.0], [0]
    tracker.update(times[0], {"k": 0})
    for dt, gained in samples:
        times.append(times[-1] + dt)
        counts.append(counts[-1] + gained)
        r = tracker.update(times[-1], {"k": counts[-1]})["k"]
        now = times[-1]
        old_enough = [i for i in range(len(times) - 1) if now - times[i] >= window]
        base = old_enough[-1] if old_enough else 0
        assert r == pytest.approx((counts[-1] - counts[base]) / (now - times[base]), rel=1e-9, abs=1e-9)


def test_a_counter_that_went_down_starts_over():
    tracker = RateTracker(5.0)
    assert tracker.update(0.0, {"k": 10})["k"] is None
    assert tracker.update(1.0, {"k": 20})["k"] == 10.0
    assert tracker.update(2.0, {"k": 3})["k"] is None  # the node was dropped and created anew
    assert tracker.update(3.0, {"k": 7})["k"] == 4.0


def test_missing_counters_are_forgotten_and_new_ones_start_unknown():
    tracker = RateTracker(5.0)
    tracker.update(0.0, {"a": 0, "b": 0})
    assert tracker.update(1.0, {"a": 5}) == {"a": 5.0}
    assert tracker.update(2.0, {"a": 10, "b": 100}) == {"a": 5.0, "b": None}
    assert tracker.update(2.0, {"a": 10, "b": 100}) == {"a": 5.0, "b": None}  # same instant: no span yet


def test_window_must_be_positive():
    with pytest.raises(ValueError):
        RateTracker(0)


@given(st.text(min_size=1, max_size=20, alphabet=st.characters(min_codepoint=97, max_codepoint=122)),
       st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=12),
       st.integers(1, 10**6))
def test_sse_event_is_one_event_of_one_data_line(name, data, event_id):
    raw = sse_event(name, {"v": data}, event_id).decode()
    assert raw.endswith("\n\n") and raw.count("\n\n") == 1
    lines = raw[:-2].split("\n")
    assert lines[0] == f"event: {name}" and lines[1] == f"id: {event_id}"
    assert len(lines) == 3 and lines[2].startswith("data: ")
    assert from_json(lines[2][len("data: "):]) == {"v": data}
