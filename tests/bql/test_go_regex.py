"""substring(s, r) reads r as a Go regexp (RE2): its translation to Python's ``re``
(bql/functions/go_regex.py)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbpy.bql.functions.go_regex import GoRegexError, compile_go_regex


def find(pattern: str, text: str) -> str | None:
    """Go's ``regexp.MustCompile(pattern).FindString(text)``; None if the pattern does not compile."""
    try:
        m = compile_go_regex(pattern).search(text)
    except (GoRegexError, re.error):
        return None
    return m.group(0) if m else ""


@pytest.mark.parametrize("pattern,text,want", [
    ("...$", "Thomas", "mas"),                 # the reference's example
    ("h.+s", "Thomas", "homas"),
    (r"\d+", "a\u0663 12", "12"),              # \d is ASCII in Go
    (r"\w+", "über", "ber"),                   # \w too
    (r"\s", "a\u00a0 b", " "),
    (r"\bbar", "foobar bar", "bar"),
    ("x$", "x\n", ""),                         # $ is the end of the text without (?m)
    ("(?m)x$", "x\n", "x"),
    (r"x\z", "ax", "x"),
    ("[[:digit:]]+", "ab123", "123"),          # ASCII classes
    ("[^[:lower:]]", "aXb", "X"),
    ("a{,2}", "a{,2}", "a{,2}"),               # not a repetition in Go
    ("a{2}", "aaa", "aa"),
    ("a+?", "aaa", "a"),                       # lazy repetition
    (r"\Q.*\E", "a.*b", ".*"),                 # quoted literal text
    ("(?i)tho", "Thomas", "Tho"),
    ("(?P<n>o)m", "Thomas", "om"),
    ("^*a", "ab", "a"),                        # an empty-width operand may be repeated in Go
    ("[]a]+", "]a]", "]a]"),
    ("[a-c&&b]", "&", "&"),                    # && is no set operation in Go
])
def test_go_semantics(pattern, text, want):
    assert find(pattern, text) == want


@pytest.mark.parametrize("pattern", [
    "?", "a**", "a*+", "a{2}{3}", "a{1001}", "a{3,2}",    # repetitions Go rejects
    "(?=a)", "(?!a)", "(?<=a)", "(?<!a)", "(?#c)",       # Perl syntax Go lacks
    r"(a)\1", "(?P<n>a)(?P=n)", r"\Z", r"\e", "[a", "\\",
])
def test_go_rejects(pattern):
    assert find(pattern, "aaa") is None


# In the plain subset (letters, '.', groups, alternation, greedy and lazy repetition, simple classes)
# Go and Python agree, so the translation must not change what matches.
_atom = st.one_of(st.sampled_from(list("abc.") + ["[ab]", "[^a]", "[a-c]"]),
                  st.deferred(lambda: _group))
_piece = st.tuples(_atom, st.sampled_from(["", "*", "+", "?", "*?", "+?", "{1,2}"])).map("".join)
_seq = st.lists(_piece, min_size=1, max_size=4).map("".join)
_group = st.lists(_seq, min_size=1, max_size=3).map(lambda alts: "(" + "|".join(alts) + ")")


@settings(max_examples=150, deadline=None)
@given(_seq, st.text(alphabet="abcd", max_size=8))
def test_plain_patterns_match_as_in_python(pattern, text):
    want = re.search(pattern, text)
    assert find(pattern, text) == (want.group(0) if want else "")
