"""Time, array, JSON and other scalar built-ins: ``distance_us``, ``clock_timestamp``, ``now``,
``array_length``, ``coalesce``, ``encode_json``, ``decode_json``, ``blob_to_raw_string``, ``str``.

``now()`` is the time processing of the current tuple started (``Env.now``, set by the kernel; the wall
clock when unset) and cannot be used in EVAL; ``clock_timestamp()`` is the wall clock at each call.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

import json

from ..conversions import go_json, to_blob
from ..errors import BQLEvaluationError
from ..values import INT_MAX, INT_MIN, type_name
from .registry import FunctionSpec
from .signatures import array, timestamp

_UTC = _dt.timezone.utc


def _distance_us(u: Any, v: Any) -> int:
    """``t2.Sub(t1).Nanoseconds() / 1000`` (time.go diffUsFuncTmpl): Go's ``Sub`` saturates at the
    int64 nanosecond range (about 292 years), so longer distances give +-9223372036854775."""
    a = timestamp("distance_us", "u", u)
    b = timestamp("distance_us", "v", v)
    d = b - a
    ns = ((d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds) * 1000
    ns = max(INT_MIN, min(INT_MAX, ns))
    return ns // 1000 if ns >= 0 else -(-ns // 1000)


def _clock_timestamp() -> _dt.datetime:
    return _dt.datetime.now(_UTC)


def _now(env: Any) -> _dt.datetime:
    now = getattr(env, "now", None)
    return now if now is not None else _dt.datetime.now(_UTC)


def _array_length(a: Any) -> int:
    return len(array("array_length", "a", a))


def _coalesce(*args: Any) -> Any:
    for a in args:
        if a is not None:
            return a
    return None


def _encode_json(v: Any) -> str:
    """SensorBee's ``encode_json``: an array or a map as its JSON text (``Value.String()``)."""
    if type(v) is not list and type(v) is not dict:
        raise BQLEvaluationError(f"encode_json only supports map or array, got '{type_name(v)}'")
    return go_json(v)


def _str(v: Any) -> str:
    """SensorBee's ``str`` (registered by bql/udf/function_registry.go): any value's ``Value.String()``, its
    JSON text -- ``"a"`` for the string a, ``null`` for NULL, ``1.5``, ``[1,"x"]``."""
    return go_json(v)


def _json_int(text: str) -> Any:
    i = int(text)
    return i if INT_MIN <= i <= INT_MAX else float(text)  # Go: json.Number.Int64 fails -> Float


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON literal {name}")


_DECODER = json.JSONDecoder(parse_int=_json_int, parse_constant=_no_constant)


def _decode_json(v: Any) -> Any:
    """SensorBee's ``decode_json``: a string or blob holding a JSON array or object (after trimming
    spaces; text after the first value is ignored, as Go's ``json.Decoder.Decode`` does)."""
    if type(v) is bytes:
        try:
            v = v.decode("utf-8")
        except UnicodeDecodeError:
            raise BQLEvaluationError("decode_json: the blob is not valid UTF-8") from None
    elif type(v) is not str:
        raise BQLEvaluationError(f"a JSON should be a string or a blob: {type_name(v)}")
    text = v.strip()
    if not text:
        raise BQLEvaluationError("cannot decode empty data")
    if text[0] not in "[{":
        raise BQLEvaluationError(f"ill-formed JSON (starting with {text[0]})")
    try:
        value, _ = _DECODER.raw_decode(text)
    except ValueError as err:
        raise BQLEvaluationError(f"decode_json: {err}") from None
    return value


def _blob_to_raw_string(v: Any) -> str:
    """SensorBee's ``blob_to_raw_string``: the bytes of a blob (converted as CAST does) as UTF-8 text."""
    b = to_blob(v)
    if b is None:
        return ""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise BQLEvaluationError("blob contains invalid UTF-8 runes") from None


SPECS = [
    FunctionSpec("distance_us", _distance_us, 2, 2, null_on_null=True),
    FunctionSpec("clock_timestamp", _clock_timestamp, 0, 0, volatile=True),
    FunctionSpec("now", _now, 0, 0, volatile=True, stream_only=True, context=True),
    FunctionSpec("array_length", _array_length, 1, 1, null_on_null=True),
    FunctionSpec("coalesce", _coalesce, 1, None),
    FunctionSpec("encode_json", _encode_json, 1, 1),
    FunctionSpec("decode_json", _decode_json, 1, 1),
    FunctionSpec("blob_to_raw_string", _blob_to_raw_string, 1, 1),
    FunctionSpec("str", _str, 1, 1),
]
