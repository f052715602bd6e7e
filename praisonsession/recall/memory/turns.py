"""``TurnIndex``: an agent's older turns, searchable by meaning and by words, for recall into
the request.

The index is derived from the conversation log, never the other way round: it is built from
the log the first time it is needed, then grows by the turns that left the agent's window. Its
vectors and terms are saved beside the log (``turn_vectors.py``), so a new process, a fork, a
restore or an imported archive embeds and splits into terms only the turns never saved: an
agent resumed with 10,000 turns embeds its new message and reads the rest. Vectors and terms
live in process memory (384 floats a turn: 1,000 turns are 1.5 MB).

A turn is found by what the user said in it, the text a later message is compared with.
That is also the text the agent embedded as its query when the turn was new, so with a
symmetric embedder (``known``) a turn costs no embedding of its own: an agent's turn embeds
once, whether it recalls, indexes or both. How the candidates are ranked is one function,
``rank_turns``: the hybrid ranking of ``search_memory`` (``vectors/fusion.py``).
"""

from __future__ import annotations

import asyncio
import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..embeddings import Embedder
from ..vectors.fusion import DEPTH, fuse
from ..vectors.postings import Postings
from ..vectors.terms import Terms
from .turn_vectors import SavedVectors, as_saved, text_digest

if TYPE_CHECKING:
    from .short_term import SessionLogs

__all__ = ["Candidates", "TurnIndex", "rank_turns"]

Message = dict[str, Any]
#: Turns embedded per embedder call when a long log is indexed.
BATCH = 64
#: Turns per record when saved vectors get their terms (saved before turns kept terms).
RESAVE = 256
#: Characters of a turn that are embedded (MiniLM reads 256 tokens at most anyway).
TEXT_LIMIT = 1200
#: A turn under ``min_score`` by meaning is still recalled when it holds this share of the
#: question's words (BM25 over the question's whole weight): an order number said in passing
#: is related, whatever the sentence around it means.
WORDS_ENOUGH = 0.5

#: A vector already computed for a text (the agent's recent queries), or None.
Known = Callable[[str], "list[float] | None"]


@dataclass
class _Indexed:
    starts: list[int] = field(default_factory=list)
    turns: list[list[Message]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # what each turn is found by
    postings: Postings = field(default_factory=Postings)  # and their terms
    #: One row per turn (float32), with room to grow: rows beyond ``len(starts)`` are unused.
    vectors: Any = None
    norms: Any = None
    upto: int = 0

    def add(
        self,
        starts: list[int],
        turns: list[list[Message]],
        texts: list[str],
        vectors: Any,
        terms: list[list[str]],
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
        for found in terms:
            self.postings.add(found)
        self.starts += starts
        self.turns += turns
        self.texts += texts


class TurnIndex:
    """Turns of a session's logs, embedded and split into terms once each, both saved beside
    the log (unless ``save`` is false: then every process makes them again). ``terms`` makes
    the terms (``Terms(key)`` with the session's encryption key: keyed hashes, no word)."""

    def __init__(
        self,
        logs: SessionLogs,
        embedder: Embedder,
        known: Known | None = None,
        save: bool = True,
        terms: Terms | None = None,
    ) -> None:
        self.logs = logs
        self.embedder = embedder
        self.known = known
        self.save = save
        self.terms = terms if terms is not None else Terms()
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
        vectors, terms = await self._made(log, starts, texts)
        with self._lock:
            if self._logs.get(log) is indexed and indexed.upto == turns[0][0]:
                indexed.add(starts, [turn for _, turn in turns], texts, vectors, terms)
                end = turns[-1][0] + len(turns[-1][1])
                indexed.upto = end
        return len(indexed.starts)

    async def _made(
        self, log: str, starts: list[int], texts: list[str]
    ) -> tuple[Any, list[list[str]]]:
        """The turns' vectors, one row each, and terms: saved ones (this process's or
        another's), then the agent's recent queries (``known``), then embedded in batches.
        Each batch is saved as it is made, so that work cut short (a timeout, a crash) is not
        done again. A turn whose vector was saved before terms were gets its terms made."""
        import numpy as np

        from ..._internal.runtime import offload

        rows: list[Any] = [None] * len(texts)
        terms: list[list[str] | None] = [None] * len(texts)
        digests = [text_digest(text) for text in texts]
        saved = self._saved.get(log) if self.save else None
        if self.save and saved is None:
            saved = self._saved.setdefault(
                log, SavedVectors(self.logs, log, self.embedder.name, self.terms.tag)
            )
        if saved is not None:
            await saved.take_in()
            pairs = list(zip(starts, digests, strict=True))
            rows = [saved.get(start, d) for start, d in pairs]
            terms = [
                saved.terms(start, d) if row is not None else None
                for (start, d), row in zip(pairs, rows, strict=True)
            ]
        unsplit = [i for i, held in enumerate(terms) if held is None]
        if unsplit:  # 10,000 turns split in about a second: off the loop when many
            split = [texts[i] for i in unsplit]
            made = await offload(self._split, split) if len(split) > BATCH else self._split(split)
            for i, split_terms in zip(unsplit, made, strict=True):
                terms[i] = split_terms

        async def keep(chosen: list[int], vectors: Any) -> None:
            block = as_saved(vectors)
            if saved is not None:
                await saved.save(
                    [starts[i] for i in chosen],
                    [digests[i] for i in chosen],
                    block,
                    [terms[i] or [] for i in chosen],
                )
            for i, row in zip(chosen, block, strict=True):
                rows[i] = row

        if saved is not None:  # vectors saved before their terms (or under another key):
            # saved again with the terms, once, so that the next process splits none of them
            resaved = [i for i in unsplit if rows[i] is not None]
            for first in range(0, len(resaved), RESAVE):
                batch = resaved[first : first + RESAVE]
                await keep(batch, [rows[i] for i in batch])
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
        return matrix, [held or [] for held in terms]

    def _split(self, texts: list[str]) -> list[list[str]]:
        return [self.terms.of(text) for text in texts]

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
        """The ``limit`` turns before ``before`` best for the query (its text ``query`` and
        its ``vector``: ``rank_turns``), oldest first, as ``(start index, messages)``."""
        await self.index(log, before)
        indexed = self._logs.get(log)
        if indexed is None or not indexed.starts or limit <= 0:
            return []
        with self._lock:  # rows once written never change; a growth makes new arrays
            count = bisect.bisect_left(indexed.starts, before)
            candidates = Candidates(
                indexed.texts[:count],
                indexed.vectors[:count],
                indexed.norms[:count],
                indexed.postings,
            )
            starts, turns = indexed.starts, indexed.turns
        if not count:
            return []
        chosen = rank_turns(candidates, self.terms.query(query), vector, limit, min_score)
        return [(starts[i], turns[i]) for i in chosen]


@dataclass(frozen=True)
class Candidates:
    """The turns one recall ranks, oldest first: the text each is found by, its vector (a
    float32 row), that vector's norm, and the terms of every turn (``postings``: only its
    first ``len(texts)`` entries are candidates)."""

    texts: Sequence[str]
    vectors: Any
    norms: Any
    postings: Postings


def rank_turns(
    candidates: Candidates,
    terms: Sequence[str],
    vector: list[float],
    limit: int,
    min_score: float,
) -> list[int]:
    """The one ranking of older turns: the positions in ``candidates`` of the ``limit`` best
    turns for the query (its distinct ``terms`` and its ``vector``), oldest first.

    As a memory search ranks (``vectors/fusion.py``): the :data:`DEPTH` closest turns by
    cosine (ties newest first) and the :data:`DEPTH` best by BM25 of the terms, fused. A turn
    is related enough to be recalled when its cosine reaches ``min_score``, or it holds
    :data:`WORDS_ENOUGH` of the question's words."""
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
    depth = max(limit, DEPTH)
    if count > depth:  # the best ``depth`` in linear time, then ties broken newest first
        floor = np.partition(scores, count - depth)[count - depth]
        chosen = np.flatnonzero(scores >= floor)
    else:
        chosen = np.arange(count)
    dense = [int(i) for i in chosen[np.lexsort((-chosen, -scores[chosen]))][:depth]]
    shares = dict(candidates.postings.search(terms, count, depth))
    held = set(dense)
    found = dense + [i for i in shares if i not in held]
    order = fuse([float(scores[i]) for i in found], [shares.get(i, 0.0) for i in found])
    recalled = []
    for at in order:
        i = found[at]
        if scores[i] >= min_score or shares.get(i, 0.0) >= WORDS_ENOUGH:
            recalled.append(i)
            if len(recalled) == limit:
                break
    return sorted(recalled)


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
