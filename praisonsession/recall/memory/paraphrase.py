"""When a new memory is a paraphrase of one already held (and so updates it, not adds).

Two texts are the same memory when their embeddings are close (cosine at least the threshold,
``memory_config["dedupe_threshold"]``, :data:`DEFAULT_THRESHOLD` by default), neither names
something the other does not (a number, or a name written with a capital inside the sentence),
and they are not one sentence with one slot filled differently. Embeddings alone put "User has
a dog named Rex" and "User has a cat named Rex" closer (0.89) than "User prefers concise
answers" and "The user likes short, concise answers" (0.80): the same words around a changed
slot are what a different value looks like, so such a pair merges only when nearly identical
(:data:`SAME_WORDS_THRESHOLD`, "likes green tea" and "loves green tea"). A different count of
negations ("no longer", "never") keeps two texts apart too. The threshold was chosen on the
pairs of ``benchmarks/data/make_memory_questions.py`` (``bench_memory_quality.py`` sweeps it).
"""

from __future__ import annotations

import functools
import re

__all__ = ["DEFAULT_THRESHOLD", "is_paraphrase", "named_things", "names_differ", "one_slot_changed"]

DEFAULT_THRESHOLD = 0.72
#: A pair that differs in one slot only (a word or two) merges only from this close.
SAME_WORDS_THRESHOLD = 0.95
_SLOT = 3  # words: a changed span this short, with the rest the same, is a changed value

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# Capitalised for reasons other than being a name.
_NEGATIONS = frozenset(
    {"not", "no", "never", "don't", "doesn't", "isn't", "won't", "can't", "cannot", "nor"}
    | {"dislikes", "hates", "stopped", "quit", "longer", "without", "neither"}
)
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


def one_slot_changed(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are mostly the same words, but for one short span each."""
    x = [word.casefold() for word in _WORD.findall(a)]
    y = [word.casefold() for word in _WORD.findall(b)]
    start = 0
    while start < min(len(x), len(y)) and x[start] == y[start]:
        start += 1
    end = 0
    while end < min(len(x), len(y)) - start and x[-1 - end] == y[-1 - end]:
        end += 1
    left, right = x[start : len(x) - end], y[start : len(y) - end]
    mostly_same = 2 * (start + end) > max(len(x), len(y))
    return bool(left) and bool(right) and max(len(left), len(right)) <= _SLOT and mostly_same


def names_differ(a: str, b: str) -> bool:
    """Whether either text names something (see :func:`named_things`) the other does not
    mention, in any case: "Oslo" and "oslo" are the same place, "Oslo" and "Bergen" are not."""
    named_a, words_a, _ = _read(a)
    named_b, words_b, _ = _read(b)
    return not (named_a <= words_b and named_b <= words_a)


def negations(text: str) -> int:
    return _read(text)[2]


@functools.lru_cache(maxsize=4096)
def _read(text: str) -> tuple[frozenset[str], frozenset[str], int]:
    """What the checks compare of a text, read once: a batch of n memories compares each
    text with up to n others (its names, its words and numbers, its negations)."""
    words = [word.casefold() for word in _WORD.findall(text)]
    mentioned = frozenset(words) | frozenset(_NUMBER.findall(text))
    return named_things(text), mentioned, sum(word in _NEGATIONS for word in words)


def is_paraphrase(score: float, new: str, held: str, threshold: float) -> bool:
    """Whether ``new`` (cosine ``score`` to ``held``) says the same thing as ``held``."""
    if score < threshold or names_differ(new, held) or negations(new) != negations(held):
        return False
    return score >= max(threshold, SAME_WORDS_THRESHOLD) or not one_slot_changed(new, held)
