"""The Nexmark event generator: persons, auctions and bids with the benchmark's distributions.

A port of the reference generator (Apache Beam's / the nexmark project's ``GeneratorConfig``,
``NexmarkGenerator``, ``PersonGenerator``, ``AuctionGenerator``, ``BidGenerator``,
``PriceGenerator``, ``StringsGenerator``) to plain Python, deterministic like Beam's: event ``n``
draws its random values from a generator seeded with ``(seed, event id)`` only (``EventRandom``, a
SplitMix64 stream: seeding a Mersenne Twister per event would cost more than the event), so the
event stream is a pure function of the configuration; any prefix, resumed run or parallel copy of it
yields the same events. The values are not bit-identical to the Java generator's, and the random
letters of names, descriptions, e-mails and ``extra`` are slices of two fixed pools of iid random
characters (letters, and letters with one space in 13 as ``nextString`` draws them) at a random
offset, rather than one draw per character.

What follows the reference exactly:

- the event id of event number ``n`` is ``first_event_id + adjusted(n)``, where ``adjusted`` shuffles
  numbers inside groups of ``out_of_order_group_size`` (``(n // g) * g + (n * 953) % g``); its kind is
  ``id % total`` against the proportions (1 person, 3 auctions, 46 bids in 50 by default);
- event time: ``base_time + int(adjusted(n) * inter_event_delay_us) // 1000`` milliseconds, where
  ``inter_event_delay_us = 1e6 / events_per_second``;
- person and auction ids count up from 1000 (``lastBase0PersonId`` / ``lastBase0AuctionId``); a
  seller is, with probability ``1 - 1/hot_sellers_ratio``, the first person of the latest hundred,
  otherwise one of the ``num_active_people`` latest persons (or up to 10 ids ahead); a bid's
  auction is with probability ``1 - 1/hot_auctions_ratio`` the first of the latest hundred auctions,
  otherwise one of the ``num_in_flight_auctions`` latest (or up to 10 ahead); its bidder likewise
  (the second person of the latest hundred when hot);
- prices ``round(10 ** (6 * u) * 100)`` cents; categories 10..14; auction length uniform in
  ``[1, 2 * horizon]`` ms where the horizon is the time until ``num_in_flight_auctions`` more auctions
  are generated; names, e-mails, credit cards, cities and states from the reference's lists; ``extra``
  padding so a record averages the configured byte size.

A tuple is a dict with ``event_type`` (0 person, 1 auction, 2 bid) and the fields of its kind (the
reference's names in snake case); ``date_time`` (and an auction's ``expires``) are aware UTC
``datetime`` values, BQL timestamps.
"""
from __future__ import annotations

import datetime as _dt
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PERSON, AUCTION, BID = 0, 1, 2

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
ID_LEAD = 10  # yet-to-be-created person / auction ids a random choice may reach
HOT_RATIO_BATCH = 100  # hot sellers, bidders and auctions are the first of each batch of 100 ids

# Beam's NexmarkUtils.BASE_TIME: event time starts here unless ``base_time`` says otherwise
BASE_TIME = _dt.datetime(2015, 7, 15, tzinfo=_dt.UTC)
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

US_STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"]
US_CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle",
             "Kent", "Cheyenne"]
FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"]
LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"]
_LETTERS = string.ascii_lowercase
_M64 = (1 << 64) - 1
_POOL_SIZE = 1 << 16


class EventRandom:
    """SplitMix64 (Steele, Lea and Flood 2014): a tiny, well-mixed random stream per event."""

    __slots__ = ("state",)

    def __init__(self, seed: int, event_id: int):
        # start from a hashed (seed, id) pair, so that neighbouring ids' streams do not overlap
        self.state = (seed * 0x2545F4914F6CDD1D) & _M64
        self.state = self.next64() ^ event_id
        self.state = self.next64()

    def next64(self) -> int:
        self.state = z = (self.state + 0x9E3779B97F4A7C15) & _M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        return z ^ (z >> 31)

    def randrange(self, n: int) -> int:
        """Uniform in ``[0, n)`` (Lemire's multiply-shift; bias below 2**-40 for our n)."""
        return (self.next64() * n) >> 64

    def random(self) -> float:
        """Uniform in ``[0, 1)`` with 53 bits."""
        return (self.next64() >> 11) * (1.0 / (1 << 53))

    def choice(self, seq: list[str]) -> str:
        return seq[self.randrange(len(seq))]


def _pools() -> tuple[str, str]:
    rnd = random.Random(20150715)
    letters = "".join(rnd.choices(_LETTERS, k=_POOL_SIZE + 1024))
    spaced = "".join(" " if rnd.randrange(13) == 0 else rnd.choice(_LETTERS) for _ in range(_POOL_SIZE + 128))
    return letters, spaced


_LETTER_POOL, _SPACED_POOL = _pools()


@dataclass(frozen=True)
class NexmarkConfig:
    """The generator's knobs (the reference's ``NexmarkConfiguration`` defaults)."""

    count: int = 0  # events to generate; 0 = unbounded
    seed: int = 0
    events_per_second: float = 10000.0  # event-time rate (the reference's firstEventRate)
    base_time_ms: int = int((BASE_TIME - EPOCH).total_seconds() * 1000)
    first_event_id: int = 0
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    num_active_people: int = 1000
    num_in_flight_auctions: int = 100
    hot_sellers_ratio: int = 4
    hot_auctions_ratio: int = 2
    hot_bidders_ratio: int = 4
    out_of_order_group_size: int = 1
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError("count must not be negative")
        if not self.events_per_second > 0:
            raise ValueError("events_per_second must be positive")
        if self.person_proportion < 1 or self.auction_proportion < 1 or self.bid_proportion < 0:
            raise ValueError("person_proportion and auction_proportion must be at least 1, "
                             "bid_proportion at least 0")
        positive = {"num_active_people": self.num_active_people,
                    "num_in_flight_auctions": self.num_in_flight_auctions,
                    "hot_sellers_ratio": self.hot_sellers_ratio, "hot_auctions_ratio": self.hot_auctions_ratio,
                    "hot_bidders_ratio": self.hot_bidders_ratio,
                    "out_of_order_group_size": self.out_of_order_group_size}
        for name, value in positive.items():
            if value < 1:
                raise ValueError(f"{name} must be positive")

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    @property
    def inter_event_delay_us(self) -> float:
        return 1_000_000.0 / self.events_per_second

    def adjusted_number(self, n: int) -> int:
        """The reference's ``nextAdjustedEventNumber``: event numbers shuffled inside groups."""
        g = self.out_of_order_group_size
        return (n // g) * g + (n * 953) % g

    def timestamp_ms(self, number: int) -> int:
        """Event time (epoch ms) of event number ``number`` (``timestampForEvent``)."""
        return self.base_time_ms + int(number * self.inter_event_delay_us) // 1000

    def kind_of(self, event_id: int) -> int:
        rem = event_id % self.total_proportion
        if rem < self.person_proportion:
            return PERSON
        return AUCTION if rem < self.person_proportion + self.auction_proportion else BID


def last_person_id(c: NexmarkConfig, event_id: int) -> int:
    """The latest person id (base 0) at ``event_id`` (``lastBase0PersonId``)."""
    epoch, offset = divmod(event_id, c.total_proportion)
    if offset >= c.person_proportion:
        offset = c.person_proportion - 1
    return epoch * c.person_proportion + offset


def last_auction_id(c: NexmarkConfig, event_id: int) -> int:
    """The latest auction id (base 0) at ``event_id`` (``lastBase0AuctionId``; -1 before the first)."""
    epoch, offset = divmod(event_id, c.total_proportion)
    if offset < c.person_proportion:
        epoch -= 1
        offset = c.auction_proportion - 1
    elif offset >= c.person_proportion + c.auction_proportion:
        offset = c.auction_proportion - 1
    else:
        offset -= c.person_proportion
    return epoch * c.auction_proportion + offset


def next_person_id(c: NexmarkConfig, event_id: int, rnd: EventRandom) -> int:
    """A random active person id (base 0), possibly a few ids ahead (``nextBase0PersonId``)."""
    num_people = last_person_id(c, event_id) + 1
    active = min(num_people, c.num_active_people)
    return num_people - active + rnd.randrange(active + ID_LEAD)


def next_auction_id(c: NexmarkConfig, event_id: int, rnd: EventRandom) -> int:
    """A random in-flight auction id (base 0), possibly a few ids ahead (``nextBase0AuctionId``)."""
    max_auction = last_auction_id(c, event_id)
    min_auction = max(max_auction - c.num_in_flight_auctions, 0)
    return min_auction + rnd.randrange(max_auction - min_auction + 1 + ID_LEAD)


def next_price(rnd: EventRandom) -> int:
    """``Math.round(10^(6u) * 100)``: cents, log-uniform from 1.00 to 1,000,000.00."""
    x = 10.0 ** (rnd.random() * 6.0) * 100.0
    return int(x + 0.5)


def next_string(rnd: EventRandom, max_length: int) -> str:
    """3 to ``max_length - 1`` letters with about one space in 13, trimmed (``nextString``)."""
    n = 3 + rnd.randrange(max_length - 3)
    at = rnd.randrange(_POOL_SIZE)
    return _SPACED_POOL[at:at + n].strip()


def next_extra(rnd: EventRandom, current_size: int, average_size: int) -> str:
    """Letters padding a record of ``current_size`` bytes to ``average_size`` on average, ±20 %."""
    if current_size > average_size:
        return ""
    want = average_size - current_size
    delta = int(want * 0.2 + 0.5)
    size = want - delta + (rnd.randrange(2 * delta) if delta else 0)
    if size > len(_LETTER_POOL) - _POOL_SIZE:  # an average size beyond the pool: repeat it
        return (_LETTER_POOL * (size // _POOL_SIZE + 1))[:size]
    at = rnd.randrange(_POOL_SIZE)
    return _LETTER_POOL[at:at + size]


def person(c: NexmarkConfig, event_id: int, rnd: EventRandom, ts: _dt.datetime) -> dict[str, Any]:
    name = rnd.choice(FIRST_NAMES) + " " + rnd.choice(LAST_NAMES)
    email = next_string(rnd, 7) + "@" + next_string(rnd, 5) + ".com"
    card = " ".join(f"{rnd.randrange(10000):04d}" for _ in range(4))
    city, state = rnd.choice(US_CITIES), rnd.choice(US_STATES)
    size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
    return {"event_type": PERSON, "id": last_person_id(c, event_id) + FIRST_PERSON_ID, "name": name,
            "email_address": email, "credit_card": card, "city": city, "state": state, "date_time": ts,
            "extra": next_extra(rnd, size, c.avg_person_byte_size)}


def auction(c: NexmarkConfig, number: int, event_id: int, rnd: EventRandom, ts_ms: int,
            ts: _dt.datetime) -> dict[str, Any]:
    if rnd.randrange(c.hot_sellers_ratio) > 0:  # hot seller: the first of the latest hundred people
        seller = (last_person_id(c, event_id) // HOT_RATIO_BATCH) * HOT_RATIO_BATCH
    else:
        seller = next_person_id(c, event_id, rnd)
    category = FIRST_CATEGORY_ID + rnd.randrange(NUM_CATEGORIES)
    initial_bid = next_price(rnd)
    # length: uniform up to twice the time until num_in_flight_auctions more auctions exist
    ahead = (c.num_in_flight_auctions * c.total_proportion) // c.auction_proportion
    horizon = c.timestamp_ms(c.adjusted_number(number) + ahead) - ts_ms
    expires_ms = ts_ms + 1 + rnd.randrange(max(horizon * 2, 1))
    item_name = next_string(rnd, 20)
    description = next_string(rnd, 100)
    reserve = initial_bid + next_price(rnd)
    size = 8 + len(item_name) + len(description) + 8 + 8 + 8 + 8 + 8
    return {"event_type": AUCTION, "id": last_auction_id(c, event_id) + FIRST_AUCTION_ID,
            "item_name": item_name, "description": description, "initial_bid": initial_bid,
            "reserve": reserve, "date_time": ts, "expires": to_datetime(expires_ms),
            "seller": seller + FIRST_PERSON_ID, "category": category,
            "extra": next_extra(rnd, size, c.avg_auction_byte_size)}


def bid(c: NexmarkConfig, event_id: int, rnd: EventRandom, ts: _dt.datetime) -> dict[str, Any]:
    if rnd.randrange(c.hot_auctions_ratio) > 0:  # hot auction: the first of the latest hundred
        auction_id = (last_auction_id(c, event_id) // HOT_RATIO_BATCH) * HOT_RATIO_BATCH
    else:
        auction_id = next_auction_id(c, event_id, rnd)
    if rnd.randrange(c.hot_bidders_ratio) > 0:  # hot bidder: the second of the latest hundred people
        bidder = (last_person_id(c, event_id) // HOT_RATIO_BATCH) * HOT_RATIO_BATCH + 1
    else:
        bidder = next_person_id(c, event_id, rnd)
    price = next_price(rnd)
    return {"event_type": BID, "auction": auction_id + FIRST_AUCTION_ID, "bidder": bidder + FIRST_PERSON_ID,
            "price": price, "date_time": ts, "extra": next_extra(rnd, 32, c.avg_bid_byte_size)}


def to_datetime(ms: int) -> _dt.datetime:
    """Epoch milliseconds → aware UTC datetime."""
    return EPOCH + _dt.timedelta(milliseconds=ms)


def event(c: NexmarkConfig, number: int) -> dict[str, Any]:
    """Event number ``number`` (0-based) of the stream ``c`` describes."""
    adjusted = c.adjusted_number(number)
    event_id = c.first_event_id + adjusted
    rnd = EventRandom(c.seed, event_id)
    ts_ms = c.timestamp_ms(adjusted)
    ts = to_datetime(ts_ms)
    kind = c.kind_of(event_id)
    if kind == PERSON:
        return person(c, event_id, rnd, ts)
    if kind == AUCTION:
        return auction(c, number, event_id, rnd, ts_ms, ts)
    return bid(c, event_id, rnd, ts)


def events(c: NexmarkConfig, start: int = 0) -> Iterator[dict[str, Any]]:
    """Events ``start``, ``start + 1``, ... up to ``c.count`` (forever when it is 0)."""
    n = start
    while c.count == 0 or n < c.count:
        yield event(c, n)
        n += 1
