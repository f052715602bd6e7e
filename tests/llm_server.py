"""The suite's LLM endpoint: a real HTTP server on 127.0.0.1 speaking chat completions.

It is :class:`praisonsession.llm.local_server.ScriptedChatServer` (the one tutorials use), run
strictly: a test fails if it leaves scripted replies unused, and no request may leave the
machine. Test modules build their fixtures from these helpers::

    @pytest.fixture
    def server() -> Iterator[ScriptedChatServer]:
        with serving() as server:
            yield server
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest

from praisonsession.llm.local_server import (
    RecordedRequest,
    Reply,
    ScriptedChatServer,
    echo_responder,
    http_date,
)

__all__ = [
    "LLM_ENV",
    "RecordedRequest",
    "Reply",
    "ScriptedChatServer",
    "echo_responder",
    "http_date",
    "isolate_llm_env",
    "serving",
]

#: Environment variables that choose an endpoint or a key: cleared for every test.
LLM_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "PRAISONSESSION_LLM_BASE_URL",
    "PRAISONSESSION_LLM_MODEL",
    "PRAISONSESSION_LLM_API_KEY",
    "PRAISONSESSION_TIMEOUT",
)


@contextmanager
def serving(*, api_key: str | None = None, strict: bool = True) -> Iterator[ScriptedChatServer]:
    """A started server; with ``strict``, every queued reply must have been used by the end."""
    with ScriptedChatServer(api_key=api_key) as server:
        yield server
        if strict:
            assert server.pending == 0, f"{server.pending} scripted replies were never requested"


def isolate_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key or endpoint from the developer's environment, and no request off this machine."""
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    import requests.adapters

    send = requests.adapters.HTTPAdapter.send

    def local_only(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        host = urlsplit(request.url).hostname
        assert host == "127.0.0.1", f"a test tried to reach {request.url}"
        return send(self, request, *args, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", local_only)
