"""``EVAL expr [ON {map}]``: evaluate an expression without a stream.

Without ``ON`` the expression may not read fields, ``*`` or ``ts()``, call aggregates or ``now()``;
with ``ON`` an unprefixed field reads the given map (``ts()`` is the current time).
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from ..errors import BQLEvaluationError
from ..runtime.processor import Tuple
from ..values import type_name
from .compiler import compile_expr
from .env import Env, Scope

_ON_ALIAS = "eval"


def evaluate_constant(expr: Any, registry: Any = None, on: Any = None) -> Any:
    """The value of ``expr`` (an EVAL). ``on`` is the optional ``ON`` expression (must give a map)."""
    scope = Scope((), registry, None, stream=False)
    if on is None:
        return compile_expr(expr, scope)(Env({}))
    data = compile_expr(on, scope)(Env({}))
    if type(data) is not dict:
        raise BQLEvaluationError(f"EVAL ... ON needs a map, got '{type_name(data)}'")
    row_scope = Scope((_ON_ALIAS,), scope.registry, None, stream=False)
    now = _dt.datetime.now(_dt.timezone.utc)
    return compile_expr(expr, row_scope)(Env({_ON_ALIAS: Tuple(data, now)}))
