"""Static facts about a row pattern, used by the MATCH_RECOGNIZE rules.

``first_always``: the variables that map the first row of *every* match (``A`` in ``A B+``, nothing in
``A? B``). ``max_rows``: how many rows a variable can map in one match (None = unbounded).
``nullable``: whether the term can match zero rows.
"""
from __future__ import annotations

from ..ast import (
    PatternAlt,
    PatternAnchor,
    PatternConcat,
    PatternEmpty,
    PatternExclusion,
    PatternPermute,
    PatternQuantified,
    PatternTerm,
    PatternVar,
)

INF = float("inf")


def nullable(t: PatternTerm) -> bool:
    if isinstance(t, PatternVar):
        return False
    if isinstance(t, (PatternEmpty, PatternAnchor)):
        return True
    if isinstance(t, (PatternConcat, PatternPermute)):
        return all(nullable(i) for i in t.items)
    if isinstance(t, PatternAlt):
        return any(nullable(i) for i in t.items)
    if isinstance(t, PatternQuantified):
        return t.min_count == 0 or nullable(t.term)
    if isinstance(t, PatternExclusion):
        return nullable(t.term)
    return True


def first_always(t: PatternTerm) -> set[str]:
    """Variables certain to map the first row of a non-empty match of ``t``."""
    if isinstance(t, PatternVar):
        return {t.name.upper()}
    if isinstance(t, (PatternEmpty, PatternAnchor)):
        return set()
    if isinstance(t, PatternConcat):
        return _first_of_seq(list(t.items))
    if isinstance(t, PatternAlt):
        return _intersect([first_always(i) for i in t.items])
    if isinstance(t, PatternPermute):
        return _intersect([first_always(i) for i in t.items]) if t.items else set()
    if isinstance(t, (PatternQuantified, PatternExclusion)):
        return first_always(t.term)
    return set()


def _first_of_seq(items: list[PatternTerm]) -> set[str]:
    while items and isinstance(items[0], (PatternAnchor, PatternEmpty)):
        items = items[1:]
    if not items:
        return set()
    head = first_always(items[0])
    if not nullable(items[0]):
        return head
    rest = items[1:]
    if not rest or all(nullable(i) for i in rest):
        return set()
    return head & _first_of_seq(rest)


def _intersect(sets: list[set[str]]) -> set[str]:
    if not sets:
        return set()
    out = set(sets[0])
    for s in sets[1:]:
        out &= s
    return out


def max_rows(t: PatternTerm, var: str) -> float:
    """Upper bound of the rows ``var`` maps in one match of ``t`` (INF if unbounded)."""
    if isinstance(t, PatternVar):
        return 1 if t.name.upper() == var else 0
    if isinstance(t, (PatternConcat, PatternPermute)):
        return sum(max_rows(i, var) for i in t.items)
    if isinstance(t, PatternAlt):
        return max((max_rows(i, var) for i in t.items), default=0)
    if isinstance(t, PatternQuantified):
        inner = max_rows(t.term, var)
        if inner == 0:
            return 0
        return INF if t.max_count is None else inner * t.max_count
    if isinstance(t, PatternExclusion):
        return max_rows(t.term, var)
    return 0


def quantified_terms(t: PatternTerm):
    """Every quantified sub-term."""
    for n in t.walk():
        if isinstance(n, PatternQuantified):
            yield n


def has_exclusion(t: PatternTerm) -> bool:
    return any(isinstance(n, PatternExclusion) for n in t.walk())
