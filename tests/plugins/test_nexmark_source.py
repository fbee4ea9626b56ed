"""The ``nexmark`` source type and its generator (plugins/builtin/nexmark_model.py): determinism, the
reference generator's id, time and kind rules, the distributions, parameters and pacing."""
from __future__ import annotations

import dataclasses
import datetime as _dt
from collections import Counter
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.plugins.builtin import nexmark_source
from sbpy.plugins.builtin.nexmark_model import (
    AUCTION,
    BID,
    EPOCH,
    FIRST_AUCTION_ID,
    FIRST_PERSON_ID,
    PERSON,
    NexmarkConfig,
    event,
    events,
)
from sbpy.plugins.builtin.nexmark_source import NexmarkSource, config_from_params
from sbpy.plugins.registry import PluginRegistries

KINDS = {PERSON: {"event_type", "id", "name", "email_address", "credit_card", "city", "state", "date_time",
                  "extra"},
         AUCTION: {"event_type", "id", "item_name", "description", "initial_bid", "reserve", "date_time",
                   "expires", "seller", "category", "extra"},
         BID: {"event_type", "auction", "bidder", "price", "date_time", "extra"}}


def ms(ts: _dt.datetime) -> int:
    return (ts - EPOCH) // _dt.timedelta(milliseconds=1)


configs = st.builds(NexmarkConfig, count=st.integers(1, 400), seed=st.integers(0, 2**31),
                    events_per_second=st.sampled_from([1.0, 7.5, 50.0, 1000.0, 10000.0]),
                    person_proportion=st.integers(1, 3), auction_proportion=st.integers(1, 5),
                    bid_proportion=st.integers(0, 60), out_of_order_group_size=st.sampled_from([1, 3, 10]),
                    num_in_flight_auctions=st.integers(1, 100), num_active_people=st.integers(1, 1000))


@settings(max_examples=40, deadline=None)
@given(configs, st.data())
def test_any_suffix_is_the_same_stream(c, data):
    """Event n depends on the configuration and n alone: a resumed run yields the same events."""
    whole = list(events(c))
    start = data.draw(st.integers(0, c.count))
    assert list(events(c, start)) == whole[start:]
    assert len(whole) == c.count


@settings(max_examples=40, deadline=None)
@given(configs)
def test_reference_rules_for_ids_kinds_and_times(c):
    whole = list(events(c))
    base = EPOCH + _dt.timedelta(milliseconds=c.base_time_ms)
    g = c.out_of_order_group_size
    persons = [e["id"] for e in whole if e["event_type"] == PERSON]
    auctions = [e["id"] for e in whole if e["event_type"] == AUCTION]
    for n, e in enumerate(whole):
        adjusted = (n // g) * g + (n * 953) % g
        assert set(e) == KINDS[e["event_type"]]
        assert e["event_type"] == c.kind_of(adjusted)
        assert ms(e["date_time"]) - ms(base) == int(adjusted * 1_000_000.0 / c.events_per_second) // 1000
    if g == 1:  # ids count up from 1000 in generation order
        assert persons == list(range(FIRST_PERSON_ID, FIRST_PERSON_ID + len(persons)))
        assert auctions == list(range(FIRST_AUCTION_ID, FIRST_AUCTION_ID + len(auctions)))
    else:  # shuffled inside each group of g events, but every id of a whole group is there
        whole_groups = [e for e in whole[:len(whole) // g * g] if e["event_type"] == PERSON]
        assert sorted(e["id"] for e in whole_groups) == list(range(FIRST_PERSON_ID,
                                                                   FIRST_PERSON_ID + len(whole_groups)))


@settings(max_examples=40, deadline=None)
@given(configs)
def test_references_stay_within_the_lead(c):
    """Sellers, bidders and auctions of bids are ids generated so far, or at most 10 ahead."""
    people = auctions = 0
    for e in events(dataclasses.replace(c, out_of_order_group_size=1)):
        kind = e["event_type"]
        if kind == PERSON:
            people += 1
        elif kind == AUCTION:
            auctions += 1
            assert FIRST_PERSON_ID <= e["seller"] < FIRST_PERSON_ID + max(people, 1) + 10
            assert e["date_time"] < e["expires"]
            assert 10 <= e["category"] <= 14
            assert e["reserve"] > e["initial_bid"] >= 100
        else:
            assert FIRST_AUCTION_ID <= e["auction"] < FIRST_AUCTION_ID + max(auctions, 1) + 10
            assert FIRST_PERSON_ID <= e["bidder"] < FIRST_PERSON_ID + max(people, 1) + 10
            assert 100 <= e["price"] <= 100_000_000


def test_default_distributions():
    """The reference's defaults: 1 person, 3 auctions, 46 bids in 50 events; hot auctions (half of
    the bids go to the first of the latest hundred auctions) and hot bidders (3 in 4 bids come from
    the second of the latest hundred persons); records of about the configured sizes."""
    whole = list(events(NexmarkConfig(count=10_000, seed=3)))
    kinds = Counter(e["event_type"] for e in whole)
    assert kinds == {PERSON: 200, AUCTION: 600, BID: 9200}
    bids = [e for e in whole if e["event_type"] == BID]
    hot_auction = sum(1 for b in bids if (b["auction"] - FIRST_AUCTION_ID) % 100 == 0)
    hot_bidder = sum(1 for b in bids if (b["bidder"] - FIRST_PERSON_ID) % 100 == 1)
    assert 0.5 <= hot_auction / len(bids) <= 0.56  # 1/2 hot, plus random picks that land on one
    assert 0.75 <= hot_bidder / len(bids) <= 0.79
    assert 95 <= sum(32 + len(b["extra"]) for b in bids) / len(bids) <= 105
    prices = sorted(b["price"] for b in bids)
    assert 80_000 <= prices[len(prices) // 2] <= 120_000  # log-uniform over [1e2, 1e8]: median 1e5
    assert len({e["extra"] for e in whole}) > 0.99 * len(whole)


def test_seeds_give_different_streams_and_neighbours_differ():
    a = list(events(NexmarkConfig(count=200, seed=1)))
    b = list(events(NexmarkConfig(count=200, seed=2)))
    assert [x["extra"] for x in a] != [x["extra"] for x in b]
    assert [x["date_time"] for x in a] == [x["date_time"] for x in b]
    bids = [x for x in a if x["event_type"] == BID]
    assert len({x["price"] for x in bids}) > 0.9 * len(bids)


def test_parameters():
    c = config_from_params({"count": 5, "seed": 9, "events_per_second": 4, "base_time": "2020-01-01T00:00:00Z",
                            "bid_proportion": 10, "ignored": "x"})
    assert (c.count, c.seed, c.events_per_second, c.bid_proportion) == (5, 9, 4.0, 10)
    assert event(c, 3)["date_time"] == _dt.datetime(2020, 1, 1, 0, 0, 0, 750000, tzinfo=_dt.UTC)
    assert event(NexmarkConfig(), 0)["date_time"] == _dt.datetime(2015, 7, 15, tzinfo=_dt.UTC)
    for params, message in [({"count": "5"}, "count must be a integer"), ({"seed": 1.5}, "seed must be a integer"),
                            ({"count": -1}, "count must not be negative"),
                            ({"events_per_second": 0}, "events_per_second must be positive"),
                            ({"events_per_second": True}, "events_per_second must be a number"),
                            ({"hot_bidders_ratio": 0}, "hot_bidders_ratio must be positive"),
                            ({"auction_proportion": 0}, "must be at least 1"),
                            ({"unthrottled": 1}, "unthrottled must be a bool"),
                            ({"base_time": "yesterday"}, "cannot parse .yesterday. as a timestamp")]:
        with pytest.raises(ValueError, match=message):
            NexmarkSource(params)


def test_registered_as_builtin():
    assert PluginRegistries().source_types.lookup("nexmark") is NexmarkSource


class FakeContext:
    """A source context recording what the source emits and how long it asks to sleep; sleeping moves
    the fake monotonic clock."""

    def __init__(self, skip=0, stop_after=None):
        self.skip, self.stop_after = skip, stop_after
        self.emitted, self.sleeps, self.now, self.flushes = [], [], 100.0, 0

    def emit(self, data, ts=None):
        self.emitted.append((data, ts))

    def flush(self):
        self.flushes += 1

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
        return self.stop_after is None or len(self.sleeps) < self.stop_after


def test_run_emits_count_events_stamped_with_their_time_and_resumes_after_skip():
    c = NexmarkConfig(count=30, seed=4)
    ctx = FakeContext()
    NexmarkSource({"count": 30, "seed": 4, "unthrottled": True}).run(ctx)
    assert [d for d, _ in ctx.emitted] == list(events(c))
    assert all(ts == d["date_time"] for d, ts in ctx.emitted)
    assert ctx.sleeps == [] and ctx.flushes == 1
    resumed = FakeContext(skip=12)
    source = NexmarkSource({"count": 30, "seed": 4, "unthrottled": True})
    source.run(resumed)
    assert [d for d, _ in resumed.emitted] == list(islice(events(c), 12, None))
    assert source.status() == {"events_generated": 30, "count": 30}


def test_throttled_run_keeps_the_event_time_pace(monkeypatch):
    ctx = FakeContext()
    monkeypatch.setattr(nexmark_source.time, "monotonic", lambda: ctx.now)
    NexmarkSource({"count": 9, "events_per_second": 4}).run(ctx)
    assert len(ctx.emitted) == 9
    assert ctx.sleeps == [0.25] * 8  # event n leaves n / 4 s after the first
    stopped = FakeContext(stop_after=3)
    monkeypatch.setattr(nexmark_source.time, "monotonic", lambda: stopped.now)
    NexmarkSource({"count": 9, "events_per_second": 4}).run(stopped)
    assert len(stopped.emitted) == 3  # sleep returned False: stopping
