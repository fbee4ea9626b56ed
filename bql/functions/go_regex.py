"""Go ``regexp`` (RE2) patterns run by Python's ``re`` (``substring(s, r)``: "See the Go regexp package for
details of matching").

``compile_go_regex`` rewrites the RE2 spellings Python reads differently and rejects what RE2 rejects:

- ``\\d \\w \\s \\b`` (and their negations) are ASCII-only in Go: ``[0-9]``, ``[0-9A-Za-z_]``,
  ``[\\t\\n\\f\\r ]``; inside brackets too.
- ``$`` without the ``m`` flag is the end of the text (Python's ``$`` also matches before a last
  ``\\n``); ``\\z`` is Python's ``\\Z``; ``\\Q...\\E`` quotes literally; ``[[:alpha:]]`` and the other
  ASCII classes are spelled out; ``{,n}`` is literal text, not a repetition.
- Errors as in Go: lookarounds, backreferences, ``(?P=name)``, ``(?#...)``, ``\\Z``, a repeated
  repetition (``a**``, ``a*+``) and repetition counts above 1000.

Matching is leftmost-first in both, so ``search(...).group(0)`` is Go's ``FindString``.
"""
from __future__ import annotations

import re
from functools import lru_cache

_CLASS = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_WORD = "[0-9A-Za-z_]"
_BOUNDARY = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")
_MAX_REPEAT = 1000
# `(?flags)`, `(?flags:` and `(?P<name>`: the only `(?` groups Go knows (no lookaround, `(?#`, `(?P=`)
_GROUP_OPENER = re.compile(r"\(\?(?:[imsU-]*[)]|[imsU-]*:|P<[A-Za-z0-9_]+>)")


class GoRegexError(ValueError):
    """A pattern Go's regexp.Compile rejects."""


@lru_cache(maxsize=256)
def compile_go_regex(pattern: str) -> re.Pattern:
    """``regexp.MustCompile(pattern)`` as a Python pattern; ``GoRegexError`` or ``re.error`` if invalid."""
    return re.compile(_translate(pattern))


def _translate(p: str) -> str:
    multiline = bool(re.search(r"\(\?[a-zA-Z]*m", p))
    out: list[str] = []
    i, n = 0, len(p)
    state = "none"  # what the last item takes: "atom" a repetition, "rep" a lazy '?', else nothing
    while i < n:
        c = p[i]
        op = _REPEAT.match(p, i) if c == "{" else None
        if c in "*+?" or op is not None:
            text = c if op is None else op.group(0)
            if op is not None:
                lo, hi = int(op.group(1)), op.group(3)
                if lo > _MAX_REPEAT or (hi and (int(hi) > _MAX_REPEAT or int(hi) < lo)):
                    raise GoRegexError(f"invalid repeat count: `{text}`")
            if c == "?" and state == "rep":
                state = "lazy"
            elif state in ("rep", "lazy"):
                raise GoRegexError(f"invalid nested repetition operator: `{p[i - 1]}{text}`")
            elif state != "atom":
                raise GoRegexError(f"missing argument to repetition operator: `{text}`")
            else:
                state = "rep"
            out.append(text)
            i += len(text)
            continue
        if c == "\\":
            text, i = _escape(p, i, in_class=False)
            out.append(text)
            state = "atom"
            continue
        if c == "[":
            text, i = _bracket(p, i)
            out.append(text)
            state = "atom"
            continue
        if c == "(" and p.startswith("(?", i):
            m = _GROUP_OPENER.match(p, i)
            if m is None:
                raise GoRegexError(f"invalid or unsupported Perl syntax: `{p[i:i + 3]}`")
            out.append(m.group(0))
            i = m.end()
            state = "none"
            continue
        if c == "{":  # not a repetition (`{`, `{,n}`, `{x}`): literal text in Go
            out.append("\\{")
            i += 1
            state = "atom"
            continue
        if c in "^$":  # empty-width, but an operand of a repetition in Go (`^*`)
            out.append("(?:\\Z)" if c == "$" and not multiline else f"(?:{c})")
        else:
            out.append(c)
        i += 1
        state = "none" if c in "(|" else "atom"
    return "".join(out)


def _escape(p: str, i: int, in_class: bool) -> tuple[str, int]:
    """The Python text of the escape at ``p[i] == '\\\\'`` and the index after it."""
    if i + 1 >= len(p):
        raise GoRegexError("trailing backslash at end of expression")
    c = p[i + 1]
    if c == "Q":
        end = p.find("\\E", i + 2)
        literal = p[i + 2:] if end < 0 else p[i + 2:end]
        return re.escape(literal), len(p) if end < 0 else end + 2
    if c in "dws":
        return (_CLASS[c] if in_class else f"[{_CLASS[c]}]"), i + 2
    if c in "DWS":
        return (f"\\{c}" if in_class else f"[^{_CLASS[c.lower()]}]"), i + 2
    if not in_class and c == "b":
        return _BOUNDARY, i + 2
    if not in_class and c == "B":
        return _NOT_BOUNDARY, i + 2
    if c == "z" and not in_class:
        return "\\Z", i + 2
    if c == "A" and not in_class:
        return "\\A", i + 2
    if c.isdigit() and c != "0":
        raise GoRegexError(f"invalid escape sequence: `\\{c}`")
    if c in "afnrtv" or c == "0" or c == "x":
        if c == "x" and p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            if end < 0:
                raise GoRegexError("invalid escape sequence: `\\x{`")
            return f"\\U{int(p[i + 3:end], 16):08x}", end + 1
        if c == "0":  # Go: an octal escape \0 up to three digits
            j = i + 2
            while j < len(p) and j < i + 4 and p[j] in "01234567":
                j += 1
            return f"\\x{int(p[i + 1:j], 8):02x}" if j > i + 2 else "\\x00", j
        return p[i:i + 2], i + 2
    if c.isalnum() or c == "_":
        raise GoRegexError(f"invalid escape sequence: `\\{c}`")
    return re.escape(c), i + 2


def _bracket(p: str, i: int) -> tuple[str, int]:
    """A bracketed class from ``p[i] == '['``: its Python text and the index after it."""
    out = ["["]
    j = i + 1
    if j < len(p) and p[j] == "^":
        out.append("^")
        j += 1
    first = True
    while j < len(p):
        c = p[j]
        if c == "]" and not first:
            out.append("]")
            return "".join(out), j + 1
        first = False
        if c == "[" and p.startswith("[:", j):
            end = p.find(":]", j + 2)
            name = p[j + 2:end] if end > 0 else ""
            if name in _POSIX:
                out.append(_POSIX[name])
                j = end + 2
                continue
        if c == "\\":
            text, j = _escape(p, j, in_class=True)
            out.append(text)
            continue
        out.append("\\" + c if c in "[]&~|" else c)
        j += 1
    raise GoRegexError("missing closing ]")
