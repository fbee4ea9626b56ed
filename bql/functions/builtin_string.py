"""String built-ins (Function Reference, "String Functions").

Indexes count characters (code points) from 0. ``lower``/``upper`` map characters one to one as Go's
``unicode`` package does (no ``ß`` → ``SS``). ``substring(s, r)`` with a string ``r`` returns the first
match of the regular expression (empty when nothing matches). NULL arguments give NULL except in
``concat``/``concat_ws``, which skip NULL strings (a NULL separator gives NULL).
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from ..errors import BQLEvaluationError
from .go_format import go_sprintf
from .registry import FunctionSpec
from .signatures import integer, string, type_error

_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
            "\u200a\u2028\u2029\u202f\u205f\u3000"


def _bit_length(s: Any) -> int:
    return len(string("bit_length", "s", s).encode("utf-8")) * 8


def _octet_length(s: Any) -> int:
    return len(string("octet_length", "s", s).encode("utf-8"))


def _char_length(s: Any) -> int:
    return len(string("char_length", "s", s))


def _trim(name: str, side: str) -> Any:
    def impl(s: Any, chars: Any = None) -> str:
        text = string(name, "s", s)
        cs = _GO_SPACE if chars is None else string(name, "chars", chars)
        if side == "both":
            return text.strip(cs)
        if side == "left":
            return text.lstrip(cs)
        return text.rstrip(cs)

    return impl


def _trim_spec(name: str, side: str) -> FunctionSpec:
    return FunctionSpec(name, _trim(name, side), 1, 2, null_on_null=True)


def _concat(*args: Any) -> str:
    parts = []
    for i, a in enumerate(args):
        if a is None:
            continue
        parts.append(string("concat", f"s{i + 1}" if i else "s", a))
    return "".join(parts)


def _concat_ws(sep: Any, *args: Any) -> Any:
    if sep is None:
        return None
    sep = string("concat_ws", "sep", sep)
    parts = [string("concat_ws", "s", a) for a in args if a is not None]
    return sep.join(parts)


def _format(fmt: Any, *args: Any) -> Any:
    if fmt is None:
        return None
    return go_sprintf(string("format", "s", fmt), args)


def _case_map(s: str, upper: bool) -> str:
    if s.isascii():
        return s.upper() if upper else s.lower()
    out = []
    for c in s:
        m = c.upper() if upper else c.lower()
        out.append(m if len(m) == 1 else c)
    return "".join(out)


def _lower(s: Any) -> str:
    return _case_map(string("lower", "s", s), False)


def _upper(s: Any) -> str:
    return _case_map(string("upper", "s", s), True)


def _hash(name: str) -> FunctionSpec:
    def impl(s: Any) -> str:
        return hashlib.new(name, string(name, "s", s).encode("utf-8")).hexdigest()

    return FunctionSpec(name, impl, 1, 1, null_on_null=True)


def _non_negative(fn: str, param: str, v: Any) -> int:
    i = integer(fn, param, v)
    if i < 0:
        raise BQLEvaluationError(f"function '{fn}': '{param}' must not be negative")
    return i


def _overlay(s: Any, repl: Any, frm: Any, count: Any = None) -> str:
    text = string("overlay", "s", s)
    r = string("overlay", "repl", repl)
    start = _non_negative("overlay", "from", frm)
    n = len(r) if count is None else _non_negative("overlay", "for", count)
    return text[:start] + r + text[start + n:]


def _strpos(s: Any, t: Any) -> int:
    return string("strpos", "s", s).find(string("strpos", "t", t))


def _substring(s: Any, a: Any, b: Any = None) -> str:
    text = string("substring", "s", s)
    if type(a) is str:
        if b is not None:
            raise BQLEvaluationError("function 'substring': a regular expression takes no length")
        try:
            pattern = re.compile(a)
        except re.error as e:
            raise BQLEvaluationError(f"function 'substring': invalid regular expression '{a}': {e}") from None
        m = pattern.search(text)
        return m.group(0) if m else ""
    if type(a) is not int:
        raise type_error("substring", "from", "'int' or 'string'", a)
    start = _non_negative("substring", "from", a)
    if b is None:
        return text[start:]
    return text[start:start + _non_negative("substring", "for", b)]


SPECS = [
    FunctionSpec("bit_length", _bit_length, 1, 1, null_on_null=True),
    _trim_spec("btrim", "both"),
    FunctionSpec("char_length", _char_length, 1, 1, null_on_null=True),
    FunctionSpec("concat", _concat, 1, None),
    FunctionSpec("concat_ws", _concat_ws, 2, None),
    FunctionSpec("format", _format, 2, None, null_on_null=False),
    FunctionSpec("lower", _lower, 1, 1, null_on_null=True),
    _trim_spec("ltrim", "left"),
    _hash("md5"),
    FunctionSpec("octet_length", _octet_length, 1, 1, null_on_null=True),
    FunctionSpec("overlay", _overlay, 3, 4, null_on_null=True),
    _trim_spec("rtrim", "right"),
    _hash("sha1"),
    _hash("sha256"),
    FunctionSpec("strpos", _strpos, 2, 2, null_on_null=True),
    FunctionSpec("substring", _substring, 2, 3, null_on_null=True),
    FunctionSpec("upper", _upper, 1, 1, null_on_null=True),
]
