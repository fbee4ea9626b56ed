"""The select list: output labels, wildcards and ``AS`` paths.

Label rules (SensorBee's code, see design/sensorbee-server.md section 6):

- a plain top-level field ``a`` or ``s:a`` whose name matches ``^[a-z][a-zA-Z0-9_]*$`` → that name;
- a function call ``f(...)`` → ``f``; ``ts()`` / ``s:ts()`` → ``ts``; a function call with a selector
  ``f(...).x`` → ``f_i`` (transform_plan.go: ``FuncAppSelectorAST`` is named ``<function>_<i>``);
- anything else → ``col_i`` with ``i`` the item's position in the select list;
- ``*`` / ``s:*`` copy the keys of the input map(s); ``x AS *`` merges the map ``x`` into the row
  (an error if ``x`` is not a map). Keys set by an explicit item always beat keys from a wildcard item;
- ``AS x.y[3].z`` places the value at a path, creating maps and NULL-padded arrays on the way.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..ast import CallSelector, FieldRef, FunctionCall, IndexStep, KeyStep, Projection, TimestampRef, Wildcard
from ..errors import BQLEvaluationError

LABEL_RE = re.compile(r"^[a-z][a-zA-Z0-9_]*$")

Compiled = Callable[[Any], Any]


def default_label(expr: Any, position: int) -> str:
    """The output key of a select-list item without ``AS``."""
    if isinstance(expr, FieldRef) and len(expr.path) == 1:
        step = expr.path[0]
        if isinstance(step, KeyStep) and not step.bracket and LABEL_RE.match(step.key):
            return step.key
    if isinstance(expr, FunctionCall):
        return expr.name
    if isinstance(expr, TimestampRef):
        return "ts"
    if isinstance(expr, CallSelector) and isinstance(expr.call, FunctionCall):
        return f"{expr.call.name}_{position}"
    return f"col_{position}"


def wildcard_value(env: Any, stream: str | None, aliases: Sequence[str]) -> dict[str, Any]:
    """The map a ``*`` (all FROM items, merged in FROM order) or ``s:*`` stands for."""
    out: dict[str, Any] = {}
    names = aliases if stream is None else (stream,)
    for name in names:
        tup = env.tuples.get(name)
        if tup is not None:
            out.update(tup.data)
    return out


def _new_container(step: Any) -> Any:
    return [] if isinstance(step, IndexStep) else {}


def _own(value: Any) -> Any:
    """A shallow copy of a container met on the way (it may be shared with an input tuple)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


def assign_path(row: dict[str, Any], steps: Sequence[Any], value: Any) -> None:
    """Put ``value`` at ``steps`` (KeyStep / IndexStep) inside ``row``, creating containers as needed."""
    container: Any = row
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        nxt = None if last else steps[i + 1]
        if isinstance(step, KeyStep):
            if not isinstance(container, dict):
                raise BQLEvaluationError(f"cannot set key '{step.key}': the value at this place is not a map")
            if last:
                container[step.key] = value
                return
            child = container.get(step.key)
            child = container[step.key] = _new_container(nxt) if child is None else _own(child)
            container = child
        elif isinstance(step, IndexStep):
            if not isinstance(container, list):
                raise BQLEvaluationError(f"cannot set index [{step.index}]: the value at this place is not an array")
            if step.index < 0:
                raise BQLEvaluationError("negative array indexes cannot be used in column labels")
            if len(container) <= step.index:
                container.extend([None] * (step.index + 1 - len(container)))
            if last:
                container[step.index] = value
                return
            child = container[step.index]
            child = container[step.index] = _new_container(nxt) if child is None else _own(child)
            container = child
        else:
            raise BQLEvaluationError("only keys and array indexes can be used in column labels")
        if not isinstance(container, (dict, list)):
            raise BQLEvaluationError("cannot set a value below a value that is neither a map nor an array")


class SelectList:
    """A compiled select list: ``evaluate(env)`` builds one output row (a dict).

    ``compile`` turns an expression into ``Callable[[Env], value]`` (the kernel passes the evaluator's
    ``compile_expr`` bound to the right scope); ``aliases`` are the FROM aliases in FROM order.
    """

    def __init__(self, projections: Sequence[Projection], aliases: Sequence[str],
                 compile: Callable[[Any], Compiled]):
        self.aliases = tuple(aliases)
        # wildcard-level items: ("star", stream) or ("merge", fn); explicit items: (steps, fn)
        self.wild: list[tuple[str, Any]] = []
        self.explicit: list[tuple[tuple[Any, ...], Compiled]] = []
        for pos, proj in enumerate(projections):
            expr, alias = proj.expr, proj.alias
            if isinstance(expr, Wildcard):
                if alias is None:
                    self.wild.append(("star", expr.stream))
                    continue
                fn = self._wildcard_fn(expr.stream)
            else:
                fn = compile(expr)
            if alias is not None and alias.star:
                self.wild.append(("merge", fn))
            elif alias is not None:
                self.explicit.append((tuple(alias.steps), fn))
            else:
                self.explicit.append(((KeyStep(default_label(expr, pos)),), fn))

    def _wildcard_fn(self, stream: str | None) -> Compiled:
        aliases = self.aliases
        return lambda env: wildcard_value(env, stream, aliases)

    def evaluate(self, env: Any) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for kind, arg in self.wild:
            if kind == "star":
                row.update(wildcard_value(env, arg, self.aliases))
            else:
                value = arg(env)
                if not isinstance(value, dict):
                    raise BQLEvaluationError(f"cannot use AS * with a value that is not a map: {_type_name(value)}")
                row.update(value)
        for steps, fn in self.explicit:
            value = fn(env)
            if len(steps) == 1 and isinstance(steps[0], KeyStep):
                row[steps[0].key] = value
            else:
                assign_path(row, steps, value)
        return row


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "string", bytes: "blob",
            list: "array", dict: "map"}.get(type(value), type(value).__name__)
