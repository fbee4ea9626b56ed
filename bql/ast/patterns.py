"""MATCH_RECOGNIZE nodes: the clause itself and the row pattern algebra.

Pattern variable names are stored upper-case (variables are case-insensitive identifiers and
CLASSIFIER() returns the upper-case name).
"""
from __future__ import annotations

from .base import Node, node
from .expressions import Expr, SortKey

# ---------------------------------------------------------------- row pattern terms


class PatternTerm(Node):
    """Marker base of row pattern terms."""

    __slots__ = ()


@node
class PatternVar(PatternTerm):
    """A primary row pattern variable, e.g. ``A``."""

    name: str


@node
class PatternEmpty(PatternTerm):
    """``()``: the empty pattern."""


@node
class PatternAnchor(PatternTerm):
    """``^`` (kind ``"start"``) or ``$`` (kind ``"end"``) of the partition."""

    kind: str


@node
class PatternConcat(PatternTerm):
    """``a b c``."""

    items: tuple[PatternTerm, ...]


@node
class PatternAlt(PatternTerm):
    """``a | b | c``: the leftmost alternative is preferred."""

    items: tuple[PatternTerm, ...]


@node
class PatternPermute(PatternTerm):
    """``PERMUTE(a, b, c)``: all orders, the lexicographically first preferred."""

    items: tuple[PatternTerm, ...]


@node
class PatternExclusion(PatternTerm):
    """``{- a -}``: matched rows are left out of ALL ROWS PER MATCH output."""

    term: PatternTerm


@node
class PatternQuantified(PatternTerm):
    """``term`` with a quantifier: ``*`` = (0, None), ``+`` = (1, None), ``?`` = (0, 1), ``{n,m}``.

    ``max_count`` None is unbounded. ``reluctant`` for a trailing ``?``.
    """

    term: PatternTerm
    min_count: int
    max_count: int | None
    reluctant: bool = False


# ---------------------------------------------------------------- clause parts


@node
class Measure(Node):
    """``expr AS name`` in MEASURES."""

    expr: Expr
    alias: str


@node
class SubsetDef(Node):
    """``SUBSET U = (A, B)``."""

    name: str
    variables: tuple[str, ...]


@node
class VariableDef(Node):
    """``A AS condition`` in DEFINE."""

    name: str
    condition: Expr


@node
class MatchSetting(Node):
    """``name = value`` in a MATCH_RECOGNIZE ``SETTINGS`` clause (the ORDER BY reorder buffer's
    settings: ``runtime/match/time_order.py``). ``name`` is lower-case; ``value`` is a number, a str
    or an ``Interval``."""

    name: str
    value: object


@node
class AfterMatchSkip(Node):
    """``AFTER MATCH SKIP ...``; ``mode`` is ``past_last_row``, ``to_next_row``, ``to_first``,
    ``to_last`` or ``to`` (the last three name ``var``)."""

    mode: str = "past_last_row"
    var: str | None = None


@node
class Interval(Node):
    """``n SECONDS | MILLISECONDS`` (also used by WITHIN and the Timeplus windows).

    A Timeplus shorthand (``5s``, ``1m``, ``2h``, ``1d``, ``1w``, ``500ms``) is stored normalised to
    seconds / milliseconds, with ``shorthand`` keeping the text as written (unparse, week alignment)."""

    value: int | float
    unit: str  # "seconds" | "milliseconds"
    shorthand: str | None = None

    def seconds(self) -> float:
        return self.value / 1000.0 if self.unit == "milliseconds" else float(self.value)
