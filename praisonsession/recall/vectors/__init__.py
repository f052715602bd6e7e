"""Vector collections (ChromaDB) that remember their embedder: the floor under memory and
knowledge. chromadb is imported on first use only."""

from .filters import Where, parse_where
from .index import Hit, VectorIndex, chroma_client, erase_owner, scrub_embedded
from .scope import (
    IsolationError,
    Scope,
    ScopedIndex,
    collection_name,
    knowledge_scope,
    memory_scope,
    user_collections,
)
from .vault import Vault

__all__ = [
    "Hit",
    "IsolationError",
    "Scope",
    "ScopedIndex",
    "Vault",
    "VectorIndex",
    "Where",
    "chroma_client",
    "collection_name",
    "erase_owner",
    "knowledge_scope",
    "memory_scope",
    "parse_where",
    "scrub_embedded",
    "user_collections",
]
