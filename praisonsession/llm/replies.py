"""Reading a chat-completions response: the assistant's text and tool calls, checked.

Servers differ in small ways (Ollama may send tool-call arguments as an object, some omit
tool-call ids); those are normalised here so that the history always holds the OpenAI shape.
Anything that is not a chat completion raises :class:`~praisonsession.llm.errors.LLMResponseError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import LLMResponseError

__all__ = ["ChatReply", "ToolCall", "parse_reply"]


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class ChatReply:
    """The first choice of a chat completion."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message as it goes into the history (and back to the model)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        return message


def parse_reply(body: bytes, url: str) -> ChatReply:
    """Decode and check a 2xx response body."""
    try:
        data = json.loads(body)
    except ValueError:
        raise LLMResponseError(
            f"{url} answered with a body that is not JSON ({_preview(body)}). Check that "
            "base_url points at an OpenAI-compatible endpoint (it usually ends in /v1), "
            "not at a web page or a proxy's login page.",
            url=url,
        ) from None
    if not isinstance(data, dict):
        raise _malformed(url, f"the body is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        if error:
            detail = error.get("message", error) if isinstance(error, dict) else error
            raise LLMResponseError(f"{url} answered with an error: {detail}", url=url)
        raise _malformed(url, "it has no 'choices' list")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise _malformed(url, "choices[0] has no 'message' object")
    usage = data.get("usage")
    model = data.get("model")
    return ChatReply(
        content=_content(message.get("content"), url),
        tool_calls=_tool_calls(message.get("tool_calls"), url),
        finish_reason=choice.get("finish_reason"),
        model=model if isinstance(model, str) else None,
        usage=usage if isinstance(usage, dict) else None,
    )


def _content(content: Any, url: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        texts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    raise _malformed(url, f"message.content is a {type(content).__name__}")


def _tool_calls(calls: Any, url: str) -> list[ToolCall]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise _malformed(url, "message.tool_calls is not a list")
    parsed = []
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise _malformed(url, f"tool_calls[{index}] has no function name")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{index}"
        parsed.append(ToolCall(call_id, name, arguments))
    return parsed


def _malformed(url: str, what: str) -> LLMResponseError:
    return LLMResponseError(
        f"{url} answered with JSON that is not a chat completion: {what}. Check that base_url "
        "points at an OpenAI-compatible /chat/completions endpoint.",
        url=url,
    )


def _preview(body: bytes, limit: int = 80) -> str:
    text = body[:limit].decode("utf-8", "replace")
    return repr(text) + ("…" if len(body) > limit else "") if text else "an empty body"
