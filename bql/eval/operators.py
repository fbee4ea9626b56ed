"""BQL operators on values: arithmetic, ``||``, comparisons and Kleene logic.

Semantics (SensorBee's): NULL propagates through arithmetic, ``||`` and comparisons; int op int stays
int (``/`` truncates toward zero, ``%`` takes the dividend's sign as in Go; division or modulo by int
zero and int64 overflow are errors); int op float is float (IEEE: ``1.0 / 0`` is +Inf, ``%`` is
``fmod``); bools are not numbers; ``||`` accepts only strings. Ordering compares numbers, strings,
timestamps and bools (``false < true``). AND/OR accept only bool or NULL and decide from the left
operand first as SensorBee's ``and``/``or`` evaluators do: ``false AND x`` is false and ``true OR x``
is true whatever ``x`` is (the compiler does not even evaluate ``x``, see ``lazy_and``/``lazy_or``).

Int64 overflow stays an error (the reference document: "Using an integer value out of this range
results in an error"), although SensorBee's Go code wraps around silently.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from ..errors import BQLEvaluationError
from ..values import INT_MAX, INT_MIN, bql_equal, bql_less, type_name


def _type_error(op: str, a: Any, b: Any) -> BQLEvaluationError:
    return BQLEvaluationError(f"cannot apply '{op}' to '{type_name(a)}' and '{type_name(b)}'")


def _overflow(op: str) -> BQLEvaluationError:
    return BQLEvaluationError(f"integer overflow in '{op}'")


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        r = a + b
        if INT_MIN <= r <= INT_MAX:
            return r
        raise _overflow("+")
    if (ta is float or ta is int) and (tb is float or tb is int):
        return float(a) + float(b)
    if a is None or b is None:
        return None
    raise _type_error("+", a, b)


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        r = a - b
        if INT_MIN <= r <= INT_MAX:
            return r
        raise _overflow("-")
    if (ta is float or ta is int) and (tb is float or tb is int):
        return float(a) - float(b)
    if a is None or b is None:
        return None
    raise _type_error("-", a, b)


def mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        r = a * b
        if INT_MIN <= r <= INT_MAX:
            return r
        raise _overflow("*")
    if (ta is float or ta is int) and (tb is float or tb is int):
        return float(a) * float(b)
    if a is None or b is None:
        return None
    raise _type_error("*", a, b)


def int_div(a: int, b: int) -> int:
    """Go's integer division: truncation toward zero; zero divisor and overflow are errors."""
    if b == 0:
        raise BQLEvaluationError("division by zero")
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    if q > INT_MAX:
        raise _overflow("/")
    return q


def int_mod(a: int, b: int) -> int:
    """Go's ``%``: the remainder takes the sign of the dividend; zero divisor is an error."""
    if b == 0:
        raise BQLEvaluationError("division by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def float_div(a: float, b: float) -> float:
    """IEEE division (Go semantics): x/0 is ±Inf, 0/0 NaN."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0.0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def div(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return int_div(a, b)
    if (ta is float or ta is int) and (tb is float or tb is int):
        return float_div(float(a), float(b))
    if a is None or b is None:
        return None
    raise _type_error("/", a, b)


def mod(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return int_mod(a, b)
    if (ta is float or ta is int) and (tb is float or tb is int):
        try:
            return math.fmod(float(a), float(b))
        except ValueError:
            return math.nan
    if a is None or b is None:
        return None
    raise _type_error("%", a, b)


def concat(a: Any, b: Any) -> Any:
    if type(a) is str and type(b) is str:
        return a + b
    if a is None or b is None:  # NULL is checked first, whatever the other operand is
        return None
    raise _type_error("||", a, b)


def neg(a: Any) -> Any:
    t = type(a)
    if t is int:
        if a == INT_MIN:
            raise _overflow("-")
        return -a
    if t is float:
        return -a
    if a is None:
        return None
    raise BQLEvaluationError(f"cannot apply unary '-' to '{type_name(a)}'")


_SIMPLE = frozenset((int, float, str, bool))
_ORDERABLE = frozenset((int, float, str, bool))


def eq(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b) and ta in _SIMPLE:
        return a == b
    return bql_equal(a, b)


def ne(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b) and ta in _SIMPLE:
        return a != b
    r = bql_equal(a, b)
    return None if r is None else not r


def lt(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b) and ta in _ORDERABLE:
        return a < b
    return bql_less(a, b, "<")


def le(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b) and ta in _ORDERABLE:
        return a <= b
    return bql_less(a, b, "<=")


def gt(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b) and ta in _ORDERABLE:
        return a > b
    return bql_less(a, b, ">")


def ge(a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b) and ta in _ORDERABLE:
        return a >= b
    return bql_less(a, b, ">=")


def _logic_error(op: str, v: Any) -> BQLEvaluationError:
    return BQLEvaluationError(f"'{op}' needs bool operands, got '{type_name(v)}'")


def _check_bool(op: str, v: Any) -> None:
    if v is not None and type(v) is not bool:
        raise _logic_error(op, v)


def and_(a: Any, b: Any) -> Any:
    """``a AND b`` given both values, with SensorBee's left-first rule (``and.Eval``): a false left
    operand decides without looking at the right one (``false AND 1`` is false); otherwise both must
    be bool or NULL."""
    _check_bool("and", a)
    if a is False:
        return False
    _check_bool("and", b)
    if b is False:
        return False
    if a is None or b is None:
        return None
    return True


def or_(a: Any, b: Any) -> Any:
    """``a OR b`` given both values, with SensorBee's left-first rule (``or.Eval``): a true left operand
    decides without looking at the right one (``true OR 1`` is true); otherwise both must be bool or
    NULL."""
    _check_bool("or", a)
    if a is True:
        return True
    _check_bool("or", b)
    if b is True:
        return True
    if a is None or b is None:
        return None
    return False


def lazy_and(lf: Callable[[Any], Any], rf: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The closure of ``l AND r`` that evaluates ``r`` only when ``l`` is not false: the right operand's
    errors (a missing field, a type error) do not matter after a false left operand."""

    def f(env: Any) -> Any:
        a = lf(env)
        _check_bool("and", a)
        if a is False:
            return False
        return and_(a, rf(env))

    return f


def lazy_or(lf: Callable[[Any], Any], rf: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The closure of ``l OR r`` that evaluates ``r`` only when ``l`` is not true (SensorBee's
    ``or.Eval``)."""

    def f(env: Any) -> Any:
        a = lf(env)
        _check_bool("or", a)
        if a is True:
            return True
        return or_(a, rf(env))

    return f


def not_(a: Any) -> Any:
    if a is None:
        return None
    if type(a) is bool:
        return not a
    raise _logic_error("not", a)


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": add,
    "-": sub,
    "*": mul,
    "/": div,
    "%": mod,
    "||": concat,
    "=": eq,
    "!=": ne,
    "<>": ne,
    "<": lt,
    "<=": le,
    ">": gt,
    ">=": ge,
    "and": and_,
    "or": or_,
}

UNARY: dict[str, Callable[[Any], Any]] = {"-": neg, "not": not_, "+": lambda a: _unary_plus(a)}


def _unary_plus(a: Any) -> Any:
    if a is None or type(a) is int or type(a) is float:
        return a
    raise BQLEvaluationError(f"cannot apply unary '+' to '{type_name(a)}'")
