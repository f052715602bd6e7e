"""Memory and knowledge for one session: what ``AsyncSession.add_memory`` and friends call.

Built on first use, so a session that never uses memory never imports chromadb or loads the
model. Everything that blocks (opening Chroma, embedding with ONNX, Chroma queries and writes,
reading files and URLs) runs through :func:`~praisonsession.execution.offload`: in a worker
thread when an event loop is running, so the loop is never blocked. The embedder and the Chroma
client are shared by every session of the process that uses the same ones.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .embeddings import Embedder, MiniLMEmbedder, coerce_embedder
from .errors import InvalidValueError
from .execution import offload
from .knowledge.chunking import DEFAULT_SIZE
from .knowledge.knowledge_base import KnowledgeAdded, KnowledgeBase
from .memory.context import DEFAULT_BUDGET, build_context
from .memory.long_term import LongTermMemory
from .memory.short_term import SessionLogs, ShortTermMemory
from .memory.turns import TurnIndex
from .recall_options import EMBEDDER_NAMES, default_overlap
from .vectors import chroma_client

if TYPE_CHECKING:
    from .settings import Settings

__all__ = ["Recall", "default_embedder"]

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
    them. Constructing it is blocking work (Chroma, the model): do it off the loop."""

    def __init__(
        self,
        logs: SessionLogs,
        session_id: str,
        user_id: str,
        settings: Settings,
        memory_config: dict[str, Any],
        knowledge_config: dict[str, Any],
    ) -> None:
        choice = memory_config.get("embedder") or knowledge_config.get("embedder")
        if choice is None or isinstance(choice, str):
            self.embedder = default_embedder(choice or settings.embedder)
        else:
            self.embedder = coerce_embedder(choice)
        _load_meanwhile(self.embedder)  # the model loads while chromadb imports and opens
        location = (
            memory_config.get("vector_store_url")
            or knowledge_config.get("vector_store_url")
            or settings.vector_store_url
            or Path(settings.data_dir).expanduser().resolve() / "chroma"
        )
        client = chroma_client(location)
        namespace = settings.vector_namespace
        size = knowledge_config.get("chunk_size", DEFAULT_SIZE)
        self.long = LongTermMemory(client, namespace, self.embedder, user_id, session_id)
        self.short = ShortTermMemory(logs, self.embedder)
        self.turns = TurnIndex(logs, self.embedder)
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
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
        )
        key = settings.resolved_encryption_key()
        if key is not None:  # the texts Chroma keeps are sealed too; vectors stay searchable
            from .sealing import TextSealer, load_key

            sealer = TextSealer(load_key(key))
            self.long.index.sealer = self.knowledge.index.sealer = sealer
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
            self._queries[query] = vector
            while len(self._queries) > 16:
                self._queries.popitem(last=False)
        return vector

    # -- memory ---------------------------------------------------------------------------

    async def add_memory(self, text: str, memory_type: str, metadata: dict[str, Any]) -> str:
        if memory_type == "short":
            return await self.short.add(text, metadata)
        return await offload(self.long.add, text, metadata)

    async def add_memories(
        self, texts: list[str], memory_type: str, metadata: dict[str, Any]
    ) -> list[str]:
        if memory_type == "short":
            return await self.short.add_many(texts, metadata)
        return await offload(self.long.add_many, texts, metadata, self.progress)

    async def search_memory(self, query: str, memory_type: str, limit: int) -> list[dict]:
        vector = await offload(self.embedder.embed_query, query)
        hits: list[dict[str, Any]] = []
        if memory_type in ("short", "all"):
            entries = await self.short.entries()
            hits += await offload(self.short.rank, entries, vector, limit)
        if memory_type in ("long", "all"):
            hits += await offload(self.long.search, vector, limit)
        hits.sort(key=lambda hit: -hit["score"])
        return hits[:limit]

    async def session_memories(self) -> list[dict[str, Any]]:
        """The long-term memories this session added (for a fork or an archive)."""
        return await offload(self.long.session_memories)

    async def restore_memories(self, memories: list[dict[str, Any]]) -> int:
        """Add memories copied from another session as this session's."""
        return await offload(self.long.restore, memories)

    async def clear_memory(self, memory_type: str) -> int:
        removed = 0
        if memory_type in ("short", "all"):
            removed += await self.short.clear()
        if memory_type in ("long", "all"):
            removed += await offload(self.long.clear)
        return removed

    # -- an agent's older turns ------------------------------------------------------------

    async def index_turns(self, log: str, before: int) -> int:
        return await self.turns.index(log, before)

    async def recall_turns(
        self, log: str, query: str, before: int, limit: int
    ) -> list[tuple[int, list[dict[str, Any]]]]:
        vector = await self.query_vector(query)
        return await self.turns.search(log, vector, before, limit, self.context_min_score)

    # -- knowledge ------------------------------------------------------------------------

    async def add_knowledge(self, source: str | Path) -> KnowledgeAdded:
        return await offload(self.knowledge.add, source)

    async def search_knowledge(self, query: str, limit: int) -> list[dict[str, Any]]:
        vector = await offload(self.embedder.embed_query, query)
        return await offload(self.knowledge.search, vector, limit)

    # -- context --------------------------------------------------------------------------

    async def get_context(self, query: str, max_items: int) -> str:
        vector = await self.query_vector(query)
        entries = await self.short.entries()
        return await offload(self._context, entries, vector, max_items)

    def _context(self, entries: list[dict[str, Any]], vector: list[float], max_items: int) -> str:
        sections = [
            ("Recent notes from this session", self.short.rank(entries, vector, max_items)),
            ("Long-term memory", self.long.search(vector, max_items)),
            ("Knowledge", self.knowledge.search(vector, max_items)),
        ]
        relevant = [
            (title, [hit for hit in hits if hit["score"] >= self.context_min_score])
            for title, hits in sections
        ]
        return build_context(relevant, self.context_budget)
