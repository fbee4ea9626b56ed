"""The native tier: a chain of fast memoryless SELECT stages as Spark column expressions (Catalyst, JVM).

A chain qualifies when every stage is a fast SELECT (``stage_codegen.fast_parts``: RSTREAM over
``[RANGE 1 TUPLES]`` of the previous stage or the journal input) whose WHERE uses field references (a
top-level key, then keys and array indexes from the front below it: ``a.b[0]``), literals, number
expressions over them (arithmetic, ``abs sign sqrt ceil floor trunc round``, casts to int or float:
``native_arith``), string expressions (``||``, ``lower``, ``upper``: ``native_text``), the comparisons
``= != <> < <= > >=``, ``[NOT] BETWEEN``, ``[NOT] IN`` (a field and literals that are all numbers or all
strings), ``IS [NOT] NULL / MISSING``, bool fields and ``AND / OR / NOT`` (``native_where``), and whose
select list holds such field references, literals, expressions or conditions (their bool) under keys
that do not start with ``$``, maybe after ``*`` or ``alias:*`` (the input map: a canonical line's own compact text, the JVM pass
vouching for it, with the keys set after it appended where the line lacks them). ``compile_chain``
returns the columns that classify each journal line::

    f     = sbpy_json_fields(line, keys)       -- one JVM pass: each path's class + JSON text (+ number key
                                                  for keys compared as numbers) (native_udf),
                                                  a column of its own so it runs once per line (a file
                                                  block's lines come with it done: sbpy_file_fields)
    guard = every value the chain touches has the class its code was written for
    depth = how many stages the tuple passes (their WHERE in order), when guard holds
    data  = the output map's JSON text (the sink's line, and tagged JSON of the same map)

Exactness: a value is only used in a form where Spark's operator is BQL's. Numbers are compared as
doubles only when both sides are exact doubles (integers of at most 15 digits, decimals without an
exponent, int literals within 2^53) — where BQL's int/float comparison is a double comparison; the JVM
pass hands each such double over as its number key (``number_key``: text whose byte order and equality
are the doubles'), so Spark compares bytes and parses nothing. Strings
(no escapes) compare as UTF-8 bytes, which is code-point order. Output text is the input's own text
only for classes whose text is what ``jsonio.to_json`` writes (``JsonScan.java``: ``i f s b n``, and
``x`` — a container, a long integer — as its compact text when every value in it is written as read and
no object in it repeats a key or has a ``$`` key; no text for the others);
literals are written by ``to_json`` at compile time. Any row outside the guards (a NULL, MISSING, a
bool in a comparison, mixed types, a container, an escape, a line the JVM pass refuses) is ``guard =
false``: it takes the Python kernel (``native_query``), so values, drops and errors stay the kernel's.
The guard covers every value the chain reads, including ones the kernel would not reach (a lazy AND's
right side, a later stage of a row filtered earlier): that only sends more rows to the kernel.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sbpy.bql.ast import FieldRef, KeyStep, Literal
from sbpy.bql.runtime.stage_codegen import fast_parts, star_parts

from .native_arith import FUNCTIONS, NotNumeric, NumberColumns, compiled, node_slots, number_node
from .native_keys import KEY_SEPARATOR, key_path, number_key, path_spec
from .native_text import NotText, TextColumns, text_compiled, text_node, unquote
from .native_where import Unsupported, is_condition, predicate, what

NUMBERS = (f"number expressions: fields, numeric literals, + - * / %, the functions {', '.join(FUNCTIONS)} "
           "and casts to int or float")


@dataclass(frozen=True)
class _Value:
    """A value of the current stage's input row: a source field (``slot`` in the JVM pass's result), a
    literal projected by an earlier stage (``const``), or arithmetic, a string expression or a condition an
    earlier stage projected (``node``, ``text``, ``pred``)."""

    slot: int | None = None
    const: Any = None
    node: tuple | None = None  # arithmetic an earlier stage projected (``native_arith.number_node``)
    text: tuple | None = None  # a string expression an earlier stage projected (``native_text.text_node``)
    pred: tuple | None = None  # a condition (its bool) an earlier stage projected (``native_where.predicate``)


@dataclass(frozen=True)
class NativeChain:
    """The compiled chain: the keys the JVM pass extracts and, per stage, its symbolic WHERE (or None)
    and its output ``[(key, _Value)]``; ``columns`` builds the Spark expressions from them."""

    keys: tuple[tuple[str | int, ...], ...]  # each a path: a top-level key, then member keys and indexes;
    # ``()``: the whole line (its canonical text)
    # per stage: its WHERE, its output row, the values it computed and replaced under a repeated key, and
    # whether its output is the line with the row's keys set on it (``*`` all the way; the row: only those)
    plan: tuple[tuple[Any, list[tuple[str, _Value]], tuple[_Value, ...], bool], ...]
    numeric: frozenset[int] = frozenset()  # the slots some comparison reads as a number

    @property
    def stages(self) -> int:
        return len(self.plan)

    @property
    def key_spec(self) -> str:
        """The paths the JVM pass extracts, as its functions take them (``JsonScan.Keys``): joined by U+0001,
        each prefixed by ``#`` when a comparison reads it as a number (its number key is wanted), else
        ``=``; a path is its top-level key, then per step below U+0002 and ``.key`` or ``[index``."""
        flags = ["#" if k in self.numeric else "=" for k in range(len(self.keys))]
        return KEY_SEPARATOR.join(flag + path_spec(path) if path else "*" for flag, path in zip(flags, self.keys))

    def fields(self, line: Any) -> Any:
        """The JVM pass over the string column ``line``: ``sbpy_json_fields(line, keys)``."""
        from pyspark.sql import functions as F

        return F.call_function("sbpy_json_fields", line, F.lit(self.key_spec))

    def columns(self, fields: Any, base: int = 0) -> tuple[Any, Any, Any, list]:
        """``(guard, depth, data, pre)`` columns over ``fields``, a column holding ``fields(line)``, or any
        array with the same elements from index ``base`` (``sbpy_file_fields``' lines: ``base`` 2)
        (``data``: the output's JSON line, without a newline); ``pre``: ``[(name, column)]`` to add, in
        order, before the others (values of arithmetic they read by name: ``native_arith``).

        Every class and text the chain reads is an element of ``fields``, so the caller should make
        it a column of its own (``native_query.classify`` does) and the JVM pass runs once per line:
        written inline, Spark's common-subexpression elimination does not reach into the CASE
        branches that build ``data``, and the pass would run again there."""
        return _build(list(self.plan), fields, self.keys, base, self.numeric)


def compile_stages(stages: Sequence[tuple[str, Any]], context: Any = None) -> NativeChain:
    """The native chain of ``[(node, analyzed statement)]``, first stage first; ``Unsupported`` names the
    first stage that does not compile (or does not build with ``context``, the topology's functions)."""
    from sbpy.bql.runtime import ProcessorContext, build_processor

    parts = []
    for node, statement in stages:
        try:
            if statement is None:
                raise Unsupported("no analyzed statement")
            try:
                proc = build_processor(statement, context or ProcessorContext())
            except Exception as e:  # noqa: BLE001 - unknown functions etc.: not native
                raise Unsupported(f"does not build here ({type(e).__name__})") from None
            parts.append(stage_parts(proc))
            chain = compile_chain(parts, proc.context.functions)
        except Unsupported as e:
            raise Unsupported(f"stage '{node}': {e}") from None
    return chain


def stage_parts(proc: Any) -> tuple[Any, list[tuple[str, Any]], str, bool]:
    """``(where, [(output key, expr)], alias, star)`` of a stage's processor in its fast form (``fast_parts``;
    ``star``: the select list starts from ``*`` or ``alias:*``, the input map, and then sets each key), or
    ``Unsupported``."""
    from sbpy.bql.runtime.kernel import SelectProcessor

    if not isinstance(proc, SelectProcessor):
        raise Unsupported("not a SELECT")
    parts = fast_parts(proc)
    if parts is not None:
        return (*parts, False)
    parts = star_parts(proc)
    if parts is not None:
        return (*parts, True)
    raise Unsupported("not RSTREAM over [RANGE 1 TUPLES] with a plain select list")


def compile_chain(parts: list[tuple[Any, list[tuple[str, Any]], str, bool]], functions: Any = None) -> NativeChain:
    """Compile stages given as ``(where, projections, alias, star)`` (``stage_parts``), first stage first;
    ``functions``: the registry their calls resolve in (None: the built-ins)."""
    keys: list[tuple[str | int, ...]] = []
    row: dict[str, _Value] = {}
    line = True  # the row is the journal line with ``row``'s keys set on it (any other key is a source field)

    def source(path: tuple[str | int, ...]) -> _Value:
        if path not in keys:
            keys.append(path)
        return _Value(slot=keys.index(path))

    plan = []
    for where, projections, alias, star in parts:
        def value(e: Any, row: dict[str, _Value] = row, line: bool = line, alias: str = alias) -> _Value:
            if compiled(e, functions):
                return _Value(node=_number(e, value, functions))
            if text_compiled(e, functions):
                try:
                    return _Value(text=text_node(e, value, functions))
                except NotText as why:
                    raise Unsupported(f"{why} in a string expression (string expressions: fields, string "
                                      f"literals, ||, lower, upper and casts to string)") from None
            if is_condition(e):  # its bool: true or false on every row the guards let through
                return _Value(pred=predicate(e, value))
            if not isinstance(e, FieldRef):
                raise Unsupported(f"{what(e)} (only fields, literals, number and string expressions, comparisons "
                                  f"and AND/OR/NOT compile; {NUMBERS}; string expressions: ||, lower, upper and casts to string)")
            if e.stream not in (None, alias):
                raise Unsupported("a field of another stream")
            path = key_path(e.path)
            key = path[0]
            if key not in row:
                if line:
                    return source(path)
                raise Unsupported(f"field '{key}' is not in the previous stage's output")
            if len(path) == 1:
                return row[key]
            if row[key].slot is None:  # a path continues into a field projected from the line, not a computed one
                raise Unsupported("a path into a value an earlier stage computed")
            return source(keys[row[key].slot] + path[1:])

        pred = predicate(where, value) if where is not None else None
        out: dict[str, _Value] = dict(row) if star else {}  # ``*``: the input map, its keys then set
        shadowed: list[_Value] = []  # values a later one under the same key replaces: still computed (or raise)
        set_here: set[str] = set()
        for key, expr in projections:
            if key in set_here:
                shadowed.append(out[key])
            set_here.add(key)
            if key[:1] == "$":
                raise Unsupported("an output key starting with '$'")
            if isinstance(expr, Literal):
                if type(expr.value) not in (int, float, str, bool, type(None)) or \
                        (type(expr.value) is float and not math.isfinite(expr.value)):
                    raise Unsupported("a literal of another type")
                out[key] = _Value(const=expr.value)
            else:  # a repeated key keeps its first position and its last value, as the kernel's dict
                out[key] = value(expr)
        line = line and star
        plan.append((pred, list(out.items()), tuple(shadowed), line))
        row = out
    if line:  # the output is the line's canonical text, the keys set on it absent from the line
        for path in [()] + [key_path([KeyStep(key)]) for key in row]:
            source(path)
    return NativeChain(tuple(keys), tuple(plan), frozenset(_numeric_slots(plan)))


def _numeric_slots(plan: list) -> set[int]:
    """The slots a comparison may read as numbers (a field against a number, or two fields) and the slots
    arithmetic reads."""
    out: set[int] = set()

    def walk(p: tuple) -> None:
        if p[0] in ("and", "or"):
            walk(p[1])
            walk(p[2])
        elif p[0] == "not":
            walk(p[1])
        elif p[0] == "cmp" and "arith" in (p[2][0], p[3][0]):  # every field read as a number
            for side in p[2:]:
                out.update(node_slots(side[1]) if side[0] == "arith" else {side[1]} if side[0] == "field" else ())
        elif p[0] == "cmp" and {p[2][0], p[3][0]}.isdisjoint(("str", "bool", "text")):
            out.update(side[1] for side in p[2:] if side[0] == "field")

    for pred, projections, shadowed, _line in plan:
        if pred is not None:
            walk(pred)
        for val in [val for _key, val in projections] + list(shadowed):  # arithmetic reads number keys
            if val.node is not None:
                out.update(node_slots(val.node))
            if val.pred is not None:
                walk(val.pred)
    return out


def _number(e: Any, value: Any, functions: Any) -> tuple:
    """``native_arith.number_node`` of a number expression, or ``Unsupported``."""
    try:
        return number_node(e, value, functions)
    except NotNumeric as why:
        raise Unsupported(f"{why} in a number expression ({NUMBERS})") from None


# ---------------------------------------------------------------- columns


def _build(plan: list, f: Any, keys: tuple, base: int, numbers: frozenset[int]) -> tuple[Any, Any, Any, list]:
    from pyspark.sql import functions as F

    nkeys = len(keys)
    guards: list[Any] = [f.isNotNull()]
    cls = [f[base + 3 * k] for k in range(nkeys)]
    text = [f[base + 3 * k + 1] for k in range(nkeys)]
    num = [f[base + 3 * k + 2] for k in range(nkeys)]  # set for the ``numbers`` slots holding i, f or d
    arith = NumberColumns(cls, text, num, guards)
    strings = TextColumns(cls, text, guards)

    def numeric(slot: int) -> Any:
        assert slot in numbers, slot  # the JVM pass computes number keys for these slots only
        return num[slot].isNotNull()

    def compare(op: str, a: tuple, b: tuple) -> Any:
        if a[0] == "text" or b[0] == "text":  # both sides as strings (no number or bool: ``_cmp``)
            sides = [strings.raw(s[1] if s[0] == "text" else ("lit", s[1]) if s[0] == "str" else s)
                     for s in (a, b)]
            return _op(op, sides[0], sides[1])
        if a[0] == "arith" or b[0] == "arith":  # both sides as exact doubles (no string: ``_cmp``)
            sides = [arith.double(s[1] if s[0] == "arith" else ("flt", s[1]) if s[0] == "num" else s)
                     for s in (a, b)]
            return _op(op, sides[0], sides[1])
        if a[0] == "field" and b[0] == "field":  # two numbers, two strings or two bools (false < true)
            both_num = numeric(a[1]) & numeric(b[1])
            both_str = (cls[a[1]] == "s") & (cls[b[1]] == "s")
            both_bool = (cls[a[1]] == "b") & (cls[b[1]] == "b")
            guards.append(both_num | both_str | both_bool)
            return F.when(both_num, _op(op, num[a[1]], num[b[1]])) \
                .when(both_str, _op(op, unquote(text[a[1]]), unquote(text[b[1]]))) \
                .otherwise(_op(op, text[a[1]], text[b[1]]))  # "false" < "true", as the bools
        field, lit, flipped = (a, b, False) if a[0] == "field" else (b, a, True)
        slot = field[1]
        if lit[0] == "bool":
            guards.append(cls[slot] == "b")
            x, y = text[slot], F.lit("true" if lit[1] else "false")
        elif lit[0] == "num":
            guards.append(numeric(slot))
            x, y = num[slot], F.lit(number_key(lit[1]))
        else:
            guards.append(cls[slot] == "s")
            x, y = unquote(text[slot]), F.lit(lit[1])
        return _op(op, y, x) if flipped else _op(op, x, y)

    def predicate(p: tuple) -> Any:
        if p[0] == "isnull":
            guards.append(cls[p[1]].isNotNull())
            return cls[p[1]] == "n"
        if p[0] == "ismissing":  # the path finds no value (a step absent, or through a value of another kind)
            return cls[p[1]].isNull()
        if p[0] == "truth":
            guards.append(cls[p[1]] == "b")
            return text[p[1]] == "true"
        if p[0] == "and":
            return predicate(p[1]) & predicate(p[2])
        if p[0] == "or":
            return predicate(p[1]) | predicate(p[2])
        if p[0] == "not":
            return ~predicate(p[1])
        return compare(p[1], p[2], p[3])

    passes = [None if pred is None else predicate(pred) for pred, _out, _shadowed, _line in plan]
    computed = [val for _pred, out, _shadowed, _line in plan[:-1] for _key, val in out]
    computed += [val for _pred, _out, shadowed, _line in plan for val in shadowed]
    for val in dict.fromkeys(computed):  # (once each: a ``*`` stage carries the values before it on)
        # a projection no sink line shows fails on a missing field (a drop) ...
        if val.slot is not None:
            guards.append(cls[val.slot].isNotNull())
        if val.node is not None:  # ... and on expressions outside the guards (the kernel computes or raises)
            arith.check(val.node)
        if val.text is not None:
            strings.raw(val.text)
        if val.pred is not None:
            predicate(val.pred)
    from sbpy.bql.jsonio import to_json

    pieces: list[Any] = []
    _pred, out, _shadowed, line = plan[-1]
    if line:  # the line's canonical text, then the keys set on it (guarded absent from the line)
        whole = text[keys.index(())]
        guards.append(whole.isNotNull())
        guards.extend(cls[keys.index((key,))].isNull() for key, _val in out)
        opened = whole.substr(F.lit(1), F.length(whole) - 1)  # without its "}"
        pieces.append(F.when(whole == F.lit("{}"), F.lit("{")).otherwise(F.concat(opened, F.lit(",")))
                      if out else opened)
    for n, (key, val) in enumerate(out):
        pieces.append(F.lit(("," if n else "" if line else "{") + to_json(key) + ":"))
        if val.node is not None:
            pieces.append(arith.json(val.node))
        elif val.text is not None:
            pieces.append(strings.json(val.text))
        elif val.pred is not None:
            pieces.append(F.when(predicate(val.pred), F.lit("true")).otherwise(F.lit("false")))
        elif val.slot is None:
            pieces.append(F.lit(to_json(val.const)))
        else:
            guards.append(text[val.slot].isNotNull())  # the pass gives the text of written-back classes only
            pieces.append(text[val.slot])
    data = F.concat(*pieces, F.lit("}")) if pieces else F.lit("{}")
    depth = F.lit(len(plan))
    for k in range(len(plan) - 1, -1, -1):
        if passes[k] is not None:
            depth = F.when(~passes[k], F.lit(k)).otherwise(depth)
    guard = guards[0]
    for g in guards[1:]:
        guard = guard & g
    return guard, depth, data, list(arith.pre.items())


def _op(op: str, x: Any, y: Any) -> Any:
    return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
