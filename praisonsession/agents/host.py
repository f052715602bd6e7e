"""``AgentHost``: the part of a session an agent stands on.

``AsyncSession`` is the host in practice; agents import only this port, never the session
classes or a store, so the agent floor sits below the session floor with no arrow back up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..settings import Settings
    from ..state.module import StateModule


class AgentHost(Protocol):
    @property
    def session_id(self) -> str: ...

    @property
    def user_id(self) -> str: ...

    @property
    def timeout(self) -> float: ...

    @property
    def settings(self) -> Settings: ...

    async def load_modules(self, **modules: StateModule) -> None: ...

    async def save_modules(self, **modules: StateModule) -> None: ...

    async def refresh_modules(self, **modules: StateModule) -> int: ...

    async def message_count(self, log: str) -> int: ...

    async def clear_messages(self, log: str) -> None: ...

    async def get_context(self, query: str, max_items: int = 3) -> str: ...

    async def search_knowledge(self, query: str, limit: int = 5) -> list[dict[str, Any]]: ...

    async def add_knowledge(self, source: str | Path) -> Any: ...

    async def index_turns(self, log: str, before: int) -> int: ...

    async def recall_turns(
        self, log: str, query: str, before: int, limit: int = 4
    ) -> list[tuple[int, list[dict[str, Any]]]]: ...
