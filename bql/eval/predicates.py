"""The SQL predicates BQL borrows: ``x [NOT] IN (...)``, ``x [NOT] BETWEEN a AND b``, ``x [NOT] LIKE p``.

SensorBee has none of them; their meaning is SQL's definition spelled with BQL's own operators, so
every NULL, type and error rule is the one of the operator it abbreviates (``operators.py``):

- ``x IN (e1, ..., en)`` is ``x = e1 OR ... OR x = en``: BQL's ``=`` (NULL on a NULL side, different
  types unequal except int/float, deep equality of arrays and maps) and its left-first OR, so items
  after the first equal one are not evaluated. TRUE if an item equals ``x``, else NULL if some ``=``
  was NULL, else FALSE. ``x`` is evaluated once.
- ``x BETWEEN lo AND hi`` is ``x >= lo AND x <= hi``: BQL's ordering (numbers, or two values of one
  of string/timestamp/bool; other pairs are an error) and its left-first AND, so ``hi`` is not
  evaluated when ``x >= lo`` is FALSE. ``x`` is evaluated once.
- ``x LIKE p [ESCAPE c]`` matches the whole string ``x`` against ``p``: ``%`` any run of characters
  (newlines too), ``_`` exactly one character, everything else itself (case-sensitive); the escape
  character ``c`` (one character) makes the next ``%``, ``_`` or ``c`` literal, and anything else after
  it is an error (Trino's rule). A NULL operand, pattern or escape gives NULL (checked first, as for
  ``||``); a non-string operand or pattern is an error.
- ``NOT IN`` / ``NOT BETWEEN`` / ``NOT LIKE`` are ``NOT`` of the positive form (NULL stays NULL).

``tests/bql/test_sql_predicates.py`` checks IN and BETWEEN against those OR/AND expressions compiled
by the same compiler, and LIKE against an independent matcher.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..errors import BQLEvaluationError
from ..values import type_name
from .operators import eq, ge, le, not_

Compiled = Callable[[Any], Any]


def in_list(operand: Compiled, items: list[Compiled], negated: bool) -> Compiled:
    """The closure of ``operand [NOT] IN (items)``."""

    def member(env: Any) -> Any:
        x = operand(env)
        unknown = False
        for item in items:
            r = eq(x, item(env))
            if r is True:
                return True
            if r is None:
                unknown = True
        return None if unknown else False

    if not negated:
        return member
    return lambda env: not_(member(env))


def in_constants(operand: Compiled, values: tuple, negated: bool) -> Compiled:
    """``in_list`` for items that are all literals (scalars): the same answers, with a set lookup when
    ``x`` is a string, or an int and no item is a float (``1 IN (true)`` stays false: the sets hold
    exactly the items of that type, and an int item never equals a float ``x`` by Python's rules where
    BQL's would differ)."""
    strs = frozenset(v for v in values if type(v) is str)
    ints = frozenset(v for v in values if type(v) is int)
    unknown = None if any(v is None for v in values) else False
    ints_exact = not any(type(v) is float for v in values)

    def member(env: Any) -> Any:
        x = operand(env)
        t = type(x)
        if t is str:
            return True if x in strs else unknown
        if t is int and ints_exact:
            return True if x in ints else unknown
        seen_null = False
        for v in values:
            r = eq(x, v)
            if r is True:
                return True
            if r is None:
                seen_null = True
        return None if seen_null else False

    if not negated:
        return member
    return lambda env: not_(member(env))


def between(operand: Compiled, low: Compiled, high: Compiled, negated: bool) -> Compiled:
    """The closure of ``operand [NOT] BETWEEN low AND high``."""

    def within(env: Any) -> Any:
        x = operand(env)
        above = ge(x, low(env))
        if above is False:
            return False
        below = le(x, high(env))
        if below is False:
            return False
        if above is None or below is None:
            return None
        return True

    if not negated:
        return within
    return lambda env: not_(within(env))


def like(operand: Compiled, pattern: Compiled, escape: Compiled | None, negated: bool) -> Compiled:
    """The closure of ``operand [NOT] LIKE pattern [ESCAPE escape]``."""

    def matches(env: Any) -> Any:
        x = operand(env)
        p = pattern(env)
        e = escape(env) if escape is not None else None
        if x is None or p is None or (escape is not None and e is None):
            return None
        if type(x) is not str or type(p) is not str:
            raise BQLEvaluationError(f"cannot apply 'LIKE' to '{type_name(x)}' and '{type_name(p)}'")
        return like_regex(p, check_escape(e)).fullmatch(x) is not None

    if not negated:
        return matches
    return lambda env: not_(matches(env))


def check_escape(escape: Any) -> str | None:
    """The escape character of a LIKE (None: no ESCAPE clause); anything but one character is an error."""
    if escape is None:
        return None
    if type(escape) is not str:
        raise BQLEvaluationError(f"the ESCAPE of LIKE must be a string, not '{type_name(escape)}'")
    if len(escape) != 1:
        raise BQLEvaluationError(f"the ESCAPE of LIKE must be one character, got {len(escape)}")
    return escape


@lru_cache(maxsize=256)
def like_regex(pattern: str, escape: str | None) -> re.Pattern:
    """The compiled regular expression of a LIKE pattern (cached: patterns are usually constants)."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == escape:
            if i + 1 == n or pattern[i + 1] not in ("%", "_", escape):
                raise BQLEvaluationError(
                    "in a LIKE pattern the escape character must be followed by '%', '_' or itself")
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "%":
            if not out or out[-1] != ".*":  # "%%" is "%": fewer ways to backtrack
                out.append(".*")
        else:
            out.append("." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)
