"""Property tests: IN, BETWEEN and LIKE against references, DISTINCT and ORDER BY / top-N against the
kernel's old paths.

- ``x IN (e1, ...)`` must equal ``x = e1 OR ...`` and ``x BETWEEN lo AND hi`` must equal
  ``x >= lo AND x <= hi``, both compiled by the same compiler (value, NULL, or the same error text), on
  random values of every BQL type, missing fields and failing items; the NOT forms equal NOT of them.
- ``LIKE`` must equal an independent dynamic-programming matcher written here.
- ``SELECT ... DISTINCT a`` must give, step by step, the relation of ``SELECT ... a GROUP BY a`` (the
  grouping code, as multisets); ``ORDER BY k [DESC] LIMIT n`` must give, step by step, the first n rows
  of the unsorted query's relation sorted here (NULL last ascending, stable).
"""
from __future__ import annotations

import datetime as _dt
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.ast import (
    Between,
    BinaryOp,
    FieldRef,
    InList,
    KeyStep,
    Like,
    Literal,
    UnaryOp,
)
from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.eval import Env, Scope, compile_expr
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select
from sbpy.bql.values import multiset_key

TS = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC)
SCOPE = Scope(("s",))

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([-1.0, 0.0, 1.0, 2.5, float("nan")]),
    st.sampled_from(["", "a", "b", "ab"]), st.just(TS), st.just(TS + _dt.timedelta(seconds=1)),
    st.just(b"x"),
)
values = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.sampled_from("ab"), scalars, max_size=2))
MISSING_FIELD = object()
FAILING = object()  # an operand whose evaluation fails (1 / 0)
operands = st.one_of(values, st.just(MISSING_FIELD), st.just(FAILING))


def _bind(operand_values: list) -> tuple[list, dict]:
    """Field references (or a failing expression) for each value, and the row holding them."""
    exprs, data = [], {}
    for i, v in enumerate(operand_values):
        name = f"f{i}"
        if v is FAILING:
            exprs.append(BinaryOp("/", Literal(1), FieldRef((KeyStep("zero"),))))
            data["zero"] = 0
            continue
        exprs.append(FieldRef((KeyStep(name),)))
        if v is not MISSING_FIELD:
            data[name] = v
    return exprs, data


def _outcome(expr, data: dict):
    try:
        value = compile_expr(expr, SCOPE)(Env({"s": Tuple(data, TS)}))
    except BQLEvaluationError as err:
        return ("error", err.message)
    return ("value", value)


def _or_chain(x, items):
    chain = BinaryOp("=", x, items[0])
    for item in items[1:]:
        chain = BinaryOp("or", chain, BinaryOp("=", x, item))
    return chain


@settings(max_examples=400, deadline=None)
@given(operands, st.lists(operands, min_size=1, max_size=4))
def test_in_is_an_or_of_equalities(x, items):
    (xe, *ies), data = _bind([x, *items])
    assert _outcome(InList(xe, tuple(ies)), data) == _outcome(_or_chain(xe, ies), data)
    assert (_outcome(InList(xe, tuple(ies), negated=True), data)
            == _outcome(UnaryOp("not", _or_chain(xe, ies)), data))


literal_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "a", "b", "1"]),
                           st.sampled_from([-1.0, 0.0, 1.0, 2.5, float("nan"), 9007199254740992.0]))


@settings(max_examples=400, deadline=None)
@given(st.one_of(operands, st.just(9007199254740993)), st.lists(literal_values, min_size=1, max_size=5))
def test_in_of_literals_is_an_or_of_equalities(x, items):
    """The all-literal form (set lookups for strings and ints) answers as the OR of equalities."""
    (xe,), data = _bind([x])
    ies = [Literal(v) for v in items]
    assert _outcome(InList(xe, tuple(ies)), data) == _outcome(_or_chain(xe, ies), data)
    assert (_outcome(InList(xe, tuple(ies), negated=True), data)
            == _outcome(UnaryOp("not", _or_chain(xe, ies)), data))


@settings(max_examples=400, deadline=None)
@given(operands, operands, operands)
def test_between_is_an_and_of_comparisons(x, low, high):
    (xe, le, he), data = _bind([x, low, high])
    reference = BinaryOp("and", BinaryOp(">=", xe, le), BinaryOp("<=", xe, he))
    assert _outcome(Between(xe, le, he), data) == _outcome(reference, data)
    assert _outcome(Between(xe, le, he, negated=True), data) == _outcome(UnaryOp("not", reference), data)


# ---------------------------------------------------------------------------- LIKE


def _reference_like(text: str, pattern: str, escape: str | None):
    """Independent matcher: tokens (literal char / one / any), then a DP table; None = invalid pattern."""
    tokens = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if escape is not None and c == escape:
            if i + 1 >= len(pattern) or pattern[i + 1] not in ("%", "_", escape):
                return None
            tokens.append(("lit", pattern[i + 1]))
            i += 2
            continue
        tokens.append(("any",) if c == "%" else ("one",) if c == "_" else ("lit", c))
        i += 1
    # reach[j]: the first j characters of text are matched by the tokens seen so far
    reach = [True] + [False] * len(text)
    for tok in tokens:
        nxt = [False] * (len(text) + 1)
        for j in range(len(text) + 1):
            if tok[0] == "any":
                nxt[j] = reach[j] or (j > 0 and nxt[j - 1])
            elif j > 0 and reach[j - 1] and (tok[0] == "one" or text[j - 1] == tok[1]):
                nxt[j] = True
        reach = nxt
    return reach[len(text)]


like_chars = st.text(alphabet="ab%_!\n", max_size=6)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab%_!\n", max_size=6), like_chars, st.sampled_from([None, "!", "a", "%"]))
def test_like_matches_the_reference(text, pattern, escape):
    data = {"t": text, "p": pattern}
    if escape is not None:
        data["e"] = escape
    expr = Like(FieldRef((KeyStep("t"),)), FieldRef((KeyStep("p"),)),
                FieldRef((KeyStep("e"),)) if escape is not None else None)
    expected = _reference_like(text, pattern, escape)
    got = _outcome(expr, data)
    if expected is None:
        assert got == ("error", "in a LIKE pattern the escape character must be followed by '%', '_' or itself")
    else:
        assert got == ("value", expected)
        assert _outcome(expr.replace(negated=True), data) == ("value", not expected)


@settings(max_examples=200, deadline=None)
@given(values, values)
def test_like_on_other_types(x, p):
    expr = Like(FieldRef((KeyStep("x"),)), FieldRef((KeyStep("p"),)))
    got = _outcome(expr, {"x": x, "p": p})
    if x is None or p is None:
        assert got == ("value", None)
    elif type(x) is str and type(p) is str:
        assert got == ("value", _reference_like(x, p, None))
    else:
        assert got[0] == "error" and got[1].startswith("cannot apply 'LIKE' to ")


# ---------------------------------------------------------------------------- DISTINCT, ORDER BY


def _steps(query: str, rows: list[dict]) -> list[list[dict]]:
    """The rows each step emits (one list per input tuple)."""
    proc = build_processor(parse_select(query))
    out = []
    for seq, data in enumerate(rows, start=1):
        result = proc.process(Tuple(dict(data), TS + _dt.timedelta(milliseconds=seq), seq, "s"))
        assert not result.dropped, result.dropped
        out.append([t.data for t in result.outputs])
    return out


def _bag(rows: list[dict]) -> Counter:
    return Counter(multiset_key(r) for r in rows)


group_values = st.one_of(st.none(), st.integers(0, 3), st.sampled_from([1.0, 2.0, 0.5]), st.sampled_from(["a", "b"]))
streams = st.lists(st.fixed_dictionaries({"a": group_values, "k": st.one_of(st.none(), st.integers(0, 4))}),
                   min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(streams, st.integers(1, 5), st.sampled_from(["RSTREAM", "ISTREAM", "DSTREAM"]))
def test_distinct_is_group_by_every_step(rows, size, emitter):
    distinct = _steps(f"SELECT {emitter} DISTINCT a FROM s [RANGE {size} TUPLES]", rows)
    grouped = _steps(f"SELECT {emitter} a FROM s [RANGE {size} TUPLES] GROUP BY a", rows)
    assert [_bag(d) for d in distinct] == [_bag(g) for g in grouped]


def _sort_reference(rows: list[dict], desc: bool) -> list[dict]:
    present = [r for r in rows if r["k"] is not None]
    nulls = [r for r in rows if r["k"] is None]
    ordered = sorted(present, key=lambda r: -r["k"] if desc else r["k"])  # stable
    return nulls + ordered if desc else ordered + nulls


@settings(max_examples=150, deadline=None)
@given(streams, st.integers(1, 5), st.booleans(), st.integers(0, 4))
def test_top_n_is_the_sorted_relation_cut_every_step(rows, size, desc, n):
    direction = " DESC" if desc else ""
    top = _steps(f"SELECT RSTREAM a, k FROM s [RANGE {size} TUPLES] ORDER BY k{direction} LIMIT {n}", rows)
    plain = _steps(f"SELECT RSTREAM a, k FROM s [RANGE {size} TUPLES]", rows)
    assert top == [_sort_reference(p, desc)[:n] for p in plain]


join_rows = st.lists(st.fixed_dictionaries({"k": st.integers(0, 2), "v": st.one_of(st.none(), st.integers(0, 5)),
                                             "s": st.sampled_from(["ab", "ba", "a%"])}), min_size=1, max_size=8)


@settings(max_examples=80, deadline=None)
@given(join_rows, join_rows, st.lists(st.sampled_from(["l", "r"]), max_size=16))
def test_incremental_kernel_equals_the_reference_with_the_new_predicates(left, right, order):
    """The incremental kernel splits WHERE into per-alias conjuncts and join keys; the new predicates
    must come out of that exactly as the reference evaluates them."""
    from sbpy.bql.runtime import ProcessorContext
    from sbpy.bql.runtime.testing import run_query_detailed

    query = ("SELECT ISTREAM l:v AS lv, r:v AS rv FROM l [RANGE 3 TUPLES], r [RANGE 2 TUPLES] "
             'WHERE l:k = r:k AND l:v IN (1, 2, r:v) AND r:v NOT BETWEEN 1 AND 2 AND l:s LIKE "a%"')
    inputs = {"l": left, "r": right}
    fast = run_query_detailed(query, inputs, order)
    reference = run_query_detailed(query, inputs, order, context=ProcessorContext(kernel="reference"))
    assert fast.outputs == reference.outputs
    assert [d.error for d in fast.dropped] == [d.error for d in reference.dropped]
