"""Tagged JSON of BQL values and epoch-µs timestamps: the journal's value encoding.

``data`` round-trips every BQL type through tagged JSON: a timestamp is ``{"$ts": µs}``, a blob
``{"$blob": "<base64>"}``, a NaN/±Inf float ``{"$float": "nan"|"inf"|"-inf"}``; a user map key that
starts with ``$`` is escaped by doubling the ``$`` (``"$x"`` → ``"$$x"``). Plain JSON without such keys
and without non-finite floats already is tagged JSON of the same value.

Pure Python (no pyspark); ``journal_format`` re-exports these functions.
"""
from __future__ import annotations

import base64
import datetime as _dt
import math
from typing import Any

import orjson

from sbpy.bql.runtime.processor import Tuple

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_UTC = _dt.timezone.utc

# ---------------------------------------------------------------- timestamps


def ts_to_us(ts: _dt.datetime) -> int:
    """Epoch microseconds of an aware datetime (a naive one is taken as UTC)."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=_UTC)
    delta = ts - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def us_to_ts(us: int) -> _dt.datetime:
    """The aware UTC datetime of epoch microseconds."""
    return _EPOCH + _dt.timedelta(0, 0, us)  # positional: a third faster than microseconds=us


class Timestamps:
    """``us_to_ts`` remembering its last answer: a batch's tuples often share a time (every line of a file
    segment has the segment's), and a datetime is immutable, so they can share the object."""

    __slots__ = ("us", "ts")

    def __init__(self) -> None:
        self.us: int | None = None
        self.ts: Any = None

    def get(self, us: int) -> Any:
        if us != self.us or self.us is None:
            self.ts, self.us = us_to_ts(us), us
        return self.ts


_TS = Tuple.ts  # the slot of a Tuple's time
_ts_get, _ts_set = _TS.__get__, _TS.__set__  # type: ignore[attr-defined]


class JournalTuple(Tuple):
    """A ``Tuple`` read from a journal whose ``ts`` is made from its epoch µs (``us``) when first read: a
    memoryless stage's batch step reads only the data, and its rows carry the journal's µs, so most of
    a stateless chain's tuples never need the datetime (``us_to_ts`` is ~0.6 µs of a tuple's ~4 µs in
    the reader). Equal to a ``Tuple`` with the same fields. Reading ``ts`` costs a call (~0.1 µs): only
    hosts whose stages rarely read it use it (``Pipeline.lazy_times``)."""

    __slots__ = ("us",)

    def __init__(self, data: Any, us: int, seq: int = 0, input: str = "") -> None:  # noqa: A002
        self.data, self.us, self.seq, self.input = data, us, seq, input

    @property  # type: ignore[override]
    def ts(self) -> _dt.datetime:
        try:
            return _ts_get(self)
        except AttributeError:  # not made yet
            ts = us_to_ts(self.us)
            _ts_set(self, ts)
            return ts

    @ts.setter
    def ts(self, value: _dt.datetime) -> None:
        _ts_set(self, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tuple):
            return NotImplemented
        return (self.data, self.ts, self.seq, self.input) == (other.data, other.ts, other.seq, other.input)

    __hash__ = None  # type: ignore[assignment]  # as a Tuple's (a mutable dataclass)

    def __reduce__(self) -> tuple:
        """Pickled (and copied) as the equal plain ``Tuple``: the dataclass's slot state would drop ``us``."""
        return (Tuple, (self.data, self.ts, self.seq, self.input))


# ---------------------------------------------------------------- values


def _tag(value: Any) -> Any:
    """A BQL value as plain JSON-able Python (tagged timestamps, blobs, non-finite floats, $ keys)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if t is dict or isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k[:1] == "$":
                k = "$" + k
            out[k] = _tag(v)
        return out
    if t is list or isinstance(value, (list, tuple)):
        return [_tag(v) for v in value]
    if isinstance(value, _dt.datetime):
        return {"$ts": ts_to_us(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$blob": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _tag(float(value))
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"cannot journal a value of type '{type(value).__name__}'")


_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _untag(value: Any) -> Any:
    """Inverse of ``_tag``."""
    t = type(value)
    if t is dict:
        if len(value) == 1:
            (k, v), = value.items()
            if k == "$ts":
                return us_to_ts(v)
            if k == "$blob":
                return base64.b64decode(v)
            if k == "$float":
                return _FLOATS[v]
        out = {}
        for k, v in value.items():
            if k[:2] == "$$":
                k = k[1:]
            out[k] = _untag(v)
        return out
    if t is list:
        return [_untag(v) for v in value]
    return value


def encode_data(data: Any) -> str:
    """The tagged JSON text of a BQL value (normally the tuple's map). A map whose values are all strings,
    ints, bools, NULLs and finite floats, with no key starting with ``$``, is its own tagged form
    (``_tag`` copies it unchanged): orjson writes it as it is, without the walk (~0.35 against ~1 µs for
    a three-field row)."""
    if type(data) is dict and _flat(data):
        return orjson.dumps(data).decode("utf-8")
    return orjson.dumps(_tag(data)).decode("utf-8")


def _flat(data: dict[str, Any]) -> bool:
    """Whether ``_tag(data)`` is a copy of ``data`` equal key for key (scalars of JSON's own types only:
    a non-finite float, a timestamp, a blob, a container or a ``$`` key is tagged)."""
    for k, v in data.items():
        t = type(v)
        if t is float:
            if v - v != 0.0:  # inf - inf and nan - nan are nan
                return False
        elif t is not str and t is not int and t is not bool and v is not None:
            return False
        if k[:1] == "$":
            return False
    return True


def decode_data(text: str | bytes) -> Any:
    """Inverse of ``encode_data``. A text with neither ``$`` nor a ``\\u`` escape holds no tag and no
    escaped key (``_untag`` reads only keys that start with ``$``): plain JSON parsing gives its value."""
    value = orjson.loads(text)
    if type(text) is str:
        if "$" not in text and "\\u" not in text:
            return value
    elif b"$" not in text and b"\\u" not in text:
        return value
    return _untag(value)


def decode_data_carried(text: str) -> tuple[Any, Any]:
    """``decode_data(text)`` and what a keyed plan's packed row carries for the tuple: the map itself when
    ``text`` holds a map with no tag and no escaped key — packed as JSON it comes back the same map, so
    the bucket parses it once, with the pack —, else ``text``."""
    value = orjson.loads(text)
    if "$" in text or "\\u" in text:
        return _untag(value), text
    return value, (value if type(value) is dict else text)


def decode_data_value(value: Any) -> Any:
    """``decode_data`` of a text already parsed as plain JSON into ``value`` (the tags resolved)."""
    return _untag(value)
