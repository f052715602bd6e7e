"""``ChatClient``: POST ``{base_url}/chat/completions`` over one pooled ``requests.Session``.

Blocking on purpose: agents call it through
:func:`praisonsession._internal.runtime.offload`, which runs it on the caller's thread in sync
code and in a worker thread under a running event loop.
This module imports ``requests`` and ``tenacity``; nothing imports it until an agent first chats.
"""

from __future__ import annotations

import contextlib
import json
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import requests

from .. import tracing
from .._internal.redaction import redact_text
from .._internal.runtime import offload, remaining
from .config import LLMConfig
from .errors import LLMAuthError, LLMRequestError
from .loop_http import LoopConnections
from .replies import ChatReply, parse_reply
from .retry import (
    TransientError,
    acall_with_retries,
    call_with_retries,
    is_retry_status,
    retry_after_seconds,
)

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
        _read_environment_once(self._http, config.endpoint, bool(config.api_key))
        # the loop path: a plain http:// endpoint, no proxy, no .netrc credentials
        self._on_loop = (
            config.endpoint.startswith("http://")
            and "@" not in config.endpoint.split("/")[2]  # credentials in the URL: requests
            and not self._http.proxies
            and self._http.auth is None
        )
        self._pools: weakref.WeakKeyDictionary[Any, LoopConnections] = weakref.WeakKeyDictionary()

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> ChatReply:
        """One chat completion: the request body is ``model``, ``messages``, the configured
        request fields, then ``tools`` and ``tool_choice`` when given."""
        body = self._body(messages, tools, tool_choice)
        data = _encode(body)

        def send() -> ChatReply:
            return call_with_retries(lambda: self._post(data), self.config)

        return tracing.chat_completion(self.config, body, send) if tracing.on else send()

    async def acomplete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> ChatReply:
        """``complete`` for a running event loop: on the loop itself for an ``http://``
        endpoint reached without a proxy (see ``loop_http``), else in a worker thread."""
        connections = self._loop_connections()
        if connections is None or tracing.on:  # the span wraps the worker thread's call
            return await offload(self.complete, messages, tools, tool_choice)
        data = _encode(self._body(messages, tools, tool_choice))

        async def attempt() -> ChatReply:
            timeout = max(0.001, remaining(self.config.timeout))
            status, headers, content = await connections.post(data, timeout)
            return self._answer(status, headers, content)

        return await acall_with_retries(attempt, self.config)

    def _body(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": list(messages)}
        body.update(self.config.params)
        if tools:
            body["tools"] = list(tools)
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        return body

    def _loop_connections(self) -> LoopConnections | None:
        if not self._on_loop:
            return None
        import asyncio

        loop = asyncio.get_running_loop()
        connections = self._pools.get(loop)
        if connections is None:
            unsent = ("connection", "accept-encoding")  # the loop path reads plain bodies
            headers = {k: v for k, v in self._http.headers.items() if k.lower() not in unsent}
            connections = self._pools[loop] = LoopConnections(self.config.endpoint, headers)
        return connections

    def _post(self, data: bytes) -> ChatReply:
        url = self.config.shown_endpoint  # what messages show: no password
        try:
            # never wait past the calling session's deadline (execution.bounded)
            timeout = max(0.001, remaining(self.config.timeout))
            response = self._http.post(self.config.endpoint, data=data, timeout=timeout)
        except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema) as exc:
            reason = redact_text(str(exc), self.config.api_key)
            raise LLMRequestError(
                f"Cannot send to {url}: {reason.rstrip('.')}. Fix base_url.", url=url
            ) from None
        return self._answer(response.status_code, response.headers, response.content)

    def _answer(self, status: int, headers: Mapping[str, str], content: bytes) -> ChatReply:
        """The reply in a 2xx answer; else the error the status stands for."""
        url = self.config.shown_endpoint
        if 200 <= status < 300:
            return parse_reply(content, url)
        detail = _error_detail(content)
        if is_retry_status(status):
            raise TransientError(status, detail, retry_after_seconds(headers))
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
        for loop, connections in list(self._pools.items()):
            if not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop stopped meanwhile
                    loop.call_soon_threadsafe(connections.close)
        self._pools.clear()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatClient({self.config!r})"


def _read_environment_once(http: requests.Session, endpoint: str, has_key: bool) -> None:
    """Take the environment's proxy, CA bundle and ``.netrc`` settings for ``endpoint`` now.

    requests reads them on every call otherwise (every environment variable, and ``~/.netrc``
    from disk), Python work that holds the GIL: in the server, many such calls in worker
    threads kept its event loop waiting.
    """
    http.proxies.update(requests.utils.get_environ_proxies(endpoint))
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        http.verify = bundle
    if not has_key:
        netrc = requests.utils.get_netrc_auth(endpoint)
        if netrc:
            http.auth = netrc
    http.trust_env = False


def _error_detail(content: bytes, limit: int = 300) -> str:
    """The server's own words: OpenAI's ``error.message``, vLLM's ``message``, or the text."""
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message[:limit]
        for key in ("error", "message", "detail"):
            said = data.get(key)
            if isinstance(said, str):
                return said[:limit]
    return content.decode("utf-8", "replace").strip()[:limit]


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
