"""BQL highlighting for ``sbpy shell``: a pygments lexer and the prompt's colour style.

Words are classified as the parser sees them:

- a grammar keyword (every ``"WORD"i`` literal of ``bql/grammar/bql.lark``: SELECT, RSTREAM, RANGE,
  TUPLES, ...) is ``Keyword``; ``TRUE``/``FALSE``/``NULL``/``MISSING`` are ``Keyword.Constant``;
- any other of SensorBee's reserved words (``sbpy.bql.analyzer.reserved``: they cannot name a node)
  is ``Keyword.Reserved``;
- a word followed by ``(`` is a function call (``Name.Function``), even when it is a reserved word
  such as ``count``: a field or function keeps its name's colour only where it is one;
- ``"..."`` strings (``""`` escapes a quote), numbers, ``--`` comments, operators, ``:field`` and
  ``[`` ``]`` window brackets get pygments' usual token types; every other word is a ``Name``.

    >>> [(str(t), v) for t, v in BqlLexer().get_tokens("SELECT count(x)") if v.strip()]
    [('Token.Keyword', 'SELECT'), ('Token.Name.Function', 'count'), ('Token.Punctuation', '('), \
('Token.Name', 'x'), ('Token.Punctuation', ')')]
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace
from sbpy.bql.analyzer.reserved import RESERVED_WORDS

GRAMMAR_FILE = Path(__file__).resolve().parents[2] / "bql" / "grammar" / "bql.lark"
CONSTANTS = frozenset({"true", "false", "null", "missing"})
_LITERAL = re.compile(r'"([A-Za-z_]+)"i')


@lru_cache(maxsize=1)
def grammar_keywords() -> frozenset[str]:
    """The lower-cased keywords of the BQL grammar (its case-insensitive string literals)."""
    return frozenset(word.lower() for word in _LITERAL.findall(_grammar_text()))


def _grammar_text() -> str:
    try:
        return GRAMMAR_FILE.read_text(encoding="utf-8")
    except OSError:  # an installed package: the grammar is package data of sbpy.bql
        from importlib.resources import files

        return files("sbpy.bql").joinpath("grammar/bql.lark").read_text(encoding="utf-8")


def word_token(word: str) -> object:
    """The token type of a bare word (not followed by ``(``)."""
    lower = word.lower()
    if lower in CONSTANTS:
        return Keyword.Constant
    if lower in grammar_keywords():
        return Keyword
    if lower in RESERVED_WORDS:
        return Keyword.Reserved
    return Name


def _word(lexer: RegexLexer, match: re.Match[str]):
    yield match.start(), word_token(match.group()), match.group()


class BqlLexer(RegexLexer):
    """Tokens of BQL text (see the module doc)."""

    name = "BQL"
    aliases: ClassVar[list[str]] = ["bql"]
    filenames: ClassVar[list[str]] = ["*.bql"]
    flags = re.IGNORECASE

    tokens: ClassVar[dict] = {
        "root": [
            (r"\s+", Whitespace),
            (r"--[^\n]*", Comment.Single),
            (r'"(?:[^"]|"")*"?', String.Double),
            (r"'(?:[^']|'')*'?", String.Single),
            (r"\d+\.\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?|\d+e[+-]?\d+", Number.Float),
            (r"\d+", Number.Integer),
            (r"([A-Za-z_][A-Za-z0-9_]*)(\s*)(?=\()", bygroups(Name.Function, Text)),
            (r":[A-Za-z_][A-Za-z0-9_]*", Name.Variable),
            (r"[A-Za-z_][A-Za-z0-9_]*", _word),
            (r"\|\||::|<=|>=|!=|<>|->|[-+*/%=<>!]", Operator),
            (r"[()\[\],;.{}]", Punctuation),
            (r".", Text),
        ],
    }


# prompt_toolkit's style for the token types above (pygments' class names, lower-cased)
PROMPT_STYLE = {
    "pygments.keyword": "#5f87d7 bold",
    "pygments.keyword.reserved": "#5f87d7",
    "pygments.keyword.constant": "#af5fd7",
    "pygments.name.function": "#00af87",
    "pygments.name.variable": "#d78700",
    "pygments.string": "#d7875f",
    "pygments.number": "#af5fd7",
    "pygments.comment": "#808080 italic",
    "pygments.operator": "#a8a8a8",
}
