"""``AgentHosting``: the live agents of a server, one per (agent path, user_id, session_id).

Each is made by the path's factory on the first request for that session, standing on an
``AsyncSession`` over the server's store, so its history is loaded from the store (a restarted
server continues every conversation) and saved there after each turn. The most recently used
ones stay live, up to ``capacity``; an idle one beyond that is closed (its history is in the
store, and the next request loads it again).

Turns of one session run one at a time (the agent's own turn lock), each seeing the one before;
turns of different sessions run at once: nothing here holds a lock while an agent works.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...agents import Agent
from ...errors import RemoteServerError
from ...session.core import AsyncSession
from ...settings import Settings
from ...stores.api import SessionBase

__all__ = ["AgentHosting", "Factory"]

#: ``factory(session)`` returns an Agent, or an awaitable of one (``session.Agent(...)`` is).
Factory = Callable[[AsyncSession], Any]
LiveKey = tuple[str, str, str]  # (agent path, user_id, session_id)


@dataclass
class _Live:
    session: AsyncSession
    agent: Agent
    busy: int = 0


class AgentHosting:
    """Live agents over ``store``; ``factories`` maps each agent path to its factory."""

    def __init__(
        self,
        store: SessionBase,
        factories: dict[str, tuple[str, Factory]],
        settings: Settings,
        *,
        timeout: float,
        capacity: int = 1000,
    ) -> None:
        self.store = store
        self.factories = factories
        self.settings = settings
        self.timeout = timeout
        self.capacity = capacity
        self._live: OrderedDict[LiveKey, _Live] = OrderedDict()
        self._opening: dict[LiveKey, asyncio.Future[_Live]] = {}

    @property
    def live_count(self) -> int:
        return len(self._live)

    async def chat(
        self, path: str, user_id: str, session_id: str, query: str, turn_key: str | None
    ) -> str:
        """One turn with the session's agent; a turn already saved under ``turn_key`` is
        answered from the store, not run again."""
        live = await self._get((path, user_id, session_id))
        live.busy += 1
        try:
            return await live.agent.achat(query, turn_key=turn_key)
        finally:
            live.busy -= 1

    async def _get(self, key: LiveKey) -> _Live:
        live = self._live.get(key)
        if live is not None:
            self._live.move_to_end(key)
            return live
        opening = self._opening.get(key)
        if opening is not None:  # another request is opening it: share its result
            return await asyncio.shield(opening)
        future: asyncio.Future[_Live] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            live = await self._open(key)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        else:
            future.set_result(live)
            self._live[key] = live
            self._evict()
            return live
        finally:
            del self._opening[key]

    async def _open(self, key: LiveKey) -> _Live:
        path, user_id, session_id = key
        spec, factory = self.factories[path]
        session = AsyncSession(
            session_id, user_id, store=self.store, settings=self.settings, timeout=self.timeout
        )
        await session.open()
        made = factory(session)
        if inspect.isawaitable(made):
            made = await made
        if not isinstance(made, Agent):
            await session.close()
            raise RemoteServerError(
                f"The agent factory {spec} returned a {type(made).__name__}, not an Agent. "
                "It must return the session's agent: return session.Agent(name=..., llm=...).",
                status=500,
            )
        return _Live(session, made)

    def _evict(self) -> None:
        """Close the least recently used idle agents beyond ``capacity``."""
        excess = len(self._live) - self.capacity
        if excess <= 0:
            return
        for key in list(self._live):
            if excess <= 0:
                break
            live = self._live[key]
            if live.busy:
                continue
            del self._live[key]
            live.agent.close()
            excess -= 1

    async def close(self) -> None:
        for live in self._live.values():
            live.agent.close()
            await live.session.close()
        self._live.clear()
