"""The BQL expression evaluator: AST expressions compiled into closures over an ``Env``.

Public API: ``Env``, ``Scope``, ``compile_expr``, ``compile_aggregate`` / ``CompiledAggregate``,
``evaluate_constant`` (EVAL), and the static helpers ``is_aggregate_call``, ``aggregate_calls``,
``contains_aggregate``, ``is_volatile``, ``is_constant``.
"""
from .aggregates import CompiledAggregate, compile_aggregate
from .analysis import aggregate_calls, contains_aggregate, is_aggregate_call, is_constant, is_volatile
from .compiler import compile_expr
from .constant import evaluate_constant
from .env import Env, Scope

__all__ = [
    "CompiledAggregate",
    "Env",
    "Scope",
    "aggregate_calls",
    "compile_aggregate",
    "compile_expr",
    "contains_aggregate",
    "evaluate_constant",
    "is_aggregate_call",
    "is_constant",
    "is_volatile",
]
