"""``TurnIndex``: an agent's older turns, searchable by meaning, for recall into the request.

The index is derived from the conversation log, never the other way round: it is built from
the log the first time it is needed, in batches (one embedder call per batch of turns), then
grows by the turns that left the agent's window. So a fork, a restore or an imported archive
needs nothing copied: the new session's index rebuilds from its own log. Vectors live in
process memory (384 floats a turn: 1,000 turns are 1.5 MB).

A turn is found by what the user said in it, the text a later message is compared with.
That is also the text the agent embedded as its query when the turn was new, so with a
symmetric embedder (``known``) a turn costs no embedding of its own: an agent's turn embeds
once, whether it recalls, indexes or both.
"""

from __future__ import annotations

import asyncio
import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..embeddings import Embedder

if TYPE_CHECKING:
    from .short_term import SessionLogs

__all__ = ["TurnIndex"]

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
    #: One row per turn (float32), with room to grow: rows beyond ``len(starts)`` are unused.
    vectors: Any = None
    norms: Any = None
    upto: int = 0
    last: Message | None = None  # the last indexed message, to notice a rewritten log

    def add(self, starts: list[int], turns: list[list[Message]], vectors: Any) -> None:
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
        self.norms[held:need] = np.linalg.norm(block, axis=1)
        self.starts += starts
        self.turns += turns


class TurnIndex:
    """Turns of a session's logs, embedded once each."""

    def __init__(self, logs: SessionLogs, embedder: Embedder, known: Known | None = None) -> None:
        self.logs = logs
        self.embedder = embedder
        self.known = known
        self._lock = threading.Lock()
        self._logs: dict[str, _Indexed] = {}
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
        from ..._internal.runtime import offload

        indexed = self._logs.setdefault(log, _Indexed())
        if indexed.upto and indexed.last is not None:
            check = await self.logs.read_messages(log, indexed.upto - 1, indexed.upto)
            if check != [indexed.last]:  # cleared or rewritten since: start again
                indexed = self._logs[log] = _Indexed()
        if before <= indexed.upto:
            return len(indexed.starts)
        messages = await self.logs.read_messages(log, indexed.upto, before)
        turns = _whole_turns(messages, indexed.upto)
        if not turns:
            return len(indexed.starts)
        texts = [_turn_text(turn) for _, turn in turns]
        vectors: list[Any] = [None] * len(texts)
        if self.known is not None:
            vectors = [self.known(text) for text in texts]
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        for first in range(0, len(missing), BATCH):
            batch = missing[first : first + BATCH]
            found = await offload(self.embedder.embed, [texts[i] for i in batch])
            for i, vector in zip(batch, found, strict=True):
                vectors[i] = vector
        with self._lock:
            if self._logs.get(log) is indexed and indexed.upto == turns[0][0]:
                indexed.add([start for start, _ in turns], [turn for _, turn in turns], vectors)
                end = turns[-1][0] + len(turns[-1][1])
                indexed.upto = end
                indexed.last = turns[-1][1][-1]
        return len(indexed.starts)

    async def search(
        self, log: str, vector: list[float], before: int, limit: int, min_score: float
    ) -> list[tuple[int, list[Message]]]:
        """The ``limit`` turns before ``before`` closest to the query ``vector``, oldest first,
        as ``(start index, messages)``."""
        await self.index(log, before)
        indexed = self._logs.get(log)
        if indexed is None or not indexed.starts or limit <= 0:
            return []
        with self._lock:  # rows once written never change; a growth makes new arrays
            count = bisect.bisect_left(indexed.starts, before)
            vectors, norms = indexed.vectors, indexed.norms
            starts, turns = indexed.starts, indexed.turns
        if not count:
            return []
        import numpy as np  # installed with the memory extra (onnxruntime needs it)

        target = np.asarray(vector, dtype=np.float32)
        scale = max(float(np.linalg.norm(target)), 1e-12)
        scores = (vectors[:count] @ target) / np.maximum(norms[:count] * scale, 1e-12)
        if count > limit:  # the best ``limit`` in linear time, then ties broken newest first
            floor = np.partition(scores, count - limit)[count - limit]
            candidates = np.flatnonzero(scores >= floor)
        else:
            candidates = np.arange(count)
        ranked = candidates[np.lexsort((-candidates, -scores[candidates]))][:limit]
        chosen = sorted(int(i) for i in ranked if scores[i] >= min_score)
        return [(starts[i], turns[i]) for i in chosen]


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
