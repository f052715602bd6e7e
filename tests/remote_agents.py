"""Agent factories the test servers host (``--agent remote_agents:assistant``).

Each reads the scripted LLM's base URL from ``REMOTE_TEST_LLM_URL`` (set by
``remote_server.SessionServer``), so that the server process talks only to the test's own
chat-completions server on 127.0.0.1.
"""

from __future__ import annotations

import os
from typing import Any

LLM_ENV = "REMOTE_TEST_LLM_URL"


def _llm() -> dict[str, Any]:
    return {"base_url": os.environ[LLM_ENV], "model": "scripted-model"}


def assistant(session: Any) -> Any:
    """A plain factory returning ``session.Agent(...)`` (an awaitable on an AsyncSession)."""
    return session.Agent(name="Assistant", memory=False, history_window=None, llm=_llm())


async def async_assistant(session: Any) -> Any:
    """The same agent from an async factory."""
    return await session.Agent(name="Helper", memory=False, llm=_llm())


def not_an_agent(session: Any) -> Any:
    """A factory that gets it wrong: the server must say so, not crash."""
    return "I am not an agent"


def no_session() -> Any:
    """Not a factory: it takes no session (``serve`` refuses it at start-up)."""
    return None
