"""Vector collections (ChromaDB) that remember their embedder: the floor under memory and
knowledge. chromadb is imported on first use only."""

from .index import (
    Hit,
    VectorIndex,
    chroma_client,
    collection_name,
    erase_owner,
    scrub_embedded,
)

__all__ = [
    "Hit",
    "VectorIndex",
    "chroma_client",
    "collection_name",
    "erase_owner",
    "scrub_embedded",
]
