"""``Postings``: a lexical index held in memory, for entries a process holds anyway (an agent's
older turns), ranked as the stores' lexical indexes rank (``lexical.py``, pgvector).

For each term, the positions of the entries that hold it and how often, in the order the
entries were added: appended to, never changed, so a search bounded to the first ``count``
entries reads a consistent prefix while entries are being added beside it. A search reads
only the entries that hold a term of the question, not every entry: at 10,000 turns, a
question of a few uncommon words reads tens of entries.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence

from .fusion import K1, B, idf
from .terms import selective

__all__ = ["Postings"]


class Postings:
    """Which entries hold each term (``terms.Terms.of`` of their text), and how often."""

    def __init__(self) -> None:
        #: term -> (positions holding it, ascending; how often each holds it)
        self._held: dict[str, tuple[list[int], list[int]]] = {}
        self._lengths: list[int] = []
        self._totals: list[int] = [0]  # terms in the first n entries, for BM25's average

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, terms: Sequence[str]) -> None:
        """The next entry's terms (repeats kept: BM25 counts them)."""
        position = len(self._lengths)
        for term, times in Counter(terms).items():
            held = self._held.get(term)
            if held is None:
                held = self._held[term] = ([], [])
            held[0].append(position)
            held[1].append(times)
        self._totals.append(self._totals[-1] + len(terms))
        self._lengths.append(len(terms))  # last: the entry counts once it is whole

    def search(self, query: Sequence[str], count: int, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best of the first ``count`` entries for the question's distinct terms
        ``query``: (position, BM25 over the question's whole weight, as ``fusion.share``
        gives it), best first, ties newest first. Entries are found by the terms that are not
        common (``terms.selective``), then scored with every term, as the stores do."""
        count = min(count, len(self._lengths))
        if not count or not query or limit <= 0:
            return []
        holding = {}
        for term in query:
            held = self._held.get(term)
            holding[term] = bisect.bisect_left(held[0], count) if held else 0
        whole = sum(idf(n, count) for n in holding.values()) or 1.0
        finding = set(selective(holding, count))
        average = max(self._totals[count] / count, 1.0)
        lengths = self._lengths
        scores: dict[int, float] = {}
        # the finding terms first, over every entry holding them; then the common ones, only
        # for the entries found
        for term in sorted(holding, key=lambda t: t not in finding):
            n = holding[term]
            if not n:
                continue
            weight = idf(n, count)
            positions, times = self._held[term]
            pairs: Iterable[tuple[int, int]]
            if term in finding:
                pairs = zip(positions[:n], times[:n], strict=True)
            else:
                pairs = ((p, _times_in(positions, times, n, p)) for p in list(scores))
            for position, tf in pairs:
                if tf:
                    norm = K1 * (1 - B + B * lengths[position] / average)
                    scores[position] = scores.get(position, 0.0) + weight * tf * (K1 + 1) / (
                        tf + norm
                    )
        best = sorted(scores.items(), key=lambda pair: (-pair[1], -pair[0]))[:limit]
        return [(position, score / whole) for position, score in best]


def _times_in(positions: list[int], times: list[int], upto: int, position: int) -> int:
    """How often the entry at ``position`` holds a term (0: not at all)."""
    at = bisect.bisect_left(positions, position, 0, upto)
    return times[at] if at < upto and positions[at] == position else 0
