"""Fixtures and helpers of the remote-session tests (``test_remote.py``,
``test_remote_reliability.py``): the scripted LLM, one shared server with a token, and small
helpers to talk to it. Imported by those modules, so each gets its own module-scoped server.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from llm_server import Reply, ScriptedChatServer
from praisonsession import Session
from praisonsession.agents.agent import module_key
from remote_server import TESTS, SessionServer

__all__ = [
    "HISTORY",
    "TOKEN",
    "child_env",
    "llm",
    "llm_connections_end_with_the_test",
    "post",
    "remote",
    "served",
    "turns_of",
    "wait_for",
]

TOKEN = "test-token-0123456789abcdef"
HISTORY = module_key("Assistant") + ".history"


def slow_echo(request: dict[str, Any]) -> Reply:
    """Echo the last user message; ``slow:N:text`` answers after N seconds."""
    text = next(
        (m["content"] for m in reversed(request["messages"]) if m.get("role") == "user"), ""
    )
    delay = 0.0
    if text.startswith("slow:"):
        delay = float(text.split(":")[1])
    return Reply.text(f"You said: {text}", delay=delay)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer(slow_echo) as server:
        yield server


@pytest.fixture(autouse=True)
def llm_connections_end_with_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """The server subprocess keeps its LLM connections open; their threads (in this process)
    end with each test, so that the suite's thread-leak check stays meaningful."""
    yield
    if "llm" in request.fixturenames:
        server = request.getfixturevalue("llm")
        if server._httpd is not None:
            server._httpd.close_connections()


@pytest.fixture(scope="module")
def served(
    llm: ScriptedChatServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SessionServer]:
    """One server for most tests: SQLite, a token, a 64 KiB body cap, three agent paths."""
    store = tmp_path_factory.mktemp("served") / "sessions.db"
    server = SessionServer(
        f"sqlite:///{store}",
        llm_url=llm.url,
        token=TOKEN,
        agents=(
            "remote_agents:assistant",
            "/async=remote_agents:async_assistant",
            "/broken=remote_agents:not_an_agent",
        ),
        args=("--max-body", "65536"),
    )
    with server:
        yield server


def remote(server: SessionServer, session_id: str = "chat", **options: Any) -> Session:
    options.setdefault("api_key", TOKEN)
    return Session(agent_url=server.agent_url, session_id=session_id, **options)


def post(url: str, body: Any, *, token: str | None = TOKEN, **headers: str) -> requests.Response:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(url, data=data, headers=headers, timeout=30)


def turns_of(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(user message, the reply that follows it) for each turn; asserts the shape."""
    pairs = []
    for user, reply in zip(history[::2], history[1::2], strict=True):
        assert user["role"] == "user" and reply["role"] == "assistant", (user, reply)
        pairs.append((user["content"], reply["content"]))
    return pairs


def wait_for(condition: Any, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), str(TESTS)])
    env.pop("PRAISONSESSION_REMOTE_TOKEN", None)
    return env
