"""``TurnIndex``: an agent's older turns, searchable by meaning, for recall into the request.

The index is derived from the conversation log, never the other way round: it is built from
the log the first time it is needed, then grows by the turns that left the agent's window. Its
vectors are saved beside the log (``turn_vectors.py``), so a new process, a fork, a restore or
an imported archive embeds only the turns whose vectors were never saved: an agent resumed
with 10,000 turns embeds its new message and reads the rest. Vectors live in process memory
(384 floats a turn: 1,000 turns are 1.5 MB).

A turn is found by what the user said in it, the text a later message is compared with.
That is also the text the agent embedded as its query when the turn was new, so with a
symmetric embedder (``known``) a turn costs no embedding of its own: an agent's turn embeds
once, whether it recalls, indexes or both. How the candidates are ranked is one function,
``rank_turns``.
"""

from __future__ import annotations

import asyncio
import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..embeddings import Embedder
from .turn_vectors import SavedVectors, as_saved, text_digest

if TYPE_CHECKING:
    from .short_term import SessionLogs

__all__ = ["Candidates", "TurnIndex", "rank_turns"]

Message = dict[str, Any]
#: Turns embedded per embedder call when a long log is indexed.
BATCH = 64
#: Characters of a turn that are embedded (MiniLM reads 256 tokens at most anyway).
TEXT_LIMIT = 1200

#: A vector already computed for a text (the agent's recent queries), or None.
Known = Callable[[str], "list[float] | None"]


@dataclass
class _Indexed:
    starts: list[int] = field(default_factory=list)
    turns: list[list[Message]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # what each turn is found by
    #: One row per turn (float32), with room to grow: rows beyond ``len(starts)`` are unused.
    vectors: Any = None
    norms: Any = None
    upto: int = 0

    def add(
        self, starts: list[int], turns: list[list[Message]], texts: list[str], vectors: Any
    ) -> None:
        """Append turns; the matrix doubles when full, so an append is amortized constant
        and a search never converts the vectors again."""
        import numpy as np

        block = np.asarray(vectors, dtype=np.float32)
        held = len(self.starts)
        need = held + len(block)
        if self.vectors is None or need > len(self.vectors):
            capacity = max(need, 64, 2 * (0 if self.vectors is None else len(self.vectors)))
            grown = np.empty((capacity, block.shape[1]), dtype=np.float32)
            norms = np.empty(capacity, dtype=np.float32)
            if held:
                grown[:held] = self.vectors[:held]
                norms[:held] = self.norms[:held]
            self.vectors, self.norms = grown, norms  # a search holding the old ones is unharmed
        self.vectors[held:need] = block
        self.norms[held:need] = np.sqrt(np.einsum("ij,ij->i", block, block))
        self.starts += starts
        self.turns += turns
        self.texts += texts


class TurnIndex:
    """Turns of a session's logs, embedded once each, their vectors saved beside the log
    (unless ``save`` is false: then every process embeds them again)."""

    def __init__(
        self,
        logs: SessionLogs,
        embedder: Embedder,
        known: Known | None = None,
        save: bool = True,
    ) -> None:
        self.logs = logs
        self.embedder = embedder
        self.known = known
        self.save = save
        self._lock = threading.Lock()
        self._logs: dict[str, _Indexed] = {}
        self._saved: dict[str, SavedVectors] = {}
        self._indexing: dict[tuple[int, str], asyncio.Lock] = {}

    async def index(self, log: str, before: int) -> int:
        """Index the whole turns of ``log`` before message ``before``; how many are indexed.

        One indexing of a log at a time: a recall arriving while the agent's background
        indexing embeds a batch waits for it and finds the turns done, instead of embedding
        the same turns again beside it (and the batch after it a third time).
        """
        key = (id(asyncio.get_running_loop()), log)
        with self._lock:
            lock = self._indexing.setdefault(key, asyncio.Lock())
        async with lock:
            return await self._index_now(log, before)

    async def _index_now(self, log: str, before: int) -> int:
        indexed = self._logs.setdefault(log, _Indexed())
        if indexed.starts:  # the last indexed turn, read again: a rewritten log (cut, then
            # said again) differs there, if not in what the user said then in the answer
            check = await self.logs.read_messages(log, indexed.starts[-1], indexed.upto)
            if check != indexed.turns[-1]:  # cleared or rewritten since: start again
                indexed = self._logs[log] = _Indexed()
        if before <= indexed.upto:
            return len(indexed.starts)
        messages = await self.logs.read_messages(log, indexed.upto, before)
        turns = _whole_turns(messages, indexed.upto)
        if not turns:
            return len(indexed.starts)
        starts = [start for start, _ in turns]
        texts = [_turn_text(turn) for _, turn in turns]
        vectors = await self._vectors(log, starts, texts)
        with self._lock:
            if self._logs.get(log) is indexed and indexed.upto == turns[0][0]:
                indexed.add(starts, [turn for _, turn in turns], texts, vectors)
                end = turns[-1][0] + len(turns[-1][1])
                indexed.upto = end
        return len(indexed.starts)

    async def _vectors(self, log: str, starts: list[int], texts: list[str]) -> Any:
        """The turns' vectors, one row each: saved ones (this process's or another's), then
        the agent's recent queries (``known``), then embedded in batches. Each batch is saved
        as it is made, so that work cut short (a timeout, a crash) is not done again."""
        import numpy as np

        from ..._internal.runtime import offload

        rows: list[Any] = [None] * len(texts)
        digests = [text_digest(text) for text in texts]
        saved = self._saved.get(log) if self.save else None
        if self.save and saved is None:
            saved = self._saved.setdefault(log, SavedVectors(self.logs, log, self.embedder.name))
        if saved is not None:
            await saved.take_in()
            rows = [saved.get(start, d) for start, d in zip(starts, digests, strict=True)]

        async def keep(chosen: list[int], vectors: Any) -> None:
            block = as_saved(vectors)
            if saved is not None:
                await saved.save([starts[i] for i in chosen], [digests[i] for i in chosen], block)
            for i, row in zip(chosen, block, strict=True):
                rows[i] = row

        if self.known is not None:
            known = {i: self.known(texts[i]) for i, row in enumerate(rows) if row is None}
            found = [i for i, vector in known.items() if vector is not None]
            if found:
                await keep(found, [known[i] for i in found])
        missing = [i for i, row in enumerate(rows) if row is None]
        for first in range(0, len(missing), BATCH):
            batch = missing[first : first + BATCH]
            await keep(batch, await offload(self.embedder.embed, [texts[i] for i in batch]))
        matrix = np.empty((len(rows), len(rows[0])), dtype=np.float32)
        for i, row in enumerate(rows):  # np.stack checks each row's shape: 10x slower
            matrix[i] = row
        return matrix

    async def search(
        self,
        log: str,
        vector: list[float],
        before: int,
        limit: int,
        min_score: float,
        *,
        query: str = "",
    ) -> list[tuple[int, list[Message]]]:
        """The ``limit`` turns before ``before`` closest to the query (its text ``query`` and
        its ``vector``), oldest first, as ``(start index, messages)``."""
        await self.index(log, before)
        indexed = self._logs.get(log)
        if indexed is None or not indexed.starts or limit <= 0:
            return []
        with self._lock:  # rows once written never change; a growth makes new arrays
            count = bisect.bisect_left(indexed.starts, before)
            candidates = Candidates(
                indexed.texts[:count], indexed.vectors[:count], indexed.norms[:count]
            )
            starts, turns = indexed.starts, indexed.turns
        if not count:
            return []
        chosen = rank_turns(candidates, query, vector, limit, min_score)
        return [(starts[i], turns[i]) for i in chosen]


@dataclass(frozen=True)
class Candidates:
    """The turns one recall ranks, oldest first: the text each is found by, its vector (a
    float32 row) and that vector's norm."""

    texts: Sequence[str]
    vectors: Any
    norms: Any


def rank_turns(
    candidates: Candidates, query: str, vector: list[float], limit: int, min_score: float
) -> list[int]:
    """The one ranking of older turns: the positions in ``candidates`` of the ``limit`` turns
    closest to the query (its text and its vector), oldest first. Cosine similarity, ties
    broken newest first; a turn under ``min_score`` is not related enough to be recalled."""
    import numpy as np  # installed with the memory extra (onnxruntime needs it)

    count = len(candidates.texts)
    if not count or limit <= 0:
        return []
    target = np.asarray(vector, dtype=np.float32)
    scale = max(float(np.linalg.norm(target)), 1e-12)
    # einsum, not ``@``: a matrix-vector product in BLAS wakes its threads, which on a busy
    # machine cost tens of ms at 10,000 turns; this single loop costs a fraction of one
    dots = np.einsum("ij,j->i", candidates.vectors, target)
    scores = dots / np.maximum(candidates.norms * scale, 1e-12)
    if count > limit:  # the best ``limit`` in linear time, then ties broken newest first
        floor = np.partition(scores, count - limit)[count - limit]
        chosen = np.flatnonzero(scores >= floor)
    else:
        chosen = np.arange(count)
    ranked = chosen[np.lexsort((-chosen, -scores[chosen]))][:limit]
    return sorted(int(i) for i in ranked if scores[i] >= min_score)


def _whole_turns(messages: list[Message], offset: int) -> list[tuple[int, list[Message]]]:
    """The turns in ``messages`` (each from a user message to the next)."""
    turns: list[tuple[int, list[Message]]] = []
    current: list[Message] = []
    start = offset
    for index, message in enumerate(messages):
        if message.get("role") == "user" and current:
            turns.append((start, current))
            current = []
            start = offset + index
        current.append(message)
    if current:
        turns.append((start, current))
    return turns


def _turn_text(turn: list[Message]) -> str:
    """What is embedded for a turn: what the user said (as said, so that it is the text the
    agent's query was), or, in a turn without words from the user, the answer."""
    for role in ("user", "assistant"):
        for message in turn:
            content = message.get("content")
            if message.get("role") == role and isinstance(content, str) and content.strip():
                return content if len(content) <= TEXT_LIMIT else content[:TEXT_LIMIT]
    return " ".join(str(message.get("content") or "") for message in turn)[:TEXT_LIMIT]
