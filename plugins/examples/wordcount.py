"""The word count tutorial's plugin: source ``wc_sentences`` and UDSF ``wc_tokenizer``.

``data/wordcount.bql`` holds the tutorial's statements. ``wc_sentences`` emits, every ``interval``
(default 1 s, ``seed`` for a fixed sequence), ``{"name": <person>, "text": <5 to 9 lorem words>}``;
``wc_tokenizer(stream, field)`` emits one tuple per word of ``field``, the word replacing the text.

>>> [d["name"] for d, _ in SentencesSource({"seed": 1}).collect(2)]
['jacob', 'noah']
"""
from __future__ import annotations

import random
from importlib import resources
from typing import Any, Iterator


from .udsfs import LOREM, SeededTextSource, WordSplitter

NAMES = ("isabella", "sophia", "jacob", "ethan", "emma", "mason", "olivia", "noah")


class SentencesSource(SeededTextSource):
    """Source ``wc_sentences``."""

    def tuples(self) -> Iterator[dict[str, Any]]:
        rng = random.Random(self.seed)
        while True:
            name = rng.choice(NAMES)
            words = [rng.choice(LOREM).lower() for _ in range(rng.randint(5, 9))]
            yield {"name": name, "text": " ".join(words)}


class Tokenizer(WordSplitter):
    """UDSF ``wc_tokenizer(stream, field)``."""


def bql() -> str:
    """The tutorial's ``wordcount.bql``."""
    return resources.files("sbpy.plugins.examples").joinpath("data/wordcount.bql").read_text()


def register(regs: Any) -> None:
    regs.add_source_type("wc_sentences", SentencesSource)
    regs.add_udsf("wc_tokenizer", Tokenizer)
