"""Number expressions on the native tier: ``+ - * / %``, unary ``-``, the built-ins ``abs sign sqrt ceil
floor trunc round`` and casts to int or float, as Spark columns with BQL's results.

``native_stage`` compiles a chain's WHERE and select list; an arithmetic expression in either becomes a
*number node* here (``number_node``) and, when the columns are built, three columns per node
(``NumberColumns.value``):

    isint  -- the row's value is an int (every operand an int): a column, or True/False when known
    lv     -- the int value (BIGINT), for the rows where ``isint``
    dv     -- the float value (DOUBLE), for the other rows

with the semantics of ``stage_codegen.number`` (the kernel's ``eval/operators.py``): int op int stays
int — ``/`` truncates toward zero (Spark's ``div``), ``%`` takes the dividend's sign (Java's ``%``) —,
int op float is ``float(int) op float`` in IEEE double arithmetic, which the JVM computes as Python does
(round to nearest, the same conversions: a field's double is the correctly rounded value of its text, as
Python's ``float``; an int64's is Java's ``(double)``, as Python's). Where the kernel would decide
otherwise the value is NULL — an operand that is not a field value of class ``i``/``f``/``d``
(``JsonScan``: a number the pass vouches for; its double from the number key, ``sbpy_key_double``; a
float zero not written ``0.0``, whose sign the key does not keep) or a numeric literal, int64 overflow
(``try_add`` ... give NULL), a zero divisor, ``INT_MIN / -1``, a non-finite float result at any node —,
NULL propagates through every operation above it, and each place that uses a value (a comparison, an
output, an earlier stage's projection: ``double``, ``json``, ``check``) adds "not NULL" to the chain's
guard, so such a row takes the kernel, which then computes (or raises) itself. No column may raise for
any row (ANSI mode fails the batch), so casts are ``try_cast`` and divisors of refused rows are 1.

The functions and casts follow ``builtin_numeric`` and ``conversions`` (``_function``, ``_cast``,
``_integral``): only where the JVM's result is Python's bit for bit, the rest refused row by row.

A node is used as a number in a comparison (``double``: a DOUBLE exact for the row, ints only within
±2^53, the range where BQL's int/float comparisons are double comparisons) or written into the output
line (``json``: an int's digits, a float through ``sbpy_json_double``, ``JsonDouble.java``: orjson's text
or NULL, and then the guard refuses the row).
"""
from __future__ import annotations

import math
from typing import Any

from sbpy.bql.ast import BinaryOp, Cast, FieldRef, FunctionCall, Literal, UnaryOp
from sbpy.bql.runtime.stage_codegen import is_arithmetic
from sbpy.bql.values import INT_MAX, INT_MIN

from .native_udf import DOUBLE_FUNCTION, KEY_FUNCTION

EXACT = 2 ** 53  # every int of at most this magnitude is exact as a double
ZERO_KEY = "8000000000000000"  # ``native_keys.number_key(0.0)``: the key of 0.0 and of -0.0
# the one-argument built-ins compiled here (``builtin_numeric``): the JVM's ``Math.abs``/``sqrt`` and
# integer rounding are Python's exactly; ``exp``, ``ln``, the trigonometric functions ... are not (the
# JVM's and libm's last bits differ), so they stay in Python
FUNCTIONS = ("abs", "ceil", "floor", "round", "sign", "sqrt", "trunc")
CASTS = ("int", "float")  # ``x::int`` / ``x::float`` of a number (a string, bool ... operand is refused)
INTEGRAL = 2.0 ** 52  # every double of at least this magnitude is an integer
TRUNCATES = 2.0 ** 62  # a float below this magnitude converts to an int64 (``to_int``) as Spark's cast does


def compiled(e: Any, functions: Any = None) -> bool:
    """Whether ``e`` is a number node's expression at its top: arithmetic, a call of one of ``FUNCTIONS``
    that ``functions`` (the topology's registry; None: the built-ins) resolves to the built-in, or a cast
    to int or float. Its operands are checked by ``number_node``."""
    if is_arithmetic(e):
        return True
    if type(e) is Cast:
        return e.type_name in CASTS
    return builtin_call(e, FUNCTIONS, functions)


def builtin_call(e: Any, names: tuple[str, ...], functions: Any = None) -> bool:
    """Whether ``e`` is a plain one-argument call of one of ``names`` that ``functions`` (the topology's
    registry; None: the built-ins) resolves to the built-in (a plugin's function under the name: False)."""
    if type(e) is not FunctionCall or e.name not in names or len(e.args) != 1 or e.order_by or e.distinct:
        return False
    from sbpy.bql.functions import builtin_registry

    registry = functions if functions is not None else builtin_registry()
    return registry.get(e.name) is builtin_registry().get(e.name)


class NotNumeric(Exception):
    """The expression has a part that is not arithmetic over fields and numeric literals."""


def number_node(e: Any, value: Any, functions: Any = None) -> tuple:
    """The symbolic node of a number expression: ``("field", slot)``, ``("int", v)``, ``("flt", v)``,
    ``("op", op, x, y)``, ``("neg", x)``, ``("fn", name, x)`` or ``("cast", type, x)``. ``value(field_ref)`` is
    ``native_stage``'s ``_Value`` of a field of the stage's input row (a source slot, a constant, or a
    node an earlier stage computed); ``functions``: the registry calls resolve in (``compiled``)."""
    if isinstance(e, Literal):
        return _literal(e.value)
    if isinstance(e, FieldRef):
        val = value(e)
        if val.slot is not None:
            return ("field", val.slot)
        if val.node is not None:
            return val.node
        return _literal(val.const)
    if not compiled(e, functions):
        raise NotNumeric(describe(e))
    if type(e) is FunctionCall:
        return ("fn", e.name, number_node(e.args[0], value, functions))
    if type(e) is Cast:
        return ("cast", e.type_name, number_node(e.operand, value, functions))
    if type(e) is UnaryOp:
        return ("neg", number_node(e.operand, value, functions))
    assert type(e) is BinaryOp
    return ("op", e.op, number_node(e.left, value, functions), number_node(e.right, value, functions))


def describe(e: Any) -> str:
    """A few words for an expression: ``the function f``, ``a cast to t``, else its node's name."""
    if type(e) is FunctionCall:
        return f"the function {e.name}"
    if type(e) is Cast:
        return f"a cast to {e.type_name}"
    return type(e).__name__


def _literal(v: Any) -> tuple:
    if type(v) is int and INT_MIN <= v <= INT_MAX:
        return ("int", v)
    if type(v) is float and math.isfinite(v):
        return ("flt", v)
    raise NotNumeric(f"a {type(v).__name__} literal")


def node_slots(node: tuple) -> set[int]:
    """The source slots a node reads."""
    if node[0] == "field":
        return {node[1]}
    if node[0] == "neg":
        return node_slots(node[1])
    if node[0] in ("fn", "cast"):
        return node_slots(node[2])
    if node[0] == "op":
        return node_slots(node[2]) | node_slots(node[3])
    return set()


def _and(a: Any, b: Any) -> Any:
    """``a AND b`` where either may be a Python bool (a type known at compile time)."""
    if a is True:
        return b
    if b is True:
        return a
    if a is False or b is False:
        return False
    return a & b


class NumberColumns:
    """Columns of number nodes over one chain's fields (``cls``/``text``/``key``: each slot's class, JSON
    text and number key columns; the slots nodes read are wanted as numbers, so ``key`` is set for the
    classes ``i``, ``f`` and ``d``); every guard a node needs is appended to ``guards``."""

    def __init__(self, cls: list[Any], text: list[Any], key: list[Any], guards: list[Any]):
        self.cls, self.text, self.key, self.guards = cls, text, key, guards
        # the values computed by a JVM function (a field's double, an output's text), each to become a
        # column of its own before the chain's columns read it (``pre``): the guard and the output both
        # read it, and Spark evaluates an expression again in each place it is written
        self.pre: dict[str, Any] = {}
        self.memo: dict[str, tuple[Any, Any, Any]] = {}  # each node's columns, by the node's repr

    def _column(self, name: str, expr: Any) -> Any:
        from pyspark.sql import functions as F

        self.pre.setdefault(name, expr)
        return F.col(name)

    def value(self, node: tuple) -> tuple[Any, Any, Any]:
        """``(isint, lv, dv)`` of a node (see the module doc): ``lv`` is NULL for an int row the kernel
        decides itself, ``dv`` for such a float row — NULL propagates through every operation above, so
        only the places that use a value guard it. A field's and an operation's values are columns of
        their own (``pre``), computed once per line whatever reads them."""
        from pyspark.sql import functions as F

        kind = node[0]
        if kind == "int":
            return True, F.lit(node[1]).cast("long"), None
        if kind == "flt":
            return False, None, F.lit(node[1]).cast("double")
        memo = repr(node)  # (repr: -0.0 and 0.0 are equal keys in a dict)
        if memo in self.memo:
            return self.memo[memo]
        if kind == "field":  # an int's value from its text, any number's double from its number key
            slot = node[1]
            cls, text, key = self.cls[slot], self.text[slot], self.key[slot]
            isint = cls == "i"
            # the key of -0.0 is 0.0's: a float zero counts only as written 0.0 (NULL key: not a number)
            double = F.when((key != ZERO_KEY) | (text == "0.0"), F.call_function(KEY_FUNCTION, key))
            out = (isint, self._column(f"_fl{slot}", F.when(isint, text.try_cast("long"))),
                   self._column(f"_fd{slot}", double))
        elif kind == "neg":
            isint, lv, dv = self.value(node[1])
            n = len(self.memo)
            out = (isint,
                   self._column(f"_nl{n}", F.try_subtract(F.lit(0).cast("long"), lv)) if isint is not False else None,
                   self._column(f"_nd{n}", -dv) if isint is not True else None)
        elif kind == "fn":
            out = self._function(node[1], self.value(node[2]))
        elif kind == "cast":
            out = self._cast(node[1], self.value(node[2]))
        else:
            _op, op, x, y = node
            out = self._binary(op, self.value(x), self.value(y))
        self.memo[memo] = out
        return out

    def _function(self, name: str, v: tuple) -> tuple[Any, Any, Any]:
        """``builtin_numeric``'s one-argument functions: ``sign`` is an int, ``sqrt`` a float (``as_float``
        of an int, then the JVM's correctly rounded ``Math.sqrt``; a negative argument's NaN is refused),
        the others keep the argument's type — ``abs`` of an int is SensorBee's ``int(abs(float(i)))``,
        computed only within ±2^53 where that is ``abs(i)``; rounding an int is the int."""
        from pyspark.sql import functions as F

        n = len(self.memo)
        isint, lv, dv = v
        if name == "sign":  # Math.signum keeps the sign of any int's double, and -0.0 casts to 0
            return True, self._column(f"_nl{n}", F.signum(self._double_any(v)).cast("long")), None
        if name == "sqrt":
            return False, None, self._column(f"_nd{n}", _finite(F.sqrt(self._double_any(v))))
        out_l = out_d = None
        if isint is not False:
            out_l = lv if name != "abs" else \
                self._column(f"_nl{n}", F.when((lv >= -EXACT) & (lv <= EXACT), F.abs(lv)))
        if isint is not True:
            out_d = self._column(f"_nd{n}", F.abs(dv) if name == "abs" else _integral(name, dv))
        return isint, out_l, out_d

    def _cast(self, type_name: str, v: tuple) -> tuple[Any, Any, Any]:
        """``x::float`` (an int's double: Java's conversion rounds as Python's ``float``) and ``x::int``
        (a float truncated toward zero, below 2^62 in magnitude: beyond it the kernel decides)."""
        from pyspark.sql import functions as F

        n = len(self.memo)
        isint, lv, dv = v
        if type_name == "float":
            return False, None, dv if isint is False else self._column(f"_nd{n}", self._double_any(v))
        if isint is True:
            return v
        truncated = F.when(F.abs(dv) < F.lit(TRUNCATES), dv.cast("long"))
        return True, self._column(f"_nl{n}", truncated if isint is False else
                                  F.when(isint, lv).otherwise(truncated)), None

    def _binary(self, op: str, a: tuple, b: tuple) -> tuple[Any, Any, Any]:
        from pyspark.sql import functions as F

        n = len(self.memo)
        isint = _and(a[0], b[0])
        lv = dv = None
        if isint is not False:  # both ints (an overflow is NULL)
            x, y = a[1], b[1]
            if op in ("+", "-", "*"):
                lv = {"+": F.try_add, "-": F.try_subtract, "*": F.try_multiply}[op](x, y)
            else:  # refused rows get NULL; their divisor is 1, so the division never raises
                refused = (y == 0) | ((y == -1) & (x == INT_MIN)) if op == "/" else (y == 0)
                safe = F.when(refused, F.lit(1).cast("long")).otherwise(y)
                lv = F.when(~refused, F.call_function("div", x, safe) if op == "/" else x % safe)
            lv = self._column(f"_nl{n}", lv)
        if isint is not True:  # a float operand: float(a) op float(b); a zero divisor or a non-finite result is NULL
            x, y = self._double_any(a), self._double_any(b)
            if op in ("+", "-", "*"):
                dv = {"+": x + y, "-": x - y, "*": x * y}[op]
            else:
                safe = F.when(y == 0, F.lit(1.0)).otherwise(y)
                dv = F.when(y != 0, x / safe if op == "/" else x % safe)  # Java's double % is C's fmod (``mod``)
            dv = self._column(f"_nd{n}", _finite(dv))
        return isint, lv, dv

    @staticmethod
    def _double_any(v: tuple) -> Any:
        """The value as a double whichever its type (``float(v)``; NULL where the row is refused)."""
        from pyspark.sql import functions as F

        isint, lv, dv = v
        if isint is True:
            return lv.cast("double")
        if isint is False:
            return dv
        return F.when(isint, lv.cast("double")).otherwise(dv)

    def check(self, node: tuple) -> None:
        """Guard a value some stage computes whether or not a later one reads it (the kernel computes an
        earlier stage's projection, and raises where it cannot)."""
        self.guards.append(self._double_any(self.value(node)).isNotNull())

    def double(self, node: tuple) -> Any:
        """The node's value as an exact DOUBLE for comparisons (an int result only within ±2^53); rows
        without one are refused."""
        from pyspark.sql import functions as F

        isint, lv, dv = self.value(node)
        exact = (lv >= -EXACT) & (lv <= EXACT) if isint is not False else None
        if isint is True:
            d = F.when(exact, lv.cast("double"))
        elif isint is False:
            d = dv
        else:
            d = F.when(isint, F.when(exact, lv.cast("double"))).otherwise(dv)
        if node[0] not in ("int", "flt"):
            d = self._column(f"_nc{len(self.pre)}", d)
        self.guards.append(d.isNotNull())
        return d

    def json(self, node: tuple) -> Any:
        """The node's value as the JSON text the kernel's sink would write (NULL: the row is refused)."""
        from pyspark.sql import functions as F

        isint, lv, dv = self.value(node)
        if isint is True:
            text = lv.cast("string")
        else:
            text = F.call_function(DOUBLE_FUNCTION, dv)
            if isint is not False:
                text = F.when(isint, lv.cast("string")).otherwise(text)
        text = self._column(f"_nj{len(self.pre)}", text)
        self.guards.append(text.isNotNull())
        return text


def _finite(d: Any) -> Any:
    """``d`` where it is finite, else NULL (the kernel decides a NaN or an infinity itself)."""
    from pyspark.sql import functions as F

    return F.when(~F.isnan(d) & (F.abs(d) < F.lit(math.inf)), d)


def _integral(name: str, d: Any) -> Any:
    """Go's ``math.Ceil``/``Floor``/``Trunc`` of a finite double (``go_math``), and SensorBee's round
    (``Ceil(d - 0.5)`` below zero, else ``Floor(d + 0.5)``, the addition in doubles): a double of at
    least 2^52 in magnitude is its own result; below, Spark's integer ``ceil``/``floor``/cast, back to a
    double, exact there; a zero result has the sign of the value rounded (``copysign``: ``t * 0.0``)."""
    from pyspark.sql import functions as F

    t = F.when(d < 0, d - 0.5).otherwise(d + 0.5) if name == "round" else d
    if name == "round":
        whole = F.when(d < 0, F.ceil(t)).otherwise(F.floor(t))
    else:
        whole = {"ceil": F.ceil, "floor": F.floor, "trunc": lambda c: c.cast("long")}[name](t)
    r = whole.cast("double")
    return F.when(F.abs(t) < F.lit(INTEGRAL), F.when(r == 0, t * 0.0).otherwise(r)).otherwise(t)
