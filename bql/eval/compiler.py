"""Compile AST expressions into Python closures ``f(env) -> value`` (the per-tuple hot path).

Everything that can be decided once is decided at compile time: alias resolution, path getters,
function lookup and arity, cast converters; constant subtrees are folded (when folding fails the error
is kept for run time, so ``1/0`` in a SELECT fails per tuple, not the statement).

A field that is absent is an error outside ``IS [NOT] MISSING`` (SensorBee: the tuple's step fails and
the tuple is dropped, see the ``*_error_in_window_and_recovery`` conformance cases); ``x IS NULL`` on an
absent ``x`` is that error too. Static problems (unknown function, wrong arity, unknown stream prefix, an
aggregate where none is allowed) raise ``BQLAnalysisError`` from ``compile_expr``; run-time problems
raise ``BQLEvaluationError`` from the closure.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ast import (
    ArrayLit, Between, BinaryOp, CallSelector, Case, Cast, FieldRef, FunctionCall, InList, IsMissing, IsNull,
    Like, Literal, MapLit, TimestampRef, UnaryOp, Wildcard,
)
from ..conversions import converter
from ..errors import BQLAnalysisError, BQLError, BQLEvaluationError, UnsupportedFeatureError
from ..values import MISSING, type_name, values_equal
from .env import NULL_PADDED, Env, Scope
from .operators import BINARY, UNARY, and_, lazy_and, lazy_or, or_
from .paths import compile_path, path_text
from .predicates import between, in_constants, in_list, like

Compiled = Callable[[Env], Any]


def compile_expr(expr: Any, scope: Scope) -> Compiled:
    """Compile ``expr`` for ``scope`` into ``f(env) -> value``."""
    return _Compiler(scope).compile(expr)


class _Compiler:
    def __init__(self, scope: Scope):
        self.scope = scope
        self.registry = scope.registry
        self.extensions = getattr(scope, "extensions", None) or {}

    # ------------------------------------------------------------ dispatch

    def compile(self, e: Any) -> Compiled:
        ext = self.extensions.get(type(e))
        if ext is not None:
            return ext(e, self.scope, self.compile)
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise UnsupportedFeatureError(
                f"expression '{type(e).__name__}' cannot be evaluated here", getattr(e, "span", None)
            )
        f = method(e)
        if type(e) is not Literal and self._foldable(e):
            return self._fold(f)
        return f

    def _foldable(self, e: Any) -> bool:
        from .analysis import is_constant

        return is_constant(e, self.registry)

    @staticmethod
    def _fold(f: Compiled) -> Compiled:
        try:
            value = f(Env({}))
        except BQLError:
            return f
        return lambda env: value

    # ------------------------------------------------------------ leaves

    def _Literal(self, e: Literal) -> Compiled:
        value = e.value
        return lambda env: value

    def _alias(self, stream: str | None, e: Any, what: str) -> str:
        alias = self.scope.resolve(stream)
        if alias is None:
            if stream is not None:
                raise BQLAnalysisError(f"stream '{stream}' is not in the FROM clause", e.span)
            if not self.scope.aliases:
                raise BQLAnalysisError(f"{what} cannot be used without a FROM clause", e.span)
            raise BQLAnalysisError(f"{what} needs a stream prefix when there are several inputs", e.span)
        return alias

    def _FieldRef(self, e: FieldRef) -> Compiled:
        text = path_text(e.path)
        alias = self._alias(e.stream, e, f"field '{text}'")
        getter = compile_path(e.path)
        message = f"field '{text}' is missing"

        def field(env: Env) -> Any:
            t = env.tuples[alias]
            v = getter(t.data)
            if v is MISSING:
                if t is NULL_PADDED:  # a LEFT JOIN's side without a match: its fields are NULL
                    return None
                raise BQLEvaluationError(message)
            return v

        return field

    def _Wildcard(self, e: Wildcard) -> Compiled:
        if e.stream is not None or len(self.scope.aliases) == 1:
            alias = self._alias(e.stream, e, "'*'")
            return lambda env: dict(env.tuples[alias].data)
        if not self.scope.aliases:
            raise BQLAnalysisError("'*' cannot be used without a FROM clause", e.span)
        aliases = self.scope.aliases

        def merged(env: Env) -> Any:
            out: dict = {}
            for a in aliases:
                t = env.tuples.get(a)
                if t is not None:
                    out.update(t.data)
            return out

        return merged

    def _TimestampRef(self, e: TimestampRef) -> Compiled:
        alias = self._alias(e.stream, e, "'ts()'")
        return lambda env: env.tuples[alias].ts

    # ------------------------------------------------------------ operators

    def _UnaryOp(self, e: UnaryOp) -> Compiled:
        op = UNARY.get(e.op.lower())
        if op is None:
            raise UnsupportedFeatureError(f"unknown operator '{e.op}'", e.span)
        f = self.compile(e.operand)
        return lambda env: op(f(env))

    def _BinaryOp(self, e: BinaryOp) -> Compiled:
        op = BINARY.get(e.op.lower())
        if op is None:
            raise UnsupportedFeatureError(f"unknown operator '{e.op}'", e.span)
        lf = self.compile(e.left)
        rf = self.compile(e.right)
        if op is and_:
            return lazy_and(lf, rf)
        if op is or_:
            return lazy_or(lf, rf)
        if type(e.right) is Literal:
            c = e.right.value
            return lambda env: op(lf(env), c)
        return lambda env: op(lf(env), rf(env))

    def _InList(self, e: InList) -> Compiled:
        if all(type(i) is Literal for i in e.items):
            return in_constants(self.compile(e.operand), tuple(i.value for i in e.items), e.negated)
        return in_list(self.compile(e.operand), [self.compile(i) for i in e.items], e.negated)

    def _Between(self, e: Between) -> Compiled:
        return between(self.compile(e.operand), self.compile(e.low), self.compile(e.high), e.negated)

    def _Like(self, e: Like) -> Compiled:
        escape = self.compile(e.escape) if e.escape is not None else None
        return like(self.compile(e.operand), self.compile(e.pattern), escape, e.negated)

    def _IsNull(self, e: IsNull) -> Compiled:
        f = self.compile(e.operand)
        if e.negated:
            return lambda env: f(env) is not None
        return lambda env: f(env) is None

    def _IsMissing(self, e: IsMissing) -> Compiled:
        operand = e.operand
        if type(operand) is not FieldRef:
            raise BQLAnalysisError("IS [NOT] MISSING can only be applied to a field", e.span)
        alias = self._alias(operand.stream, operand, f"field '{path_text(operand.path)}'")
        getter = compile_path(operand.path)
        if e.negated:  # NULL_PADDED's fields are NULL, not missing
            return lambda env: (t := env.tuples[alias]) is NULL_PADDED or getter(t.data) is not MISSING
        return lambda env: (t := env.tuples[alias]) is not NULL_PADDED and getter(t.data) is MISSING

    def _Cast(self, e: Cast) -> Compiled:
        f = self.compile(e.operand)
        try:
            conv = converter(e.type_name)
        except BQLEvaluationError as err:
            message = err.message

            def bad_cast(env: Env) -> Any:
                raise BQLEvaluationError(message)

            return bad_cast
        return lambda env: conv(f(env))

    # ------------------------------------------------------------ constructors

    def _ArrayLit(self, e: ArrayLit) -> Compiled:
        fs = [self.compile(x) for x in e.items]
        return lambda env: [f(env) for f in fs]

    def _MapLit(self, e: MapLit) -> Compiled:
        items = [(k, self.compile(v)) for k, v in e.items]
        return lambda env: {k: f(env) for k, f in items}

    def _Case(self, e: Case) -> Compiled:
        """SensorBee's ``caseBuilder``: the first WHEN whose value equals the subject by ``data.Equal``
        (two-valued: NULL equals NULL, 1 equals 1.0) wins; WHENs after it are not evaluated. A searched
        CASE is a CASE on ``true``: a condition that is NULL or not a bool simply does not match."""
        whens = [(self.compile(w.condition), self.compile(w.result)) for w in e.whens]
        else_f = self.compile(e.else_) if e.else_ is not None else (lambda env: None)
        if e.operand is not None:
            subject = self.compile(e.operand)

            def simple_case(env: Env) -> Any:
                v = subject(env)
                for cond, result in whens:
                    if values_equal(v, cond(env)):
                        return result(env)
                return else_f(env)

            return simple_case

        def searched_case(env: Env) -> Any:
            for cond, result in whens:
                if cond(env) is True:
                    return result(env)
            return else_f(env)

        return searched_case

    # ------------------------------------------------------------ calls

    def _FunctionCall(self, e: FunctionCall) -> Compiled:
        from ..functions.registry import NotRegisteredError

        try:
            spec = self.registry.lookup(e.name)
        except NotRegisteredError as err:
            raise BQLAnalysisError(err.message, e.span) from None
        if spec.aggregate:
            slot = self.scope.aggregate_slot(e) if self.scope.aggregate_slot is not None else None
            if slot is None:
                raise BQLAnalysisError(f"aggregate function '{e.name}' cannot be used here", e.span)
            return lambda env: env.aggregates[slot]
        if e.order_by:
            raise BQLAnalysisError(f"ORDER BY is only allowed in aggregate calls, not in '{e.name}'", e.span)
        problem = spec.check_arity(len(e.args))
        if problem:
            raise BQLAnalysisError(problem, e.span)
        if spec.stream_only and not self.scope.stream:
            raise BQLAnalysisError(
                f"function '{e.name}' cannot be used outside of a stream processing context", e.span
            )
        fs = [self.compile(a) for a in e.args]  # a '*' argument is the tuple's map, as in SensorBee
        return _call(spec, fs)


    def _CallSelector(self, e: CallSelector) -> Compiled:
        """``f(x).path``: the path applied to the call's result, which must be a map or an array
        (SensorBee's ``funcApp.Eval`` with a selector); a path that finds nothing is an error."""
        call = self.compile(e.call)
        getter = compile_path(e.path)
        text = path_text(e.path)
        text = text if text.startswith(("[", "..")) else "." + text
        name = e.call.name if type(e.call) is FunctionCall else "?"

        def selected(env: Env) -> Any:
            v = call(env)
            t = type(v)
            if t is not dict and t is not list:
                raise BQLEvaluationError(f"type '{type_name(v)}' is not supported with selector")
            r = getter(v)
            if r is MISSING:
                raise BQLEvaluationError(f"'{text}' was not found in the result of '{name}'")
            return r

        return selected


def _call(spec: Any, fs: list[Compiled]) -> Compiled:
    """A closure calling ``spec.impl`` with the evaluated arguments (NULL and error handling)."""
    impl = spec.impl
    name = spec.name
    null_on_null = spec.null_on_null
    with_env = getattr(spec, "context", False)

    def invoke(env: Env, args: list) -> Any:
        if null_on_null and None in args:
            for a in args:
                if a is None:
                    return None
        try:
            if with_env:
                return impl(env, *args)
            return impl(*args)
        except BQLError:
            raise
        except Exception as err:  # a plugin's failure fails this tuple only
            raise BQLEvaluationError(f"function '{name}' failed: {err}") from err

    if len(fs) == 1 and not with_env:
        f0 = fs[0]

        def call1(env: Env) -> Any:
            a = f0(env)
            if a is None and null_on_null:
                return None
            try:
                return impl(a)
            except BQLError:
                raise
            except Exception as err:
                raise BQLEvaluationError(f"function '{name}' failed: {err}") from err

        return call1
    return lambda env: invoke(env, [f(env) for f in fs])
