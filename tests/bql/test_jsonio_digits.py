"""``jsonio.has_long_digits`` finds what the regular expression ``rb"\\d{19,}"`` finds (it decides whether
a parsed line's ints are checked against int64, and whether a file chunk can keep its own text)."""
from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from sbpy.bql.jsonio import from_json, has_long_digits

_REGEX = re.compile(rb"\d{19,}")


@given(st.binary(max_size=80) | st.lists(st.sampled_from([b"1", b"9", b"0", b" ", b"a", b"\n", b"\xd9", b"-"]),
                                          max_size=60).map(b"".join))
def test_the_same_answer_as_the_regex(data):
    assert has_long_digits(data) == (_REGEX.search(data) is not None)


def test_edges():
    assert not has_long_digits(b"9" * 18)
    assert has_long_digits(b"x" + b"9" * 19 + b"y")
    assert not has_long_digits("١".encode() * 30)  # only ASCII digits count, as \d in a bytes pattern


def test_an_int_beyond_int64_still_becomes_a_float():
    assert from_json('{"a": 123456789012345678901}') == {"a": 123456789012345678901.0}
    assert from_json('{"a": 1234567890123456789}') == {"a": 1234567890123456789}
