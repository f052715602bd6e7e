"""Errors from an OpenAI-compatible endpoint, all under :class:`~praisonsession.errors.RemoteError`.

Each says which endpoint failed, how, and what to change; none ever contains the API key.
"""

from __future__ import annotations

from ..errors import RemoteError

__all__ = [
    "LLMAuthError",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMUnavailableError",
]


class LLMError(RemoteError):
    """An LLM endpoint failed. ``status`` is the HTTP status when there was a response."""


class LLMAuthError(LLMError):
    """HTTP 401 or 403: the API key is missing, wrong, or not allowed to use the model.

    Never retried: the same key would be refused again.
    """


class LLMNotConfiguredError(LLMError):
    """No LLM endpoint was configured: no base URL and no API key anywhere.

    Raised at the first ``chat``, before anything is sent (the default endpoint is OpenAI's,
    which refuses a request without a key anyway).
    """

    def __init__(self, agent: str) -> None:
        super().__init__(
            f"Agent {agent!r} has no LLM to talk to: no endpoint or API key is configured. "
            "Configure one of: the OPENAI_API_KEY environment variable (OpenAI); "
            "llm={'model': 'llama3.2', 'base_url': 'http://localhost:11434/v1'} for a local "
            "Ollama (or any OpenAI-compatible server); or PRAISONSESSION_LLM_BASE_URL, "
            "PRAISONSESSION_LLM_MODEL (default gpt-4o-mini) and PRAISONSESSION_LLM_API_KEY in "
            "the environment or a .env file. To try agents offline with no model and no key, "
            "start the local stand-in praisonsession.llm.ScriptedChatServer and pass "
            "llm={'model': 'stand-in', 'base_url': server.url} (docs/pages/agents.md)."
        )


class LLMRequestError(LLMError):
    """Another 4xx: the endpoint understood the request and refused it (bad model, bad URL…)."""


class LLMResponseError(LLMError):
    """The endpoint answered, but not with a chat completion this client can read."""


class LLMUnavailableError(LLMError):
    """No usable answer within the retry bounds (rate limits, 5xx, timeouts, no connection)."""

    def __init__(
        self, message: str, *, url: str = "", status: int | None = None, attempts: int = 0
    ) -> None:
        super().__init__(message, url=url, status=status)
        self.attempts = attempts
