"""Aggregate states that update when a row joins or leaves a group.

Each state mirrors one built-in of ``functions/builtin_aggregate.py`` exactly — same value, same type,
same error — for the values it *accepts*; a value it does not accept (or an argument whose evaluation
raised) makes the row *irregular* for that aggregate, and while a group has an irregular row the kernel
evaluates that aggregate the reference way (``CompiledAggregate.evaluate`` over the group's rows), which
also raises the reference's error. Rows are identified by their relation position (``pos``); a group's
rows are added in position order, so insertion-ordered dicts iterate in the reference's row order.

- ``count``: the number of non-NULL values; ``count(*)`` just the number of rows (``CountAllState``).
- ``sum``: exact int total; with a float present the reference's left-to-right float sum
  (``0.0 + float(v1) + float(v2) ...``, ``builtin_aggregate.float_sum``) is kept as a *chain*: a row
  joining the group at its end extends it by one addition, the same one the reference makes next; a
  row leaving drops it (float addition is not invertible), and the next result recomputes it over the
  group's values — so a group that only grows costs one addition a row, and one that also loses rows
  one sum over its values per result.
- ``avg``: as ``sum``; an all-int group whose absolute values add up to at most 2**53 needs no recompute
  (every partial float sum is then exact).
- ``max`` / ``min``: a sorted list of ``(value, pos)``; among equal values an int wins, as in the
  reference (SensorBee keeps the largest int and the largest float apart). NaN and ints beyond 2**53
  (whose float may tie with a float they do not equal) are not accepted.
- ``median``: a sorted list of ``(float(value), pos)`` — the reference's stable sort.
- ``bool_and`` / ``bool_or``: counts of true and false values.

``offer(pos, value)`` is ``accepts`` then ``add`` in one call (False: not accepted, nothing added).

Aggregates with ORDER BY, ``array_agg``, ``string_agg``, ``json_object_agg`` and user-defined aggregates
have no state here (``state_factory`` returns None): the kernel re-evaluates them over the group's rows
when the group changes.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from typing import Any, Callable

from ...ast import Wildcard
from ...errors import BQLEvaluationError
from ...functions.builtin_aggregate import SPECS, float_sum, wrap_int64

_BUILTIN_IMPLS = {spec.impl: spec.name for spec in SPECS}
_EXACT_FLOAT_INTS = 1 << 53


def _is_number(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


class CountState:
    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: set[int] = set()

    @staticmethod
    def accepts(v: Any) -> bool:
        return True

    def add(self, pos: int, v: Any) -> None:
        if v is not None:
            self.rows.add(pos)

    def offer(self, pos: int, v: Any) -> bool:
        if v is not None:
            self.rows.add(pos)
        return True

    def remove(self, pos: int) -> None:
        self.rows.discard(pos)

    def result(self) -> Any:
        return len(self.rows)


class CountAllState:
    """``count(*)``: every row counts (its argument is never NULL and never raises)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    @staticmethod
    def accepts(v: Any) -> bool:
        return True

    def add(self, pos: int, v: Any) -> None:
        self.n += 1

    def offer(self, pos: int, v: Any) -> bool:
        self.n += 1
        return True

    def remove(self, pos: int) -> None:
        self.n -= 1

    def result(self) -> Any:
        return self.n


class SumState:
    __slots__ = ("values", "floats", "int_total", "abs_total", "chain")

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}  # non-NULL values by row, in row order
        self.floats = 0
        self.int_total = 0
        self.abs_total = 0
        self.chain: float | None = 0.0  # the values' left-to-right float sum, None when unknown

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        """Unpickle (a snapshot of an older version has no ``chain``)."""
        for name, value in state[1].items():
            setattr(self, name, value)
        if "chain" not in state[1]:
            self.chain = None

    def _extend(self, v: Any) -> None:
        """The chain after ``v`` joined the group at its end (None where the addition raises: an int
        beyond a float's range, whose error the recompute raises)."""
        chain = self.chain
        if chain is not None:
            try:
                self.chain = chain + v
            except OverflowError:
                self.chain = None

    @staticmethod
    def accepts(v: Any) -> bool:
        return v is None or _is_number(v)

    def add(self, pos: int, v: Any) -> None:
        if v is None:
            return
        self.values[pos] = v
        if type(v) is float:
            self.floats += 1
        else:
            self.int_total += v
            self.abs_total += abs(v)
        self._extend(v)

    def offer(self, pos: int, v: Any) -> bool:
        t = type(v)
        if t is float:
            self.values[pos] = v
            self.floats += 1
        elif t is int:
            self.values[pos] = v
            self.int_total += v
            self.abs_total += abs(v)
        else:
            return v is None
        self._extend(v)
        return True

    def remove(self, pos: int) -> None:
        v = self.values.pop(pos, None)
        if v is None:
            return
        self.chain = None if self.values else 0.0
        if type(v) is float:
            self.floats -= 1
        else:
            self.int_total -= v
            self.abs_total -= abs(v)

    def _float_sum(self, name: str = "sum") -> float:
        chain = self.chain
        if chain is not None:
            return chain
        if self.floats == len(self.values):
            chain = float_sum(self.values.values(), 0.0)
        else:
            try:
                chain = float_sum(map(float, self.values.values()), 0.0)
            except OverflowError as err:  # an int beyond a float's range: the reference's error
                raise BQLEvaluationError(f"aggregate '{name}' failed: {err}") from err
        self.chain = chain
        return chain

    def result(self) -> Any:
        if not self.values:
            return None
        if not self.floats:
            return wrap_int64(self.int_total)
        return float(self._float_sum())


class AvgState(SumState):
    __slots__ = ()

    def result(self) -> Any:
        n = len(self.values)
        if not n:
            return None
        if not self.floats and self.abs_total <= _EXACT_FLOAT_INTS:
            return float(self.int_total) / n
        return self._float_sum("avg") / n


class _OrderedState:
    """A sorted list of ``(value, pos)`` plus the value of each row."""

    __slots__ = ("sorted", "values")

    def __init__(self) -> None:
        self.sorted: list[tuple[Any, int]] = []
        self.values: dict[int, Any] = {}

    @staticmethod
    def accepts(v: Any) -> bool:
        return v is None or (_is_number(v) and v == v and -_EXACT_FLOAT_INTS <= v <= _EXACT_FLOAT_INTS)

    def _value(self, v: Any) -> Any:
        return v

    def add(self, pos: int, v: Any) -> None:
        if v is None:
            return
        v = self._value(v)
        self.values[pos] = v
        insort(self.sorted, (v, pos))

    def offer(self, pos: int, v: Any) -> bool:
        if v is None:
            return True
        t = type(v)
        if (t is not int and t is not float) or v != v or not -_EXACT_FLOAT_INTS <= v <= _EXACT_FLOAT_INTS:
            return False
        self.add(pos, v)
        return True

    def remove(self, pos: int) -> None:
        v = self.values.pop(pos, None)
        if v is None:
            return
        i = bisect_left(self.sorted, (v, pos))
        del self.sorted[i]


def _int_among_equal(s: list, indexes: range) -> Any:
    """The value at the first index; an int equal to it when one is found first (an int wins a tie)."""
    top = s[indexes[0]][0]
    for i in indexes:
        v = s[i][0]
        if v != top:
            break
        if type(v) is int:
            return v
    return top


class MaxState(_OrderedState):
    __slots__ = ()

    def result(self) -> Any:
        s = self.sorted
        return _int_among_equal(s, range(len(s) - 1, -1, -1)) if s else None


class MinState(_OrderedState):
    __slots__ = ()

    def result(self) -> Any:
        s = self.sorted
        return _int_among_equal(s, range(len(s))) if s else None


class MedianState(_OrderedState):
    __slots__ = ()

    def _value(self, v: Any) -> Any:
        return float(v)

    def result(self) -> Any:
        s = self.sorted
        n = len(s)
        if n == 0:
            return None
        mid = n // 2
        if n % 2:
            return s[mid][0]
        return (s[mid - 1][0] + s[mid][0]) / 2.0


class _BoolState:
    __slots__ = ("values", "trues")

    def __init__(self) -> None:
        self.values: dict[int, bool] = {}
        self.trues = 0

    @staticmethod
    def accepts(v: Any) -> bool:
        return v is None or type(v) is bool

    def add(self, pos: int, v: Any) -> None:
        if v is None:
            return
        self.values[pos] = v
        if v:
            self.trues += 1

    def offer(self, pos: int, v: Any) -> bool:
        if v is None:
            return True
        if type(v) is not bool:
            return False
        self.add(pos, v)
        return True

    def remove(self, pos: int) -> None:
        v = self.values.pop(pos, None)
        if v:
            self.trues -= 1


class BoolAndState(_BoolState):
    __slots__ = ()

    def result(self) -> Any:
        return self.trues == len(self.values) if self.values else None


class BoolOrState(_BoolState):
    __slots__ = ()

    def result(self) -> Any:
        return self.trues > 0 if self.values else None


STATES: dict[str, Callable[[], Any]] = {
    "count": CountState, "sum": SumState, "avg": AvgState, "max": MaxState, "min": MinState,
    "median": MedianState, "bool_and": BoolAndState, "bool_or": BoolOrState,
}


def state_factory(agg: Any) -> Callable[[], Any] | None:
    """The state class of a compiled aggregate, or None when it is re-evaluated over its group."""
    if agg.call.order_by:
        return None
    name = _BUILTIN_IMPLS.get(agg.spec.impl)
    if name is None or name != agg.spec.name:
        return None
    if name == "count":
        arg = agg.call.args[0]
        if type(arg) is Wildcard and arg.stream is None:
            return CountAllState
    return STATES.get(name)
