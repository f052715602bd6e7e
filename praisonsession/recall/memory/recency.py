"""Newer memories first, among the ones they update: how ``prefer_recent`` ranks.

A fact that changes is often told again in other words ("User moved to Berlin") rather than
updated by id; ranked by similarity alone, the old wording ("User lives in Oslo") can win. Here
a newer hit goes above the first older hit it updates, judged from the two memories' own
vectors and the score gap. Tuned on ``benchmarks/data/memory_questions.json``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["newer_first", "prefer_newer", "says_changed", "similarities"]

#: When newer memories are preferred, a newer hit goes above an older one that scores at most
#: this much more (cosine)...
RECENCY_MARGIN = 0.1
#: ... or that it is about the same thing as (cosine between the two memories): "User moved to
#: Berlin" above "User lives in Oslo" (0.5 apart in MiniLM; unrelated facts of one user rarely
#: reach 0.45: 1% of pairs in benchmarks/data/memory_questions.json).
SAME_SUBJECT = 0.45
RELATED = 0.3  # the least a close newer hit must share with the older one
#: A newer memory that says something changed ("now", "moved", "switched"...) goes above an
#: older one it shares this much with, scoring up to CHANGE_GAP less: "User is into jazz now"
#: shares only 0.25 with "User listens to classical", yet replaces it.
CHANGE_RELATED = 0.2
CHANGE_GAP = 0.35
_CHANGE_WORDS = frozenset(
    {"now", "moved", "changed", "switched", "anymore", "longer", "instead", "new", "newly"}
    | {"since", "started", "recently", "became", "joined", "quit", "stopped", "gave"}
    | {"corrected", "actually", "updated"}
)


def says_changed(text: str) -> bool:
    """Whether a memory announces a change, as an update of an older one does."""
    return any(word in _CHANGE_WORDS for word in re.findall(r"[a-z]+", text.casefold()))


def prefer_newer(results: list[dict[str, Any]], vectors: Any) -> list[dict[str, Any]]:
    """``results`` (best first) with each newer one moved above the first older one it updates:
    one within :data:`RECENCY_MARGIN` of its score, or about the same subject
    (:data:`SAME_SUBJECT`). So "where does the user live" finds the move, not the old city."""
    order = newer_first(
        [result["metadata"].get("updated_at") or 0 for result in results],
        [result["text"] for result in results],
        [result["score"] for result in results],
        vectors,
    )
    return [results[i] for i in order]


def newer_first(
    whens: Sequence[float], texts: Sequence[str], scores: Sequence[float], vectors: Any
) -> list[int]:
    """The order :func:`prefer_newer` puts hits in, from their update times, texts, scores
    and vectors (best first): what a search ranks before it builds any result."""
    if len(whens) < 2:
        return list(range(len(whens)))
    related = similarities(vectors)
    placed: list[int] = []
    for j, when in enumerate(whens):
        changed = says_changed(texts[j])
        position = len(placed)
        for k, i in enumerate(placed):
            if whens[i] >= when:
                continue
            gap = scores[i] - scores[j]
            close = related[i][j]
            if (
                close >= SAME_SUBJECT
                or (gap <= RECENCY_MARGIN and close >= RELATED)
                or (changed and gap <= CHANGE_GAP and close >= CHANGE_RELATED)
            ):
                position = k
                break
        placed.insert(position, j)
    return placed


def similarities(vectors: Any) -> list[list[float]]:
    """Cosine of every pair (0 where a vector is missing), in one matrix product; ``vectors``
    is a list of vectors or a 2-d array (as Chroma returns them: no copy into lists)."""
    import numpy as np  # installed with the memory extra

    if isinstance(vectors, np.ndarray) and vectors.ndim == 2:
        matrix = vectors.astype(np.float32)  # a copy: normalised in place below
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.maximum(norms, 1e-12)
        cosines: list[list[float]] = (matrix @ matrix.T).tolist()
        return cosines
    size = max((len(vector) for vector in vectors), default=0)
    if size == 0:
        return [[0.0] * len(vectors) for _ in vectors]
    matrix = np.zeros((len(vectors), size), dtype=np.float32)
    for row, vector in enumerate(vectors):
        if len(vector) == size:
            matrix[row] = vector
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.maximum(norms, 1e-12)
    cosines = (matrix @ matrix.T).tolist()
    return cosines
