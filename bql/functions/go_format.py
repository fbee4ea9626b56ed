"""A Go ``fmt.Sprintf`` work-alike for BQL values (the ``format`` function).

Supported verbs: ``%v %s %q %d %b %o %x %X %c %U %e %E %f %F %g %G %t %T %%`` with the flags
``+ - # 0 space``, width and precision, ``*`` for either (read from an int argument) and explicit
argument indexes (``%[2]d``), scanned as Go's ``doPrintf`` scans them: a ``%`` at the end is
``%!(NOVERB)``, a bad index ``%!d(BADINDEX)``, a ``*`` without an int ``%!(BADWIDTH)`` / ``%!(BADPREC)``,
and after an explicit index unused arguments are not reported as EXTRA.

What Go sees (SensorBee's formatFunc, bql/udf/builtin/string.go): a string argument is a Go ``string``, a
float a ``float64``, anything else the ``data.Value`` itself (``data.Int``, ``data.Bool``, ``data.Null``,
``data.Array`` ...). Those are ``fmt.Stringer``s, so ``%v %s %q %x %X`` print their ``String()`` -- the
JSON text: ``null``, ``true``, ``[2]``, ``{"a":3}``, a timestamp or blob as a quoted JSON string -- while
``%d`` of an int and ``%t`` of a bool format the underlying number/bool. Mismatches are written as Go
does, with Go's type names: ``%!f(data.Int=6)``, ``%!d(MISSING)``, ``%!(EXTRA string=b)``.
"""
from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Sequence

from ..conversions import format_float, go_json

_FLAGS = "#0+- "
_MAX_WIDTH = 1_000_000  # Go's tooLarge: a '*' width or precision beyond 1e6 is bad


_GO_TYPES = {type(None): "data.Null", bool: "data.Bool", int: "data.Int", float: "float64", str: "string",
             bytes: "data.Blob", _dt.datetime: "data.Timestamp", list: "data.Array", dict: "data.Map"}


def go_type(v: Any) -> str:
    """Go's ``%T`` of the argument SensorBee passes to ``fmt.Sprintf``."""
    return _GO_TYPES.get(type(v), "data.Value")


def _float_text(v: float, plus: bool = False) -> str:
    """Go's ``%v`` of a float64: shortest ``%g``; infinities keep their sign (``+Inf``)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    return format_float(v)


def go_value(v: Any) -> str:
    """Go's ``%v`` of the argument: a string itself, a float64's ``%g``, else ``data.Value.String()``."""
    t = type(v)
    if t is str:
        return v
    if t is float:
        return _float_text(v)
    return go_json(v)


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
    return f"%!{verb}({go_type(v)}={go_value(v)})"


def _format_one(flags: str, width: int | None, prec: int | None, verb: str, v: Any) -> str:
    t = type(v)
    if verb == "v":
        return _pad(go_value(v), flags, width, zero_ok=False)
    if v is None and verb not in "vsqxXT":
        return "{}"  # data.Null is a struct{}: Go prints its (no) fields for a non-string verb
    if verb in "sq" and t is float:
        return _bad(verb, v)  # a float64 is no Stringer: Go's fmtFloat has no %s or %q
    if verb == "s":
        s = go_value(v) if t is not str else v
        if prec is not None:
            s = s[:prec]
        return _pad(s, flags, width, zero_ok=False)
    if verb == "T":
        return _pad(go_type(v), flags, width, zero_ok=False)
    if verb == "q":
        s = go_value(v)
        return _pad('"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"', flags, width, False)
    if verb in "xX" and t is not float:
        s = go_value(v).encode("utf-8").hex()  # a string, or a Stringer's String() (data.Int 255: "323535")
        return _pad(s.upper() if verb == "X" else s, flags, width, False)
    if verb == "t":
        if t is not bool:
            return _bad(verb, v)
        return _pad("true" if v else "false", flags, width, False)
    if verb in "dboxXcU":
        if t is not int:
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
            # Go's fmtFloat: "+Inf" keeps its sign, NaN gets one only with '+' or ' '
            s = "NaN" if v != v else ("+Inf" if v > 0 else "-Inf")
            if v != v and ("+" in flags or " " in flags):
                s = ("+" if "+" in flags else " ") + s
            elif v == float("inf") and " " in flags and "+" not in flags:
                s = " Inf"
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
    return _bad(verb, v)


class _Scan:
    """The state of one ``go_sprintf``: position in the format, next argument, Go's flags."""

    def __init__(self, fmt: str, args: Sequence[Any]) -> None:
        self.fmt, self.args = fmt, args
        self.i = 0
        self.arg = 0
        self.reordered = False
        self.good_index = True

    def number(self) -> int | None:
        """Go's parsenum: decimal digits at the position, or None."""
        start = self.i
        while self.i < len(self.fmt) and self.fmt[self.i].isdigit():
            self.i += 1
        return int(self.fmt[start:self.i]) if self.i > start else None

    def index(self) -> bool:
        """Go's argNumber: an explicit ``[n]`` sets the next argument; True if one was read."""
        fmt, i = self.fmt, self.i
        if i >= len(fmt) or fmt[i] != "[":
            return False
        self.reordered = True
        close = fmt.find("]", i + 1)
        digits = fmt[i + 1:close] if close > 0 else ""
        if len(fmt) - i < 3 or close < 0 or not digits.isdigit():
            self.i = i + 1 if close < 0 or len(fmt) - i < 3 else close + 1
            self.good_index = False
            return False
        self.i = close + 1
        n = int(digits) - 1
        if 0 <= n < len(self.args):
            self.arg = n
            return True
        self.good_index = False
        return True

    def star(self) -> int | None:
        """Go's intFromArg: the int argument a ``*`` stands for (None if there is none)."""
        if self.arg >= len(self.args):
            return None
        v = self.args[self.arg]
        self.arg += 1
        if type(v) is not int or not -_MAX_WIDTH <= v <= _MAX_WIDTH:
            return None
        return v


def go_sprintf(fmt: str, args: Sequence[Any]) -> str:
    """``fmt.Sprintf(fmt, args...)`` for BQL values."""
    out: list[str] = []
    sc = _Scan(fmt, args)
    end = len(fmt)
    while sc.i < end:
        pct = fmt.find("%", sc.i)
        if pct < 0:
            out.append(fmt[sc.i:])
            break
        out.append(fmt[sc.i:pct])
        sc.i = pct + 1
        sc.good_index = True
        flags = ""
        while sc.i < end and fmt[sc.i] in _FLAGS:
            flags += fmt[sc.i]
            sc.i += 1
        after_index = sc.index()
        width = prec = None
        if sc.i < end and fmt[sc.i] == "*":
            sc.i += 1
            width = sc.star()
            if width is None:
                out.append("%!(BADWIDTH)")
            elif width < 0:
                flags, width = flags + "-", -width
            after_index = False
        else:
            width = sc.number()
            if after_index and width is not None:
                sc.good_index = False
        if sc.i + 1 < end and fmt[sc.i] == ".":
            sc.i += 1
            if after_index:
                sc.good_index = False
            after_index = sc.index()
            if sc.i < end and fmt[sc.i] == "*":
                sc.i += 1
                prec = sc.star()
                if prec is None:
                    out.append("%!(BADPREC)")
                elif prec < 0:
                    prec = None
                after_index = False
            else:
                prec = sc.number() or 0
        if not after_index:
            after_index = sc.index()
        if sc.i >= end:
            out.append("%!(NOVERB)")
            break
        verb = fmt[sc.i]
        sc.i += 1
        if verb == "%":
            out.append("%")
        elif not sc.good_index:
            out.append(f"%!{verb}(BADINDEX)")
        elif sc.arg >= len(args):
            out.append(f"%!{verb}(MISSING)")
        else:
            out.append(_format_one(flags, width, prec, verb, args[sc.arg]))
            sc.arg += 1
    if not sc.reordered and sc.arg < len(args):
        extra = ", ".join(f"{go_type(a)}={go_value(a)}" for a in args[sc.arg:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)
