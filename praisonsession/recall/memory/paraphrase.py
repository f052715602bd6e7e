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

And a repeat says what the other says, in mostly its words (:func:`word_overlap`): on real
conversations, turns of one speaker on one day ("<when>: <speaker>: <text>") share a header that
lifts any two of them over the threshold ("Melanie: Yeah, I painted that lake sunrise last
year!" and "Melanie: Wow, love that painting!" reach 0.72), and merging them dropped what was
said. So a repeat has the same labels (the words before a colon: the speaker), and, the words
both texts start with (who, when) set aside, at least :data:`SAME_CONTENT` of the words of the
longer remainder are in the other.
"""

from __future__ import annotations

import functools
import re

__all__ = [
    "DEFAULT_THRESHOLD",
    "is_paraphrase",
    "labels",
    "named_things",
    "names_differ",
    "one_slot_changed",
    "word_overlap",
]

DEFAULT_THRESHOLD = 0.72
#: A pair that differs in one slot only (a word or two) merges only from this close.
SAME_WORDS_THRESHOLD = 0.95
_SLOT = 3  # words: a changed span this short, with the rest the same, is a changed value
#: The share of the words (after those both start with) that a repeat has in common with
#: what it repeats: "The user owns a green Subaru" and "User's car is a green Subaru" share
#: 0.67, "User is based in Nairobi" and "User resides in Nairobi" 0.5, two different turns
#: of one speaker on one day about 0.1 to 0.4.
SAME_CONTENT = 0.5

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# Capitalised for reasons other than being a name.
_NEGATIONS = frozenset(
    {"not", "no", "never", "don't", "doesn't", "isn't", "won't", "can't", "cannot", "nor"}
    | {"dislikes", "hates", "stopped", "quit", "longer", "without", "neither"}
)
_COMMON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "user", "the", "a", "an", "my", "we"})
# Words that say little on their own: two long texts share many of them whatever they say.
_FUNCTION_TEXT = (
    "a an the and or but so if then than that this these those there here it its is are was "
    "were be been being am do does did have has had i i'm i've i'd i'll me my mine we our us "
    "you your you're he him his she her they them their to of in on at by for with from as "
    "about into over up out just too very really also what which who how all any some oh "
    "yeah yes ok okay well will would can could should"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())
_LABEL = re.compile(r"([^\W\d_]+):(?=\s)")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


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


def labels(text: str) -> tuple[str, ...]:
    """The words a colon follows ("Melanie: ...", "Note: ..."): who speaks, what kind of
    note. Two texts with different labels are different statements, however alike the rest
    ("Kevin: Lava cake is a delightful choice!" echoing "Paola: We usually make lava cake")."""
    return tuple(word.casefold() for word in _LABEL.findall(text))


def word_overlap(a: str, b: str) -> float:
    """The share of words ``a`` and ``b`` have in common (0 to 1), the words both start with
    set aside (see the module docstring): of the longer remainder, the part that is in the
    other; the lower of that share over all words and over the words that say something
    (function words such as "the" and "you" fill long texts alike). Two texts with the same
    words throughout share 1."""
    x, y = _words(a), _words(b)
    return min(_shared(x, y), _shared(_content(x), _content(y)))


def _content(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(word for word in words if word not in _FUNCTION_WORDS)


def _shared(x: tuple[str, ...], y: tuple[str, ...]) -> float:
    start = 0
    while start < min(len(x), len(y)) and x[start] == y[start]:
        start += 1
    rest_a, rest_b = set(x[start:]), set(y[start:])
    if not rest_a and not rest_b:
        return 1.0 if set(x) == set(y) else 0.0
    return len(rest_a & rest_b) / max(len(rest_a), len(rest_b))


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    """The text's words in order, casefolded and stripped of common endings ("painted" and
    "painting" are one word here; function words as they are)."""
    found = []
    for word in _WORD.findall(text.casefold().replace("’", "'")):
        word = re.sub(r"'s$", "", word)
        for suffix in () if word in _FUNCTION_WORDS else _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        found.append(word)
    return tuple(found)


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
    if labels(new) != labels(held) or word_overlap(new, held) < SAME_CONTENT:
        return False
    return score >= max(threshold, SAME_WORDS_THRESHOLD) or not one_slot_changed(new, held)
