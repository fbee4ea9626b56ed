"""BQL text → AST: the cached LALR parser over ``grammar/bql.lark`` and SensorBee-style syntax errors.

Public: ``parse`` (a script → statements), ``parse_one`` (exactly one statement), ``parse_script``
(statements with their own source text and offset), ``parse_expression`` (one expression).
Spans are offsets into the text given to these functions (for a script, the whole script).

A syntax error is a ``BQLSyntaxError`` whose message reads like SensorBee's::

    statement has a syntax error near line 1, symbol 16:
    SELECT RSTREAM FROM src
                   ^
    unexpected 'FROM', expected an expression
    consider to look up the documentation for SELECT

Text nested deeper than ``MAX_NESTING`` levels of the parse tree (``[[[...]]]``, ``f(f(f(...)))``, a
chain of hundreds of ``+``) is a syntax error too: the AST, the analyzer, the evaluator and the
unparser all recurse over it, and Python's recursion limit must never turn a statement into a crash.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from .ast import Expr, Statement
from .errors import BQLSyntaxError, Span, line_col
from .parsed import ParsedStatement
from .transform_base import StaticSyntaxError
from .transformer import BQLTransformer

__all__ = ["parse", "parse_one", "parse_script", "parse_expression", "expected_tokens_hint",
           "statement_kind"]

GRAMMAR_PATH = Path(__file__).with_name("grammar") / "bql.lark"

MAX_NESTING = 128
"""The deepest parse tree accepted (levels below the statement; one per nested call, constructor,
operator of a chain ...). Measured: 170 levels of arrays already exhaust the recursion limit while
unparsing from a server thread; real statements stay far below 50."""


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
                propagate_positions=True, maybe_placeholders=True, start=["start", "expr"],
                cache=True)


# ---------------------------------------------------------------------------- public API


def parse(text: str) -> list[Statement]:
    """Parse a script of ``;``-separated statements."""
    return _run(text, "start")


def parse_one(text: str) -> Statement:
    """Parse text holding exactly one statement (a trailing ``;`` is allowed)."""
    stmts = parse(text)
    if len(stmts) != 1:
        if not stmts:
            raise _error(text, len(text), "the text holds no statement")
        second = stmts[1].span
        raise _error(text, second.start if second else 0, "expected exactly one statement")
    return stmts[0]


def parse_script(text: str) -> list[ParsedStatement]:
    """Parse a script; each statement comes with its own text (without ``;``) and start offset."""
    out = []
    for stmt in parse(text):
        span = stmt.span
        out.append(ParsedStatement(stmt, text[span.start:span.end], span.start))
    return out


def parse_expression(text: str) -> Expr:
    """Parse a single expression (as it would appear after EVAL)."""
    return _run(text, "expr")


# ---------------------------------------------------------------------------- driver


def _run(text: str, start: str):
    try:
        tree = _parse_tree(text, start)
    except UnexpectedInput as e:
        raise _from_lark(text, e) from None
    except RecursionError:
        raise _too_deep(text, 0) from None
    too_deep_at = _nesting_violation(tree)
    if too_deep_at is not None:
        raise _too_deep(text, too_deep_at)
    try:
        return BQLTransformer(text).transform(tree)
    except RecursionError:  # a safety net: _nesting_violation should have caught it
        raise _too_deep(text, 0) from None
    except VisitError as e:
        orig = e.orig_exc
        if isinstance(orig, StaticSyntaxError):
            pos = orig.span.start if orig.span else 0
            end = orig.span.end if orig.span else pos
            raise _error(text, pos, orig.reason, end) from None
        raise orig from None


# ---------------------------------------------------------------------------- keywords as names
# SensorBee's PEG parser has no reserved words inside expressions: it backtracks, so a field may be
# called `when`, `case`, `cast`, `not`, `order` or `distinct` (bql.peg; expression_parser_test.go parses
# `CASE when WHEN 2 THEN 3 ELSE 6 END` with `when` a field). The contextual LALR lexer makes a word a
# keyword wherever the keyword may stand, which matters for the keywords that may stand where a field
# may: CASE, CAST, NOT, WHEN, ORDER (`f(order)`) and DISTINCT (all others were checked against every
# expression position). So when a text does not parse, it is parsed again with such tokens read as
# names, one more at a time, from the nearest to the error backwards, keeping a renaming that moves the
# error further. The literals NULL, TRUE and FALSE stay literals, as in SensorBee. If no renaming
# parses, the first error stands.

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_NAME_LIKE_KEYWORDS = frozenset({"CASE", "CAST", "NOT", "WHEN", "ORDER", "DISTINCT"})
MAX_RENAMING_ATTEMPTS = 32
"""Parses tried (per failing text) while looking for keywords that must be read as names."""


def _parse_tree(text: str, start: str) -> Tree:
    try:
        return _lark().parse(text, start=start)
    except UnexpectedInput as first:
        tree = _keywords_as_names(text, start)
        if tree is None:
            raise first from None
        return tree


def _keywords_as_names(text: str, start: str) -> Tree | None:
    """The tree of ``text`` with some keyword tokens read as IDENT, or None (see above)."""
    renamed: frozenset[int] = frozenset()
    tokens, tree, error = _attempt(text, start, renamed)
    attempts = 0
    while error is not None:
        reached = _error_pos(text, error)
        candidates = [t.start_pos for t in reversed(tokens) if t.start_pos not in renamed and _renamable(t)]
        for pos in candidates:
            attempts += 1
            if attempts > MAX_RENAMING_ATTEMPTS:
                return None
            more_tokens, tree, more_error = _attempt(text, start, renamed | {pos})
            if more_error is None:
                return tree
            if _error_pos(text, more_error) > reached:
                renamed, tokens, error = renamed | {pos}, more_tokens, more_error
                break
        else:
            return None
    return tree


def _attempt(text: str, start: str,
             renamed: frozenset[int]) -> tuple[list[Token], Tree | None, UnexpectedInput | None]:
    """Parse with the tokens starting at ``renamed`` offsets read as IDENT: the tokens read, and the
    tree or the error."""
    parser = _lark().parse_interactive(text, start=start)
    seen: list[Token] = []
    try:
        for tok in parser.iter_parse():
            if tok.start_pos in renamed:
                tok.type = "IDENT"
            seen.append(tok)
        return seen, parser.feed_eof(seen[-1] if seen else None), None
    except UnexpectedInput as e:
        return seen, None, e


def _renamable(tok: Token) -> bool:
    return tok.type in _NAME_LIKE_KEYWORDS and bool(_NAME.match(tok))


def _error_pos(text: str, e: UnexpectedInput) -> int:
    if isinstance(e, UnexpectedToken):
        return len(text) if e.token.type == "$END" else e.token.start_pos
    return e.pos_in_stream or 0


def _nesting_violation(tree: Tree) -> int | None:
    """The text offset of the first subtree deeper than ``MAX_NESTING`` levels, or None.
    Iterative, so a tree of any depth is measured without recursion."""
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            return meta.start_pos if not meta.empty else 0
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))
    return None


def _too_deep(text: str, pos: int) -> BQLSyntaxError:
    return _error(text, pos, f"the statement is nested too deeply (more than {MAX_NESTING} levels); "
                  "split it into smaller expressions or streams")


def _from_lark(text: str, e: UnexpectedInput) -> BQLSyntaxError:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            pos = len(text.rstrip())
            expected = _closable(text, pos, e.expected)
            return _error(text, pos, "unexpected end of statement" + _expected(expected), pos)
        expected = _closable(text, tok.start_pos, e.expected)
        reason = f"unexpected {_describe(tok)}" + _expected(expected) + _advice(text, tok, expected)
        return _error(text, tok.start_pos, reason, tok.end_pos)
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream]
        reason = f"unexpected character '{ch}'"
        if ch == "'":
            reason += " (strings are written in double quotes)"
        elif ch == '"':
            reason += " (unterminated string)"
        elif ch == "/" and text.startswith("/*", e.pos_in_stream):
            reason = "unexpected '/*' (only '--' comments are supported)"
        return _error(text, e.pos_in_stream, reason + _expected(e.allowed), e.pos_in_stream + 1)
    return _error(text, getattr(e, "pos_in_stream", 0) or 0, str(e))


def _closable(text: str, pos: int, expected) -> set:
    """``expected`` without ')' when no parenthesis is open before ``pos`` (LALR merges the states of a
    SELECT at the top level and inside a subquery, so their lookaheads include each other's)."""
    expected = set(expected or ())
    if "RPAR" in expected:
        body = re.sub(r'"(?:[^"]|"")*"|--[^\n]*', " ", text[_statement_start(text, pos):pos])
        if body.count("(") <= body.count(")"):
            expected.discard("RPAR")
    return expected


def _advice(text: str, tok: Token, expected) -> str:
    """A short explanation for common mistakes around an unexpected token."""
    before = text[:tok.start_pos]
    if tok.type == "IDENT" and before[-1:].isdigit() and "SECONDS" in (expected or ()):
        return " (an interval is n SECONDS, n MILLISECONDS or n followed by ms, s, m, h, d or w)"
    if tok.type == "IDENT" and before[-1:].isdigit() and tok[:1] in "eE":
        return " (scientific notation is not supported; write digits or digits.digits)"
    if before.rstrip().endswith("/*"):
        return " ('/* */' comments are not supported; use '--')"
    after_operand = "IDENT" not in (expected or ()) and "BETWEEN" not in (expected or ())
    if after_operand and (str(tok) in ("=", "<", ">", "!=", "<>", "<=", ">=")
                          or str(tok).upper() in ("IN", "LIKE", "BETWEEN")):
        return " (comparison operators cannot be chained; add parentheses)"
    return ""


def _error(text: str, pos: int, reason: str | None = None, end: int | None = None) -> BQLSyntaxError:
    """A BQLSyntaxError at character ``pos`` of ``text`` in SensorBee's layout."""
    pos = max(0, min(pos, len(text)))
    line, col = line_col(text, pos)
    lines = text.split("\n")
    src = lines[line - 1] if line - 1 < len(lines) else ""
    msg = f"statement has a syntax error near line {line}, symbol {col}:\n{src}\n{' ' * (col - 1)}^"
    if reason:
        msg += "\n" + reason
    kind = statement_kind(text, pos)
    if kind:
        msg += f"\nconsider to look up the documentation for {kind}"
    return BQLSyntaxError(msg, Span(pos, max(end if end is not None else pos, pos), line, col))


# ---------------------------------------------------------------------------- error wording

_TERMINAL_WORDS = {
    "IDENT": "an identifier", "INT": "an integer", "FLOAT": "a float", "STRING": "a string",
    "$END": "the end of the statement", "RUNNING_FINAL": "RUNNING or FINAL",
    "INTERVAL_SHORT": "an interval such as 5s",
    "VAR_STAR": "a variable's rows (A.*)", "INTERVAL_TEXT": "a quoted number ('10')",
    "EMITTER_OPEN": "'['",
}
_EXPR_START = {"IDENT", "INT", "FLOAT", "STRING", "LPAR", "LSQB", "LBRACE", "MINUS"}


def _describe(tok: Token) -> str:
    if tok.type == "IDENT":
        return f"identifier '{tok}'"
    if tok.type in ("INT", "FLOAT"):
        return f"number '{tok}'"
    if tok.type == "STRING":
        return f"string {tok}"
    return f"'{tok}'"


def _terminal_word(name: str) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name
    value = pattern.value
    return f"'{value.upper()}'" if value.isalpha() or "_" in value else f"'{value}'"


def expected_tokens_hint(expected) -> str:
    """A readable list of what the parser would have accepted, e.g. ``'FROM' or ','``."""
    names = set(expected)
    words = []
    if _EXPR_START <= names:
        words.append("an expression")
        names -= _EXPR_START | {"PLUS", "STAR", "NOT", "TRUE", "FALSE", "NULL", "CASE", "CAST",
                                "RUNNING_FINAL", "LBRACE", "DISTINCT", "VAR_STAR",
                                "EMITTER_OPEN"}  # DISTINCT, EMITTER_OPEN ('[' of emitter options): the select list's
    others = sorted({_terminal_word(n) for n in names})
    if len(others) > 6:  # a reduce state: its merged lookaheads say little
        others = []
    words += others
    if not words:
        return ""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _expected(expected) -> str:
    hint = expected_tokens_hint(expected or ())
    return f", expected {hint}" if hint else ""


_WORD = re.compile(r"[A-Za-z]+")
_KINDS = {
    "SELECT": "SELECT", "WITH": "SELECT", "INSERT": "INSERT INTO", "LOAD": "LOAD STATE", "SAVE": "SAVE STATE",
    "EVAL": "EVAL", "PAUSE": "PAUSE SOURCE", "RESUME": "RESUME SOURCE", "REWIND": "REWIND SOURCE",
}


def statement_kind(text: str, pos: int) -> str | None:
    """The statement kind (``SELECT``, ``CREATE SOURCE`` ...) of the statement holding ``pos``."""
    start = _statement_start(text, pos)
    words = [w.upper() for w in _WORD.findall(_strip_comments(text[start:]))[:3]]
    if not words:
        return None
    head = words[0]
    if head in _KINDS:
        return _KINDS[head]
    if head in ("CREATE", "UPDATE", "DROP"):
        rest = [w for w in words[1:] if w != "PAUSED"]
        if rest and rest[0] in ("SOURCE", "SINK", "STATE", "STREAM"):
            return f"{head} {rest[0]}"
    return None


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*", " ", text)


def _statement_start(text: str, pos: int) -> int:
    """Offset just after the last top-level ``;`` before ``pos`` (strings and comments skipped)."""
    start, i, n = 0, 0, min(pos, len(text))
    while i < n:
        c = text[i]
        if c == '"':
            j = text.find('"', i + 1)
            while j != -1 and text.startswith('""', j):
                j = text.find('"', j + 2)
            i = len(text) if j == -1 else j + 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = len(text) if j == -1 else j + 1
            continue
        if c == ";":
            start = i + 1
        i += 1
    return start

