"""Google ADK's memory on praisonsession's memory layer: :class:`PraisonMemoryService`.

``Runner(..., memory_service=PraisonMemoryService("sqlite://adk.db"))`` keeps what ADK
remembers as the user's long-term memories (semantic search with the offline embedder, no
key), one memory per event with text, tagged with its app, session, event and author. What
ADK's own memory services lack (adk #7109): a memory deleted by id, every memory of a
session or of a user forgotten, and each memory's history; ``erase_user`` removes them all.

A user's memories of one app are added through one of the user's sessions,
``adk-memory:<length of app_name>:<app_name>``, which also keeps which events it holds and
which were deleted, so adding a session again neither doubles its memories nor brings back
one deleted by id.

Needs the ``adk`` extra (and the ``memory`` one); only ``adk.py`` and this module import ADK.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._internal.checks import check_items
from ..errors import InvalidValueError, MissingDependencyError, install_line
from ..session.core import AsyncSession
from ..settings import Settings
from ..stores import Key, SessionBase
from ._adapter import HeldStore, checked_key

try:
    from google.adk.events.event import Event
    from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.sessions.session import Session
    from google.genai import types
except ImportError as missing:  # pragma: no cover - the extra is installed where this runs
    raise MissingDependencyError(
        "praisonsession.integrations.adk needs Google ADK: " + install_line("adk") + "."
    ) from missing

__all__ = ["PraisonMemoryService", "memory_session_id"]

#: How many memories a search returns, as ADK's own in-memory service.
SEARCH_LIMIT = 10
_UNKNOWN_SESSION = "__unknown_session_id__"  # ADK's name for events added without a session
_HELD = "event:"  # bookkeeping state: event id -> memory id
_DELETED = "deleted:"  # bookkeeping state: event id deleted by id, never added again
_PAGE = 100
#: What the memory layer adds to a memory's metadata itself: not the caller's.
_OURS = frozenset({"user_id", "session_id", "memory_type", "created_at", "updated_at", "said_at"})


def memory_session_id(app_name: str) -> str:
    """The session id, among the user's, through which their memories of ``app_name`` go."""
    if not isinstance(app_name, str):
        raise InvalidValueError(f"app_name must be a str, got {app_name!r}.")
    return f"adk-memory:{len(app_name)}:{app_name}"


class PraisonMemoryService(HeldStore, BaseMemoryService):
    """ADK's ``BaseMemoryService`` over praisonsession's memory: user-scoped, searched by
    meaning with the offline embedder, deletable.

    ``store`` and ``settings`` are what ``PraisonSessionService`` takes (``settings`` also
    chooses the vector store: ``vector_store_url``, embedded Chroma by default).
    """

    def __init__(
        self,
        store: SessionBase | str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
    ) -> None:
        self._hold(store, settings)
        self._handles: dict[Key, AsyncSession] = {}

    async def close(self) -> None:
        """Release the memory handles and the store's connections (a store passed in as an
        instance is its owner's to close)."""
        handles, self._handles = list(self._handles.values()), {}
        for handle in handles:
            await handle.close()
        await self.aclose()

    # -- ADK's protocol -------------------------------------------------------------------

    async def add_session_to_memory(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise InvalidValueError(
                f"add_session_to_memory takes an ADK Session, got {type(session).__name__}."
            )
        await self._add(session.app_name, session.user_id, session.id, session.events, {})

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        extra = _scalars(custom_metadata)
        events = _all_of(events, Event, "add_events_to_memory: events")
        await self._add(app_name, user_id, session_id or _UNKNOWN_SESSION, events, extra)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        memories = _all_of(memories, MemoryEntry, "add_memory: memories")
        handle = self._handle(app_name, user_id)
        extra = _scalars(custom_metadata)
        for entry in memories:
            text = _text(entry.content)
            if not text:
                continue
            metadata = {
                **extra,
                **_scalars(entry.custom_metadata),
                "adk_app": app_name,
                "adk_author": entry.author or "",
                "adk_time": entry.timestamp or "",
                "adk_content": entry.content.model_dump_json(exclude_none=True),
            }
            await handle.add_memory(text, "long", dedupe=False, **metadata)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        hits = await self._handle(app_name, user_id).search_memory(
            query, "long", SEARCH_LIMIT, where={"adk_app": app_name}
        )
        return SearchMemoryResponse(memories=[_entry(hit) for hit in hits])

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Forget one memory (its id is ``MemoryEntry.id``); an id of another app or user, or
        none, changes nothing. The event it came from is never added again."""
        await self.forget_memory(app_name=app_name, user_id=user_id, memory_id=memory_id)

    # -- what ADK's services lack ---------------------------------------------------------

    async def forget_memory(self, *, app_name: str, user_id: str, memory_id: str | None) -> bool:
        """``delete_memory`` that says whether the memory was there."""
        if not isinstance(memory_id, str) or not memory_id:
            return False
        handle = self._handle(app_name, user_id)
        found = await handle.get_memory(memory_id)
        if found is None or (found.get("metadata") or {}).get("adk_app") != app_name:
            return False
        event_id = (found.get("metadata") or {}).get("adk_event")
        if isinstance(event_id, str):
            await handle.set_state(_DELETED + event_id, True)
            await handle.delete_state(_HELD + event_id)
        return await handle.delete_memory(memory_id)

    async def forget_session(self, *, app_name: str, user_id: str, session_id: str) -> int:
        """Forget every memory taken from one session (a deleted session's, say); how many
        went. Adding the session again later remembers it afresh."""
        return await self._forget(app_name, user_id, {"adk_session": session_id})

    async def forget_user(self, *, app_name: str, user_id: str) -> int:
        """Forget every memory of the user in ``app_name``; how many went. (``erase_user``
        removes everything of the user, every app's memories included.)"""
        count = await self._forget(app_name, user_id, {})
        await self._store.delete_session(memory_session_id(app_name), user_id)
        return count

    async def memory_history(
        self, *, app_name: str, user_id: str, memory_id: str
    ) -> list[dict[str, Any]]:
        """Every change to a memory, oldest first (``ADD``, ``UPDATE``, ``DELETE``)."""
        return await self._handle(app_name, user_id).memory_history(memory_id)

    # -- the work behind them --------------------------------------------------------------

    def _handle(self, app_name: str, user_id: str) -> AsyncSession:
        key = checked_key(memory_session_id(app_name), user_id)
        handle = self._handles.get(key)
        if handle is None:
            handle = AsyncSession(
                key.session_id, key.user_id, store=self._store, settings=self._settings
            )
            self._handles[key] = handle
        return handle

    async def _add(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        events: Iterable[Event],
        extra: dict[str, Any],
    ) -> None:
        handle = self._handle(app_name, user_id)
        wanted = [event for event in events if _text(event.content)]
        if not wanted:
            return
        names = [name + event.id for event in wanted for name in (_HELD, _DELETED)]
        known = await self._store.backend.read_record_state(
            Key(handle.user_id, handle.session_id), names=names, must_exist=False
        )
        for event in wanted:
            if _HELD + event.id in known or _DELETED + event.id in known:
                continue
            metadata = {
                **extra,
                "adk_app": app_name,
                "adk_session": session_id,
                "adk_event": event.id,
                "adk_author": event.author or "",
                "adk_time": _iso(event.timestamp),
                "adk_content": event.content.model_dump_json(exclude_none=True),
            }
            memory_id = await handle.add_memory(
                _text(event.content), "long", dedupe=False, **metadata
            )
            await handle.set_state(_HELD + event.id, str(memory_id))

    async def _forget(self, app_name: str, user_id: str, where: dict[str, Any]) -> int:
        handle = self._handle(app_name, user_id)
        found = {"adk_app": app_name, **where}
        condition = found if len(found) == 1 else {"$and": [{k: v} for k, v in found.items()]}
        count = 0
        while True:
            page = await handle.list_memories("long", where=condition, limit=_PAGE)
            if not page:
                return count
            for memory in page:
                event_id = (memory.get("metadata") or {}).get("adk_event")
                if isinstance(event_id, str):
                    await handle.delete_state(_HELD + event_id)
                count += await handle.delete_memory(memory["id"])
            await asyncio.sleep(0)


def _text(content: Any) -> str:
    if content is None or not content.parts:
        return ""
    return " ".join(part.text for part in content.parts if part.text)


def _iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc).isoformat()


def _all_of(values: Any, model: type[Any], what: str) -> list[Any]:
    """``values`` as a list, each an ADK ``model``: checked before anything is stored."""
    found = check_items(values, what, f" of {model.__name__}")
    for value in found:
        if not isinstance(value, model):
            raise InvalidValueError(
                f"{what} must be a list of {model.__name__}; one is a {type(value).__name__}."
            )
    return found


def _scalars(metadata: Mapping[str, object] | None) -> dict[str, Any]:
    """The custom metadata a memory can be filtered on: text, numbers and flags."""
    return {
        str(name): value
        for name, value in (metadata or {}).items()
        if isinstance(value, (str, int, float, bool)) and not str(name).startswith("adk_")
    }


def _entry(hit: dict[str, Any]) -> MemoryEntry:
    metadata = dict(hit.get("metadata") or {})
    stored = metadata.pop("adk_content", None)
    content = (
        types.Content.model_validate_json(stored)
        if isinstance(stored, str)
        else types.Content(role="user", parts=[types.Part(text=hit["text"])])
    )
    author = metadata.get("adk_author") or None
    timestamp = metadata.get("adk_time") or None
    custom = {k: v for k, v in metadata.items() if not k.startswith("adk_") and k not in _OURS}
    return MemoryEntry(
        id=str(hit["id"]),
        content=content,
        author=author,
        timestamp=timestamp,
        custom_metadata=custom,
    )
