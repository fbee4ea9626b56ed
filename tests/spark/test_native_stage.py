"""The native tier against the kernel: random JSON lines through random memoryless chains.

For each line, the native columns (``native_query.classify``) either refuse it (``fb``: it then takes
the kernel, so it is exact by construction) or decide it themselves — and then their decision must be
the kernel's: the same output line byte for byte (``out``), or no output and no drop (``skip``). The
kernel here is the Python tiers' pipeline fed the line exactly as the file source's reader parses it.
"""
from __future__ import annotations

import json
import math
import struct

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbpy.bql.plan import Tier, plan_query
from sbpy.bql.spark.compile import query_spec_stages
from sbpy.bql.spark.native_collect import fallback_row
from sbpy.bql.spark.native_query import chain_of, classify
from sbpy.bql.spark.native_udf import status
from sbpy.bql.spark.operator import OUTPUT_COLUMNS, OUTPUT_SCHEMA
from sbpy.bql.spark.stateless_query import chain_pipeline, run_rows

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")]

KEYS = ["a", "b", "c"]

numbers = st.one_of(
    st.integers(-10**6, 10**6), st.integers(-10**19, 10**19),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.decimals(min_value=-10**6, max_value=10**6, places=3, allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(["7", "7.0", "7.50", "-0", "-0.0", "0.00001", "0.000001", "1e3", "1E-2", "8", "8.0",
                     "123456789012345", "1234567890123456", "0.1", "1.000000000000001"]))
scalars = st.one_of(numbers, st.text(max_size=4), st.sampled_from(["x", "abc", "", "7", "\\u0041", 'q"t']),
                    st.booleans(), st.none())


class Raw(tuple):
    """A nested container written token by token (raw numbers, repeated keys): ``("[", items)`` or
    ``("{", [(key, value), ...])``."""


arrays = st.lists(scalars, max_size=3).map(lambda items: Raw(("[", items)))
objects = st.lists(st.tuples(st.sampled_from(KEYS), st.one_of(scalars, scalars, arrays)), max_size=3) \
    .map(lambda members: Raw(("{", members)))
values = st.one_of(scalars, arrays, objects, st.lists(scalars, max_size=2),
                   st.dictionaries(st.sampled_from(KEYS), scalars, max_size=2))
# paths into those values (the JVM pass follows keys and indexes from the front)
PATHS = ["a.b", "b.a", "a[0]", "b[1]", 'a["c"]', "c.b[0]", "a.a[2]"]


def _token(v) -> str:
    """JSON text of a generated value; strings from ``numbers`` that look numeric are raw number tokens."""
    if isinstance(v, Raw):
        if v[0] == "[":
            return "[" + ", ".join(_token(x) for x in v[1]) + "]"
        return "{" + ",".join(f'"{k}": {_token(x)}' for k, x in v[1]) + "}"
    if isinstance(v, str) and v and (v[0].isdigit() or v[0] == "-") and v not in ("-",):
        try:
            float(v)
            return v
        except ValueError:
            pass
    return json.dumps(v)


@st.composite
def lines(draw):
    """A line: mostly a JSON object over KEYS (duplicates, spaces, nesting), sometimes broken."""
    members = draw(st.lists(st.tuples(st.sampled_from(KEYS + ["zz", "$d"]), values), max_size=5))
    sep = draw(st.sampled_from([",", ", ", " , "]))
    colon = draw(st.sampled_from([":", ": ", " :"]))
    body = sep.join(f'"{k}"{colon}{_token(v)}' for k, v in members)
    shape = draw(st.sampled_from(["{@}", " {@} ", "{@}\r", "{@", "[@]", "{@}}", "{@} x", "", "  "]))
    return shape.replace("@", body) + "\n"


FIELD = st.one_of(st.sampled_from(KEYS), st.sampled_from(KEYS), st.sampled_from(PATHS))
NUM_LIT = st.one_of(st.integers(-10, 10), st.floats(-10, 10, allow_nan=False).map(lambda f: round(f, 2)))
STR_LIT = st.sampled_from(['"x"', '"abc"', '""', '"7"'])
LIT = st.one_of(NUM_LIT, STR_LIT)
BIG = "1" + "0" * 300 + ".0"  # 1e300 (BQL has no exponent notation)
ARITH_LIT = st.one_of(NUM_LIT, st.sampled_from([0, -1, 0.0, -0.0, 2 ** 62, 9223372036854775807, BIG, 0.1]))


@st.composite
def arithmetic(draw, depth=0):
    """``+ - * / %`` and unary ``-`` over fields and numeric literals (native_arith)."""
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return str(draw(st.one_of(FIELD, FIELD, ARITH_LIT.map(lambda v: f"({v})"))))
    form = draw(st.integers(0, 6))
    if form == 0:
        return f"-({draw(arithmetic(depth + 1))})"
    if form == 1:  # the functions and casts native_arith compiles
        inner = draw(arithmetic(depth + 1))
        call = draw(st.sampled_from(["abs", "sign", "ceil", "floor", "trunc", "round", "sqrt", "::int", "::float"]))
        return f"({inner}){call}" if call[0] == ":" else f"{call}({inner})"
    op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
    return f"({draw(arithmetic(depth + 1))} {op} {draw(arithmetic(depth + 1))})"


STRING_LIT = st.sampled_from(['"x"', '"é"', '"<&>"', '"q""t"', '"a\\b"', '""', '"7"', '"AbC"'])


@st.composite
def strings(draw, depth=0):
    """``||``, ``lower`` and ``upper`` over fields and string literals (native_text); BQL's ``""`` is a quote."""
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(st.one_of(FIELD, STRING_LIT, FIELD.map(lambda f: f"{f}::string"),
                              st.sampled_from(["7::string", "true::string", '"s"::string'])))
    if draw(st.booleans()):
        return f"({draw(strings(depth + 1))} || {draw(strings(depth + 1))})"
    return f"{draw(st.sampled_from(['lower', 'upper']))}({draw(strings(depth + 1))})"


@st.composite
def predicates(draw, depth=0):
    if depth < 2 and draw(st.booleans()):
        op = draw(st.sampled_from(["AND", "OR"]))
        left, right = draw(predicates(depth + 1)), draw(predicates(depth + 1))
        text = f"({left} {op} {right})"
        return f"NOT {text}" if draw(st.booleans()) else text
    a = draw(FIELD)
    b = draw(st.one_of(FIELD, LIT))
    form = draw(st.sampled_from(["cmp", "cmp", "between", "in", "null", "arith", "bool", "missing", "string"]))
    if form == "string":  # a string expression against a string literal, a field or another
        op = draw(st.sampled_from(["=", "!=", "<", ">="]))
        return f"{draw(strings(1))} {op} {draw(st.one_of(strings(), STR_LIT, FIELD))}"
    if form == "bool":  # a bool field as the condition, or compared with a bool literal or another field
        op = draw(st.sampled_from(["=", "!=", "<", ">="]))
        return draw(st.sampled_from([a, f"NOT {a}", f"{a} {op} true", f"false {op} {a}", f"{a} {op} {b}"]))
    if form == "arith":  # arithmetic on one side or both, against fields, numbers and strings
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        other = draw(st.one_of(arithmetic(), FIELD, LIT))
        return f"{draw(arithmetic(1))} {op} {other}"
    not_ = draw(st.sampled_from(["", "NOT "]))
    if form == "between":
        return f"{a} {not_}BETWEEN {b} AND {draw(st.one_of(FIELD, LIT))}"
    if form == "in":  # all numbers, all strings, or mixed (then not native)
        items = draw(st.lists(st.one_of(NUM_LIT, STR_LIT) if draw(st.booleans()) else
                              (NUM_LIT if draw(st.booleans()) else STR_LIT), min_size=1, max_size=4))
        return f"{a} {not_}IN ({', '.join(str(i) for i in items)})"
    if form == "null":
        return f"{a} IS {not_}NULL"
    if form == "missing":
        return f"{a} IS {not_}MISSING"
    op = draw(st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">="]))
    return f"{a} {op} {b}" if draw(st.booleans()) else f"{b} {op} {a}"


@st.composite
def chains(draw):
    """One or two stages: WHERE (maybe) and a select list of fields and literals, maybe after ``*``."""
    stages, source, keys = [], "src", KEYS
    for k in range(draw(st.integers(1, 2))):
        items = draw(st.lists(st.one_of(st.sampled_from(keys), st.sampled_from(["1 AS one", '"s" AS lit',
                                                                              "2.5 AS f", "NULL AS n"]),
                                        st.sampled_from(PATHS if k == 0 else ["a.b", "a[1]"]).map(
                                            lambda p: f"{p} AS p"),
                                        arithmetic(1).map(lambda e: f"{e} AS x"),
                                        strings(1).map(lambda e: f"{e} AS t"),
                                        predicates(1).map(lambda e: f"({e}) AS c")),
                              min_size=1, max_size=3))
        if k == 0:
            items.append("a")  # the next stage's field
        if draw(st.booleans()):
            items.insert(0, draw(st.sampled_from(["*", f"{source}:*"])))
        where = f" WHERE {draw(predicates())}" if draw(st.booleans()) and k == 0 else ""
        name = f"s{k + 1}"
        stages.append((name, f"SELECT RSTREAM {', '.join(items)} FROM {source} [RANGE 1 TUPLES]{where}", [source]))
        source, keys = name, ["a"]
    return stages


def _reference(stages, batch):
    pipeline = chain_pipeline("ref-" + str(id(stages)), stages, "t", "json")
    rows = [fallback_row(seq, "src", 0, line, "f.jsonl", 0) for seq, line in batch]
    out = run_rows(pipeline, [r for r in rows if r is not None])
    result = {}
    for row in out:
        kind, seq = row[0], row[2]
        if kind == "out":
            result.setdefault(seq, []).append(("out", row[5]))
        elif kind == "dropped":
            result.setdefault(seq, []).append(("dropped", row[6]))
    return result


def _native(spark, chain, batch):
    rows = [("line", None, seq, 0, 0, line, None, "src", None) for seq, line in batch]
    df = spark.createDataFrame(rows, OUTPUT_SCHEMA)
    got = classify(df, chain).select("seq", "kind", "data").collect()
    return {r["seq"]: (r["kind"], r["data"]) for r in got}


def _check(spark, texts, batch):
    plan = plan_query(["src"], texts)
    if plan.stages[0].tier is not Tier.NATIVE:
        return 0
    stages = query_spec_stages(plan)
    expected = _reference(stages, batch)
    native = _native(spark, chain_of(stages), batch)
    decided = 0
    for seq, line in batch:
        kind, data = native.get(seq, ("skip", None))  # a line no stage passed stays in the JVM
        if kind == "fb":
            continue
        decided += 1
        want = expected.get(seq, [])
        if kind == "out":
            assert want == [("out", data)], (texts, line, data, want)
        else:
            assert kind == "skip" and want == [], (texts, line, want)
    return decided


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=chains(), batch=st.lists(lines(), min_size=1, max_size=60))
def test_native_decisions_equal_the_kernel(spark, texts, batch):
    _check(spark, texts, list(enumerate(batch, start=1)))


def test_b1_rows_are_decided_natively_and_equal(spark):
    """The B1 stage over typical rows: every row is decided natively (no fallback), all equal."""
    rows = [json.dumps({"id": i, "price": (i * 7 % 16) * 0.75, "name": f"n{i}", "note": "lorem"}) + "\n"
            for i in range(200)]
    texts = [("q", "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8", ["src"])]
    assert _check(spark, texts, list(enumerate(rows, start=1))) == 200


def test_sql_predicates_are_decided_natively_and_equal(spark):
    """BETWEEN, IN and IS NULL compile: typical rows never take the kernel, and every decision is its."""
    rows = [json.dumps({"id": i, "price": (i * 7 % 16) * 0.75, "name": f"n{i % 7}",
                        "note": None if i % 3 else "x"}) + "\n" for i in range(200)]
    where = ('price BETWEEN 1 AND 8.25 AND id NOT IN (3, 4.0, 150) AND name IN ("n1", "n2", "n5") '
             "AND note IS NULL OR price NOT BETWEEN id AND 10")
    texts = [("q", f"SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE {where}", ["src"])]
    assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE
    assert _check(spark, texts, list(enumerate(rows, start=1))) == 200


def test_odd_values_fall_back_or_agree(spark):
    """Hand-picked corner cases: each is refused or equal (the 'f'/'i' classes, escapes, duplicates)."""
    odd = ['{"a": 7.50, "b": 1}', '{"a": -0, "b": 1}', '{"a": -0.0, "b": 1}', '{"a": 1e2, "b": 1}',
           '{"a": 0.000001, "b": 1}', '{"a": 0.00001, "b": 1}', '{"a": 123456789012345, "b": 1}',
           '{"a": 1234567890123456, "b": 1}', '{"a": "x\\u0041", "b": 1}', '{"a": 1, "a": 9, "b": 1}',
           '{"a": [1], "b": 1}', '{"a": {"b": 2}, "b": 1}', '{"a": "<&>", "b": 1}', '{"a": "é", "b": 1}',
           '{"a": true, "b": 1}', '{"a": null, "b": 1}', '{"b": 1}', '{"a": 3, "b": 1} ', '\ufeff{"a": 3}',
           '{"a": 3,}', "{'a': 3}", '{"a": NaN}', '{"a": 01}', '{"a": 1.}', '{"a": .5}']
    batch = [(k + 1, line + "\n") for k, line in enumerate(odd)]
    for where in ("a < 8", 'a = "x"', "a >= b", "NOT a != 7", "a BETWEEN -1 AND 8", "a NOT BETWEEN b AND 8",
                  "a IN (7.5, 3, -0.0)", 'a NOT IN ("x", "é", "<&>")', "a IS NULL", "a IS NOT NULL"):
        texts = [("q", f"SELECT RSTREAM a, b, 1 AS one FROM src [RANGE 1 TUPLES] WHERE {where}", ["src"])]
        _check(spark, texts, batch)


def test_arithmetic_rows_are_decided_natively_and_equal(spark):
    """Arithmetic in WHERE and in the select list compiles (native_arith): typical rows — ints, floats,
    mixed — never take the kernel, and every decision is the kernel's, byte for byte."""
    rows = [json.dumps({"id": i, "price": (i * 7 % 16) * 0.75, "qty": i % 5 - 2, "r": i / 7}) + "\n"
            for i in range(300)]
    select = ("id, price * 1.1 AS p, id * 3 - qty AS n, -id AS neg, id / 4 AS q, id % 7 AS m, "
              "price / 0.25 AS d, r * 100000000000000000.0 AS big, r / 1000000000.0 AS small, price % 1.5 AS fm, qty / 3 AS t")
    for where in ("price * 2 + 1 < 15", "id % 3 = 1 OR price / 2 >= qty", "-price < -2 AND id * id > 20"):
        texts = [("q", f"SELECT RSTREAM {select} FROM src [RANGE 1 TUPLES] WHERE {where}", ["src"])]
        assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE
        assert _check(spark, texts, list(enumerate(rows, start=1))) == 300, where
    chained = [("s1", "SELECT RSTREAM id * 2 AS two, price FROM src [RANGE 1 TUPLES] WHERE id % 2 = 0", ["src"]),
               ("s2", "SELECT RSTREAM two + 1 AS three, price * two AS pt FROM s1 [RANGE 1 TUPLES] WHERE two > 10",
                ["s1"])]
    assert _check(spark, chained, list(enumerate(rows, start=1))) == 300


def test_arithmetic_edges_fall_back_or_agree(spark):
    """Overflow, zero divisors, INT_MIN / -1, non-finite results, strings, bools, NULL, MISSING: each row
    is refused or decided as the kernel decides it."""
    odd = ['{"a": 9223372036854775807, "b": 1}', '{"a": 4611686018427387904, "b": 2}', '{"a": 7, "b": 0}',
           '{"a": 7.5, "b": 0.0}', '{"a": -7, "b": 2}', '{"a": 7, "b": -2}', '{"a": -7.5, "b": 2}',
           '{"a": 1e300, "b": 1e300}', '{"a": "x", "b": 1}', '{"a": true, "b": 1}', '{"a": null, "b": 1}',
           '{"b": 1}', '{"a": 123456789012345, "b": 123456789012345}', '{"a": 0.1, "b": 0.2}',
           '{"a": 7.50, "b": 1}', '{"a": 0.00001, "b": 3}', '{"a": -0.0, "b": -1}', '{"a": 999999999999999, "b": 9}']
    batch = [(k + 1, line + "\n") for k, line in enumerate(odd)]
    for where, items in (("a + b > 0", "a * b AS p"), ("a / b < 8", "a / b AS q"), ("a % b = 1", "a % b AS m"),
                         ("-a < b", "-a AS n, a - b AS d"), ("a * b >= 1000000000000000", f"a * {BIG} AS o"),
                         ("a * 1 = b", "b / 3 AS t, a + 0.1 AS u")):
        texts = [("q", f"SELECT RSTREAM {items}, a FROM src [RANGE 1 TUPLES] WHERE {where}", ["src"])]
        assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE
        _check(spark, texts, batch)


def test_functions_and_casts_are_decided_natively_and_equal(spark):
    """The number functions and casts (native_arith) over typical rows: no row takes the kernel, and every
    decision is the kernel's, byte for byte (halves round away from zero, negative results of zero keep
    their sign: -0.0)."""
    rows = [json.dumps({"id": i - 150, "price": (i * 7 % 16) * 0.75 - 4.5, "r": (i - 150) / 7}) + "\n"
            for i in range(300)]
    select = ("abs(id) AS a, abs(price) AS ap, sign(price) AS s, sign(id) AS si, ceil(r) AS c, floor(r) AS f, "
              "trunc(r) AS t, round(r) AS rr, round(price) AS rp, round(id) AS ri, sqrt(abs(r)) AS q, "
              "r::int AS ti, id::float AS tf, price::float AS pf, id::int AS ii, ceil(id) AS ci")
    for where in ("abs(price) < 3", "round(r) = ceil(r) OR sign(id) < 0", "sqrt(abs(price)) * 2 >= r::int"):
        texts = [("q", f"SELECT RSTREAM {select} FROM src [RANGE 1 TUPLES] WHERE {where}", ["src"])]
        assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE
        assert _check(spark, texts, list(enumerate(rows, start=1))) == 300, where


def _edges(spark, odd, cases, least=1):
    """Each ``(select list, WHERE or "")`` over the lines ``odd``: planned native, every natively decided
    row the kernel's (``_check``), and at least ``least`` rows decided natively (the table is not all
    refusals)."""
    batch = [(k + 1, line + "\n") for k, line in enumerate(odd)]
    for items, where in cases:
        texts = [("q", f"SELECT RSTREAM {items} FROM src [RANGE 1 TUPLES]" + (f" WHERE {where}" if where else ""),
                  ["src"])]
        assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE, items
        assert _check(spark, texts, batch) >= least, (items, where)


def test_paths_are_decided_natively_and_equal(spark):
    """Keys and indexes below the top level compile (the JVM pass follows them): typical nested rows never
    take the kernel, and every decision is the kernel's, byte for byte — a later stage's path into a field
    an earlier stage projected included."""
    rows = [json.dumps({"id": i, "pos": {"x": i * 0.5, "y": [i, i + 1, {"z": f"t{i % 3}"}]}, "tags": [f"t{i % 4}"],
                        "m": {"k": {"v": i % 7}}}) + "\n" for i in range(300)]
    query = ('SELECT RSTREAM id, pos.x AS x, pos.y[1] AS y1, pos["y"][2].z AS z, m.k.v AS k, tags[0] AS t '
             'FROM src [RANGE 1 TUPLES] WHERE pos.x < 100 AND tags[0] != "t1" OR m.k.v * 2 = 4')
    texts = [("q", query, ["src"])]
    assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE
    assert _check(spark, texts, list(enumerate(rows, start=1))) == 300
    chained = [("s1", "SELECT RSTREAM id, pos, m FROM src [RANGE 1 TUPLES] WHERE id % 2 = 0", ["src"]),
               ("s2", "SELECT RSTREAM pos.y[0] + m.k.v AS s, pos.x AS x FROM s1 [RANGE 1 TUPLES] WHERE pos.y[1] > 9",
                ["s1"])]
    assert plan_query(["src"], chained).stages[0].tier is Tier.NATIVE
    assert _check(spark, chained, list(enumerate(rows, start=1))) == 300


def test_path_edges_fall_back_or_agree(spark):
    """Repeated keys at any depth (the last wins), a path through a scalar, a string, an array where an
    object is wanted and the reverse, an index past the end, missing steps, escapes below: each row is
    refused or decided as the kernel decides it."""
    odd = ['{"a": {"b": 1, "b": 2}}', '{"a": {"b": 1}, "a": {"c": 3}}', '{"a": {"b": 1}, "a": 5}',
           '{"a": 5, "a": {"b": 7}}', '{"a": [1, 2]}', '{"a": "xyz"}', '{"a": {"b": [4, 5, 6]}}',
           '{"a": {"b": {"b": 1}}}', '{"a": {"c": 1}}', '{"a": {}}', '{"a": []}', '{"a": null}', '{}',
           '{"a": {"b": "q\\"t"}}', '{"a": {"x\\u0062": 1, "b": 3}}', '{"a": [{"b": 1}]}', '{"a": {"b": 8.50}}',
           '{"a": {"b": true}}', '{"a": {"b": null}}', '{"a": {"b": -0.0}}', '{"b": {"a": 3}, "a": {"b": 4}}',
           '{"a": {"b": 1, "c": [7, [8, 9]]}}', '{"a": {"b": 2, "c": [7, 9, {"d": 1}]}}']
    _edges(spark, odd, (("a.b AS x", ""), ("a.b AS x, a.c[0] AS y", "a.b > 1"), ("a.c[1] AS x, a.c[2].d AS y", ""),
                        ("a.b[2] AS x", "a.b[0] = 4"), ('a["b"] AS x, b.a AS y', "a.b IS NULL"),
                        ("a.c[1][0] AS x", "a.b + 1 < 9")))


def test_star_is_decided_natively_and_equal(spark):
    """``*`` (and ``src:*``) writes the line's map as sbpy would: a canonical line (compact or not, nested
    containers included) is decided natively, keys set after ``*`` are appended when the line lacks them;
    repeated keys, ``$`` keys, numbers not written as read, escapes and keys the line already has take the
    kernel (or agree) — a later stage reads the line's fields and the keys set on it."""
    rows = [json.dumps({"id": i, "price": (i * 7 % 16) * 0.75, "pos": {"x": [i, {"y": None}], "ok": i % 2 == 0},
                        "name": f"n{i}"}, separators=(",", ":") if i % 2 else (", ", ": ")) + "\n" for i in range(300)]
    for query in ("SELECT RSTREAM * FROM src [RANGE 1 TUPLES] WHERE price < 8",
                  "SELECT RSTREAM src:*, price * 2 AS p2, lower(name) AS l FROM src [RANGE 1 TUPLES]"):
        texts = [("q", query, ["src"])]
        assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE, query
        assert _check(spark, texts, list(enumerate(rows, start=1))) == 300, query
    chained = [("s1", "SELECT RSTREAM *, id % 3 AS m FROM src [RANGE 1 TUPLES] WHERE id > 4", ["src"]),
               ("s2", "SELECT RSTREAM *, m + price AS t FROM s1 [RANGE 1 TUPLES] WHERE m != 1", ["s1"]),
               ("s3", "SELECT RSTREAM pos.x[0] AS x, t, m FROM s2 [RANGE 1 TUPLES]", ["s2"])]
    for stages in (chained[:2], chained):
        assert plan_query(["src"], stages).stages[0].tier is Tier.NATIVE
        assert _check(spark, stages, list(enumerate(rows, start=1))) == 300
    odd = ['{}', ' { } ', '{"a": 1, "a": 2}', '{"a": {"b": 1, "b": 2}}', '{"$a": 1}', '{"a": {"$b": 1}}',
           '{"a": 7.50}', '{"a": -0}', '{"a": [-0.0, 1.0, 123456789012345678]}', '{"a": "x\\"y"}',
           '{"a": 1e5}', '{"m": 1, "a": 2}', '{"a": {"m": 1}}', '{"a":\t[ ] ,"b" :{}}', '{"a": "é ü"}',
           '{"a": 0.00001}', '{"a": 0.000001}', '{"a": [1, {"a": 1, "b": [true, false, null]}]}']
    _edges(spark, odd, (("*", ""), ("*, 1 AS m", ""), ("src:*, a AS m", "a IS NOT NULL")), least=2)


def test_containers_and_long_ints_are_written_back(spark):
    """A projected object, array or integer of 16-18 digits is written as its compact text when every value in
    it is written as read (no repeated or ``$`` key inside): typical rows never take the kernel."""
    rows = [json.dumps({"id": i, "pos": {"x": i * 0.5, "v": [i, {"z": None, "t": [True]}]}, "tags": [f"t{i % 4}"],
                        "big": 1234567890123456 + i, "e": {} if i % 2 else []}) + "\n" for i in range(300)]
    texts = [("q", "SELECT RSTREAM pos, pos.v AS v, pos.v[1] AS w, tags, big, e FROM src [RANGE 1 TUPLES] "
              "WHERE id % 3 != 1", ["src"])]
    assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE
    assert _check(spark, texts, list(enumerate(rows, start=1))) == 300
    odd = ['{"a": {"b": 1, "b": 2}}', '{"a": [{"$b": 1}]}', '{"a": [7.50]}', '{"a": [-0]}', '{"a": -0}',
           '{"a": [1, {"c": [2, {"c": 3, "d": 4}]}]}', '{"a": { "c" : [ ] , "d":{}} }', '{"a": 123456789012345678}',
           '{"a": {"b": "x\\"y"}}', '{"a": [0.000001]}', '{"a": {"c": 1}, "a": [2]}', '{"a": [1], "a": {"c": 2}}']
    _edges(spark, odd, (("a", ""), ("a AS x, a.c AS y", "a IS NOT NULL"), ("a[1] AS x", "")), least=1)


def test_conditions_as_values_are_decided_natively_and_equal(spark):
    """A condition in the select list is its bool (``price < 8 AS cheap``); a later stage may test it in WHERE:
    typical rows never take the kernel, and odd ones (NULL, MISSING, mixed types) are refused or agree."""
    rows = [json.dumps({"id": i, "price": (i * 7 % 16) * 0.75, "name": f"n{i % 3}", "ok": i % 2 == 0}) + "\n"
            for i in range(300)]
    chained = [("s1", 'SELECT RSTREAM id, price < 8 AS cheap, name = "n1" OR NOT ok AS odd, price BETWEEN 2 AND 5 AS mid, '
                      'id IN (1, 2, 3) AS low, name IS NULL AS nn, pos IS MISSING AS nopos FROM src [RANGE 1 TUPLES]',
                ["src"]),
               ("s2", "SELECT RSTREAM id, cheap, mid, nopos FROM s1 [RANGE 1 TUPLES] WHERE cheap OR low AND NOT odd",
                ["s1"])]
    for stages in (chained[:1], chained):
        assert plan_query(["src"], stages).stages[0].tier is Tier.NATIVE
        assert _check(spark, stages, list(enumerate(rows, start=1))) == 300
    odd = ['{"a": 1}', '{"a": null}', '{}', '{"a": "x"}', '{"a": true}', '{"a": [1]}', '{"a": 7.50}', '{"a": 9}']
    _edges(spark, odd, (("a < 8 AS x, a IS NULL AS y, a IS NOT MISSING AS z", ""), ("a AS a, a = 1 AS b", "a > 0")),
           least=2)
    texts = [("s1", "SELECT RSTREAM a > 2 AS f FROM src [RANGE 1 TUPLES]", ["src"]),
             ("s2", "SELECT RSTREAM f FROM s1 [RANGE 1 TUPLES] WHERE f = true", ["s1"])]
    assert "a comparison with a condition an earlier stage computed" in plan_query(["src"], texts).stages[0].tier_why


def test_repeated_output_keys_still_compute_what_they_replace(spark):
    """``b AS x, a AS x``: the sink shows the last value, but the kernel computes (and fails on) each one — a
    missing field, a failing expression or a replaced value in an earlier stage drops the row, never outputs it."""
    odd = ['{"a": 0}', '{"a": 1, "b": 2}', '{"b": 3}', '{"a": "s", "b": 1}', '{"a": 9223372036854775807, "b": 1}',
           '{"a": 2, "b": [1]}', '{"a": 2, "b": null}']
    _edges(spark, odd, (("b AS x, a AS x, a", ""), ("a * 2 AS x, b AS x", ""), ('lower(a) AS x, b AS x', ""),
                        ("(a + 1)::int AS y, 1 AS y, b", "b > 0"), ("a AS a, b AS a", "")))
    chained = [("s1", "SELECT RSTREAM b AS x, a AS x, a FROM src [RANGE 1 TUPLES]", ["src"]),
               ("s2", "SELECT RSTREAM x FROM s1 [RANGE 1 TUPLES]", ["s1"])]
    batch = [(k + 1, line + "\n") for k, line in enumerate(odd)]
    assert plan_query(["src"], chained).stages[0].tier is Tier.NATIVE
    assert _check(spark, chained, batch) >= 1


def test_bools_and_missing_are_decided_natively_and_equal(spark):
    """A bool field as the condition, bools compared (false < true), IS [NOT] MISSING at any depth: typical
    rows never take the kernel; odd ones (a bool where another type is, a path through a scalar) are
    refused or decided as the kernel decides them."""
    rows = [json.dumps({"id": i, "on": i % 3 == 0, "ok": i % 2 == 0, **({"opt": i} if i % 5 else {}),
                        "pos": {"x": 1} if i % 7 else 5}) + "\n" for i in range(300)]
    for where in ("on", "NOT on AND ok = true", "on < ok OR ok != false", "opt IS MISSING", "pos.x IS NOT MISSING",
                  "opt IS NOT MISSING AND on >= ok", "on IN (true) OR id = 1"):
        texts = [("q", f"SELECT RSTREAM id, ok FROM src [RANGE 1 TUPLES] WHERE {where}", ["src"])]
        assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE, where
        assert _check(spark, texts, list(enumerate(rows, start=1))) == 300, where
    odd = ['{"f": 1}', '{"f": "true"}', '{"f": null}', '{}', '{"f": [true]}', '{"f": {"g": true}}', '{"f": true}',
           '{"f": false}', '{"f": "xyz"}', '{"f": true, "f": 0}', '{"f": 0, "f": true}']
    _edges(spark, odd, [("1 AS one", where) for where in ("f", "f = true", "f < true", "f.g IS MISSING",
                                                          "f[0] IS NOT MISSING", "f[0]", "f.g != false")])


def test_strings_are_decided_natively_and_equal(spark):
    """``||``, ``lower`` and ``upper`` (native_text): typical rows never take the kernel, and every decision
    is the kernel's — literals the JSON text escapes (a quote, a backslash) concatenated, non-ASCII text
    and escapes in the line refused or agreeing."""
    rows = [json.dumps({"id": i, "name": f"Sensor-{i % 7}", "unit": "EUR" if i % 2 else "usd"}) + "\n"
            for i in range(300)]
    select = 'id, name || "/" || unit AS label, lower(name) AS l, upper(unit || "x") AS u, "é" || unit AS e, "q""t" || unit AS q'
    for where in ('lower(unit) = "eur"', 'upper(name) >= "SENSOR-3" OR name || unit < "Sensor-2"',
                  'lower(name) BETWEEN "sensor-2" AND name', 'name || "a\\b" != unit'):
        texts = [("q", f"SELECT RSTREAM {select} FROM src [RANGE 1 TUPLES] WHERE {where}", ["src"])]
        assert plan_query(["src"], texts).stages[0].tier is Tier.NATIVE, where
        assert _check(spark, texts, list(enumerate(rows, start=1))) == 300, where
    odd = ['{"a": "Ünï"}', '{"a": "x\\u0041"}', '{"a": "AbC"}', '{"a": 7}', '{"a": null}', '{}', '{"a": true}',
           '{"a": ["x"]}', '{"a": ""}', '{"a": "<&>"}', '{"a": "ß"}', '{"a": "İ"}']
    _edges(spark, odd, (("lower(a) AS x, upper(a) AS y", ""), ('a || "q""t" AS x', 'upper(a) = "ABC"'),
                        ('"é" || a AS x', 'lower(a) < "b"')), least=3)
    casts = odd + ['{"a": 7.5}', '{"a": -12}', '{"a": false}', '{"a": 1234567890123456}', '{"a": -0}', '{"a": 7.50}',
                   '{"a": {"b": 1}}', '{"a": [1]}', '{"a": 1.0}', '{"a": "a<b&c>"}']
    _edges(spark, casts, (("a::string AS x, upper(a::string) AS y", ""), ("a::string || 1::string AS x", 'a::string < "7"'),
                          ("true::string || a::string AS x", "a::string = a")), least=4)


def test_function_edges_fall_back_or_agree(spark):
    """Ints beyond 2^53 (abs through a float), INT_MIN, floats at and beyond 2^52 (their own rounding),
    halves, zeros of both signs, 2^62 and 2^63 (the int cast's range), a negative sqrt (NaN), strings,
    bools, NULL and MISSING: each row is refused or decided as the kernel decides it."""
    odd = ['{"a": 9007199254740993}', '{"a": -9223372036854775808}', '{"a": 9223372036854775807}',
           '{"a": 4503599627370497.0}', '{"a": 4503599627370495.5}', '{"a": -4503599627370495.5}',
           '{"a": 0.5}', '{"a": -0.5}', '{"a": 2.5}', '{"a": -2.5}', '{"a": -0.3}', '{"a": 0.3}',
           '{"a": 0.49999999999999994}', '{"a": -0.0}', '{"a": 0.0}', '{"a": -0}', '{"a": 0}',
           '{"a": 4611686018427387904.0}', '{"a": 9223372036854775808.0}', '{"a": -9223372036854775808.0}',
           '{"a": 1e300}', '{"a": -4}', '{"a": -4.0}', '{"a": 2}', '{"a": "x"}', '{"a": "3"}', '{"a": true}',
           '{"a": null}', '{}', '{"a": 1e-320}', '{"a": -1e-320}', '{"a": 123456789.987654321}']
    big = "4503599627370496.0"  # 2^52: its products reach the doubles that are their own rounding
    _edges(spark, odd, (("abs(a) AS x, sign(a) AS s", "abs(a) > 1"), ("ceil(a) AS x, floor(a) AS y", "ceil(a) >= 0"),
                        ("trunc(a) AS x, round(a) AS y", "round(a) != trunc(a)"), ("sqrt(a) AS x", "sqrt(a) < 2"),
                        ("a::int AS x, a::float AS y", "a::int = 0"), ("-round(-a) AS x, abs(-a) AS y", ""),
                        (f"round(a * {big}) AS r, ceil(a * {big}) AS c", f"floor(a * {big}) > 0"),
                        (f"trunc(-a * {big}) AS t, (a * 1000000000000000000.0)::int AS i", ""),
                        ("(a * 10000000000000000000.0)::int AS j, sign(a * 0.0) AS z", "")), least=4)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                                 st.integers(0, 2 ** 64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0]),
                                 st.integers(-10 ** 6, 10 ** 6).map(lambda i: i / 1000)),
                       min_size=1, max_size=200))
def test_json_double_writes_what_the_sink_writes(spark, values):
    """``sbpy_json_double`` (JsonDouble.java) gives orjson's text for every finite double, or NULL."""
    for v, text in _json_double(spark, values):
        if not math.isfinite(v):
            assert text is None
        elif text is None:  # refused only where Python's shortest text has one significant digit
            assert len(repr(abs(v)).split("e")[0].replace(".", "").strip("0")) == 1, v
        else:
            assert text == orjson.dumps(v).decode(), (v, text)


def test_json_double_edges(spark):
    values = [0.0, -0.0, 1.0, -1.5, 1e15, 9999999999999998.0, 1e16, 1e-5, 9.99999e-6, 1e-6, 0.1 + 0.2, 5e-324,
              2.2250738585072014e-308, 1.7976931348623157e308, 123456.789, 1e21, 1e22, 1e23, 100.0, 0.00012]
    for v, text in _json_double(spark, values):
        if v == 5e-324:
            assert text is None  # Schubfach's 4.9E-324 is not Python's 5e-324: refused
        else:
            assert text == orjson.dumps(v).decode(), (v, text)


def _json_double(spark, values):
    """``(value, sbpy_json_double(value))`` of each double, through the session."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(v,) for v in values], "v double")
    rows = df.select("v", F.call_function("sbpy_json_double", F.col("v")).alias("t")).collect()
    return [(r["v"], r["t"]) for r in rows]
