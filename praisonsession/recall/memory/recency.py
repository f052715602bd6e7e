"""Newer memories first, among the ones they update: how ``prefer_recent`` ranks.

A fact that changes is often told again in other words ("User moved to Berlin") rather than
updated by id; ranked by similarity alone, the old wording ("User lives in Oslo") can win. Here
a newer hit goes above the first older hit it updates, judged from the two memories' own
vectors and the score gap. Tuned on ``benchmarks/data/memory_questions.json``.

Only a memory about the same subject (the user, "I", a name: its first word, see
:func:`subject`) updates another. And recency reorders what similarity found, changing it by
at most :data:`ENTRANTS` hits: the results are the ``limit`` most similar hits, except that a
hit from further down enters when it updates the best one, and then the weakest hit that
updates nothing makes room. So newer memories about other people, however many, neither push
the answer out of the results nor above it (both happened when any newer hit on the topic
could jump the queue: recall@5 fell as memories grew), and the update of the best hit is still
found when similarity alone ranks it low.

A turn of a conversation ("<when>: <speaker>: <text>", see :func:`speaker`) updates nothing:
turns are ranked by relevance alone. One speaker's turns of a day share a header that makes
any two of them close in meaning, and a later turn on the same topic is no newer value of an
earlier one: both say what was said then, and a question about either needs it. On REALTALK's
first four chats, recall@5 fell from 0.309 to 0.293 with every later turn of a day going above
the earlier ones, and to 0.299 when only turns that say something changed ("now", "new",
"started"...) did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "newer_first",
    "prefer_newer",
    "said_time",
    "says_changed",
    "similarities",
    "speaker",
    "subject",
]

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
#: Hits from beyond the ``limit`` most similar that may enter the results as updates.
ENTRANTS = 2
_FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine"})
_ARTICLES = frozenset({"the", "a", "an", "our"})
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SPEAKER = re.compile(r"(?:[^\n]*?\d:\s+)?([^\W\d_]+(?: [^\W\d_]+)?):\s")
_CHANGE_WORDS = frozenset(
    {"now", "moved", "changed", "switched", "anymore", "longer", "instead", "new", "newly"}
    | {"since", "started", "recently", "became", "joined", "quit", "stopped", "gave"}
    | {"corrected", "actually", "updated"}
)


def says_changed(text: str) -> bool:
    """Whether a memory announces a change, as an update of an older one does."""
    return any(word in _CHANGE_WORDS for word in re.findall(r"[a-z]+", text.casefold()))


def speaker(text: str) -> str:
    """Who says a turn of a conversation ("Melanie" in "8 May 2023: Melanie: ..." and in
    "Melanie: ..."), casefolded: a name of one or two words before a colon, at the start or
    after a time; "" for a memory that is not such a turn ("The user's job: nurse")."""
    found = _SPEAKER.match(text)
    return found.group(1).casefold() if found else ""


def subject(text: str) -> str:
    """Whom a memory is about, from its first word: "user" for "User ..." and "The user's
    ...", "i" for "I ..." and "My ...", a name for "Ana's ..."; in a turn of a conversation,
    its speaker (see :func:`speaker`)."""
    said_by = speaker(text)
    if said_by:
        return said_by + ":"
    words = _WORD.findall(text.casefold())
    if len(words) > 1 and words[0] in _ARTICLES:
        words = words[1:]
    if not words:
        return ""
    first = re.sub(r"['’]s$", "", words[0])
    return "i" if first in _FIRST_PERSON else first


def said_time(metadata: dict[str, Any]) -> float:
    """How new a memory is: when it was said (``said_at``), else when it was last changed."""
    for field in ("said_at", "updated_at"):
        value = metadata.get(field)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return 0.0


def prefer_newer(
    results: list[dict[str, Any]], vectors: Any, limit: int | None = None
) -> list[dict[str, Any]]:
    """``results`` (best first) with each newer one moved above the first older one it updates:
    one within :data:`RECENCY_MARGIN` of its score, or about the same subject
    (:data:`SAME_SUBJECT`). So "where does the user live" finds the move, not the old city.
    The first ``limit`` are the results to show (see the module docstring)."""
    order = newer_first(
        [said_time(result["metadata"]) for result in results],
        [result["text"] for result in results],
        [result["score"] for result in results],
        vectors,
        limit,
    )
    return [results[i] for i in order]


def newer_first(
    whens: Sequence[float],
    texts: Sequence[str],
    scores: Sequence[float],
    vectors: Any,
    limit: int | None = None,
) -> list[int]:
    """The order :func:`prefer_newer` puts hits in, from their update times, texts, scores
    and vectors (best first): what a search ranks before it builds any result. Its first
    ``limit`` (all of them without one) are the most similar but for the updates that enter
    (module docstring); the rest follow by similarity."""
    count = len(whens)
    if count < 2:
        return list(range(count))
    related = similarities(vectors)
    # each hit's subject and speaker read once: the loops below ask for them again and again
    # (a regex over the whole text each time: about a millisecond a search of 15 hits)
    subjects: list[str | None] = [None] * count
    speakers: list[str | None] = [None] * count

    def subject_of(i: int) -> str:
        found = subjects[i]
        if found is None:
            found = subjects[i] = subject(texts[i])
        return found

    def speaker_of(i: int) -> str:
        found = speakers[i]
        if found is None:
            found = speakers[i] = speaker(texts[i])
        return found

    def updates(i: int, j: int) -> bool:
        """Whether hit ``j`` is a newer memory that updates hit ``i``."""
        if whens[i] >= whens[j]:
            return False
        gap = scores[i] - scores[j]
        close = related[i][j]
        if speaker_of(j):  # a turn of a conversation: see the module docstring
            return False
        return (
            close >= SAME_SUBJECT
            or (gap <= RECENCY_MARGIN and close >= RELATED)
            or (says_changed(texts[j]) and gap <= CHANGE_GAP and close >= CHANGE_RELATED)
        )

    def same(i: int, j: int) -> bool:
        return subject_of(i) == subject_of(j)

    limit = count if limit is None else min(limit, count)
    chosen = list(range(limit))
    for j in range(limit, count):
        if len(chosen) - limit >= ENTRANTS:
            break
        if same(0, j) and updates(0, j):
            chosen.append(j)
    while len(chosen) > limit:  # the weakest hit that updates none of the others makes room
        newer = {j for j in chosen if any(same(i, j) and updates(i, j) for i in chosen)}
        weakest = min(
            (i for i in chosen if i not in newer), key=lambda i: scores[i], default=chosen[-1]
        )
        chosen.remove(weakest)
    placed: list[int] = []
    for j in chosen:
        position = next(
            (k for k, i in enumerate(placed) if same(i, j) and updates(i, j)), len(placed)
        )
        placed.insert(position, j)
    taken = set(placed)
    return placed + [i for i in range(count) if i not in taken]


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
