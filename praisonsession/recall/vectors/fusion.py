"""How a hybrid search ranks: the dense side's cosines and the lexical side's BM25 scores,
each scaled to 0..1 over the candidates, then weighed.

Tuned on REALTALK (real chats, every turn a memory; chats 1 to 6, checked on 7 to 10), recall@5
of the evidence turn: dense alone 0.426 and 0.419, our BM25 alone 0.595 and 0.490, reciprocal-
rank fusion of the two 0.544 and 0.493, this fusion 0.628 and 0.497 (weights 0.3 to 0.5 on the
dense side are within 0.01 of each other). BM25 is taken as a share of the question's whole
weight and scaled by the best candidate's, but never as if a share under :data:`FULL` were a
full match: scaled by the best alone (0.623 and 0.497), a question whose only shared word is
common lifted that word's best entry to a full match, and on the generated questions of
``bench_memory_quality.py`` ("Does the user own an animal?") recall@5 fell from 0.986 to
0.922; scaled by the question's weight alone (0.616 and 0.503), a rare word in a long entry
(an order number in passing) counted for little. A plain reciprocal-rank fusion throws the
scores' gaps away: a turn that shares two rare words with the question is far above one
that shares one, and BM25 says by how much.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from .terms import words

__all__ = ["DENSE_WEIGHT", "DEPTH", "FULL", "bm25", "fuse", "idf", "okapi", "rerank", "share"]

#: Entries each side (meaning, words) brings to the fusion: a memory search, an agent's recall.
DEPTH = 20
#: The dense side's share of a fused score (the lexical side has the rest).
DENSE_WEIGHT = 0.4
#: The share of the question's BM25 weight that counts as a full lexical match.
FULL = 0.75
#: BM25's term-frequency saturation and length normalisation (FTS5's own values).
K1 = 1.2
B = 0.75


def fuse(cosines: Sequence[float], lexical: Sequence[float]) -> list[int]:
    """The candidates' positions, best first: ``cosines`` min-max scaled, ``lexical`` (BM25
    over the question's whole weight, as :func:`share` gives it; 0 for a candidate the lexical
    side did not bring) divided by its largest, or by :data:`FULL` when none reaches it: a
    best match of one common word of the question is not a full match. Ties keep the order
    given (the dense side's first)."""
    if not cosines:
        return []
    low, high = min(cosines), max(cosines)
    spread = high - low if high > low else 1.0
    top = max(FULL, *lexical) if lexical else FULL
    fused = [
        DENSE_WEIGHT * (cosine - low) / spread + (1 - DENSE_WEIGHT) * score / top
        for cosine, score in zip(cosines, lexical, strict=True)
    ]
    return sorted(range(len(fused)), key=lambda i: -fused[i])


def share(scores: list[tuple[str, float]], weights: Sequence[float]) -> list[tuple[str, float]]:
    """BM25 scores over the question's whole weight (the IDF of each of its terms, those no
    entry holds included): what :func:`fuse` weighs."""
    whole = sum(weights) or 1.0
    return [(entry, score / whole) for entry, score in scores]


def rerank(query: str, texts: Sequence[str], cosines: Sequence[float]) -> list[int]:
    """:func:`fuse` for candidates held in memory (a session's notes, a ranking of notes and
    memories together, an agent's older turns): BM25 of ``query`` over ``texts`` themselves
    (plain words: nothing is stored), fused with their cosines."""
    return fuse(cosines, bm25(words(query), [words(text) for text in texts]))


def bm25(query: Sequence[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """Okapi BM25 (k1 1.2, b 0.75, as SQLite's FTS5 ranks) of each document for ``query``,
    over the question's whole weight (:func:`share`)."""
    if not documents:
        return []
    count = len(documents)
    average = max(sum(len(document) for document in documents) / count, 1.0)
    wanted = set(query)
    frequencies = [Counter(term for term in document if term in wanted) for document in documents]
    found: Counter[str] = Counter()
    for frequency in frequencies:
        found.update(frequency.keys())
    weights = {term: idf(found[term], count) for term in found}
    whole = sum(idf(found[term], count) for term in wanted) or 1.0
    return [
        okapi(frequency, len(document), average, weights) / whole
        for document, frequency in zip(documents, frequencies, strict=True)
    ]


def idf(holding: int, entries: int) -> float:
    """A term's weight: Lucene's BM25 IDF, which stays above 0 for a term half the entries
    hold (a speaker's name in a chat: FTS5's own ``bm25()`` gives it nothing, and on REALTALK
    that cost about 0.03 of recall@5)."""
    return math.log(1 + (entries - holding + 0.5) / (holding + 0.5))


def okapi(
    frequency: Counter[str] | dict[str, int],
    length: int,
    average: float,
    weights: dict[str, float],
) -> float:
    """The BM25 score of an entry of ``length`` terms holding each term ``frequency`` times
    (PostgreSQL computes the same in SQL: ``pgvector.PgCollection.lexical``)."""
    norm = K1 * (1 - B + B * length / max(average, 1.0))
    return sum(weights[t] * n * (K1 + 1) / (n + norm) for t, n in frequency.items() if t in weights)
