"""``stage_codegen``: a generated stage gives the kernel's row for every row it does not hand back.

Hypothesis draws stages inside the generated subset (comparisons of fields, literals and arithmetic
under AND/OR/NOT, projections of fields, literals and arithmetic, repeated output keys) and rows of
mixed and missing types; for each row the generated function returns FALLBACK (the kernel decides) or exactly what the
kernel's fast form emits (None = filtered, else the same map: keys in order, int vs float kept).
A chain of generated stages through ``FastPipeline`` is covered by ``test_fast_chain.py``.
"""
from __future__ import annotations

import copy
import datetime as _dt
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sbpy.bql.plan.planner import analyze_stage
from sbpy.bql.runtime import ProcessorContext, Tuple, build_processor
from sbpy.bql.runtime.kernel import _copy
from sbpy.bql.runtime.stage_codegen import FALLBACK, generate_for, leaf_scope

_TS = _dt.datetime(2024, 1, 1, tzinfo=_dt.timezone.utc)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 2.0, -1.5, math.nan, 2.5]),
    st.sampled_from(["", "2", "a", "b", "ab"]), st.lists(st.integers(0, 2), max_size=2),
)
mixed_rows = st.dictionaries(st.sampled_from(["a", "b", "c", "m"]),
                             st.one_of(scalars, st.dictionaries(st.sampled_from(["y", "z"]), scalars, max_size=2)),
                             max_size=4)
numbers = st.one_of(st.integers(-3, 3), st.sampled_from([2.0, 2.5, -1.5, 0.0, math.nan, 9007199254740993,
                                                          9007199254740992.0, math.inf]))
typed = st.one_of(numbers, st.sampled_from(["", "2", "a", "b", "ab"]))
typed_rows = st.fixed_dictionaries({"a": typed, "b": typed, "c": numbers,
                                    "m": st.fixed_dictionaries({"y": typed, "z": numbers})})
rows = st.one_of(typed_rows, typed_rows, mixed_rows)  # typed rows mostly reach the generated code
fields = st.sampled_from(["a", "b", "c", "m.y", "m.z", "src:a"])
literals = st.sampled_from(["1", "-2", "2.0", "2.5", "0", '"a"', '"2"', '""', "9007199254740993",
                            "9007199254740992.0"])  # BQL's strings are double-quoted
operators = st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">="])


number_literals = st.sampled_from(["1", "-2", "2.0", "2.5", "0", "0.0", "-0.0", "3", "-1", "9007199254740993",
                                   "9223372036854775807", "-9223372036854775808", "4611686018427387904"])


def _arithmetic(depth: int = 2):
    """Arithmetic of fields and numeric literals (``stage_codegen.number``'s expressions): an operator at
    the top, fields, literals or arithmetic below, a field among them (a constant one the parser folds)."""
    leaf = st.one_of(fields, number_literals)
    sub = leaf if depth <= 1 else st.one_of(leaf, _arithmetic(depth - 1))
    with_field = fields if depth <= 1 else st.one_of(fields, _arithmetic(depth - 1))  # reads a field
    ops = st.sampled_from(["+", "-", "*", "/", "%"])
    return st.one_of(
        st.tuples(with_field, ops, sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, ops, with_field).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        with_field.map(lambda x: f"-({x})"),
    )


def _comparisons():
    either = st.one_of(fields, literals)
    return st.one_of(
        st.tuples(fields, operators, literals),
        st.tuples(literals, operators, fields),
        st.tuples(fields, operators, fields),
        st.tuples(_arithmetic(), operators, st.one_of(fields, number_literals, _arithmetic(1))),
    ).map(lambda t: f"{t[0]} {t[1]} {t[2]}") | st.tuples(either, operators, fields).map(
        lambda t: f"{t[0]} {t[1]} {t[2]}")


def _predicates(depth: int = 2):
    if depth == 0:
        return _comparisons()
    sub = _predicates(depth - 1)
    return st.one_of(
        _comparisons(),
        st.tuples(sub, st.sampled_from(["AND", "OR"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        sub.map(lambda p: f"NOT ({p})"),
    )


projection_items = st.one_of(
    fields.map(lambda f: f),
    st.tuples(st.one_of(fields, literals), st.sampled_from(["p", "q", "a"])).map(lambda t: f"{t[0]} AS {t[1]}"),
    st.tuples(_arithmetic(), st.sampled_from(["p", "q", "x"])).map(lambda t: f"{t[0]} AS {t[1]}"),
)
stages = st.tuples(st.lists(projection_items, min_size=1, max_size=4), st.one_of(st.none(), _predicates())).map(
    lambda t: f"SELECT RSTREAM {', '.join(t[0])} FROM src [RANGE 1 TUPLES]"
              + (f" WHERE {t[1]}" if t[1] else ""))


def _build(text: str, reference: bool = False):
    """The statement's processor (the incremental kernel, which runs generated code itself); with
    ``reference`` the reference kernel (``SelectProcessor``: compiled closures only) — the oracle."""
    from sbpy.bql.analyzer import analyze
    from sbpy.bql.errors import BQLError

    try:
        stmt = analyze_stage(text)
        analyze(stmt, text)
        return build_processor(stmt, ProcessorContext(kernel="reference") if reference else None)
    except BQLError:
        return None


def _strict(a, b) -> bool:
    """Equal values of equal types (int vs float, bool vs int), key order included, NaN = NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_strict(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_strict(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=stages, data=st.lists(rows, min_size=1, max_size=8))
def test_generated_stage_equals_kernel(text, data):
    proc, reference = _build(text), _build(text, reference=True)
    assume(proc is not None)
    step = generate_for(proc)
    assert step is not None, text  # every drawn stage is inside the subset
    for row in data:
        got = step(row)
        if got is FALLBACK:
            continue
        result = reference.process(Tuple(row, _TS, 1, "src"))
        assert not result.dropped, (text, row, step.source)
        if got is None:
            assert result.outputs == [], (text, row, step.source)
        else:
            assert len(result.outputs) == 1 and _strict(got, result.outputs[0].data), (text, row, step.source)


B1 = "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8"


def test_b1_stage_is_generated_and_covers_typed_rows():
    step = generate_for(_build(B1))
    assert step is not None
    assert step({"id": 1, "price": 7.5, "x": "y"}) == {"id": 1, "price": 7.5}
    assert step({"id": 2, "price": 8}) is None
    assert step({"id": 3, "price": 7}) == {"id": 3, "price": 7}
    # the kernel's cases: NULL, missing, a string price, a missing projected field
    for row in ({"id": 1, "price": None}, {"id": 1}, {"id": 1, "price": "7"}, {"price": 1.0}):
        assert step(row) is FALLBACK


@pytest.mark.parametrize("text", [
    "SELECT RSTREAM a || \"x\" AS x FROM src [RANGE 1 TUPLES]",     # concatenation
    "SELECT RSTREAM a + true AS x FROM src [RANGE 1 TUPLES]",        # arithmetic with a bool literal
    "SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a + 1 = \"2\"",  # arithmetic against a string
    "SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a IS NULL",    # IS NULL
    "SELECT RSTREAM * FROM src [RANGE 1 TUPLES]",                    # wildcard
    "SELECT RSTREAM a AS x.y FROM src [RANGE 1 TUPLES]",             # a path as output key
    "SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a = true",     # bool literal
    "SELECT RSTREAM a[0] AS x FROM src [RANGE 1 TUPLES]",            # index step
])
def test_outside_the_subset_is_not_generated(text):
    assert generate_for(_build(text)) is None


# expressions outside the generated subset: with ``leaves`` the generated stage calls their closures
leaf_exprs = st.tuples(fields, fields, number_literals).map(lambda t: st.sampled_from([
    f"abs({t[0]})", f"str({t[0]})", f"{t[0]}::int", f"{t[0]}::float", f"{t[0]}::string",
    f"coalesce({t[0]}, {t[1]})", f"{t[0]} || {t[1]}", f"lower({t[0]})", f"power({t[0]}, {t[2]})",
    f"CASE WHEN {t[0]} > {t[2]} THEN {t[1]} ELSE {t[2]} END", f"[{t[0]}, {t[2]}]",
])).flatmap(lambda x: x)
leaf_predicates = st.tuples(fields, fields, number_literals).map(lambda t: st.sampled_from([
    f"{t[0]} IN (1, 2.0, \"a\")", f"{t[0]} LIKE \"a%\"", f"{t[0]} IS NULL", f"{t[0]} IS NOT MISSING",
    f"{t[0]} = true", f"{t[0]} BETWEEN {t[2]} AND 3", f"abs({t[0]}) > {t[2]}", f"str({t[0]}) = {t[1]}",
    f"{t[0]}::int + 1 < {t[1]}", f"NOT ({t[0]} = false)",
])).flatmap(lambda x: x)
leaf_stages = st.tuples(
    st.lists(st.one_of(projection_items, st.tuples(leaf_exprs, st.sampled_from(["p", "q", "x"]))
                       .map(lambda t: f"{t[0]} AS {t[1]}")), min_size=1, max_size=4),
    st.one_of(st.none(), _predicates(1), leaf_predicates,
              st.tuples(leaf_predicates, st.sampled_from(["AND", "OR"]), _predicates(0))
              .map(lambda t: f"({t[0]}) {t[1]} ({t[2]})")),
).map(lambda t: f"SELECT RSTREAM {', '.join(t[0])} FROM src [RANGE 1 TUPLES]" + (f" WHERE {t[1]}" if t[1] else ""))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=leaf_stages, data=st.lists(rows, min_size=1, max_size=8))
def test_closure_leaves_equal_the_kernel(text, data):
    """Function calls, casts, CASE, LIKE, IN, IS NULL, bool literals ... as closure leaves (``leaves``):
    the generated stage gives the kernel's row (copies included) or hands the row back."""
    proc, reference = _build(text), _build(text, reference=True)
    assume(proc is not None)
    step = generate_for(proc, _copy, leaf_scope(proc))
    assert step is not None, text  # every drawn stage is generated with leaves
    for row in data:
        got = step(row)
        if got is FALLBACK:
            continue
        result = reference.process(Tuple(copy.deepcopy(row), _TS, 1, "src"))
        assert not result.dropped, (text, row, step.source)
        if got is None:
            assert result.outputs == [], (text, row, step.source)
        else:
            assert len(result.outputs) == 1 and _strict(got, result.outputs[0].data), (text, row, step.source)


LEAF_WHERES = ["a IN (1, 2.0, \"a\")", "a LIKE \"a%\"", "a IS NULL", "a = true", "a BETWEEN 1 AND 3",
               "abs(a) > 1", "str(a) = \"1\"", "a::int + 1 < 3"]
LEAF_ROWS = [{}, {"a": None}, {"a": True}, {"a": False}, {"a": 1}, {"a": 2.0}, {"a": "a"}, {"a": "ab"},
             {"a": [1]}, {"a": {"y": 1}}, {"a": math.nan}, {"a": -2}]


@pytest.mark.parametrize("where", LEAF_WHERES + [f"NOT ({w})" for w in LEAF_WHERES]
                         + [f"({w}) OR b < 1" for w in LEAF_WHERES])
def test_closure_leaf_predicates_on_edge_rows(where):
    """NULL, MISSING, bools, containers, NaN under a leaf predicate, also negated (NOT NULL is NULL: the
    row is filtered) and under OR: the reference kernel's row or FALLBACK, and most rows decided."""
    text = f"SELECT RSTREAM a, b FROM src [RANGE 1 TUPLES] WHERE {where}"
    proc, reference = _build(text), _build(text, reference=True)
    step = generate_for(proc, _copy, leaf_scope(proc))
    decided = 0
    for row in LEAF_ROWS:
        row = {**row, "b": 2}
        got = step(copy.deepcopy(row))
        if got is FALLBACK:
            continue
        decided += 1
        result = reference.process(Tuple(copy.deepcopy(row), _TS, 1, "src"))
        assert not result.dropped and [o.data for o in result.outputs] == ([] if got is None else [got]), row
    assert decided >= 2, where


def test_closure_leaves_decide_plain_rows():
    """A leaf decides ordinary rows (it is not a FALLBACK for everything), and never reads ``ts()``."""
    proc = _build("SELECT RSTREAM str(a) AS s, a::float AS f FROM src [RANGE 1 TUPLES] WHERE a IN (1, 2)")
    step = generate_for(proc, _copy, leaf_scope(proc))
    assert step({"a": 1}) == {"s": "1", "f": 1.0} and step({"a": 5}) is None
    assert generate_for(_build("SELECT RSTREAM str(ts()) AS s FROM src [RANGE 1 TUPLES]"), _copy,
                        leaf_scope(proc)) is None
    assert generate_for(proc) is None  # without leaves: outside the subset


ARITHMETIC = "SELECT RSTREAM a + b AS s, a - b AS d, a * b AS p, a / b AS q, a % b AS r, -a AS n FROM src [RANGE 1 TUPLES]"
EDGES = [(7, 2), (-7, 2), (7, -2), (-7, -2), (7, 2.0), (-7.5, 2), (1.5, -0.5), (2**62, 2), (2**63 - 1, 1),
         (-2**63, -1), (-2**63, 1), (0, 0), (1.0, 0), (1, 0.0), (-0.0, 3), (math.inf, 2), (math.nan, 1),
         (2**53 + 1, 1.0), (3, math.inf)]


@pytest.mark.parametrize(("a", "b"), EDGES)
def test_arithmetic_edges_equal_the_kernel(a, b):
    """Go's integer division and remainder, int64 overflow, zero divisors, IEEE values: the generated
    stage gives the kernel's row or hands the row back; the plain int and float rows it decides."""
    step = generate_for(_build(ARITHMETIC))
    got = step({"a": a, "b": b})
    result = _build(ARITHMETIC, reference=True).process(Tuple({"a": a, "b": b}, _TS, 1, "src"))
    if got is FALLBACK:
        overflow = any(abs(x) >= 2**62 for x in (a, b) if type(x) is int) and type(a) is type(b) is int
        assert b == 0 or overflow or (a, b) == (-2**63, 1), (a, b)  # what the kernel fails or IEEE decides
        return
    assert not result.dropped and len(result.outputs) == 1 and _strict(got, result.outputs[0].data), (a, b)


def test_a_field_read_only_inside_a_branch_is_read_again_outside_it():
    step = generate_for(_build("SELECT RSTREAM b FROM src [RANGE 1 TUPLES] WHERE a < 1 OR b < 2"))
    assert step({"a": 0, "b": 5}) == {"b": 5}  # b was not read by the WHERE (a < 1 was true)
