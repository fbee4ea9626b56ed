"""A small generated, labelled tweet-like data set for the machine learning tutorial (no network).

``generate(n, seed)`` gives tweets ``{"id_str", "lang", "screen_name", "text", "description", "age",
"gender"}`` whose words depend on the labels (with shared noise words), so an online classifier
learns them quickly. ``python -m sbpy.plugins.examples.tweets N [SEED] > training_tweets.json`` writes
JSON Lines.

>>> t = generate(2, seed=1)[0]; sorted(t)
['age', 'description', 'gender', 'id_str', 'lang', 'screen_name', 'text']
"""
from __future__ import annotations

import json
import random
import sys
from typing import Any

AGES = ("10-19", "20-29", "30-39", "40-49", "50<")
GENDERS = ("male", "female")
TOPICS = {
    "10-19": "school homework exam anime game friends teacher class summer",
    "20-29": "college party job startup travel concert roommate coffee gym",
    "30-39": "career kids wedding mortgage project meeting daycare promotion",
    "40-49": "teenagers garden investment marathon conference renovation",
    "50<": "retirement grandchildren golf pension cruise doctor memories",
    "male": "football beard beer guitar brother fishing cars",
    "female": "makeup dress sister shopping nails yoga boyfriend",
}
NOISE = "today really good love time day great new just like watching eating sushi ramen".split()


def generate(n: int, seed: int = 0, lang: str = "en") -> list[dict[str, Any]]:
    """``n`` labelled tweets; some labels are left empty ("") like the tutorial's data."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        age, gender = rng.choice(AGES), rng.choice(GENDERS)
        words = rng.sample(TOPICS[age].split(), 3) + rng.sample(TOPICS[gender].split(), 2)
        words += rng.sample(NOISE, 3)
        rng.shuffle(words)
        text = " ".join(words).capitalize() + rng.choice((".", "!", "!!", " :)", "?"))
        desc = f"I love {rng.choice(TOPICS[age].split())} and {rng.choice(TOPICS[gender].split())}."
        out.append({"id_str": str(1000 + i), "lang": lang, "screen_name": f"user{rng.randint(1, 999)}",
                    "text": text, "description": desc,
                    "age": age if rng.random() > 0.1 else "", "gender": gender if rng.random() > 0.1 else ""})
    return out


def main(argv: list[str]) -> None:
    """``python -m sbpy.plugins.examples.tweets [N [SEED]]``: N tweets (default 500) as JSON Lines."""
    n = int(argv[0]) if argv else 500
    seed = int(argv[1]) if len(argv) > 1 else 0
    for tweet in generate(n, seed=seed):
        print(json.dumps(tweet))


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
