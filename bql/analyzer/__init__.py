"""Statement-local analysis: an ordered tuple of small rules, each ``rule(stmt, ctx)``.

``prepare(stmt)`` applies rewrites (MATCH_RECOGNIZE variable references); ``analyze(stmt)`` runs
``RULES`` in order, raising ``BQLAnalysisError`` (with the offending node's span) at the first
violation and returning the warnings of an accepted statement. The runtime calls both::

    >>> from sbpy.bql.parser import parse
    >>> stmt = prepare(parse("SELECT RSTREAM a FROM src [RANGE 1 TUPLES]")[0])
    >>> analyze(stmt)
    []
"""
from __future__ import annotations

from typing import Any

from ..ast import Explain, Statement
from .aggregates import check_aggregates
from .builtin_params import check_builtin_params
from .context import AnalysisWarning, Context
from .emitters import check_emitter
from .history import check_history
from .expressions import (
    check_arity, check_casts, check_eval, check_is_missing, check_match_only_forms, check_wildcard_positions,
)
from .match import check_match_recognize
from .names import check_node_name, is_reserved
from .paths import check_field_paths, check_labels
from .prefixes import check_prefixes
from .relation_clauses import check_like_patterns, check_relation_clauses
from .subqueries import check_subqueries
from .rewrite import prepare, rewrite_pattern_refs
from .timeplus import check_window_functions
from .timeplus_clauses import check_timeplus_clauses
from .windows import check_from_needs_window, check_ranges

RULES = (
    check_node_name,
    check_eval,
    check_emitter,
    check_ranges,
    check_subqueries,
    check_history,
    check_from_needs_window,
    check_field_paths,
    check_labels,
    check_casts,
    check_is_missing,
    check_wildcard_positions,
    check_arity,
    check_window_functions,
    check_timeplus_clauses,
    check_prefixes,
    check_match_only_forms,
    check_aggregates,
    check_match_recognize,
    check_relation_clauses,
    check_like_patterns,
)

__all__ = [
    "RULES",
    "AnalysisWarning",
    "Context",
    "analyze",
    "check_builtin_params",
    "is_reserved",
    "prepare",
    "rewrite_pattern_refs",
]


def _default_registry() -> Any:
    try:
        from ..functions.registry import builtin_registry
    except ImportError:
        return None
    try:
        return builtin_registry()
    except Exception:  # noqa: BLE001 - a broken registry must not hide analysis
        return None


def analyze(stmt: Statement, text: str | None = None, registry: Any = None) -> list[AnalysisWarning]:
    """Check ``stmt`` (already ``prepare``d); raise ``BQLAnalysisError`` or return warnings.

    Args:
        stmt: the statement node.
        text: its source text (used only for messages).
        registry: the function registry deciding which calls are aggregates and their arity;
            the built-in registry when None.

    Returns:
        The warnings of an accepted statement (possibly empty).
    """
    ctx = Context(text=text, registry=registry if registry is not None else _default_registry())
    if isinstance(stmt, Explain):  # EXPLAIN checks the statement it explains
        stmt = stmt.statement
    for rule in RULES:
        rule(stmt, ctx)
    return ctx.warnings
