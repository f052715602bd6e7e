"""Short-term memory: the session's own running notes, kept as a message log in the store.

It lives with the session (so it expires, moves and is deleted with it) and is searched by
meaning over its most recent entries. Vectors are cached per text, so repeated searches embed
only what is new.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Protocol

from ..embeddings import Embedder
from .long_term import check_metadata

LOG = "$memory/short_term"
SEARCH_WINDOW = 2000
_CACHE_SIZE = 10_000


class SessionLogs(Protocol):
    """The part of a session that short-term memory needs: its named message logs."""

    async def append_messages(self, log: str, messages: list[dict[str, Any]]) -> int: ...

    async def read_messages(
        self, log: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]: ...

    async def message_count(self, log: str) -> int: ...

    async def clear_messages(self, log: str) -> None: ...


class ShortTermMemory:
    def __init__(self, logs: SessionLogs, embedder: Embedder) -> None:
        self.logs = logs
        self.embedder = embedder
        self._vectors_lock = threading.Lock()  # rank() runs in worker threads
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    async def add(self, text: str, metadata: dict[str, Any]) -> str:
        return (await self.add_many([text], metadata))[0]

    async def add_many(self, texts: list[str], metadata: dict[str, Any]) -> list[str]:
        """Append the notes in one atomic step (embedded when first searched); their ids."""
        check_metadata(metadata)
        at = time.time()
        entries = [
            {
                "id": uuid.uuid4().hex,
                "role": "memory",
                "content": text,
                "metadata": metadata,
                "created_at": at,
            }
            for text in texts
        ]
        await self.logs.append_messages(LOG, entries)
        return [entry["id"] for entry in entries]

    async def entries(self) -> list[dict[str, Any]]:
        count = await self.logs.message_count(LOG)
        return await self.logs.read_messages(LOG, max(0, count - SEARCH_WINDOW))

    def rank(
        self, entries: list[dict[str, Any]], vector: list[float], limit: int
    ) -> list[dict[str, Any]]:
        """The ``limit`` entries closest to ``vector`` (blocking: it may embed entries)."""
        texts = [str(entry.get("content", "")) for entry in entries]
        with self._vectors_lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
            for text, embedded in zip(missing, self.embedder.embed(missing), strict=True):
                self._vectors[text] = embedded
            vectors = [self._vectors[text] for text in texts]
            while len(self._vectors) > _CACHE_SIZE:
                self._vectors.popitem(last=False)
        if not entries:
            return []
        import numpy as np  # installed with the memory extra (onnxruntime needs it)

        matrix = np.asarray(vectors, dtype=np.float32)
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
        scores = (matrix @ query) / np.maximum(norms, 1e-12)
        order = np.lexsort((-np.arange(len(texts)), -scores))[:limit]  # ties: newest first
        return [_result(entries[i], float(scores[i])) for i in order]

    async def clear(self) -> int:
        count = await self.logs.message_count(LOG)
        await self.logs.clear_messages(LOG)
        return count


def _result(entry: dict[str, Any], score: float) -> dict[str, Any]:
    metadata = {
        **(entry.get("metadata") or {}),
        "memory_type": "short",
        "created_at": entry.get("created_at"),
    }
    return {
        "id": entry.get("id"),
        "text": entry.get("content", ""),
        "score": round(score, 6),
        "metadata": metadata,
    }
