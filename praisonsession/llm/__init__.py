"""Talking to any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LM Studio).

``resolve_llm`` turns an ``llm=`` argument plus settings and environment into an
:class:`LLMConfig`; :class:`ChatClient` sends requests with bounded retries and typed errors;
:class:`ScriptedChatServer` is a local stand-in endpoint for offline tutorials and tests.
Importing this package does not import ``requests`` or ``tenacity``; the client loads them.
It imports only the settings and the ground floor; agents stand on it.
"""

from typing import TYPE_CHECKING, Any

from .config import DEFAULT_BASE_URL, OLLAMA_BASE_URL, LLMConfig, resolve_llm
from .errors import (
    LLMAuthError,
    LLMError,
    LLMNotConfiguredError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
)
from .replies import ChatReply, ToolCall

if TYPE_CHECKING:
    from .client import ChatClient
    from .local_server import Reply, ScriptedChatServer

__all__ = [
    "DEFAULT_BASE_URL",
    "OLLAMA_BASE_URL",
    "ChatClient",
    "ChatReply",
    "LLMAuthError",
    "LLMConfig",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMUnavailableError",
    "Reply",
    "ScriptedChatServer",
    "ToolCall",
    "resolve_llm",
]

_LAZY = {"ChatClient": "client", "Reply": "local_server", "ScriptedChatServer": "local_server"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
