"""The machine learning tutorial's preprocessing UDFs.

``filter_punctuation_marks(text)``, ``nlp_to_lower(text)``, ``nlp_split(text, sep)``,
``filter_stop_words(words)`` (drops English stop words and empty strings) and ``nlp_weight_tf(words)``
(term frequencies: word → count as float)::

    SELECT RSTREAM nlp_weight_tf(filter_stop_words(nlp_split(
        nlp_to_lower(filter_punctuation_marks(text)), " "))) AS fv FROM tweets [RANGE 1 TUPLES];

>>> nlp_weight_tf(filter_stop_words(nlp_split(nlp_to_lower(filter_punctuation_marks("I want to eat SUSHI, sushi!")), " ")))
{'want': 1.0, 'eat': 1.0, 'sushi': 2.0}
"""
from __future__ import annotations

import re
from typing import Any

_PUNCT = re.compile(r"[\"!#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~“”‘’…]")

STOP_WORDS = frozenset("""a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
such than that the their theirs them themselves then there these they this those through to too under until
up very was we were what when where which while who whom why will with would you your yours yourself
yourselves rt""".split())


def filter_punctuation_marks(text: str) -> str:
    """``text`` without punctuation marks."""
    return _PUNCT.sub("", text)


def nlp_to_lower(text: str) -> str:
    return text.lower()


def nlp_split(text: str, sep: str) -> list[str]:
    return text.split(sep) if sep else text.split()


def filter_stop_words(words: list[str]) -> list[str]:
    return [w for w in words if w and w not in STOP_WORDS]


def nlp_weight_tf(words: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for w in words:
        out[w] = out.get(w, 0.0) + 1.0
    return out


def register(regs: Any) -> None:
    for fn in (filter_punctuation_marks, nlp_to_lower, nlp_split, filter_stop_words, nlp_weight_tf):
        regs.add_udf(fn.__name__, fn)
