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

from sbpy.plugins.api import SourceType

from .udsfs import LOREM, WordSplitter

NAMES = ("isabella", "sophia", "jacob", "ethan", "emma", "mason", "olivia", "noah")


class SentencesSource(SourceType):
    """Source ``wc_sentences``."""

    default_interval = 1.0

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        seed = params.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError("seed must be an integer")
        self.seed = seed

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
