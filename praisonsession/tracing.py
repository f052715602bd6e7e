"""OpenTelemetry spans for what a slow turn is made of: store operations, memory and
knowledge, LLM calls, agent turns and server requests.

Off by default, and then free: each hook is one test of :data:`on`, and opentelemetry is not
imported. It is on when ``PRAISONSESSION_TRACING`` is set (``1``, ``true``, ``yes``) or after
:func:`enable`; spans go to the tracer provider the application configured (or the one given
to :func:`enable`). A provider configured without either switch does not turn it on: a
library that emits spans because some other library set a provider up is a surprise.

Message content (prompts, replies, memory queries) stays out of spans unless asked for with
``PRAISONSESSION_TRACING_CONTENT`` or ``enable(content=True)``. Attribute names follow the
OpenTelemetry GenAI conventions (``gen_ai.*``) and, for store operations, the database ones
(``db.*``). Needs the ``otel`` extra.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any, Protocol, TypeVar, cast

from .errors import MissingDependencyError, install_line

__all__ = ["disable", "enable", "on"]

T = TypeVar("T")


class ChatAnswer(Protocol):
    """What a chat-completion span records of the reply (an ``llm.replies.ChatReply``)."""

    @property
    def usage(self) -> dict[str, Any] | None: ...

    @property
    def model(self) -> str | None: ...

    @property
    def finish_reason(self) -> str | None: ...

    def to_message(self) -> dict[str, Any]: ...


Answer = TypeVar("Answer", bound=ChatAnswer)
Chat = TypeVar("Chat", bound=Callable[..., Coroutine[Any, Any, Any]])

_TRUE = ("1", "true", "yes", "on")
#: Whether spans are made. Hooks test it before anything else.
on: bool = os.environ.get("PRAISONSESSION_TRACING", "").strip().lower() in _TRUE
_content: bool = os.environ.get("PRAISONSESSION_TRACING_CONTENT", "").strip().lower() in _TRUE
_tracer: Any = None
_provider: Any = None

#: AsyncSession operations that are memory or knowledge, as GenAI operation names.
_RECALL = {
    "add_memory": "update_memory",
    "add_memories": "update_memory",
    "search_memory": "search_memory",
    "clear_memory": "delete_memory",
    "add_knowledge": "update_memory",
    "search_knowledge": "retrieval",
    "get_context": "retrieval",
}
_USAGE = (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens"))
_SYSTEMS = {
    "SqliteSession": "sqlite",
    "RedisSession": "redis",
    "JSONSession": "json",
    "InMemorySession": "memory",
}


def enable(content: bool = False, tracer_provider: Any = None) -> None:
    """Make spans from now on, to ``tracer_provider`` (default: the global one); with
    ``content``, spans also carry messages, replies and queries."""
    global on, _content, _tracer, _provider
    _import_trace()
    on, _content, _tracer, _provider = True, content, None, tracer_provider


def disable() -> None:
    """Stop making spans (hooks go back to one test of :data:`on`)."""
    global on
    on = False


def _import_trace() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        raise MissingDependencyError(
            f"Tracing needs OpenTelemetry. Install it with: {install_line('otel')}."
        ) from None
    return trace


def _get_tracer() -> Any:
    global _tracer
    if _tracer is None:
        from ._version import __version__

        trace = _import_trace()
        provider = _provider or trace.get_tracer_provider()
        _tracer = provider.get_tracer("praisonsession", __version__)
    return _tracer


def _span(name: str, kind: str, attributes: dict[str, Any]) -> Any:
    from opentelemetry.trace import SpanKind

    clean = {k: v for k, v in attributes.items() if v is not None}
    return _get_tracer().start_as_current_span(
        name, kind=getattr(SpanKind, kind), attributes=clean, record_exception=True
    )


def _failed(span: Any, error: BaseException | str) -> None:
    from opentelemetry.trace import Status, StatusCode

    kind = error if isinstance(error, str) else type(error).__qualname__
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, kind))


# -- hooks ------------------------------------------------------------------------------------


async def session_call(what: str, session: Any, work: Awaitable[T]) -> T:
    """A span around one ``AsyncSession`` operation: a memory or knowledge operation with
    the GenAI memory attributes, any other a store operation with the database ones."""
    operation = _RECALL.get(what)
    attributes: dict[str, Any] = {"gen_ai.conversation.id": session.session_id}
    if operation is not None:
        name = f"{operation} {what}"
        attributes["gen_ai.operation.name"] = operation
        attributes["praisonsession.operation"] = what
    else:
        system = _SYSTEMS.get(type(session.store).__name__, type(session.store).__name__)
        name = f"{what} {system}"
        attributes["db.system.name"] = system
        attributes["db.operation.name"] = what
    with _span(name, "CLIENT", attributes) as span:
        try:
            return await work
        except BaseException as error:
            _failed(span, error)
            raise


def chat_completion(config: Any, body: dict[str, Any], send: Callable[[], Answer]) -> Answer:
    """A span around one chat completion (retries included), GenAI client attributes."""
    from urllib.parse import urlsplit

    where = urlsplit(config.endpoint)
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",  # the OpenAI-compatible API, whoever serves it
        "gen_ai.request.model": config.model,
        "server.address": where.hostname,
        "server.port": where.port or (443 if where.scheme == "https" else 80),
    }
    for field in ("temperature", "max_tokens", "top_p"):
        if isinstance(body.get(field), (int, float)):
            attributes[f"gen_ai.request.{field}"] = body[field]
    if _content:
        import json

        attributes["gen_ai.input.messages"] = json.dumps(body["messages"], ensure_ascii=False)
    with _span(f"chat {config.model}", "CLIENT", attributes) as span:
        try:
            reply = send()
        except BaseException as error:
            _failed(span, error)
            raise
        usage = reply.usage or {}
        for name, key in (
            ("input_tokens", "prompt_tokens"),
            ("output_tokens", "completion_tokens"),
        ):
            if isinstance(usage.get(key), int):
                span.set_attribute(f"gen_ai.usage.{name}", usage[key])
        if reply.model:
            span.set_attribute("gen_ai.response.model", reply.model)
        if reply.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason])
        if _content:
            import json

            output = json.dumps([reply.to_message()], ensure_ascii=False)
            span.set_attribute("gen_ai.output.messages", output)
        return reply


def agent_turn(chat: Chat) -> Chat:
    """``Agent.achat`` in an ``invoke_agent`` span when tracing is on; as it is when off."""
    import functools

    @functools.wraps(chat)
    async def traced(agent: Any, message: str, **options: Any) -> Any:
        if not on:
            return await chat(agent, message, **options)
        import json

        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.name,
            "gen_ai.conversation.id": agent.session.session_id,
            "gen_ai.request.model": agent.llm.model,
            "gen_ai.input.messages": json.dumps([{"role": "user", "content": message}])
            if _content
            else None,
        }
        with _span(f"invoke_agent {agent.name}", "INTERNAL", attributes) as span:
            try:
                return await chat(agent, message, **options)
            except BaseException as error:
                _failed(span, error)
                raise

    return cast(Chat, traced)  # takes the same arguments, returns what ``chat`` returns


async def server_request(
    scope: MutableMapping[str, Any], receive: Any, send: Any, app: Any
) -> None:
    """A server span around one HTTP request, continuing the caller's trace (traceparent)."""
    if scope.get("type") != "http":
        await app(scope, receive, send)
        return
    from opentelemetry import context, propagate

    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
    method, path = scope.get("method", "GET"), scope.get("path", "/")
    attributes = {"http.request.method": method, "url.path": path, "url.scheme": "http"}
    token = context.attach(propagate.extract(headers))
    try:
        with _span(f"{method} {path}", "SERVER", attributes) as span:

            async def sending(message: dict[str, Any]) -> None:
                if message.get("type") == "http.response.start":
                    status = int(message.get("status", 0))
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        _failed(span, str(status))
                await send(message)

            await app(scope, receive, sending)
    finally:
        context.detach(token)
