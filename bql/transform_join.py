"""Parse tree → AST for ``JOIN`` in FROM: a join chain is rewritten into what SensorBee already runs.

SensorBee's only join is the cross product of the windows listed in FROM, filtered by WHERE. The
SQL spelling is sugar for it (docs/sql-breadth.md, "JOIN ... ON"):

    SELECT ... FROM a [RANGE ...] [AS x] [INNER] JOIN b [RANGE ...] [AS y] ON c1 [JOIN ... ON c2] WHERE w

is the Select of ``FROM a ..., b ..., ... WHERE (c1) AND (c2) AND (w)`` — the ON conditions in the
order written, then the WHERE clause, joined by BQL's left-to-right ``AND``. ``USING (k1, k2)`` is
``ON first:k1 = right:k1 AND first:k2 = right:k2``, ``first`` being the chain's first relation (the
one an inner join's merged column equals). ``CROSS JOIN b`` is ``, b``.

``a LEFT [OUTER] JOIN b ON c`` cannot be a WHERE conjunct (a row of ``a`` without a match is kept,
NULL-padded): the Select gets FROM ``a, b`` and ``left_join_on = c``, and the LEFT JOIN kernel
(``runtime/left_join.py``) computes it. ``a RIGHT JOIN b ON c`` is ``b LEFT JOIN a ON c``. A LEFT JOIN
joins exactly two relations, each a stream, UDSF or subquery with a RANGE window.

Refused here, with the position of the offending word: FULL [OUTER] JOIN, a JOIN without ON or USING,
CROSS JOIN with a condition, an ON condition naming a relation that is not joined at that point
(SQL's scope: the chain's relations up to and including the JOIN's own), a LEFT JOIN in a chain of
more than two relations or next to other FROM entries, and a LEFT JOIN of a relation without RANGE.
"""
from __future__ import annotations

import dataclasses
import re

from lark import Token

from .ast import (
    BinaryOp,
    Expr,
    FieldRef,
    FromItem,
    HistoryTable,
    KeyStep,
    MatchRecognize,
    Node,
    StreamRef,
    SubqueryRef,
    TimestampRef,
    UdsfCall,
    Wildcard,
    WindowFunction,
)
from .errors import Span
from .transform_base import StaticSyntaxError, fail, span_of

_JOIN_WORD = re.compile(r"join", re.IGNORECASE)

FULL_JOIN_REASON = (
    "{kind} JOIN is not supported: sbpy has inner, LEFT and RIGHT joins of windows; "
    "write a LEFT JOIN and a RIGHT JOIN as two SELECTs (UNION ALL)"
)
LEFT_JOIN_PAIR = ("a {kind} JOIN joins exactly two relations; join more in a CREATE STREAM or a "
                  "subquery that reads the {kind} JOIN's output")


@dataclasses.dataclass(frozen=True)
class JoinChain:
    """A FROM entry ``a JOIN b ON c1 JOIN c ...`` while it is built: its relations in order and the
    conditions its joins add (in the order written). Not an AST node: ``flatten_joins`` dissolves it
    into the Select's FROM items and WHERE clause."""

    items: tuple[FromItem, ...]
    conditions: tuple[Expr, ...]
    left_on: Expr | None = None  # a LEFT JOIN's ON condition (the chain is then its two relations)
    outer_word: str = "LEFT"  # how that join was written (LEFT or RIGHT), for errors


class JoinRules:
    """Transformer rules for the join forms of a FROM entry (mixed into ``BQLTransformer``)."""

    def join_type(self, meta, *toks):
        return (" ".join(str(t).upper() for t in toks), toks[0])

    def join_on(self, meta, expr):
        return ("on", expr, meta)

    def join_using(self, meta, *names):
        return ("using", names, meta)

    def join(self, meta, left, kind, right, condition):
        chain = left if isinstance(left, JoinChain) else JoinChain((left,), ())
        word, word_tok = kind if kind is not None else ("INNER", None)
        base = word.split()[0]
        if base == "FULL":
            raise fail(FULL_JOIN_REASON.format(kind=word), word_tok)
        if chain.left_on is not None:
            at = self._join_word(chain.items, right) or span_of(word_tok or right)
            raise StaticSyntaxError(LEFT_JOIN_PAIR.format(kind=chain.outer_word), at)
        if base in ("LEFT", "RIGHT") and len(chain.items) > 1:
            raise fail(LEFT_JOIN_PAIR.format(kind=base), word_tok)
        items = (*chain.items, right)
        if base == "CROSS":
            if condition is not None:
                raise fail(f"CROSS JOIN takes no {condition[0].upper()} condition", condition[2])
            return JoinChain(items, chain.conditions)
        if condition is None:
            at = self._join_word(chain.items, right) or span_of(word_tok or right)
            raise StaticSyntaxError("JOIN needs a condition: ON <condition> or USING (<field>, ...) "
                                    "(CROSS JOIN for the cross product)", at)
        form, value, cond_meta = condition
        names = [_item_name(i) for i in items]
        if form == "using":
            cond = _using(value, names[0], names[-1], cond_meta)
        else:
            _check_scope(value, names)
            cond = value
        if base in ("LEFT", "RIGHT"):
            tail = any(isinstance(i, HistoryTable) for i in items)  # Timeplus: s LEFT JOIN table(t), s bare
            for item in items:
                if not (tail and isinstance(item, StreamRef) and item.window is None):
                    _check_outer_side(item, base)
            pair = items if base == "LEFT" else (items[1], items[0])
            return JoinChain(pair, (), cond, base)
        return JoinChain(items, (*chain.conditions, cond))

    def _join_word(self, joined: tuple[FromItem, ...], right: FromItem) -> Span | None:
        """The span of the JOIN keyword before ``right`` (for the caret of an error)."""
        if right.span is None or any(i.span is None for i in joined):
            return None
        found = _JOIN_WORD.search(self.text, max(i.span.end for i in joined), right.span.start)
        return Span(found.start(), found.end(), 0, 0) if found else None


def flatten_joins(entries: list, where: Expr | None,
                  emit: Node | None = None) -> tuple[tuple[FromItem, ...], Expr | None, Expr | None]:
    """The FROM items, WHERE clause and LEFT JOIN condition of a Select whose FROM entries may be join
    chains (``emit``: the Select's EMIT clause, which a LEFT JOIN cannot have)."""
    items: list[FromItem] = []
    conditions: list[Expr] = []
    outer = [e for e in entries if isinstance(e, JoinChain) and e.left_on is not None]
    if outer and len(entries) > 1:
        other = next(e for e in entries if e is not outer[0])
        at = other.items[0] if isinstance(other, JoinChain) else other
        raise fail("a LEFT JOIN cannot be combined with other relations in FROM; join them in a "
                   "SELECT that reads the LEFT JOIN's output", at)
    if outer and emit is not None:
        raise fail("a LEFT JOIN runs on RANGE windows with an emitter; EMIT belongs to Timeplus window "
                   "queries", emit)
    if outer:
        return outer[0].items, where, outer[0].left_on
    for entry in entries:
        if isinstance(entry, JoinChain):
            items.extend(entry.items)
            conditions.extend(entry.conditions)
        else:
            items.append(entry)
    if where is not None:
        conditions.append(where)
    combined = None
    for cond in conditions:
        combined = cond if combined is None else BinaryOp("and", combined, cond, span=combined.span)
    return tuple(items), combined, None


def _check_outer_side(item: FromItem, kind: str) -> None:
    """A LEFT/RIGHT JOIN's relations are windows the SELECT kernel reads."""
    if isinstance(item, (WindowFunction, MatchRecognize)):
        raise fail(f"a {kind} JOIN cannot read a {type(item).__name__} (yet); read its output stream "
                   "with a RANGE window", item)
    if isinstance(item, (StreamRef, UdsfCall, SubqueryRef)) and item.window is None:
        raise fail(f"'{_item_name(item)}' needs a RANGE window in a {kind} JOIN", item)


def _item_name(item: FromItem) -> str:
    """The name an ON condition refers to a FROM item by (the analyzer's rule: alias, else name)."""
    if isinstance(item, (StreamRef, UdsfCall)):
        return item.alias or item.name
    if isinstance(item, WindowFunction):
        return item.alias or item.stream
    if isinstance(item, MatchRecognize):
        return item.alias or item.input.alias or item.input.name
    if isinstance(item, SubqueryRef):
        return item.alias
    if isinstance(item, HistoryTable):
        return item.alias or item.stream
    raise TypeError(f"unexpected FROM item {item!r}")


def _check_scope(cond: Expr, names: list[str]) -> None:
    """Every stream prefix in an ON condition must name a relation joined so far."""
    for node in cond.walk():
        prefixed = isinstance(node, (FieldRef, TimestampRef, Wildcard)) and node.stream is not None
        if prefixed and node.stream not in names:
            known = ", ".join(f"'{n}'" for n in names)
            raise fail(f"ON refers to '{node.stream}', which is not joined here (joined: {known})", node)


def _using(names: tuple[Token, ...], first: str, right: str, meta) -> Expr:
    """``USING (k, ...)`` as ``first:k = right:k AND ...``."""
    span = span_of(meta)
    seen: set[str] = set()
    cond = None
    for tok in names:
        key = str(tok)
        if key in seen:
            raise fail(f"USING names '{key}' twice", tok)
        seen.add(key)
        at = span_of(tok)
        eq = BinaryOp("=", FieldRef((KeyStep(key, span=at),), first, span=at),
                      FieldRef((KeyStep(key, span=at),), right, span=at), span=at)
        cond = eq if cond is None else BinaryOp("and", cond, eq, span=span)
    return cond
