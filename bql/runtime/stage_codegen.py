"""Generated, type-guarded Python for fast memoryless SELECT stages (the stateless tier's hot path).

A fast stage (``RSTREAM`` over ``[RANGE 1 TUPLES]`` of one input: WHERE and a select list) whose
WHERE uses only field references by map keys, literals, arithmetic (``+ - * / %``, unary ``-``) of
numeric fields and literals, the comparisons ``= != <> < <= > >=`` and ``AND / OR / NOT``, and whose
select list holds only such field references, literals or arithmetic (each under one output key),
compiles to one Python function ``step(data)`` that returns

- ``None`` when WHERE is false,
- the output map when the row passes,
- ``FALLBACK`` when the row holds anything the code was not written for.

Exactness: the generated code handles only rows whose referenced values have the types it checks
(guards): ``int``/``float`` against numeric literals and fields, ``str`` against strings — the cases
where BQL's operator is Python's (``values.bql_less``: an int meets a float as ``float(int)``;
``bql_equal``: int and float compare as floats). A missing field, a NULL, a bool, a container, a
mixed-type comparison, a nested path that does not lead through maps, arithmetic that would overflow
int64 or divide by zero: ``FALLBACK``, and the row takes
the kernel's compiled closures, which give the exact value, NULL logic, error and drop. The generated
code has no side effects, so falling back half-way is safe. ``tests/spark/test_stage_codegen.py``
compares it with the kernel on random rows.

With ``leaves`` (a compile scope; the incremental kernel's one-FROM-item statements, which call no
volatile function) an expression outside that subset — a function call, a cast, CASE, LIKE, IN, IS NULL,
``||`` ... — becomes a *closure leaf*: its compiled closure, the kernel's own code, called on the row's
``Env``; a leaf that raises makes the row ``FALLBACK``, a leaf in a predicate's place must give a bool.
Leaves never read ``ts()``; the tests hold the code to the reference kernel (``SelectProcessor``).

The in-process incremental kernel uses the same generator (``row_parts``: any one-FROM-item,
non-grouping SELECT, whatever its window) to decide a new row's WHERE and projection
(``incremental/processor.py``; ``tests/bql/runtime/test_generated_kernel_paths.py``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sbpy.bql.ast import BinaryOp, FieldRef, KeyStep, Literal, TimestampRef, UnaryOp, Wildcard
from sbpy.bql.eval import Env, Scope, compile_expr, is_volatile
from sbpy.bql.eval.operators import mod
from sbpy.bql.eval.paths import MISSING
from sbpy.bql.values import INT_MAX, INT_MIN

from .processor import Tuple

FALLBACK = object()  # "this row needs the kernel"
_CMP = {"=": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_ARITHMETIC = frozenset(("+", "-", "*", "/", "%"))


def leaf_closure(e: Any, scope: Scope | None) -> Any:
    """The compiled closure of ``e`` as a closure leaf (``_Writer.leaf``); raises ``_Unsupported`` without
    a scope, for a literal or arithmetic (written inline), a volatile expression or one reading ``ts()``."""
    if scope is None or isinstance(e, Literal) or is_arithmetic(e):
        raise _Unsupported(type(e).__name__)
    if is_volatile(e, scope.registry) or any(type(n) is TimestampRef for n in e.walk()):
        raise _Unsupported("a volatile expression or ts()")
    try:
        return compile_expr(e, scope)
    except Exception as err:  # an aggregate or anything the row scope refuses
        raise _Unsupported(str(err)) from err


def row_env(alias: str) -> Any:
    """``env_of(data)``: the ``Env`` a closure leaf reads for one row of FROM item ``alias`` (no time)."""
    return lambda data: Env({alias: Tuple(data, None, 0, alias)})


def is_arithmetic(e: Any) -> bool:
    """``x + y``, ``x - y``, ``x * y``, ``x / y``, ``x % y`` or ``-x`` (``number``'s expressions)."""
    t = type(e)
    return (t is BinaryOp and e.op in _ARITHMETIC) or (t is UnaryOp and e.op == "-")


class _Unsupported(Exception):
    pass


class _Writer:
    """Python source for one stage: statements that bind temporaries, each guarded.

    ``sources`` maps a FROM alias (None: an unqualified field) to the variable holding its row's data."""

    def __init__(self, sources: dict[str | None, str], leaves: Scope | None = None):
        self.sources = sources
        self.leaves = leaves  # compile scope of closure leaves (None: none), its aliases those of ``sources``
        self.env = False  # a leaf reads the row's ``Env`` (built once, first thing)
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.fields: dict[tuple[str, ...], str] = {}
        self.n = 0

    def temp(self) -> str:
        self.n += 1
        return f"t{self.n}"

    def const(self, value: Any) -> str:
        name = f"c{len(self.consts)}"
        self.consts[name] = value
        return name

    def field(self, e: FieldRef, indent: str) -> str:
        """A variable holding the field's value (anything but MISSING; the kernel decides the rest)."""
        src = self.sources.get(e.stream)
        if src is None or not e.path:
            raise _Unsupported("field of another stream")
        keys = []
        for step in e.path:
            if type(step) is not KeyStep:
                raise _Unsupported("path step other than a map key")
            keys.append(step.key)
        known = self.fields.get((src, *keys))
        if known is not None:
            return known
        var = src
        for key in keys:
            var = self.temp()
            self.lines.append(f"{indent}if type({src}) is not dict: return FALLBACK")
            self.lines.append(f"{indent}{var} = {src}.get({key!r}, MISSING)")
            self.lines.append(f"{indent}if {var} is MISSING: return FALLBACK")
            src = var
        self.fields[(self.sources[e.stream], *keys)] = var
        return var

    def project(self, projections: list[tuple[str, Any]], copy: Callable[[Any], Any] | None) -> None:
        """The lines returning the output map of the select list ``projections`` ``[(key, expr)]``."""
        items = []
        for key, expr in projections:
            if isinstance(expr, FieldRef):
                var = self.field(expr, "    ")
                items.append((key, var if copy is None else
                              f"(COPY({var}) if type({var}) is dict or type({var}) is list else {var})"))
            elif isinstance(expr, Literal) and type(expr.value) in (int, float, str, bool, type(None)):
                items.append((key, self.const(expr.value)))
            elif is_arithmetic(expr):
                items.append((key, self.number(expr, "    ")))
            else:
                var = self.leaf(expr, "    ")
                items.append((key, var if copy is None else
                              f"(COPY({var}) if type({var}) is dict or type({var}) is list else {var})"))
        if len({k for k, _ in items}) == len(items):
            body = ", ".join(f"{k!r}: {v}" for k, v in items)
            self.lines.append(f"    return {{{body}}}")
        else:  # a repeated key keeps its first position and its last value, as the kernel's dict
            self.lines.append("    row = {}")
            self.lines.extend(f"    row[{k!r}] = {v}" for k, v in items)
            self.lines.append("    return row")

    def compile(self, params: str, name: str, copy: Callable[[Any], Any] | None) -> Callable[..., Any]:
        """The function ``step(params)`` of the lines written (its text on ``step.source``)."""
        lines = self.lines
        if self.env:  # the closure leaves' row or combination (``ts()`` is never read by one)
            tuples = ", ".join(f"{alias!r}: TUPLE({self.sources[alias]}, None, 0, {alias!r})"
                               for alias in self.leaves.aliases)
            lines = [f"    env = ENV({{{tuples}}})", *lines]
        source = f"def step({params}):\n" + "\n".join(lines) + "\n"
        scope: dict[str, Any] = {"FALLBACK": FALLBACK, "MISSING": MISSING, "COPY": copy, "INT_MIN": INT_MIN,
                                 "INT_MAX": INT_MAX, "MOD": mod, "ENV": Env, "TUPLE": Tuple, **self.consts}
        exec(compile(source, name, "exec"), scope)  # noqa: S102 - generated from the AST
        step = scope["step"]
        step.source = source  # for tests and debugging
        return step

    # ------------------------------------------------------------ arithmetic (number-valued)

    def number(self, e: Any, indent: str) -> str:
        """A variable holding the value of a numeric expression — a field or literal that is an int or a
        float, or arithmetic of such (``eval/operators.py``'s ``add`` ... ``mod``, ``neg``) — for rows
        whose operands are ints and floats (not bools): int op int stays int (``/`` truncates toward
        zero, ``%`` takes the dividend's sign), int op float is float. What the kernel would make an
        error or leave to IEEE edge rules — NULL or any other type, int64 overflow, a zero divisor
        (int or float) — is ``FALLBACK``."""
        if isinstance(e, Literal):
            if type(e.value) is int or type(e.value) is float:
                return self.const(e.value)
            raise _Unsupported(f"literal of type {type(e.value).__name__} in arithmetic")
        if not is_arithmetic(e):
            var = self.field(e, indent) if isinstance(e, FieldRef) else self.leaf(e, indent)
            self.lines.append(f"{indent}if type({var}) is not int and type({var}) is not float: return FALLBACK")
            return var
        out = self.temp()
        if type(e) is UnaryOp:
            a = self.number(e.operand, indent)
            self.lines.append(f"{indent}if {self._is_int(a)} and {a} == INT_MIN: return FALLBACK")  # overflows
            self.lines.append(f"{indent}{out} = -{a}")
            return out
        a, b = self.number(e.left, indent), self.number(e.right, indent)
        op = e.op
        add = self.lines.append
        add(f"{indent}if {self._is_int(a)} and {self._is_int(b)}:")
        if op in ("+", "-", "*"):
            add(f"{indent}    {out} = {a} {op} {b}")
            add(f"{indent}    if not INT_MIN <= {out} <= INT_MAX: return FALLBACK")
            add(f"{indent}else: {out} = float({a}) {op} float({b})")
        elif op == "/":  # Go's integer division; IEEE's for floats
            add(f"{indent}    if {b} == 0 or ({b} == -1 and {a} == INT_MIN): return FALLBACK")
            add(f"{indent}    {out} = abs({a}) // abs({b})")
            add(f"{indent}    if ({a} < 0) != ({b} < 0): {out} = -{out}")
            add(f"{indent}elif {b} == 0: return FALLBACK")
            add(f"{indent}else: {out} = float({a}) / float({b})")
        else:  # % : Go's remainder for ints (the dividend's sign), ``fmod`` (the kernel's ``mod``) for floats
            add(f"{indent}    if {b} == 0: return FALLBACK")
            add(f"{indent}    {out} = abs({a}) % abs({b})")
            add(f"{indent}    if {a} < 0: {out} = -{out}")
            add(f"{indent}elif {b} == 0: return FALLBACK")
            add(f"{indent}else: {out} = MOD({a}, {b})")
        return out

    def leaf(self, e: Any, indent: str) -> str:
        """A variable holding the value of ``e`` — an expression outside the generated subset (a function
        call, a cast, LIKE, IN, CASE ...) — computed by its compiled closure, the kernel's own code, on the
        row's ``Env``; a closure that raises makes the row ``FALLBACK`` (the kernel then raises the
        same error). Only with ``leaves`` (a scope of the ``sources``' aliases), for deterministic
        expressions that do not read ``ts()`` (the leaf's tuples have no time): evaluating one again after
        a FALLBACK gives the same."""
        closure = leaf_closure(e, self.leaves)
        self.env = True
        fn, out = self.const(closure), self.temp()
        self.lines += [f"{indent}try:", f"{indent}    {out} = {fn}(env)", f"{indent}except Exception:",
                       f"{indent}    return FALLBACK"]
        return out

    def _is_int(self, var: str) -> str:
        """The test whether ``number``'s ``var`` holds an int (``True``/``False`` for a literal, which
        CPython's compiler folds away)."""
        if var in self.consts:
            return str(type(self.consts[var]) is int)
        return f"type({var}) is int"

    # ------------------------------------------------------------ WHERE (bool-valued)

    def predicate(self, e: Any, indent: str) -> str:
        """A variable holding the expression's bool value for rows that pass the guards."""
        if isinstance(e, BinaryOp):
            op = e.op.lower()
            if op in ("and", "or"):
                left = self.predicate(e.left, indent)
                out = self.temp()
                # left-first and lazy as the kernel: the right side is evaluated only when needed
                self.lines.append(f"{indent}{out} = {left}")
                test = f"{out}" if op == "and" else f"not {out}"
                self.lines.append(f"{indent}if {test}:")
                fetched = dict(self.fields)  # fields read only inside the branch are not bound outside it
                right = self.predicate(e.right, indent + "    ")
                self.lines.append(f"{indent}    {out} = {right}")
                self.fields = fetched
                return out
            if op in _CMP:
                if self.leaves is None:
                    return self.compare(_CMP[op], e.left, e.right, indent)
                mark = (len(self.lines), dict(self.fields), self.n)
                try:
                    return self.compare(_CMP[op], e.left, e.right, indent)
                except _Unsupported:  # (a bool literal, two literals ...): the whole comparison is a leaf
                    del self.lines[mark[0]:]
                    self.fields, self.n = mark[1], mark[2]
        if isinstance(e, UnaryOp) and e.op.lower() == "not":
            inner = self.predicate(e.operand, indent)
            out = self.temp()
            self.lines.append(f"{indent}{out} = not {inner}")
            return out
        out = self.leaf(e, indent)  # (IN, LIKE, BETWEEN, IS NULL, a bool function ...): a bool, or the kernel
        self.lines.append(f"{indent}if type({out}) is not bool: return FALLBACK")
        return out

    def value(self, e: Any, indent: str) -> str:
        """A variable holding a field's value, or a closure leaf's (``leaf``)."""
        return self.field(e, indent) if isinstance(e, FieldRef) else self.leaf(e, indent)

    def compare(self, op: str, left: Any, right: Any, indent: str) -> str:
        out = self.temp()
        if is_arithmetic(left) or is_arithmetic(right):  # numbers: an int meets a float as float(int)
            a, b = self.number(left, indent), self.number(right, indent)
            self.lines.append(f"{indent}if type({a}) is type({b}): {out} = {a} {op} {b}")
            self.lines.append(f"{indent}else: {out} = float({a}) {op} float({b})")
        elif isinstance(right, Literal) and not isinstance(left, Literal):
            v, c = self.value(left, indent), right.value
            self._versus_literal(out, op, v, c, indent, flipped=False)
        elif isinstance(left, Literal) and not isinstance(right, Literal):
            v, c = self.value(right, indent), left.value
            self._versus_literal(out, op, v, c, indent, flipped=True)
        elif not isinstance(left, Literal) and not isinstance(right, Literal):
            a, b = self.value(left, indent), self.value(right, indent)
            self.lines.append(f"{indent}ta, tb = type({a}), type({b})")
            self.lines.append(f"{indent}if ta is tb and (ta is int or ta is float or ta is str): "
                              f"{out} = {a} {op} {b}")
            self.lines.append(f"{indent}elif (ta is int or ta is float) and (tb is int or tb is float): "
                              f"{out} = float({a}) {op} float({b})")
            self.lines.append(f"{indent}else: return FALLBACK")
        else:
            raise _Unsupported("comparison of other expressions")
        return out

    def _versus_literal(self, out: str, op: str, v: str, c: Any, indent: str, flipped: bool) -> None:
        def expr(x: str, y: str) -> str:
            return f"{y} {op} {x}" if flipped else f"{x} {op} {y}"

        tc = type(c)
        if tc is int or tc is float:
            same, other = self.const(c), self.const(float(c))
            this, that = ("int", "float") if tc is int else ("float", "int")
            self.lines.append(f"{indent}if type({v}) is {this}: {out} = {expr(v, same)}")
            if tc is int:  # a float field meets an int literal as float(literal)
                self.lines.append(f"{indent}elif type({v}) is float: {out} = {expr(v, other)}")
            else:  # an int field meets a float literal as float(field)
                self.lines.append(f"{indent}elif type({v}) is {that}: {out} = {expr(f'float({v})', same)}")
            self.lines.append(f"{indent}else: return FALLBACK")
        elif tc is str:
            k = self.const(c)
            self.lines.append(f"{indent}if type({v}) is str: {out} = {expr(v, k)}")
            self.lines.append(f"{indent}else: return FALLBACK")
        else:
            raise _Unsupported(f"literal of type {tc.__name__}")


def generate(where: Any, projections: list[tuple[str, Any]], alias: str,
             copy: Callable[[Any], Any] | None = None, leaves: Scope | None = None) -> Callable[[Any], Any] | None:
    """``step(data)`` for a stage with WHERE ``where`` (or None) and ``projections`` ``[(key, expr)]``;
    None when the stage uses anything outside the supported subset.

    With ``copy`` a projected map or array value is emitted as ``copy(value)`` (the in-process kernel
    gives each output row its own containers, ``kernel._copy``); without it the output shares them
    with the input row (the Spark tier serialises the row at once)."""
    w = _Writer({None: "d", alias: "d"}, leaves)
    try:
        if where is not None:
            verdict = w.predicate(where, "    ")
            w.lines.append(f"    if not {verdict}: return None")
        w.project(projections, copy)
    except _Unsupported:
        return None
    return w.compile("d", f"<stage {alias}>", copy)


def fast_parts(proc: Any) -> tuple[Any, list[tuple[str, Any]], str] | None:
    """``(where, [(output key, expr)], alias)`` of a kernel ``SelectProcessor`` in its fast form (RSTREAM
    over ``[RANGE 1 TUPLES]`` of one input, each projection under one top-level key), or None."""
    if not proc.fast:
        return None
    return row_parts(proc)


def row_parts(proc: Any) -> tuple[Any, list[tuple[str, Any]], str] | None:
    """``fast_parts`` without the fast form: a one-FROM-item, non-grouping ``SelectProcessor`` whose
    projections each set one top-level key (its WHERE and select list per row, whatever the window)."""
    sl = proc.select_list
    if len(proc.aliases) != 1 or sl is None or sl.wild:
        return None
    return _keyed_parts(proc, [p.expr for p in proc.select.projections])


def star_parts(proc: Any) -> tuple[Any, list[tuple[str, Any]], str] | None:
    """``fast_parts`` of a select list that starts from ``*`` or ``alias:*`` (the input map) and then sets
    each of its other projections under one top-level key, or None."""
    sl = proc.select_list
    if not proc.fast or len(proc.aliases) != 1 or sl is None or \
            sl.wild not in ([("star", None)], [("star", proc.aliases[0])]):
        return None
    return _keyed_parts(proc, [p.expr for p in proc.select.projections  # (the star: a Wildcard without AS)
                               if not (isinstance(p.expr, Wildcard) and p.alias is None)])


def _keyed_parts(proc: Any, exprs: list[Any]) -> tuple[Any, list[tuple[str, Any]], str] | None:
    """``(where, [(key, expr)], alias)`` when each of ``exprs``, the select list's explicit items, sets one
    top-level key; else None."""
    if len(exprs) != len(proc.select_list.explicit):
        return None
    projections = []
    for (steps, _fn), expr in zip(proc.select_list.explicit, exprs):
        if len(steps) != 1 or type(steps[0]) is not KeyStep:
            return None
        projections.append((steps[0].key, expr))
    return proc.select.where, projections, proc.aliases[0]


def generate_for(proc: Any, copy: Callable[[Any], Any] | None = None,
                 leaves: Scope | None = None) -> Callable[[Any], Any] | None:
    """``generate`` for a kernel ``SelectProcessor`` in its fast form, or None."""
    parts = fast_parts(proc)
    return None if parts is None else generate(*parts, copy=copy, leaves=leaves)


def leaf_scope(proc: Any) -> Scope:
    """The closure leaves' compile scope of a processor's FROM items (``leaf_closure`` refuses volatile
    expressions; the incremental kernel's statements call none: ``incremental/eligibility.py``)."""
    return Scope(tuple(proc.aliases), registry=proc.context.functions)


def generate_pair(projections: list[tuple[str, Any]], aliases: tuple[str, str],
                  copy: Callable[[Any], Any] | None = None, leaves: Scope | None = None
                  ) -> Callable[[Any, Any], Any] | None:
    """``step(d0, d1)``: the select list ``projections`` ``[(key, expr)]`` of a two-FROM-item statement over
    the data of one combination (``d0`` of ``aliases[0]``, ``d1`` of ``aliases[1]``), with ``generate``'s
    subset and guards (every field names its alias; FALLBACK for anything else) and, with ``leaves`` (a
    scope of both aliases), its closure leaves over the combination; None outside the subset.
    Used by the incremental kernel's join step (``incremental/pair_step.py``)."""
    w = _Writer({alias: f"d{i}" for i, alias in enumerate(aliases)}, leaves)
    try:
        w.project(projections, copy)
    except _Unsupported:
        return None
    return w.compile("d0, d1", f"<pair stage {aliases[0]}, {aliases[1]}>", copy)
