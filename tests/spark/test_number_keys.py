"""Number keys: the JVM pass's exact doubles as text that Spark compares byte for byte.

A native comparison of two numbers compares their number keys (``native_keys.number_key`` in Python,
``JsonScan.numberKey`` in the JVM). That is BQL's comparison only if (1) the JVM reads each number as the
double Python's ``float`` reads — its fast path (digits as a long over a power of ten) and its
``parseDouble`` fallback alike — and (2) the keys' byte order and equality are the doubles' order and
equality (``-0.0`` equal to ``0.0``). Both are checked here; the chains that use them are checked against
the kernel in ``test_native_stage``.
"""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sbpy.bql.spark.native_keys import number_key
from sbpy.bql.spark.native_udf import status

digits = st.text(alphabet="0123456789", min_size=1, max_size=19)
TRICKY = ["0", "7", "-7", "0.1", "0.3", "-0.0", "0.0", "7.50", "0.000001", "0.00001", "123456789012345",
          "-123456789012345", "1234567890123456", "99999999999999.9", "999999999999999.9",
          "0.123456789012345",
          "0.1234567890123456", "9007199254740993.0", "4.35", "1.005", "2.675", "8.0", "7.999999999999999"]


@st.composite
def number_texts(draw):
    """JSON number tokens without exponent: any digits (too many are refused by the pass, not keyed)."""
    whole = draw(digits).lstrip("0") or "0"
    text = ("-" if draw(st.booleans()) else "") + whole
    if draw(st.booleans()):
        text += "." + draw(digits)
    return text


def _keys(spark, texts):
    """``(class, number key)`` of each text as the top-level value of a line."""
    df = spark.createDataFrame([(f'{{"v": {t}}}',) for t in texts], "line string")
    rows = df.selectExpr("sbpy_json_fields(line, '#v') AS f").collect()
    return [None if r["f"] is None else (r["f"][0], r["f"][2]) for r in rows]


def _check(spark, texts):
    for text, got in zip(texts, _keys(spark, texts)):
        if got is None or got[0] not in ("i", "f", "d"):
            assert got is None or got[1] is None, (text, got)  # not a number the pass vouches for
            continue
        assert got[1] == number_key(float(text)), (text, got, float(text))
    return texts


@pytest.mark.spark
@pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")
def test_tricky_numbers_read_as_python_reads_them(spark):
    _check(spark, TRICKY)
    keyed = [t for t, k in zip(TRICKY, _keys(spark, TRICKY)) if k is not None and k[1] is not None]
    assert len(keyed) >= 20  # the fast path and the parseDouble path both ran


@pytest.mark.spark
@pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(number_texts(), min_size=1, max_size=200))
def test_random_numbers_read_as_python_reads_them(spark, texts):
    _check(spark, texts)


def test_a_key_that_is_not_wanted_as_a_number_is_not_computed():
    """``=`` keys carry no number key (the JVM skips the work); checked through the key spec's form."""
    from sbpy.bql.plan import plan_query
    from sbpy.bql.spark.compile import query_spec_stages
    from sbpy.bql.spark.native_query import chain_of

    stages = query_spec_stages(plan_query(["src"], [
        ("out", 'SELECT RSTREAM id, price, name FROM src [RANGE 1 TUPLES] WHERE price < 8 AND name = "x"',
         ["src"])]))
    assert chain_of(stages).key_spec == "#price\u0001=name\u0001=id"
    stages = query_spec_stages(plan_query(["src"], [
        ("out", "SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE a < b OR NOT c = 1", ["src"])]))
    assert chain_of(stages).key_spec == "#a\u0001#b\u0001#c\u0001=id"


finite = st.floats(allow_nan=False, allow_infinity=False)


@given(a=finite, b=finite)
def test_keys_order_and_equality_are_the_doubles(a, b):
    ka, kb = number_key(a), number_key(b)
    assert len(ka) == 16 and (ka < kb) == (a < b) and (ka == kb) == (a == b)


def test_negative_zero_is_zero():
    assert number_key(-0.0) == number_key(0.0) and number_key(-0.0) < number_key(math.ulp(0.0))
    assert json.loads("-0.0") == 0.0
