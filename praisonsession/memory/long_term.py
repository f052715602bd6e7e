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
from ..progress import progress_bar
from ..vectors import Hit, VectorIndex, collection_name

RESERVED = frozenset({"user_id", "session_id", "memory_type", "created_at"})
#: Memories embedded and upserted together by ``add_many``: large enough that the model and
#: Chroma work on whole batches, small enough that a progress bar moves.
BATCH = 256


class LongTermMemory:
    def __init__(
        self, client: Any, namespace: str, embedder: Embedder, user_id: str, session_id: str
    ) -> None:
        name = collection_name(namespace, "memory", user_id)
        self.index = VectorIndex(client, name, embedder, owner=user_id)
        self.user_id = user_id
        self.session_id = session_id

    def add(self, text: str, metadata: dict[str, Any]) -> str:
        return self.add_many([text], metadata)[0]

    def add_many(
        self, texts: list[str], metadata: dict[str, Any], progress: bool = False
    ) -> list[str]:
        """Remember ``texts`` (with the same metadata), embedding and upserting them in batches
        of :data:`BATCH`; their ids, in order. A batch is stored whole or not at all."""
        check_metadata(metadata)
        stored = {
            "user_id": self.user_id,
            "session_id": self.session_id,
            "memory_type": "long",
            "created_at": time.time(),
            "extra": dumps(metadata),
        }
        ids = [uuid.uuid4().hex for _ in texts]
        show = progress and len(texts) > BATCH
        with progress_bar(len(texts), show, "memory", "Adding memories") as bar:
            for start in range(0, len(texts), BATCH):
                batch = texts[start : start + BATCH]
                metadatas = [dict(stored) for _ in batch]
                self.index.add(ids[start : start + BATCH], batch, metadatas)
                bar.update(len(batch))
        return ids

    def search(self, vector: list[float], limit: int) -> list[dict[str, Any]]:
        hits = self.index.query(vector, limit)
        return [as_result(hit) for hit in hits]

    def clear(self) -> int:
        return self.index.delete({"session_id": self.session_id})

    def session_memories(self) -> list[dict[str, Any]]:
        """What this session added, portable: text, the metadata given, and when."""
        found = []
        for _, text, stored in self.index.entries({"session_id": self.session_id}):
            extra = loads(stored.get("extra", "{}"), "memory metadata")
            found.append({"text": text, "metadata": extra, "created_at": stored.get("created_at")})
        return sorted(found, key=lambda memory: (memory["created_at"] or 0, memory["text"]))

    def restore(self, memories: list[dict[str, Any]]) -> int:
        """Add memories another session (or an archive) added, as this session's own; one the
        session holds already (same text, metadata and time) is not added twice."""
        held = {_identity(memory) for memory in self.session_memories()}
        memories = [memory for memory in memories if _identity(memory) not in held]
        for start in range(0, len(memories), BATCH):
            batch = memories[start : start + BATCH]
            texts = [str(memory["text"]) for memory in batch]
            metadatas = []
            for memory in batch:
                extra = dict(memory.get("metadata") or {})
                check_metadata(extra)
                metadatas.append(
                    {
                        "user_id": self.user_id,
                        "session_id": self.session_id,
                        "memory_type": "long",
                        "created_at": float(memory.get("created_at") or time.time()),
                        "extra": dumps(extra),
                    }
                )
            self.index.add([uuid.uuid4().hex for _ in batch], texts, metadatas)
        return len(memories)


def _identity(memory: dict[str, Any]) -> tuple[str, str, float]:
    return (
        str(memory.get("text")),
        dumps(memory.get("metadata") or {}),
        float(memory.get("created_at") or 0),
    )


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
