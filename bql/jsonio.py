"""JSON encoding and decoding of BQL values (orjson underneath).

Writing: compact; ints stay ints and floats stay floats (``2.0``, a deliberate difference from
SensorBee, which writes ``2``); NaN and ±Inf become ``null``; timestamps are RFC3339 UTC strings with
the fraction only when non-zero (``1970-01-01T00:00:01Z``, ``1970-01-01T00:00:00.000001Z``); blobs are
base64 strings. Reading: numbers that parse as int64 become int, all others float.
"""
from __future__ import annotations

import base64
import datetime as _dt
import json
from typing import Any

import orjson

from .conversions import format_timestamp
from .errors import BQLEvaluationError

_INT_MIN = -(1 << 63)
_INT_MAX = (1 << 63) - 1
_OPTS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS
_DIGIT_MAP = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))  # digits as "0", anything else " "
_LONG_RUN = b"0" * 19


def has_long_digits(data: bytes) -> bool:
    """Whether ``data`` holds a run of 19 or more ASCII digits (an int that may be beyond int64): what the
    ``re`` pattern ``rb"\\d{19,}"`` finds, in one C-level translate and a substring search (~15x faster)."""
    return _LONG_RUN in data.translate(_DIGIT_MAP)


def _default(obj: Any) -> Any:
    if isinstance(obj, _dt.datetime):
        if obj.tzinfo is None:
            obj = obj.replace(tzinfo=_dt.timezone.utc)
        return format_timestamp(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    raise TypeError(f"value of type '{type(obj).__name__}' cannot be written as JSON")


def to_json_bytes(value: Any) -> bytes:
    """Compact JSON bytes of a BQL value."""
    try:
        return orjson.dumps(value, default=_default, option=_OPTS)
    except TypeError as e:  # orjson.JSONEncodeError is a TypeError
        raise BQLEvaluationError(f"cannot encode value as JSON: {e}") from None


def to_json(value: Any) -> str:
    """Compact JSON text of a BQL value."""
    return to_json_bytes(value).decode("utf-8")


def _fix_ints(value: Any) -> Any:
    """Turn integers outside int64 into floats (JSON numbers that are not int64 are floats)."""
    t = type(value)
    if t is int:
        return value if _INT_MIN <= value <= _INT_MAX else float(value)
    if t is list:
        return [_fix_ints(v) for v in value]
    if t is dict:
        return {k: _fix_ints(v) for k, v in value.items()}
    return value


def from_json(text: str | bytes) -> Any:
    """Parse JSON text into a BQL value; ints outside int64 become floats."""
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        try:  # orjson refuses integers beyond 64 bits; the standard parser reads them
            value = json.loads(raw)
        except ValueError:
            raise BQLEvaluationError(f"invalid JSON: {e}") from None
    if has_long_digits(raw):
        value = _fix_ints(value)
    return value


class JsonLines:
    """A batch of ``to_json`` lines as one text: ``parts`` (bytes-like) concatenated hold ``count``
    lines, each ending in ``\\n`` — what the native tier ships, written by a file sink without a
    per-line step. ``len`` is the line count; iterating gives the lines (without their newline)."""

    __slots__ = ("count", "parts")

    def __init__(self, parts: list[Any], count: int):
        self.parts = parts
        self.count = count

    def __len__(self) -> int:
        return self.count

    def text(self) -> bytes:
        return b"".join(self.parts)

    def __iter__(self) -> Any:
        text = self.text().decode("utf-8")
        return iter(text.split("\n")[:-1] if text else [])
