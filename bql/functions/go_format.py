"""A Go ``fmt.Sprintf`` work-alike for BQL values (the ``format`` function).

Supported verbs: ``%v %s %q %d %b %o %x %X %c %U %e %E %f %F %g %G %t %%`` with the flags
``+ - # 0 space``, width and precision (``*`` is not supported). Mismatches are written as Go does:
``%!d(string=abc)``, ``%!d(MISSING)``, ``%!(EXTRA int=1)``. NULL prints as ``<nil>``; arrays and maps as
Go prints slices and maps (``[1 2]``, ``map[a:1]``).
"""
from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Sequence

from ..conversions import format_float, format_timestamp
from ..values import type_name

_SPEC = re.compile(r"%([-+# 0]*)(\d+)?(?:\.(\d*))?([a-zA-Z%])")


def go_value(v: Any) -> str:
    """Go's ``%v`` of a value."""
    t = type(v)
    if v is None:
        return "<nil>"
    if t is bool:
        return "true" if v else "false"
    if t is float:
        return format_float(v)
    if t is str:
        return v
    if t is int:
        return str(v)
    if t is bytes:
        return "[" + " ".join(str(b) for b in v) + "]"
    if t is _dt.datetime:
        return format_timestamp(v)
    if t is list:
        return "[" + " ".join(go_value(x) for x in v) + "]"
    if t is dict:
        return "map[" + " ".join(f"{k}:{go_value(v[k])}" for k in sorted(v)) + "]"
    return str(v)


def _pad(s: str, flags: str, width: int | None, zero_ok: bool = True) -> str:
    if width is None or len(s) >= width:
        return s
    if "-" in flags:
        return s.ljust(width)
    if "0" in flags and zero_ok:
        sign = s[0] if s[:1] in "+- " and s[:1] != "" else ""
        body = s[len(sign):]
        return sign + body.rjust(width - len(sign), "0")
    return s.rjust(width)


def _bad(verb: str, v: Any) -> str:
    return f"%!{verb}({type_name(v)}={go_value(v)})"


def _format_one(flags: str, width: int | None, prec: int | None, verb: str, v: Any) -> str:
    t = type(v)
    if verb == "v":
        return _pad(go_value(v), flags, width, zero_ok=False)
    if verb == "s":
        s = go_value(v) if t is not str else v
        if prec is not None:
            s = s[:prec]
        return _pad(s, flags, width, zero_ok=False)
    if verb == "q":
        if t is not str:
            return _bad(verb, v)
        return _pad('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"', flags, width, False)
    if verb == "t":
        if t is not bool:
            return _bad(verb, v)
        return _pad("true" if v else "false", flags, width, False)
    if verb in "dboxXcU":
        if t is not int:
            if verb in "xX" and t is str:
                s = v.encode("utf-8").hex()
                return _pad(s.upper() if verb == "X" else s, flags, width, False)
            return _bad(verb, v)
        if verb == "c":
            return _pad(chr(v), flags, width, False)
        if verb == "U":
            return _pad(f"U+{v:04X}", flags, width, False)
        base = {"d": "d", "b": "b", "o": "o", "x": "x", "X": "X"}[verb]
        sign = "-" if v < 0 else ("+" if "+" in flags else (" " if " " in flags else ""))
        digits = format(abs(v), base)
        if prec is not None:
            digits = digits.rjust(prec, "0")
        if "#" in flags and verb in "oxX":
            digits = {"o": "0", "x": "0x", "X": "0X"}[verb] + digits
        return _pad(sign + digits, flags, width, zero_ok=prec is None)
    if verb in "eEfFgG":
        if t is int:
            return _bad(verb, v)
        if t is not float:
            return _bad(verb, v)
        if v != v or v in (float("inf"), float("-inf")):
            s = "NaN" if v != v else ("+Inf" if v > 0 else "-Inf")
            if v == v and v < 0:
                s = "-Inf"
            elif v == v and "+" not in flags:
                s = "Inf" if v > 0 else s
            return _pad(s, flags, width, zero_ok=False)
        sign = "+" if "+" in flags and v >= 0 else (" " if " " in flags and v >= 0 else "")
        if verb in "gG" and prec is None:
            s = format_float(v)
            s = s.upper() if verb == "G" else s
        else:
            p = 6 if prec is None else prec
            s = format(v, f".{p}{verb.lower() if verb in 'fF' else verb}")
            if verb in "eE":
                s = re.sub(r"([eE][+-])(\d)$", r"\g<1>0\2", s)
        return _pad(sign + s, flags, width)
    return f"%!{verb}({type_name(v)}={go_value(v)})"


def go_sprintf(fmt: str, args: Sequence[Any]) -> str:
    """``fmt.Sprintf(fmt, args...)`` for BQL values."""
    out = []
    pos = 0
    i = 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, verb = m.groups()
        if verb == "%":
            out.append("%")
            continue
        if i >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        w = int(width) if width else None
        p = None if prec is None else int(prec or 0)
        out.append(_format_one(flags, w, p, verb, args[i]))
        i += 1
    out.append(fmt[pos:])
    if i < len(args):
        extra = ", ".join(f"{type_name(a)}={go_value(a)}" for a in args[i:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)
