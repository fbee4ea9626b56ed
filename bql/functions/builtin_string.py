"""String built-ins (Function Reference, "String Functions").

Indexes count characters (code points) from 0, except ``strpos``, which is Go's ``strings.Index``: the
byte offset in the UTF-8 text (``strpos("日本語", "語")`` is 6). ``lower``/``upper`` map characters one to
one with Unicode's simple case mappings as Go's ``unicode`` package does (no ``ß`` → ``SS``, ``İ`` → ``i``).
The one-argument trims remove only `` \t\n\r``. ``substring(s, r)`` with a string ``r`` returns the first
match of the regular expression (empty when nothing matches). NULL arguments give NULL except in
``concat``/``concat_ws``, which skip NULL strings (a NULL separator gives NULL); ``concat_ws`` writes the
separator only once something has been written (SensorBee's ``buffer.Len() > 0``), so empty strings before
the first non-empty one leave no separator. ``overlay`` and ``substring`` check their arguments in order,
so a wrong type fails even when a later argument is NULL (bql/udf/builtin/string.go).
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from ..errors import BQLEvaluationError
from .go_format import go_sprintf
from .go_regex import GoRegexError, compile_go_regex
from .registry import FunctionSpec
from .signatures import integer, string, type_error

_TRIM_SPACE = " \t\n\r"  # ltrimSpaceFunc & co.: strings.TrimLeft(str, " \t\n\r")


def _bit_length(s: Any) -> int:
    return len(string("bit_length", "s", s).encode("utf-8")) * 8


def _octet_length(s: Any) -> int:
    return len(string("octet_length", "s", s).encode("utf-8"))


def _char_length(s: Any) -> int:
    return len(string("char_length", "s", s))


def _trim(name: str, side: str) -> Any:
    def impl(s: Any, chars: Any = None) -> str:
        text = string(name, "s", s)
        cs = _TRIM_SPACE if chars is None else string(name, "chars", chars)
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
    return join_written(string("concat_ws", "sep", sep), [string("concat_ws", "s", a) for a in args if a is not None])


def join_written(sep: str, parts: list) -> str:
    """SensorBee's join (concat_ws, string_agg): the separator goes before a part only when the buffer
    already holds something, so ``("", "a")`` gives ``"a"`` and ``("a", "", "b")`` gives ``"a,,b"``."""
    out = ""
    for p in parts:
        if out:
            out += sep
        out += p
    return out


def _format(fmt: Any, *args: Any) -> Any:
    if fmt is None:
        return None
    return go_sprintf(string("format", "s", fmt), args)


def _simple_case(c: str, upper: bool) -> str:
    """Unicode's simple (one-character) case mapping of ``c``, Go's ``unicode.ToUpper/ToLower``.

    Python maps with the full mappings; where one gives several characters the simple mapping is the
    first one for lower case (only ``İ`` → ``i``) and the title case when that is one character for upper
    case (``ᾀ`` → ``ᾈ``); characters without one (``ß``, ``ﬀ``) stay."""
    m = c.upper() if upper else c.lower()
    if len(m) == 1:
        return m
    if not upper:
        return m[0]
    t = c.title()
    return t if len(t) == 1 else c


def _case_map(s: str, upper: bool) -> str:
    if s.isascii():
        return s.upper() if upper else s.lower()
    return "".join(_simple_case(c, upper) for c in s)


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


def _overlay(s: Any, repl: Any, frm: Any, *rest: Any) -> Any:
    """overlayFuncTmpl: each argument is checked (type, then NULL) in order."""
    if s is None:
        return None
    text = string("overlay", "s", s)
    if repl is None:
        return None
    r = string("overlay", "repl", repl)
    if frm is None:
        return None
    start = _non_negative("overlay", "from", frm)
    if not rest:
        n = len(r)
    elif rest[0] is None:
        return None
    else:
        n = _non_negative("overlay", "for", rest[0])
    return text[:start] + r + text[start + n:]


def _strpos(s: Any, t: Any) -> int:
    """``strings.Index``: a byte offset into the UTF-8 text, -1 when absent."""
    text = string("strpos", "s", s)
    sub = string("strpos", "t", t)
    i = text.find(sub)
    if i <= 0 or text.isascii():
        return i
    return len(text[:i].encode("utf-8"))


def _substring(s: Any, a: Any, *rest: Any) -> Any:
    """substringFuncTmpl: arguments are checked in order (type or NULL), so ``substring(1, NULL)`` and
    ``substring("x", -1, NULL)`` fail; a string ``a`` (a regular expression) takes no length."""
    if s is None:
        return None
    text = string("substring", "s", s)
    if a is None:
        return None
    if not rest and type(a) is str:
        try:
            pattern = compile_go_regex(a)
        except (GoRegexError, re.error) as e:
            raise BQLEvaluationError(f"function 'substring': invalid regular expression '{a}': {e}") from None
        m = pattern.search(text)
        return m.group(0) if m else ""
    if type(a) is not int:
        want = "'int'" if rest else "'int' or 'string'"
        raise type_error("substring", "from", want, a)
    start = _non_negative("substring", "from", a)
    if not rest:
        return text[start:]
    if rest[0] is None:
        return None
    return text[start:start + _non_negative("substring", "for", rest[0])]


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
    FunctionSpec("overlay", _overlay, 3, 4),
    _trim_spec("rtrim", "right"),
    _hash("sha1"),
    _hash("sha256"),
    FunctionSpec("strpos", _strpos, 2, 2, null_on_null=True),
    FunctionSpec("substring", _substring, 2, 3),
    FunctionSpec("upper", _upper, 1, 1, null_on_null=True),
]
