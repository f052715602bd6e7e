"""Long-term memory: what a user told any of their sessions, searchable by meaning.

The index is the user's own collection, and every memory also carries its user and session.
Searches see the user's memories from all their sessions; clearing removes only the current
session's. No call can reach another user's.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from ..embeddings import Embedder
from ..errors import InvalidValueError
from ..json_data import check_json_data, dumps, loads
from ..vectors import Hit, VectorIndex, collection_name

RESERVED = frozenset({"user_id", "session_id", "memory_type", "created_at"})


class LongTermMemory:
    def __init__(
        self, client: Any, namespace: str, embedder: Embedder, user_id: str, session_id: str
    ) -> None:
        self.index = VectorIndex(client, collection_name(namespace, "memory", user_id), embedder)
        self.user_id = user_id
        self.session_id = session_id

    def add(self, text: str, metadata: dict[str, Any]) -> str:
        check_metadata(metadata)
        memory_id = uuid.uuid4().hex
        self.index.add(
            [memory_id],
            [text],
            [
                {
                    "user_id": self.user_id,
                    "session_id": self.session_id,
                    "memory_type": "long",
                    "created_at": time.time(),
                    "extra": dumps(metadata),
                }
            ],
        )
        return memory_id

    def search(self, vector: list[float], limit: int) -> list[dict[str, Any]]:
        hits = self.index.query(vector, limit)
        return [as_result(hit) for hit in hits]

    def clear(self) -> int:
        return self.index.delete({"session_id": self.session_id})


def check_metadata(metadata: dict[str, Any]) -> None:
    clash = RESERVED & metadata.keys()
    if clash:
        raise InvalidValueError(
            f"Memory metadata may not set {sorted(clash)}: praisonsession records them itself."
        )
    check_json_data(metadata, "memory metadata")


def as_result(hit: Hit) -> dict[str, Any]:
    """A search result: id, text, score (cosine similarity) and the metadata as given."""
    stored = dict(hit.metadata)
    extra = loads(stored.pop("extra", "{}"), f"metadata of memory {hit.id}")
    return {"id": hit.id, "text": hit.text, "score": hit.score, "metadata": {**extra, **stored}}
