"""Memory and knowledge for one session: what ``Session.add_memory`` and friends call.

Built on first use, so ``Session()`` stays fast and never imports chromadb or loads the model
unless memory or knowledge is used. The embedder and the Chroma client are shared by every
session of the process that uses the same ones.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embeddings import Embedder, MiniLMEmbedder, coerce_embedder
from ..errors import InvalidValueError
from ..knowledge.knowledge_base import KnowledgeAdded, KnowledgeBase
from .context import DEFAULT_BUDGET, build_context
from .long_term import LongTermMemory
from .short_term import ShortTermMemory
from .vector_index import chroma_client

if TYPE_CHECKING:
    from ..settings import Settings
    from ..stores.base import SessionBase

MEMORY_TYPES = ("short", "long")

_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()


def default_embedder(name: str) -> Embedder:
    """The process-wide embedder for a settings name (the model loads once per process)."""
    with _embedders_lock:
        if name not in _embedders:
            if name not in ("minilm", MiniLMEmbedder.name):
                raise InvalidValueError(
                    f"Unknown embedder {name!r} in settings; use 'minilm', or pass an "
                    "Embedder or a chromadb embedding function as memory_config['embedder']."
                )
            _embedders[name] = MiniLMEmbedder()
        return _embedders[name]


class SessionRecall:
    def __init__(
        self,
        store: SessionBase,
        session_id: str,
        user_id: str,
        settings: Settings,
        memory_config: dict[str, Any],
        knowledge_config: dict[str, Any],
    ) -> None:
        embedder_choice = memory_config.get("embedder") or knowledge_config.get("embedder")
        self.embedder = (
            coerce_embedder(embedder_choice)
            if embedder_choice is not None
            else default_embedder(settings.embedder)
        )
        location = (
            memory_config.get("vector_store_url")
            or settings.vector_store_url
            or Path(settings.data_dir).expanduser().resolve() / "chroma"
        )
        client = chroma_client(location)
        namespace = settings.vector_namespace
        self.long = LongTermMemory(client, namespace, self.embedder, user_id, session_id)
        self.short = ShortTermMemory(store, session_id, user_id, self.embedder)
        self.knowledge = KnowledgeBase(
            client,
            namespace,
            self.embedder,
            user_id,
            session_id,
            scope=knowledge_config.get("scope", "user"),
            chunk_size=int(knowledge_config.get("chunk_size", 800)),
            chunk_overlap=int(knowledge_config.get("chunk_overlap", 120)),
            timeout=settings.timeout,
            progress=bool(knowledge_config.get("progress", True)),
        )
        self.context_budget = int(memory_config.get("context_chars", DEFAULT_BUDGET))
        # Below this cosine similarity a hit is noise, not context (MiniLM: unrelated ~0.1).
        self.context_min_score = float(memory_config.get("context_min_score", 0.25))

    def query_vector(self, query: str) -> list[float]:
        return self.embedder.embed_query(query)

    def search_long(self, query: str, limit: int) -> list[dict[str, Any]]:
        return self.long.search(self.query_vector(query), limit)

    def add_knowledge(self, source: Any) -> KnowledgeAdded:
        return self.knowledge.add(source)

    def search_knowledge(self, query: str, limit: int) -> list[dict[str, Any]]:
        return self.knowledge.search(self.query_vector(query), limit)

    def context(self, vector: list[float], short_hits: list[dict[str, Any]], max_items: int) -> str:
        sections = [
            ("Recent notes from this session", short_hits),
            ("Long-term memory", self.long.search(vector, max_items)),
            ("Knowledge", self.knowledge.search(vector, max_items)),
        ]
        relevant = [
            (title, [hit for hit in hits if hit["score"] >= self.context_min_score])
            for title, hits in sections
        ]
        return build_context(relevant, self.context_budget)
