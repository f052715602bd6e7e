"""Vector collections that remember their embedder, in embedded Chroma, a Chroma server or
PostgreSQL with pgvector: the floor under memory and knowledge. chromadb and psycopg are
imported on first use only."""

from .filters import Where, parse_where
from .index import (
    Hit,
    VectorIndex,
    chroma_client,
    collection_gone,
    erase_owner,
    forget_terms,
    scrub_embedded,
    vector_store,
)
from .pgvector import PgVectorStore, is_postgres_url
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
    "PgVectorStore",
    "Scope",
    "ScopedIndex",
    "Vault",
    "VectorIndex",
    "Where",
    "chroma_client",
    "collection_gone",
    "collection_name",
    "erase_owner",
    "forget_terms",
    "is_postgres_url",
    "knowledge_scope",
    "memory_scope",
    "parse_where",
    "scrub_embedded",
    "user_collections",
    "vector_store",
]
