"""``ChatClient``: POST ``{base_url}/chat/completions`` over one pooled ``requests.Session``.

Blocking on purpose: agents call it through :func:`praisonsession.execution.offload`, which runs
it on the caller's thread in sync code and in a worker thread under a running event loop.
This module imports ``requests`` and ``tenacity``; nothing imports it until an agent first chats.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import requests

from .. import tracing
from ..execution import remaining
from ..redaction import redact_text
from .config import LLMConfig
from .errors import LLMAuthError, LLMRequestError
from .replies import ChatReply, parse_reply
from .retry import TransientError, call_with_retries, is_retry_status, retry_after_seconds

__all__ = ["ChatClient"]


class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint, with bounded retries.

    One client keeps its connections open between calls (``requests.Session``); close it, or
    use it as a context manager, to release them.
    """

    def __init__(self, config: LLMConfig) -> None:
        from .._version import __version__

        self.config = config
        self._http = requests.Session()
        self._http.headers.update(
            {
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": f"praisonsession/{__version__}",
            }
        )
        if config.api_key:
            self._http.headers["Authorization"] = f"Bearer {config.api_key}"

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> ChatReply:
        """One chat completion: the request body is ``model``, ``messages``, the configured
        request fields, then ``tools`` and ``tool_choice`` when given."""
        body: dict[str, Any] = {"model": self.config.model, "messages": list(messages)}
        body.update(self.config.params)
        if tools:
            body["tools"] = list(tools)
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        send = lambda: call_with_retries(lambda: self._post(data), self.config)  # noqa: E731
        return tracing.chat_completion(self.config, body, send) if tracing.on else send()

    def _post(self, data: bytes) -> ChatReply:
        url = self.config.shown_endpoint  # what messages show: no password
        try:
            # never wait past the calling session's deadline (execution.bounded)
            timeout = max(0.001, remaining(self.config.timeout))
            response = self._http.post(self.config.endpoint, data=data, timeout=timeout)
        except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema) as exc:
            reason = redact_text(str(exc), self.config.api_key)
            raise LLMRequestError(
                f"Cannot send to {url}: {reason}. Fix base_url.", url=url
            ) from None
        status = response.status_code
        if 200 <= status < 300:
            return parse_reply(response.content, url)
        detail = _error_detail(response)
        if is_retry_status(status):
            raise TransientError(status, detail, retry_after_seconds(response.headers))
        if status in (401, 403):
            sent = "an API key" if self.config.api_key else "no API key"
            raise LLMAuthError(
                f"{url} refused the request with HTTP {status} ({detail or 'no detail'}); "
                f"{sent} was sent. Set a valid key for this endpoint: llm={{'api_key': ...}}, "
                "PRAISONSESSION_LLM_API_KEY or OPENAI_API_KEY.",
                url=url,
                status=status,
            )
        hint = ""
        if status in (404, 405):
            hint = (
                " Check base_url: OpenAI-compatible servers usually end in /v1 "
                "(Ollama: http://localhost:11434/v1, LM Studio: http://localhost:1234/v1), "
                "and check that the model name exists there."
            )
        raise LLMRequestError(
            f"{url} refused the request with HTTP {status}: {detail or 'no detail'}.{hint}",
            url=url,
            status=status,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatClient({self.config!r})"


def _error_detail(response: requests.Response, limit: int = 300) -> str:
    """The server's own words: OpenAI's ``error.message``, vLLM's ``message``, or the text."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"][:limit]
        for key in ("error", "message", "detail"):
            if isinstance(data.get(key), str):
                return data[key][:limit]
    return response.text.strip()[:limit]
