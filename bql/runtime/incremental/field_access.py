"""Reading a plain field (``a:x`` / ``x``) straight from a tuple instead of through its compiled closure.

A compiled field reference (``eval/compiler.py``) is ``getter(env.tuples[alias].data)`` with the getter
of its path; for a one-key path the getter is ``data.get(key, MISSING)`` (MISSING when ``data`` is not a
map), and MISSING raises "field '...' is missing". The kernel's hot loops read such fields inline with
``data.get(key, MISSING) if type(data) is dict else MISSING`` and call the compiled closure only
when the value is MISSING — the closure then raises the reference's error — so a present value is
the same object and an absent one the same failure.
"""
from __future__ import annotations

from typing import Any

from ...ast import FieldRef, KeyStep
from ...values import MISSING

__all__ = ["MISSING", "plain_field"]


def plain_field(expr: Any, aliases: tuple[str, ...]) -> tuple[str, str] | None:
    """``(alias, key)`` when ``expr`` reads one top-level key of one FROM item's tuple, else None."""
    if type(expr) is not FieldRef or len(expr.path) != 1 or type(expr.path[0]) is not KeyStep:
        return None
    stream = expr.stream
    if stream is None:
        return (aliases[0], expr.path[0].key) if len(aliases) == 1 else None
    return (stream, expr.path[0].key) if stream in aliases else None

