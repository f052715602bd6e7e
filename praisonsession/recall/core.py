"""Memory and knowledge for one session: what ``AsyncSession.add_memory`` and friends call.

Built on first use, so a session that never uses memory never imports chromadb or loads the
model. Everything that blocks (opening Chroma, embedding with ONNX, Chroma queries and writes,
reading files and URLs) runs through :func:`~praisonsession._internal.runtime.offload`: in a worker
thread when an event loop is running, so the loop is never blocked. The embedder and the Chroma
client are shared by every session of the process that uses the same ones.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._internal.checks import MemoryQuery, MemoryType
from .._internal.display import SearchHits
from .._internal.runtime import offload
from ..errors import InvalidValueError
from .embeddings import Embedder, MiniLMEmbedder, coerce_embedder
from .knowledge.chunking import DEFAULT_SIZE
from .knowledge.knowledge_base import KnowledgeAdded, KnowledgeBase
from .memory.context import DEFAULT_BUDGET, build_context
from .memory.lifecycle import MemoryId
from .memory.long_term import LongTermMemory, as_result, page_of
from .memory.paraphrase import DEFAULT_THRESHOLD
from .memory.recency import prefer_newer
from .memory.short_term import SessionLogs, ShortTermMemory
from .memory.turns import TurnIndex
from .options import EMBEDDER_NAMES, default_overlap
from .vectors import ScopedIndex, Vault, Where, chroma_client
from .vectors.fusion import rerank
from .vectors.pgvector import followed_store
from .vectors.terms import Terms

if TYPE_CHECKING:
    from .._internal.sealing import TextSealer
    from ..settings import Settings

__all__ = ["EMBEDDED", "Recall", "default_embedder", "text_sealer", "vector_location"]

T = TypeVar("T")

_ALL = 10**9  # no limit
_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()


def default_embedder(name: str) -> Embedder:
    """The process-wide embedder for a settings name (the model loads once per process)."""
    with _embedders_lock:
        if name not in _embedders:
            if name not in EMBEDDER_NAMES:
                raise InvalidValueError(
                    f"Unknown embedder {name!r} in settings; use 'minilm', or pass an "
                    "Embedder or a chromadb embedding function as memory_config['embedder']."
                )
            _embedders[name] = MiniLMEmbedder()
        return _embedders[name]


#: The ``vector_store_url`` that chooses embedded Chroma even when the store is PostgreSQL.
EMBEDDED = "embedded"


def vector_location(
    settings: Settings,
    memory_config: dict[str, Any] | None = None,
    knowledge_config: dict[str, Any] | None = None,
    backend: Any = None,
) -> str | Path:
    """Where memory and knowledge keep their vectors: a ``vector_store_url`` of the configs,
    else the settings' (``PRAISONSESSION_VECTOR_STORE_URL``), else the database of the
    session store when it is PostgreSQL (``backend``: memory follows it, so one server
    holds both), else ``<data_dir>/chroma`` (also what ``"embedded"`` chooses)."""
    chosen = (
        (memory_config or {}).get("vector_store_url")
        or (knowledge_config or {}).get("vector_store_url")
        or settings.vector_store_url
    )
    if chosen is None:
        chosen = followed_store(backend)
    if chosen and chosen != EMBEDDED:
        return str(chosen)
    return Path(settings.data_dir).expanduser().resolve() / "chroma"


def vector_location_in_use(settings: Settings, backend: Any = None) -> str | Path | None:
    """``vector_location`` where there may be vectors to erase or rotate: a server's URL, or
    the embedded directory once it exists; None when memory and knowledge were never used."""
    found = vector_location(settings, backend=backend)
    return found if isinstance(found, str) or found.is_dir() else None


def text_sealer(settings: Settings) -> TextSealer | None:
    """The ``TextSealer`` of the settings' ``encryption_key`` (None without one): the texts
    Chroma keeps are sealed with it."""
    key = settings.resolved_encryption_key()
    if key is None:
        return None
    from .._internal.sealing import TextSealer, load_key

    return TextSealer(load_key(key))


#: Collections last found empty: (client, collection name) -> when. A turn of an agent whose
#: user has no memories and no knowledge skips the embedding and the searches; an add in this
#: process forgets the entry at once, one in another process is seen within EMPTY_TRUST s.
_found_empty: dict[tuple[int, str], float] = {}
EMPTY_TRUST = 1.0
#: Entries kept before the stale ones are dropped (two per user: memory and knowledge).
_EMPTY_MEMORY = 4096


# Embedders a forked child inherited: kept, never used and never freed there, because freeing
# an ONNX session or a tokenizer whose threads stayed in the parent can wait forever.
_inherited: list[Embedder] = []


def _forget_embedders_after_fork() -> None:
    """An ONNX session does not survive fork (its thread pool stays in the parent): the child
    loads its own model on first use."""
    global _embedders, _embedders_lock
    _inherited.extend(_embedders.values())
    _embedders = {}
    _embedders_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_embedders_after_fork)


def _load_meanwhile(embedder: Embedder) -> None:
    """Have the embedder load its model in the background, if it can: the model loads in native
    code while chromadb imports, and the first search stops paying for both in turn."""
    load_in_background = getattr(embedder, "load_in_background", None)
    if load_in_background is not None:
        load_in_background()


class Recall:
    """One session's memory (short- and long-term) and knowledge, and the context built from
    them. Constructing it is blocking work (Chroma, the model): do it off the loop.

    ``preload`` starts loading the model in the background at once, for a first caller that
    embeds; otherwise it loads on the first embedding (never, while nothing is stored)."""

    def __init__(
        self,
        logs: SessionLogs,
        session_id: str,
        user_id: str,
        settings: Settings,
        memory_config: dict[str, Any],
        knowledge_config: dict[str, Any],
        vault_key: bytes | None = None,
        preload: bool = True,
        backend: Any = None,
    ) -> None:
        choice = memory_config.get("embedder") or knowledge_config.get("embedder")
        if choice is None or isinstance(choice, str):
            self.embedder = default_embedder(choice or settings.embedder)
        else:
            self.embedder = coerce_embedder(choice)
        if preload:  # the model loads while chromadb imports and opens
            _load_meanwhile(self.embedder)
        location = vector_location(settings, memory_config, knowledge_config, backend)
        client = chroma_client(location, settings.data_dir)
        self._client_id = id(client)
        namespace = settings.vector_namespace
        size = knowledge_config.get("chunk_size", DEFAULT_SIZE)
        threshold = float(memory_config.get("dedupe_threshold", DEFAULT_THRESHOLD))
        # the texts Chroma keeps are sealed with the encryption key (vectors stay searchable),
        # and ids are keyed digests, revealing no text either
        sealer = text_sealer(settings)
        # on a Chroma server, the user's data goes under their own key: crypto-erasure
        vault = None if vault_key is None else Vault(vault_key)
        self.long = LongTermMemory(
            client,
            namespace,
            self.embedder,
            user_id,
            session_id,
            threshold,
            sealer=sealer,
            digest_key=None if sealer is None else sealer.digest_key("memory"),
            vault=vault,
        )
        self.short = ShortTermMemory(logs, self.embedder, session_id, threshold)
        self.prefer_recent = bool(memory_config.get("prefer_recent", True))
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        # a turn is indexed by what the user said, which the agent embedded as its query then:
        # the same vector, when the embedder embeds queries and documents alike
        symmetric = isinstance(self.embedder, MiniLMEmbedder)
        self.turns = TurnIndex(
            logs,
            self.embedder,
            self._queries.get if symmetric else None,
            # the turns' saved terms: with a key, keyed hashes of the words (no word)
            terms=Terms(None if sealer is None else sealer.digest_key("turns")),
        )
        self.knowledge = KnowledgeBase(
            client,
            namespace,
            self.embedder,
            user_id,
            session_id,
            scope=knowledge_config.get("scope", "user"),
            chunk_size=size,
            chunk_overlap=knowledge_config.get("chunk_overlap", default_overlap(size)),
            timeout=settings.timeout,
            progress=bool(knowledge_config.get("progress", True)),
            sealer=sealer,
            digest_key=None if sealer is None else sealer.digest_key("knowledge"),
            vault=vault,
        )
        self.progress = bool(memory_config.get("progress", True))
        self.context_budget = int(memory_config.get("context_chars", DEFAULT_BUDGET))
        # Below this cosine similarity a hit is noise, not context (MiniLM: unrelated ~0.1).
        self.context_min_score = float(memory_config.get("context_min_score", 0.25))

    async def query_vector(self, query: str) -> list[float]:
        """``query`` embedded, from a small cache: an agent's turn asks for the context and
        for related older turns with the same message, and embeds it once."""
        vector = self._queries.get(query)
        if vector is None:
            vector = await offload(self.embedder.embed_query, query)
            self._remember(query, vector)
        return vector

    def _remember(self, query: str, vector: list[float]) -> None:
        self._queries[query] = vector
        while len(self._queries) > 16:
            self._queries.popitem(last=False)

    # -- memory ---------------------------------------------------------------------------

    async def add_memory(
        self,
        text: str,
        memory_type: MemoryType,
        metadata: dict[str, Any],
        dedupe: bool = True,
        said: list[float] | None = None,
    ) -> MemoryId:
        return (await self.add_memories([text], memory_type, metadata, dedupe, said, False))[0]

    async def add_memories(
        self,
        texts: list[str],
        memory_type: MemoryType,
        metadata: dict[str, Any],
        dedupe: bool = True,
        said: list[float] | None = None,
        progress: bool | None = None,
    ) -> list[MemoryId]:
        """Remember ``texts``; ``said`` holds when each was said (None: now)."""
        if memory_type == "short":
            return await self.short.add_many(texts, metadata, dedupe, said)
        shown = self.progress if progress is None else progress
        return await self._filling(
            self.long.index, self.long.add_many, texts, metadata, shown, dedupe, said
        )

    async def search_memory(
        self,
        query: str,
        memory_type: MemoryQuery,
        limit: int,
        where: Where | None = None,
        prefer_recent: bool | None = None,
    ) -> list[dict[str, Any]]:
        recent = self.prefer_recent if prefer_recent is None else prefer_recent
        entries = await self.short.entries() if memory_type in ("short", "all") else []
        known = self._queries.get(query)

        def embedded_and_searched() -> tuple[list[float], list[dict[str, Any]]]:
            # one trip off the loop for both: each hop to a worker thread costs a wake-up
            vector = known if known is not None else self.embedder.embed_query(query)
            return vector, self._search(query, vector, entries, memory_type, limit, where, recent)

        vector, hits = await offload(embedded_and_searched)
        self._remember(query, vector)
        return SearchHits(hits)

    def _search(
        self,
        query: str,
        vector: list[float],
        entries: list[dict[str, Any]],
        memory_type: MemoryQuery,
        limit: int,
        where: Where | None,
        recent: bool,
    ) -> list[dict[str, Any]]:
        """Blocking: the memories of ``memory_type`` closest to ``vector``. For ``"all"``
        the short notes and long memories are ranked together, by score and then by the same
        recency rule each kind follows on its own (newer first among close matches)."""
        if memory_type == "short":
            return self._notes(query, entries, vector, limit, where, recent)
        if memory_type == "long":
            return self.long.search(query, vector, limit, where, recent)
        results, vectors = self.short.candidates(entries, vector, _ALL, where)
        hits = self.long.candidates(query, vector, limit, where, recent)
        results += [as_result(hit) for hit in hits]
        vectors += [[] if hit.vector is None else hit.vector for hit in hits]
        return _hybrid(query, results, vectors, limit, recent)

    def _notes(
        self,
        query: str,
        entries: list[dict[str, Any]],
        vector: list[float],
        limit: int,
        where: Where | None,
        recent: bool,
    ) -> list[dict[str, Any]]:
        """This session's notes, ranked by meaning and words (all of them are candidates: a
        session holds few)."""
        results, vectors = self.short.candidates(entries, vector, _ALL, where)
        return _hybrid(query, results, vectors, limit, recent)

    async def list_memories(
        self, memory_type: str, where: Where | None, limit: int, after: str | None
    ) -> list[dict[str, Any]]:
        if memory_type == "short":
            return await self.short.list(where, limit, after)
        if memory_type == "long":
            return await offload(self.long.list, where, limit, after)
        everything = await self.short.list(where, _ALL) + await offload(self.long.list, where, _ALL)
        return page_of(everything, limit, after)  # short notes first, then long memories

    async def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        found = await self.short.get(memory_id)
        return found if found is not None else await offload(self.long.get, memory_id)

    async def update_memory(
        self, memory_id: str, text: str | None, metadata: dict[str, Any]
    ) -> dict[str, Any] | None:
        found = await self.short.update(memory_id, text, metadata)
        if found is not None:
            return found
        return await offload(self.long.update, memory_id, text, metadata)

    async def delete_memory(self, memory_id: str) -> bool:
        return await self.short.delete(memory_id) or await offload(self.long.delete, memory_id)

    async def memory_history(self, memory_id: str) -> list[dict[str, Any]]:
        found = await self.short.history(memory_id)
        return found or await offload(self.long.history, memory_id)

    async def session_memories(self) -> list[dict[str, Any]]:
        """The long-term memories this session added (for a fork or an archive)."""
        return await offload(self.long.session_memories)

    async def restore_memories(
        self, memories: list[dict[str, Any]], attempt: str | None = None
    ) -> int:
        """Add memories copied from another session as this session's; staged for the fork
        attempt ``attempt`` when given (see ``memory.long_term``)."""
        return await self._filling(self.long.index, self.long.restore, memories, attempt)

    async def adopt_memories(self, attempt: str) -> int:
        """Make the memories staged by the fork attempt ``attempt`` this session's own."""
        return await self._filling(self.long.index, self.long.adopt, attempt)

    async def unstage_memories(self, attempt: str) -> int:
        """Remove the memories staged by the fork attempt ``attempt``: no fork was made."""
        return await offload(self.long.unstage, attempt)

    async def clear_memory(self, memory_type: MemoryQuery) -> int:
        """Long-term first: a collection gone (``erase_user``) stops the call before the
        short-term notes' log is written, which would make the erased session again."""
        removed = 0
        if memory_type in ("long", "all"):
            removed += await offload(self.long.clear)
        if memory_type in ("short", "all"):
            removed += await self.short.clear()
        return removed

    # -- an agent's older turns ------------------------------------------------------------

    async def index_turns(self, log: str, before: int) -> int:
        return await self.turns.index(log, before)

    async def recall_turns(
        self, log: str, query: str, before: int, limit: int
    ) -> list[tuple[int, list[dict[str, Any]]]]:
        vector = await self.query_vector(query)
        return await self.turns.search(
            log, vector, before, limit, self.context_min_score, query=query
        )

    # -- knowledge ------------------------------------------------------------------------

    async def add_knowledge(self, source: str | Path) -> KnowledgeAdded:
        return await self._filling(self.knowledge.index, self.knowledge.add, source)

    async def search_knowledge(
        self, query: str, limit: int, where: Where | None = None
    ) -> list[dict[str, Any]]:
        known = self._queries.get(query)

        def embedded_and_searched() -> tuple[list[float], list[dict[str, Any]]]:
            vector = known if known is not None else self.embedder.embed_query(query)
            return vector, self.knowledge.search(query, vector, limit, where)

        vector, hits = await offload(embedded_and_searched)
        self._remember(query, vector)
        return SearchHits(hits)

    # -- context --------------------------------------------------------------------------

    async def get_context(self, query: str, max_items: int) -> str:
        entries = await self.short.entries()
        if not entries and self._known_empty():
            return ""  # nothing to find: no embedding, no search, no thread
        known = self._queries.get(query)
        context, vector = await offload(self._search_context, entries, query, known, max_items)
        if known is None and vector is not None:
            self._remember(query, vector)
        return context

    def _search_context(
        self,
        entries: list[dict[str, Any]],
        query: str,
        vector: list[float] | None,
        max_items: int,
    ) -> tuple[str, list[float] | None]:
        """Embed (unless known) and search everything, in one trip off the loop (blocking)."""
        if not entries and self._empty(self.long.index) and self._empty(self.knowledge.index):
            return "", vector
        if vector is None:
            vector = self.embedder.embed_query(query)
        return self._context(entries, query, vector, max_items), vector

    # -- "anything to find?" --------------------------------------------------------------

    def _known_empty(self) -> bool:
        """Both collections were found empty within EMPTY_TRUST s (no I/O: for the loop)."""
        now = time.monotonic()
        for index in (self.long.index, self.knowledge.index):
            seen = _found_empty.get((self._client_id, index.name))
            if seen is None or now - seen > EMPTY_TRUST:
                return False
        return True

    def _empty(self, index: ScopedIndex) -> bool:
        """Whether ``index`` holds nothing (blocking: it may count the collection)."""
        key = (self._client_id, index.name)
        seen = _found_empty.get(key)
        if seen is not None and time.monotonic() - seen <= EMPTY_TRUST:
            return True
        if index.empty():
            now = time.monotonic()
            if len(_found_empty) >= _EMPTY_MEMORY:  # users come and go: forget the stale ones
                for stale in [k for k, seen in _found_empty.items() if now - seen > EMPTY_TRUST]:
                    _found_empty.pop(stale, None)
            _found_empty[key] = now
            return True
        _found_empty.pop(key, None)
        return False

    async def _filling(self, index: ScopedIndex, add: Callable[..., T], *args: Any) -> T:
        """Run ``add`` off the loop, forgetting that ``index`` was empty before and after it
        (a search running meanwhile may have counted it empty)."""
        _found_empty.pop((self._client_id, index.name), None)
        try:
            return await offload(add, *args)
        finally:
            _found_empty.pop((self._client_id, index.name), None)

    def _context(
        self, entries: list[dict[str, Any]], query: str, vector: list[float], max_items: int
    ) -> str:
        sections = [
            (
                "Recent notes from this session",
                self._notes(query, entries, vector, max_items, None, self.prefer_recent),
            ),
            (
                "Long-term memory",
                self.long.search(query, vector, max_items, None, self.prefer_recent),
            ),
            ("Knowledge", self.knowledge.search(query, vector, max_items)),
        ]
        relevant = [
            (title, [hit for hit in hits if hit["score"] >= self.context_min_score])
            for title, hits in sections
        ]
        return build_context(relevant, self.context_budget)


def _hybrid(
    query: str,
    results: list[dict[str, Any]],
    vectors: list[Any],
    limit: int,
    recent: bool,
) -> list[dict[str, Any]]:
    """Results of a search held in memory (notes, or notes and memories together), ranked by
    meaning and words (``vectors.fusion.rerank``), then newer first when ``recent``."""
    order = rerank(query, [str(r["text"]) for r in results], [r["score"] for r in results])
    wanted = limit * 3 if recent else limit
    results = [results[i] for i in order[:wanted]]
    if recent:
        results = prefer_newer(results, [vectors[i] for i in order[:wanted]], limit)
    return results[:limit]
