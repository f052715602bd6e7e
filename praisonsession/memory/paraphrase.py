"""When a new memory is a paraphrase of one already held (and so updates it, not adds).

Two texts are the same memory when their embeddings are close (cosine at least the threshold,
``memory_config["dedupe_threshold"]``, :data:`DEFAULT_THRESHOLD` by default) and neither names
something the other does not: a number, or a name written with a capital inside the sentence.
Embeddings alone put "Ada lives in Oslo" and "Ada lives in Bergen" very close; the second test
keeps such distinct facts apart, while "Ada really likes green tea" still merges with "Ada
likes green tea". The threshold was chosen on ``benchmarks/data/make_memory_questions.py``'s
pairs (see ``benchmarks/bench_memory_quality.py``).
"""

from __future__ import annotations

import re

__all__ = ["DEFAULT_THRESHOLD", "is_paraphrase", "named_things"]

DEFAULT_THRESHOLD = 0.86

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# Capitalised for reasons other than being a name.
_COMMON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "user", "the", "a", "an", "my", "we"})


def named_things(text: str) -> frozenset[str]:
    """Numbers, and words capitalised anywhere but at a sentence's start: what a fact is about."""
    found = set(_NUMBER.findall(text))
    sentence_start = True
    for match in _WORD.finditer(text):
        word = match.group()
        before = text[: match.start()].rstrip()
        sentence_start = not before or before[-1] in ".!?:\n"
        if word[0].isupper() and not sentence_start and word.casefold() not in _COMMON:
            found.add(word.casefold())
    return frozenset(found)


def is_paraphrase(score: float, new: str, held: str, threshold: float) -> bool:
    """Whether ``new`` (cosine ``score`` to ``held``) says the same thing as ``held``."""
    return score >= threshold and named_things(new) == named_things(held)
