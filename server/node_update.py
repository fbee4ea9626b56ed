"""UPDATE SOURCE / UPDATE SINK / UPDATE STATE ``name SET k = v, ...`` — SensorBee's ``core.Updater``.

A source, sink or state (UDS) instance may offer ``update(params)``: it receives the statement's SET
parameters folded to BQL values (keys lower-cased, as CREATE's WITH parameters) and changes its
configuration in place; it checks the keys and values itself and raises on a bad one (``ValueError``
or a ``BQLError``), which fails the statement and leaves the instance as it was. An instance without
``update`` answers SensorBee's "<name> cannot be updated". A source's ``update`` is called from the
request's thread while its ``run`` goes on in the source's own thread; a sink's is called under the
sink node's lock, never during one of its writes.

The statement is persisted like every applied statement, so a restarted server replays it onto the
re-created instance (a failing replay is logged, not raised, as for state statements).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sbpy.bql.errors import BQLError, BQLExecutionError


def fail(message: str, stmt: Any = None) -> BQLExecutionError:
    """A statement error at ``stmt``'s span (when it has one)."""
    return BQLExecutionError(message, getattr(stmt, "span", None))


def fold_params(params: Any) -> dict[str, Any]:
    """The WITH / SET parameters of a statement folded to BQL values, keys lower-cased; a parameter
    that is not a constant is an error at that parameter."""
    from sbpy.bql.eval import evaluate_constant

    out: dict[str, Any] = {}
    for p in params or ():
        try:
            out[p.name.lower()] = evaluate_constant(p.value)
        except BQLError as err:
            raise fail(f"parameter '{p.name}': {err.message}", p) from None
    return out


def call_plugin(stmt: Any, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` of a plugin; its failure is a statement error "``what``: reason"."""
    try:
        return fn(*args)
    except BQLError as err:
        raise fail(f"{what}: {err.message}", stmt) from err
    except Exception as err:
        raise fail(f"{what}: {err}", stmt) from err


def updater(kind: str, name: str, instance: Any, stmt: Any) -> Callable[[dict[str, Any]], Any]:
    """The ``update`` method of a plugin instance (plugin classes are not ours: looked up by name),
    or SensorBee's error when it has none."""
    update = getattr(instance, "update", None)
    if not callable(update):
        raise fail(f"{kind} '{name}' cannot be updated", stmt)
    return update


def update_node(kind: str, name: str, instance: Any, stmt: Any, guard: Any = None) -> None:
    """Apply an UPDATE SOURCE/SINK statement to ``instance`` (under ``guard``, a lock, if given)."""
    update = updater(kind, name, instance, stmt)
    params = fold_params(stmt.params)
    if guard is None:
        call_plugin(stmt, f"cannot update {kind} '{name}'", update, params)
        return
    with guard:
        call_plugin(stmt, f"cannot update {kind} '{name}'", update, params)
