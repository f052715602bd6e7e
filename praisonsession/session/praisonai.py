"""``session.memory`` and ``session.knowledge``: PraisonAI's objects, over this session.

PraisonAI code reaches past ``Session`` into ``session.memory.store_long_term(...)`` or
``session.knowledge.search(...)``; mem0-style code calls ``get``, ``update``, ``delete``,
``history`` and ``get_all`` with a memory's id. These views give those calls (the ones
PraisonAI's ``Session`` itself makes, and its ``Memory``/``Knowledge`` search and reset calls)
on top of the session's own memory and knowledge, scoped as they are there: to this user, and
this session where the session's methods say so. Each view has an async twin for ``AsyncSession``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._internal.checks import MemoryQuery, MemoryType
    from .._internal.json_data import JSONValue
    from ..recall.knowledge.knowledge_base import KnowledgeAdded
    from ..recall.memory.lifecycle import MemoryId


class SessionPort(Protocol):
    """What the views call on a ``Session``: a port, so that the sessions import their views
    and never the reverse (``Session`` satisfies it)."""

    def add_memory(
        self,
        text: str,
        memory_type: MemoryType = "long",
        *,
        dedupe: bool = True,
        **metadata: JSONValue,
    ) -> MemoryId: ...

    def search_memory(
        self,
        query: str,
        memory_type: MemoryQuery = "long",
        limit: int = 5,
        *,
        where: dict[str, Any] | None = None,
        prefer_recent: bool | None = None,
    ) -> list[dict[str, Any]]: ...

    def list_memories(
        self,
        memory_type: str = "all",
        *,
        where: dict[str, Any] | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> list[dict[str, Any]]: ...

    def get_memory(self, memory_id: str) -> dict[str, Any] | None: ...

    def update_memory(
        self, memory_id: str, text: str | None = None, **metadata: JSONValue
    ) -> dict[str, Any]: ...

    def delete_memory(self, memory_id: str) -> bool: ...

    def memory_history(self, memory_id: str) -> list[dict[str, Any]]: ...

    def clear_memory(self, memory_type: MemoryQuery = "all") -> int: ...

    def add_knowledge(self, source: str | os.PathLike[str]) -> KnowledgeAdded: ...

    def search_knowledge(
        self, query: str, limit: int = 5, *, where: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]: ...

    def get_context(self, query: str, max_items: int = 3) -> str: ...


class AsyncSessionPort(Protocol):
    """The same port as coroutines: what the async views call on an ``AsyncSession``."""

    async def add_memory(
        self,
        text: str,
        memory_type: MemoryType = "long",
        *,
        dedupe: bool = True,
        **metadata: JSONValue,
    ) -> MemoryId: ...

    async def search_memory(
        self,
        query: str,
        memory_type: MemoryQuery = "long",
        limit: int = 5,
        *,
        where: dict[str, Any] | None = None,
        prefer_recent: bool | None = None,
    ) -> list[dict[str, Any]]: ...

    async def list_memories(
        self,
        memory_type: str = "all",
        *,
        where: dict[str, Any] | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> list[dict[str, Any]]: ...

    async def get_memory(self, memory_id: str) -> dict[str, Any] | None: ...

    async def update_memory(
        self, memory_id: str, text: str | None = None, **metadata: JSONValue
    ) -> dict[str, Any]: ...

    async def delete_memory(self, memory_id: str) -> bool: ...

    async def memory_history(self, memory_id: str) -> list[dict[str, Any]]: ...

    async def clear_memory(self, memory_type: MemoryQuery = "all") -> int: ...

    async def add_knowledge(self, source: str | os.PathLike[str]) -> KnowledgeAdded: ...

    async def search_knowledge(
        self, query: str, limit: int = 5, *, where: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]: ...

    async def get_context(self, query: str, max_items: int = 3) -> str: ...


__all__ = ["AsyncKnowledgeView", "AsyncMemoryView", "KnowledgeView", "MemoryView"]


class MemoryView:
    """PraisonAI's ``Memory`` calls on a ``Session``'s memory."""

    def __init__(self, session: SessionPort) -> None:
        self._session = session

    def store_short_term(self, text: str, metadata: dict[str, Any] | None = None, **_: Any) -> str:
        return self._session.add_memory(text, "short", **(metadata or {}))

    def store_long_term(self, text: str, metadata: dict[str, Any] | None = None, **_: Any) -> str:
        return self._session.add_memory(text, "long", **(metadata or {}))

    def search_short_term(self, query: str, limit: int = 5, **_: Any) -> list[dict[str, Any]]:
        return self._session.search_memory(query, "short", limit)

    def search_long_term(
        self, query: str, limit: int = 5, where: dict[str, Any] | None = None, **_: Any
    ) -> list[dict[str, Any]]:
        return self._session.search_memory(query, "long", limit, where=where)

    def search(self, query: str, limit: int = 5, **_: Any) -> list[dict[str, Any]]:
        return self._session.search_memory(query, "all", limit)

    def reset_short_term(self) -> int:
        return self._session.clear_memory("short")

    def reset_long_term(self) -> int:
        return self._session.clear_memory("long")

    def get(self, memory_id: str) -> dict[str, Any] | None:
        return self._session.get_memory(memory_id)

    def update(self, memory_id: str, text: str | None = None, **metadata: Any) -> dict[str, Any]:
        return self._session.update_memory(memory_id, text, **metadata)

    def delete(self, memory_id: str) -> bool:
        return self._session.delete_memory(memory_id)

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return self._session.memory_history(memory_id)

    def get_all(
        self, limit: int = 100, where: dict[str, Any] | None = None, **_: Any
    ) -> list[dict[str, Any]]:
        return self._session.list_memories("all", where=where, limit=limit)

    def build_context_for_task(self, task_descr: str, max_items: int = 3, **_: Any) -> str:
        return self._session.get_context(task_descr, max_items)

    def __repr__(self) -> str:
        return f"MemoryView({self._session!r})"


class KnowledgeView:
    """PraisonAI's ``Knowledge`` calls on a ``Session``'s knowledge base."""

    def __init__(self, session: SessionPort) -> None:
        self._session = session

    def add(self, source: Any, **_: Any) -> KnowledgeAdded:
        return self._session.add_knowledge(source)

    def search(self, query: str, limit: int = 5, **_: Any) -> list[dict[str, Any]]:
        return self._session.search_knowledge(query, limit)

    def __repr__(self) -> str:
        return f"KnowledgeView({self._session!r})"


class AsyncMemoryView:
    """:class:`MemoryView` for an ``AsyncSession``: the same calls, as coroutines."""

    def __init__(self, session: AsyncSessionPort) -> None:
        self._session = session

    async def store_short_term(
        self, text: str, metadata: dict[str, Any] | None = None, **_: Any
    ) -> str:
        return await self._session.add_memory(text, "short", **(metadata or {}))

    async def store_long_term(
        self, text: str, metadata: dict[str, Any] | None = None, **_: Any
    ) -> str:
        return await self._session.add_memory(text, "long", **(metadata or {}))

    async def search_short_term(self, query: str, limit: int = 5, **_: Any) -> list[dict[str, Any]]:
        return await self._session.search_memory(query, "short", limit)

    async def search_long_term(
        self, query: str, limit: int = 5, where: dict[str, Any] | None = None, **_: Any
    ) -> list[dict[str, Any]]:
        return await self._session.search_memory(query, "long", limit, where=where)

    async def search(self, query: str, limit: int = 5, **_: Any) -> list[dict[str, Any]]:
        return await self._session.search_memory(query, "all", limit)

    async def reset_short_term(self) -> int:
        return await self._session.clear_memory("short")

    async def reset_long_term(self) -> int:
        return await self._session.clear_memory("long")

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        return await self._session.get_memory(memory_id)

    async def update(
        self, memory_id: str, text: str | None = None, **metadata: Any
    ) -> dict[str, Any]:
        return await self._session.update_memory(memory_id, text, **metadata)

    async def delete(self, memory_id: str) -> bool:
        return await self._session.delete_memory(memory_id)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        return await self._session.memory_history(memory_id)

    async def get_all(
        self, limit: int = 100, where: dict[str, Any] | None = None, **_: Any
    ) -> list[dict[str, Any]]:
        return await self._session.list_memories("all", where=where, limit=limit)

    async def build_context_for_task(self, task_descr: str, max_items: int = 3, **_: Any) -> str:
        return await self._session.get_context(task_descr, max_items)

    def __repr__(self) -> str:
        return f"AsyncMemoryView({self._session!r})"


class AsyncKnowledgeView:
    """:class:`KnowledgeView` for an ``AsyncSession``."""

    def __init__(self, session: AsyncSessionPort) -> None:
        self._session = session

    async def add(self, source: Any, **_: Any) -> KnowledgeAdded:
        return await self._session.add_knowledge(source)

    async def search(self, query: str, limit: int = 5, **_: Any) -> list[dict[str, Any]]:
        return await self._session.search_knowledge(query, limit)

    def __repr__(self) -> str:
        return f"AsyncKnowledgeView({self._session!r})"
