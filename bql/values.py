"""BQL values in Python: type names, the MISSING sentinel, equality, ordering and multiset keys.

The nine BQL types map to Python as: NULL ``None``, bool ``bool``, int ``int`` (int64 range), float
``float``, string ``str``, blob ``bytes``, timestamp aware-UTC ``datetime.datetime`` (µs), array
``list``, map ``dict[str, ...]``. ``MISSING`` marks a field selector that found nothing; it exists only
inside the evaluator (``IS [NOT] MISSING``) and never escapes into a tuple.

Conversions (``cast``) live in ``conversions.py`` and JSON (``to_json``/``from_json``) in ``jsonio.py``;
both are re-exported here, which is the contract module other packages import.
"""
from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from .errors import BQLEvaluationError

INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1

TYPE_NAMES = ("null", "bool", "int", "float", "string", "blob", "timestamp", "array", "map")


class _Missing:
    """The value of a field selector that finds nothing (a singleton)."""

    __slots__ = ()
    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"


MISSING = _Missing()

_TYPE_OF = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    str: "string",
    bytes: "blob",
    _dt.datetime: "timestamp",
    list: "array",
    dict: "map",
}


def type_name(value: Any) -> str:
    """The BQL type name of a value (``null``, ``int``, ``map`` ...)."""
    name = _TYPE_OF.get(type(value))
    if name is not None:
        return name
    if value is MISSING:
        return "missing"
    # subclasses (e.g. bytearray, OrderedDict, tuple read from plugins)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "blob"
    if isinstance(value, _dt.datetime):
        return "timestamp"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "map"
    raise BQLEvaluationError(f"unsupported value type '{type(value).__name__}'")


def is_number(value: Any) -> bool:
    """True for int and float (never bool)."""
    t = type(value)
    return t is int or t is float


def check_int(value: int) -> int:
    """``value`` if it fits int64, else an overflow error."""
    if INT_MIN <= value <= INT_MAX:
        return value
    raise BQLEvaluationError("integer overflow")


# ---------------------------------------------------------------- equality


def _deep_equal(a: Any, b: Any) -> bool:
    """Equality inside arrays/maps: NULL equals NULL, int/float compare numerically, NaN never equal."""
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is list:
            return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b))
        if ta is dict:
            if len(a) != len(b):
                return False
            for k, v in a.items():
                if k not in b or not _deep_equal(v, b[k]):
                    return False
            return True
        return a == b  # NaN != NaN, None == None
    if (ta is int and tb is float) or (ta is float and tb is int):
        return float(a) == float(b)
    return False


def values_equal(a: Any, b: Any) -> bool:
    """SensorBee's ``data.Equal``: two-valued equality where NULL equals NULL (used inside arrays and
    maps, and by ``CASE x WHEN y``); int/float compare as floats; NaN never equals anything."""
    return _deep_equal(a, b)


def bql_equal(a: Any, b: Any) -> bool | None:
    """``a = b`` in three-valued logic: NULL on either side gives None; different types are not equal
    (except int/float, compared as floats); arrays and maps compare deeply with NULL = NULL inside."""
    if a is None or b is None:
        return None
    return _deep_equal(a, b)


_ORDERED = {str, _dt.datetime, bool}


def bql_less(a: Any, b: Any, op: str = "<") -> bool | None:
    """Ordering comparison ``a op b`` for op in ``< <= > >=``: numbers with numbers (an int is converted
    to float when the other side is a float, as Go's ``float64(l) < r``), or the same comparable type
    (string, timestamp, and bool with ``false < true`` as in SensorBee's ``newLess`` and its
    ``TestEvaluators`` table); NULL gives None; other pairs (blob, array, map, mixed types) are an
    error. NaN compares false with every operator (the reference document's NaN note)."""
    if a is None or b is None:
        return None
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        if ta is not tb:
            a, b = float(a), float(b)
    elif ta is not tb or ta not in _ORDERED:
        raise BQLEvaluationError(
            f"cannot compare '{type_name(a)}' and '{type_name(b)}' with '{op}'"
        )
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def sort_key(value: Any) -> tuple:
    """A total-order key for ORDER BY inside aggregates: NULLs last (ASC), numbers by value, then by type.

    Values of incomparable types are ordered by type name so that sorting never fails.
    """
    if value is None:
        return (2, 0, 0)
    t = type(value)
    if t is int or t is float:
        if t is float and math.isnan(value):
            return (1, "0nan", 0)
        return (0, "", value)
    if t is str or t is _dt.datetime or t is bool or t is bytes:
        return (1, type_name(value), value)
    from .jsonio import to_json

    return (1, type_name(value), to_json(value))


_SENSORBEE_TYPE_RANK = {type(None): 0, bool: 1, int: 2, float: 2, str: 3, bytes: 4, _dt.datetime: 5, list: 6,
                        dict: 7}


def sensorbee_sort_key(value: Any) -> tuple:
    """SensorBee's ``data.Less`` as a key, the order of ``ORDER BY`` inside an aggregate call
    (bql/execution/sort.go sorts with ``data.Equal``/``data.Less``, data/hash.go):
    NULL < bool < int/float < string < blob < timestamp < array < map; false < true; numbers by value
    (int and float compared); strings bytewise; blobs, arrays and maps by length first (then by their
    JSON text, where SensorBee compares hash values -- an order it leaves unspecified). NULL is the
    smallest value, so it comes first ascending and last descending."""
    t = type(value)
    rank = _SENSORBEE_TYPE_RANK.get(t, 8)
    if rank == 2:
        return (2, 0, value) if value == value else (2, -1, 0)
    if rank in (1, 3, 5):
        return (rank, 0, value)
    if rank in (4, 6, 7):
        from .jsonio import to_json

        return (rank, len(value), to_json(value))
    return (rank, 0, 0)


# ---------------------------------------------------------------- multiset keys


def multiset_key(value: Any) -> Any:
    """A hashable key such that two values share a key iff they are equal as emitted rows.

    int 2 and float 2.0 share a key; NULL equals NULL inside arrays and maps; bool differs from int;
    every NaN occurrence gets a fresh, unique key (NaN is never equal to anything).
    """
    t = type(value)
    if t is int:
        return value  # equal and hash-equal to the float of the same value
    if t is float:
        if value != value:
            return ("nan", object())
        return value
    if t is str:
        return ("s", value)
    if value is None:
        return ("null",)
    if t is bool:
        return ("b", value)
    if t is dict:
        return ("m", frozenset((k, multiset_key(v)) for k, v in value.items()))
    if t is list:
        return ("a", tuple(multiset_key(v) for v in value))
    if t is bytes:
        return ("x", value)
    if t is _dt.datetime:
        return ("t", value)
    return multiset_key(_normalise(value))


def _normalise(value: Any) -> Any:
    """Coerce plugin-provided subclasses to the canonical Python types."""
    name = type_name(value)
    if name == "array":
        return list(value)
    if name == "map":
        return dict(value)
    if name == "blob":
        return bytes(value)
    if name == "int":
        return int(value)
    if name == "float":
        return float(value)
    if name == "string":
        return str(value)
    if name == "bool":
        return bool(value)
    return value


from .conversions import cast, format_float, format_timestamp, parse_timestamp  # noqa: E402
from .jsonio import from_json, to_json  # noqa: E402

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MISSING",
    "TYPE_NAMES",
    "bql_equal",
    "bql_less",
    "cast",
    "check_int",
    "format_float",
    "format_timestamp",
    "from_json",
    "is_number",
    "multiset_key",
    "parse_timestamp",
    "sensorbee_sort_key",
    "sort_key",
    "to_json",
    "type_name",
    "values_equal",
]
