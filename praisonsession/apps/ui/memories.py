"""What the session browser shows of memories: a user's long-term memories and a session's
short-term notes, a page at a time, with each memory's history. Read-only.

The memories are found where ``Session`` keeps them: long-term ones in the Chroma store the
settings name (``PRAISONSESSION_VECTOR_STORE_URL``, else ``<data_dir>/chroma``: the same
environment as the programs that wrote them), short-term notes in the session's own log in the
store. Nothing is created to read them: a user with no memories yet gets an empty page, not an
empty collection, and no embedding model is loaded (listing does not embed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._internal.redaction import redact_url
from ..._internal.runtime import offload
from ...errors import InvalidValueError, SessionNotFoundError
from ...recall.core import default_embedder, text_sealer, vector_location
from ...recall.memory.long_term import LongTermMemory, page_of
from ...recall.memory.short_term import ShortTermMemory
from ...recall.vectors import Vault, chroma_client, is_postgres_url
from ...recall.vectors.pgvector import holds_collections
from ...recall.vectors.vault_keys import vault_key
from ...settings import Settings
from ...stores.api import SessionBase
from .browse import check_page_size

__all__ = ["MemoryBrowser"]

#: The longest memory id a request may name (ours are 33 characters).
_MAX_ID = 200


class MemoryBrowser:
    """Read-only views of the memories of ``store``'s sessions, for the UI's JSON API."""

    def __init__(self, store: SessionBase, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.location = vector_location(settings, backend=store.backend)

    @property
    def shown_location(self) -> str:
        """Where the long-term memories are read from, with any secret masked."""
        return redact_url(str(self.location))

    async def memories(
        self,
        user_id: str,
        session_id: str | None = None,
        *,
        after: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """One page of the user's long-term memories (``session_id`` None) or of the
        session's short-term notes, oldest first, as ``list_memories`` gives them; ``next`` is
        the ``after`` of the following page (None at the end)."""
        limit = check_page_size(limit)
        if session_id is None:
            long_term = await offload(self._long_term, user_id, await self._vault(user_id))
            if long_term is None:  # nothing held: an `after` is then no id of this list
                found = page_of([], limit + 1, after)
            else:
                found = await offload(long_term.list, None, limit + 1, after)
        else:
            short_term = await self._short_term(user_id, session_id)
            found = await short_term.list(None, limit + 1, after)
        page = found[:limit]
        return {
            "kind": "long" if session_id is None else "short",
            "memories": page,
            "next": page[-1]["id"] if len(found) > limit else None,
            "location": self.shown_location if session_id is None else "the session's store",
        }

    async def history(
        self, user_id: str, memory_id: str, session_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Every change to one memory, oldest first (``memory_history``): of a long-term
        memory of the user, or of a note of the session when ``session_id`` is given."""
        if not isinstance(memory_id, str) or not memory_id or len(memory_id) > _MAX_ID:
            raise InvalidValueError(
                f"memory must be a memory's id (up to {_MAX_ID} characters), got {memory_id!r}."
            )
        if session_id is not None:
            return await (await self._short_term(user_id, session_id)).history(memory_id)
        long_term = await offload(self._long_term, user_id, await self._vault(user_id))
        if long_term is None or not await offload(long_term.history_index.exists):
            return []
        return await offload(long_term.history, memory_id)

    async def _vault(self, user_id: str) -> bytes | None:
        """On a Chroma server, the user's key its entries are sealed with (none made here)."""
        if not str(self.location).startswith(("http://", "https://")):
            return None  # embedded Chroma, PostgreSQL: no vault
        return await vault_key(self.store.backend, user_id, create=False)

    def _long_term(self, user_id: str, vault: bytes | None) -> LongTermMemory | None:
        """The user's long-term memory, or None when it holds nothing yet (blocking)."""
        location = self.location
        if isinstance(location, Path) and not (location / "chroma.sqlite3").is_file():
            return None  # no memory was ever written here: nothing to open (or create)
        if is_postgres_url(location) and not holds_collections(str(location)):
            return None
        settings = self.settings
        sealer = text_sealer(settings)  # as Recall opens it: the texts sealed, the ids keyed
        long_term = LongTermMemory(
            chroma_client(location, settings.data_dir),
            settings.vector_namespace,
            default_embedder(settings.embedder),  # never loads its model: nothing is embedded
            user_id,
            session_id="",
            sealer=sealer,
            digest_key=None if sealer is None else sealer.digest_key("memory"),
            vault=None if vault is None else Vault(vault),  # as Recall opens it on a server
        )
        if not long_term.index.exists():
            return None
        return long_term

    async def _short_term(self, user_id: str, session_id: str) -> ShortTermMemory:
        if await self.store.get_info(session_id, user_id) is None:
            raise SessionNotFoundError(
                session_id, user_id, "It is not in this store, or it has expired."
            )
        embedder = default_embedder(self.settings.embedder)
        return ShortTermMemory(_ReadOnlyLogs(self.store, session_id, user_id), embedder, session_id)


class _ReadOnlyLogs:
    """A session's named logs, for reading only (``memory.short_term.SessionLogs``): the
    browser never writes, and one that tried would fail here, loudly."""

    def __init__(self, store: SessionBase, session_id: str, user_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._user_id = user_id

    async def read_messages(
        self, log: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]:
        return await self._store.read_messages(self._session_id, self._user_id, log, start, stop)

    async def message_count(self, log: str) -> int:
        return await self._store.message_count(self._session_id, self._user_id, log)

    async def append_messages(self, log: str, messages: list[dict[str, Any]]) -> int:
        raise PermissionError("The session browser is read-only.")

    async def clear_messages(self, log: str) -> None:
        raise PermissionError("The session browser is read-only.")
