"""``CAST(value AS type)``: every conversion of the "Data Types and Conversions" chapter.

NULL converts to NULL for every valid target type. Targets ``null``, ``array`` and ``map`` are always
an error (the document lists only bool, int, float, string, blob and timestamp). Pairs the document does
not list (e.g. int to blob) are errors. Float formatting follows Go's ``strconv.FormatFloat(f, 'g', -1,
64)`` (``1.2``, ``1e+10``, ``0``); timestamps format as RFC3339 with trailing zeros of the fraction cut.
"""
from __future__ import annotations

import base64
import binascii
import datetime as _dt
import math
import re
from decimal import Decimal
from typing import Any, Callable

from .errors import BQLEvaluationError

UTC = _dt.timezone.utc
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)
_INT_MIN = -(1 << 63)
_INT_MAX = (1 << 63) - 1
_TWO63 = float(1 << 63)

_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
            "\u200a\u2028\u2029\u202f\u205f\u3000"
_TRUE_STRINGS = frozenset(("t", "true", "y", "yes", "on", "1"))
_FALSE_STRINGS = frozenset(("f", "false", "n", "no", "off", "0"))
_INT_RE = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|[0-9]+)\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_SPECIAL_FLOATS = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
                   "+infinity": math.inf, "-infinity": -math.inf, "nan": math.nan}
_RFC3339_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))\Z"
)


def _type_name(value: Any) -> str:
    from .values import type_name

    return type_name(value)


def _fail(value: Any, target: str) -> BQLEvaluationError:
    return BQLEvaluationError(f"cannot convert '{_type_name(value)}' to '{target}'")


# ---------------------------------------------------------------- formatting helpers


def format_float(f: float) -> str:
    """Go's shortest ``%g``-style formatting (``strconv.FormatFloat(f, 'g', -1, 64)``)."""
    if f != f:
        return "NaN"
    if f in (math.inf, -math.inf):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0.0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    nd = len(ds)
    dp = len(digits) + exponent  # position of the decimal point relative to the digit string
    exp = dp - 1
    neg = "-" if sign else ""
    # Go: the shortest form switches to %e when exp < -4 or exp >= 6
    if exp < -4 or exp >= 6:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        e = f"{abs(exp):02d}"
        return f"{neg}{mant}e{'-' if exp < 0 else '+'}{e}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{ds}"
    if dp >= nd:
        return f"{neg}{ds}{'0' * (dp - nd)}"
    return f"{neg}{ds[:dp]}.{ds[dp:]}"


def format_timestamp(t: _dt.datetime) -> str:
    """RFC3339 in UTC with the fraction's trailing zeros cut (Go's RFC3339Nano): ``1970-01-01T00:00:01Z``."""
    if t.tzinfo is not None and t.utcoffset():
        t = t.astimezone(UTC)
    s = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if t.microsecond:
        s += "." + f"{t.microsecond:06d}".rstrip("0")
    return s + "Z"


def parse_timestamp(text: str) -> _dt.datetime:
    """Parse RFC3339 (optionally with up to nanoseconds, truncated to µs) into an aware UTC datetime.

    As Go's ``time.Parse(time.RFC3339Nano, ...)``: ``T`` and ``Z`` must be upper-case."""
    m = _RFC3339_RE.match(text)
    if m is None:
        raise BQLEvaluationError(f"cannot parse '{text}' as a timestamp")
    y, mo, d, h, mi, s, frac, z, sign, oh, om = m.groups()
    us = int((frac or "").ljust(6, "0")[:6]) if frac else 0
    try:
        if z:
            tz = UTC
        else:
            off = _dt.timedelta(hours=int(oh), minutes=int(om))
            tz = _dt.timezone(off if sign == "+" else -off)
        t = _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), us, tzinfo=tz)
        return t.astimezone(UTC) if tz is not UTC else t
    except (ValueError, OverflowError):
        raise BQLEvaluationError(f"cannot parse '{text}' as a timestamp") from None


def epoch_seconds_to_timestamp(seconds: int | float) -> _dt.datetime:
    """Seconds since 1970 (int, or float with a µs fraction rounded to the nearest µs) as a timestamp."""
    try:
        if type(seconds) is int:
            return EPOCH + _dt.timedelta(seconds=seconds)
        if seconds != seconds or seconds in (math.inf, -math.inf):
            raise OverflowError
        whole = math.floor(seconds)
        us = round((seconds - whole) * 1e6)
        return EPOCH + _dt.timedelta(seconds=int(whole), microseconds=us)
    except OverflowError:
        raise BQLEvaluationError(f"timestamp out of range: {seconds}") from None


def timestamp_to_float(t: _dt.datetime) -> float:
    """Seconds since 1970 including the µs fraction (Go: ``float64(Unix()) + float64(Nanosecond())/1e9``)."""
    d = t - EPOCH
    secs = d.days * 86400 + d.seconds
    return float(secs) + d.microseconds / 1e6


def timestamp_to_int(t: _dt.datetime) -> int:
    """Full seconds since 1970 (floor, as Go's ``Unix()``)."""
    d = t - EPOCH
    return d.days * 86400 + d.seconds


# ---------------------------------------------------------------- to bool


def to_bool(v: Any) -> Any:
    t = type(v)
    if t is bool or v is None:
        return v
    if t is int:
        return v != 0
    if t is float:
        return not (v == 0.0 or v != v)
    if t is str:
        s = v.strip(_GO_SPACE).lower()  # strings.TrimSpace: unicode.IsSpace (not Python's \x1c-\x1f)
        if s in _TRUE_STRINGS:
            return True
        if s in _FALSE_STRINGS:
            return False
        raise BQLEvaluationError(f"cannot convert string '{v}' to 'bool'")
    if t is bytes or t is list or t is dict:
        return len(v) > 0
    if t is _dt.datetime:
        return not (v.year == 1 and v.month == 1 and v.day == 1 and v.hour == 0 and v.minute == 0
                    and v.second == 0 and v.microsecond == 0)
    raise _fail(v, "bool")


def to_int(v: Any) -> Any:
    t = type(v)
    if t is int or v is None:
        return v
    if t is bool:
        return 1 if v else 0
    if t is float:
        if v != v or v >= _TWO63 or v < -_TWO63:
            raise BQLEvaluationError(f"float {format_float(v)} is out of the range of 'int'")
        return int(v)
    if t is str:
        i = parse_int(v)
        if i is None:
            raise BQLEvaluationError(f"cannot convert string '{v}' to 'int'")
        if _INT_MIN <= i <= _INT_MAX:
            return i
        shown = v if len(v) <= 40 else f"{v[:20]}...({len(v)} characters)"
        raise BQLEvaluationError(f"string '{shown}' is out of the range of 'int'")
    if t is _dt.datetime:
        return timestamp_to_int(v)
    raise _fail(v, "int")


def parse_int(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 0, 64)`` syntax (SensorBee's ``data.ToInt``): an optional sign,
    then ``0x``/``0X`` and hex digits, ``0`` and octal digits (``"017"`` is 15), or decimal digits.
    None when the text is not such a number; the caller checks the int64 range."""
    if not _INT_RE.match(text):
        return None
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-")
    if len(digits) > 2 and digits[1] in "xX":
        body, base = digits[2:], 16
    elif len(digits) > 1 and digits[0] == "0":
        body, base = digits[1:], 8
        if not body.isdigit() or "8" in body or "9" in body:
            return None
    else:
        body, base = digits, 10
    body = body.lstrip("0") or "0"
    if len(body) > 64:  # far out of the int64 range (and Python refuses > 4300 digits)
        return sign * (1 << 64)
    return sign * int(body, base)


def parse_float(text: str) -> float:
    """Parse a decimal float as Go's ``strconv.ParseFloat`` (no spaces, no underscores; overflow errs)."""
    if _FLOAT_RE.match(text):
        f = float(text)
        if f in (math.inf, -math.inf):
            raise BQLEvaluationError(f"string '{text}' is out of the range of 'float'")
        return f
    special = _SPECIAL_FLOATS.get(text.lower())
    if special is not None:
        return special
    raise BQLEvaluationError(f"cannot convert string '{text}' to 'float'")


def to_float(v: Any) -> Any:
    t = type(v)
    if t is float or v is None:
        return v
    if t is int:
        return float(v)
    if t is bool:
        return 1.0 if v else 0.0
    if t is str:
        return parse_float(v)
    if t is _dt.datetime:
        return timestamp_to_float(v)
    raise _fail(v, "float")


def to_string(v: Any) -> Any:
    t = type(v)
    if t is str or v is None:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return format_float(v)
    if t is bytes:
        return base64.b64encode(v).decode("ascii")
    if t is _dt.datetime:
        return format_timestamp(v)
    if t is list or t is dict:
        return go_json(v)
    raise _fail(v, "string")


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                 "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_JSON_SPECIAL_RE = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029]')


def _go_json_string(text: str) -> str:
    def escape(m: re.Match) -> str:
        c = m.group()
        return _JSON_ESCAPES.get(c) or f"\\u{ord(c):04x}"

    return '"' + _JSON_SPECIAL_RE.sub(escape, text) + '"'


def go_json(v: Any) -> str:
    """``v`` as SensorBee's ``Array.String()``/``Map.String()`` writes it (Go's ``json.Marshal``): map
    keys sorted, no spaces, floats in Go's shortest ``%v`` form (``1`` for 1.0, ``1e+06``) with NaN and
    ±Inf as ``null``, ``<``, ``>`` and ``&`` escaped as ``\\u003c`` ..., blobs as base64 strings and
    timestamps as RFC3339 strings."""
    t = type(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        if v != v or v in (math.inf, -math.inf):
            return "null"
        return format_float(v)
    if t is str:
        return _go_json_string(v)
    if t is bytes:
        return '"' + base64.b64encode(v).decode("ascii") + '"'
    if t is _dt.datetime:
        return '"' + format_timestamp(v) + '"'
    if t is list:
        return "[" + ",".join(go_json(x) for x in v) + "]"
    if t is dict:
        return "{" + ",".join(_go_json_string(k) + ":" + go_json(v[k]) for k in sorted(v)) + "}"
    from .values import _normalise

    return go_json(_normalise(v))


def to_blob(v: Any) -> Any:
    """A base64 string decoded, or an array of ints 0..255 as its bytes (SensorBee's ``data.ToBlob``)."""
    t = type(v)
    if t is bytes or v is None:
        return v
    if t is list:
        for x in v:
            if type(x) is not int:
                raise BQLEvaluationError(f"cannot convert '{_type_name(x)}' to a byte of a 'blob'")
            if not 0 <= x <= 255:
                raise BQLEvaluationError(f"cannot convert int {x} to a byte of a 'blob'")
        return bytes(v)
    if t is str:
        try:
            # Go's base64.StdEncoding skips '\r' and '\n' anywhere in the input
            return base64.b64decode(v.replace("\r", "").replace("\n", "").encode("ascii"), validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raise BQLEvaluationError(f"cannot decode string '{v}' as base64") from None
    raise _fail(v, "blob")


def to_timestamp(v: Any) -> Any:
    t = type(v)
    if t is _dt.datetime or v is None:
        return v
    if t is int or t is float:
        return epoch_seconds_to_timestamp(v)
    if t is str:
        return parse_timestamp(v)
    raise _fail(v, "timestamp")


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "bool": to_bool,
    "int": to_int,
    "float": to_float,
    "string": to_string,
    "blob": to_blob,
    "timestamp": to_timestamp,
}


def converter(type_name: str) -> Callable[[Any], Any]:
    """The conversion function for a CAST target type (case-insensitive); invalid targets are errors."""
    conv = CONVERTERS.get(type_name.lower())
    if conv is None:
        raise BQLEvaluationError(f"cannot cast to type '{type_name.lower()}'")
    return conv


def cast(value: Any, type_name: str) -> Any:
    """``CAST(value AS type_name)``."""
    return converter(type_name)(value)
