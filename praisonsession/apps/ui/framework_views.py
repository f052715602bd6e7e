"""Framework logs in their framework's terms, for the browser: a LangGraph thread's checkpoints
with their channel values decoded, ADK events and OpenAI Agents SDK items as a conversation
with their tool calls and results labelled.

Each stored record becomes one entry, ``{"role", "author", "title", "parts", "details"}``; a
part is ``text``, ``function_call`` (name, arguments, call id), ``function_call_output``
(name when known, output, call id), ``value`` (a label and a JSON value), ``conversation`` (a
channel's messages, as entries) or ``undecodable`` (a label and why). Nothing here imports a
framework but LangGraph's serializer, and that only when a checkpoint is decoded: the adapters
store JSON, except LangGraph's typed bytes, which only its ``serde`` can read. Bytes are never
shown, neither raw nor as base64: an entry says how many there were.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import PraisonSessionError, install_line
from ...integrations.langgraph_threads import CHECKPOINTS, unpack

__all__ = ["FRAMEWORK_LOGS", "framework_of", "view_page"]

#: The logs the adapters keep, and the framework each belongs to (the adapters' own names:
#: ``integrations.adk.EVENTS_LOG``, ``integrations.openai_agents.LOG_NAME``; a test pins them).
FRAMEWORK_LOGS = {CHECKPOINTS: "langgraph", "adk.events": "adk", "openai.items": "openai-agents"}

Entry = dict[str, Any]
Part = dict[str, Any]
_INTERNAL = ("__", "branch:")  # LangGraph's own channels: the start, interrupts, edges


def framework_of(log: str) -> str | None:
    """The framework whose adapter keeps ``log``, or None for any other log."""
    return FRAMEWORK_LOGS.get(log)


def view_page(log: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One page of ``log`` (a framework's log) in its framework's terms: ``framework``,
    ``messages`` (one entry per stored record) and ``notice`` (why nothing could be decoded,
    else None)."""
    framework = FRAMEWORK_LOGS[log]
    notice = None
    if framework == "langgraph":
        decode, notice = _langgraph_decoder()
        entries = [_checkpoint(record, decode) for record in messages]
    elif framework == "adk":
        entries = [_adk_event(event) for event in messages]
    else:
        names = {
            item.get("call_id"): item.get("name")
            for item in messages
            if isinstance(item, dict) and "call_id" in item and "name" in item
        }
        entries = [_openai_item(item, names) for item in messages]
    return {"framework": framework, "messages": entries, "notice": notice}


def _entry(
    role: str, parts: list[Part], *, author: Any = None, title: Any = None, details: Any = None
) -> Entry:
    return {
        "role": role,
        "author": author if isinstance(author, str) else None,
        "title": title if isinstance(title, str) else None,
        "parts": parts,
        "details": details or None,
    }


def _arguments(value: Any) -> Any:
    """Arguments as sent: a JSON string is shown as the value it holds."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _call(name: Any, arguments: Any, call_id: Any) -> Part:
    return {
        "kind": "function_call",
        "name": name,
        "arguments": _arguments(arguments),
        "call_id": call_id,
    }


def _output(name: Any, output: Any, call_id: Any) -> Part:
    return {"kind": "function_call_output", "name": name, "output": output, "call_id": call_id}


def _value(label: str, value: Any) -> Part:
    return {"kind": "value", "label": label, "value": value}


# -- OpenAI Agents SDK: one item, one entry --------------------------------------------------


def _openai_item(item: Any, names: Mapping[Any, Any]) -> Entry:
    if not isinstance(item, dict):
        return _entry("?", [_value("item", item)])
    kind = item.get("type")
    rest = {k: v for k, v in item.items() if k not in ("type", "role", "content")}
    if kind == "function_call":
        details = {k: v for k, v in rest.items() if k not in ("name", "arguments", "call_id")}
        part = _call(item.get("name"), item.get("arguments"), item.get("call_id"))
        return _entry("assistant", [part], details=details)
    if kind == "function_call_output":
        details = {k: v for k, v in rest.items() if k not in ("output", "call_id")}
        call_id = item.get("call_id")
        part = _output(names.get(call_id), _arguments(item.get("output")), call_id)
        return _entry("tool", [part], details=details)
    role = item.get("role")
    if isinstance(role, str):  # a message, as given or as the model answered it
        parts = _openai_content(item.get("content"))
        return _entry(role, parts, details={k: v for k, v in rest.items() if k != "status"})
    # another kind of item: reasoning, a hosted tool's call or its output...
    label = kind if isinstance(kind, str) else "item"
    role = "tool" if label.endswith("_output") else "assistant"
    return _entry(role, [_value(label, rest)], title=label)


def _openai_content(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [{"kind": "text", "text": content}]
    if not isinstance(content, list):
        return [] if content is None else [_value("content", content)]
    parts: list[Part] = []
    for piece in content:
        if isinstance(piece, dict) and isinstance(piece.get("text"), str):
            parts.append({"kind": "text", "text": piece["text"]})
        elif isinstance(piece, dict) and isinstance(piece.get("refusal"), str):
            parts.append(_value("refusal", piece["refusal"]))
        else:
            label = piece.get("type") if isinstance(piece, dict) else None
            parts.append(_value(label if isinstance(label, str) else "content", piece))
    return parts


# -- Google ADK: one event, one entry --------------------------------------------------------


def _adk_event(event: Any) -> Entry:
    if not isinstance(event, dict):
        return _entry("?", [_value("event", event)])
    held = event.get("content")
    content: dict[str, Any] = held if isinstance(held, dict) else {}
    listed = content.get("parts")
    raw_parts: list[Any] = listed if isinstance(listed, list) else []
    parts = [_adk_part(part) for part in raw_parts if isinstance(part, dict)]
    role = content.get("role")
    if parts and all(p["kind"] == "function_call_output" for p in parts):
        role = "tool"
    elif role == "model":
        role = "assistant"
    details = {
        k: v
        for k, v in event.items()
        if k not in ("content", "author") and v not in ({}, [], None, "")
    }
    actions = details.get("actions")
    if isinstance(actions, dict):
        kept = {k: v for k, v in actions.items() if v not in ({}, [], None, "")}
        if kept:
            details["actions"] = kept
        else:
            del details["actions"]
    return _entry(
        role if isinstance(role, str) else "event",
        parts,
        author=event.get("author"),
        details=details,
    )


def _adk_part(part: dict[str, Any]) -> Part:
    if isinstance(part.get("text"), str):
        if part.get("thought"):
            return _value("thought", part["text"])
        return {"kind": "text", "text": part["text"]}
    call = part.get("function_call")
    if isinstance(call, dict):
        return _call(call.get("name"), call.get("args"), call.get("id"))
    response = part.get("function_response")
    if isinstance(response, dict):
        return _output(response.get("name"), response.get("response"), response.get("id"))
    for binary in ("inline_data", "blob"):
        data = part.get(binary)
        if isinstance(data, dict):
            text = data.get("data")
            size = len(text) * 3 // 4 if isinstance(text, str) else 0  # base64: 4 chars, 3 bytes
            return _value(binary, {"mime_type": data.get("mime_type"), "bytes": f"about {size}"})
    label = next((k for k, v in part.items() if v not in (None, {}, [])), "part")
    return _value(label, part.get(label, part))


# -- LangGraph: one checkpoint, one entry -----------------------------------------------------

Decoder = Callable[[tuple[str, bytes]], Any]


class _CannotDecode(Exception):
    """Why a value is shown as a reason, not as what it holds."""


def _langgraph_decoder() -> tuple[Decoder, str | None]:
    """LangGraph's own serializer (the saver's default), or a decoder that says why not and
    that reason."""
    try:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    except ImportError:
        reason = "LangGraph is not installed where the browser runs: " + install_line("langgraph")

        def missing(blob: tuple[str, bytes]) -> Any:
            raise _CannotDecode(reason)

        return missing, reason
    serde = JsonPlusSerializer()

    def decode(blob: tuple[str, bytes]) -> Any:
        kind = blob[0]
        if kind == "pickle":  # never unpickled here, whatever the serializer allows
            raise _CannotDecode("a pickled value: the browser never unpickles")
        try:
            return serde.loads_typed(blob)
        except NotImplementedError:
            raise _CannotDecode(
                f"stored as {kind!r}, which LangGraph's JsonPlusSerializer cannot read (a "
                "serde of your own, or LangGraph's EncryptedSerializer, wrote it)"
            ) from None
        except Exception as exc:  # a foreign serializer's bytes: say so, show the rest
            raise _CannotDecode(f"LangGraph's serializer could not read it: {exc}") from None

    return decode, None


def _checkpoint(record: Any, decode: Decoder) -> Entry:
    if not isinstance(record, dict) or record.get("role") != "checkpoint":
        return _entry("?", [_value("record", _plain(record))])
    what = f"checkpoint {record.get('id')!r}"
    details: dict[str, Any] = {
        "id": record.get("id"),
        "parent": record.get("parent"),
        "namespace": record.get("ns") or None,
    }
    for name in ("metadata", "checkpoint"):
        try:
            decoded = decode(unpack(record.get(name), what))
        except (_CannotDecode, PraisonSessionError) as exc:
            details[name] = {"undecodable": _reason(exc)}
            continue
        if name == "checkpoint" and isinstance(decoded, dict):
            details["at"] = decoded.get("ts")
            details["updated_channels"] = _plain(decoded.get("updated_channels"))
        elif name == "metadata":
            details["metadata"] = _plain(decoded)
    stored = record.get("values")
    values: dict[str, Any] = stored if isinstance(stored, dict) else {}
    ordered = sorted(values, key=lambda c: (c.startswith(_INTERNAL), c))
    parts = [_channel(channel, values[channel], decode, what) for channel in ordered]
    sources = record.get("src")
    if isinstance(sources, dict) and sources:
        details["unchanged"] = {
            channel: f"as stored at message #{at + 1}" if isinstance(at, int) else at
            for channel, at in sorted(sources.items())
        }
    return _entry("checkpoint", parts, title=record.get("content"), details=details)


def _channel(channel: str, packed: Any, decode: Decoder, what: str) -> Part:
    label = f"{channel} (LangGraph's)" if channel.startswith(_INTERNAL) else channel
    try:
        value = decode(unpack(packed, what))
    except (_CannotDecode, PraisonSessionError) as exc:
        return {"kind": "undecodable", "label": label, "reason": _reason(exc)}
    if isinstance(value, list) and value and all(_is_message(m) for m in value):
        return {"kind": "conversation", "label": label, "messages": [_message(m) for m in value]}
    return _value(label, _plain(value))


def _reason(exc: Exception) -> str:
    return exc.args[0] if isinstance(exc, _CannotDecode) else str(exc)


def _is_message(value: Any) -> bool:
    """A LangChain message (what ``add_messages`` keeps), told by its fields alone."""
    return isinstance(getattr(value, "type", None), str) and hasattr(value, "content")


_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _message(message: Any) -> Entry:
    kind = message.type
    parts: list[Part] = []
    content = message.content
    if isinstance(content, str):
        if content:
            parts.append({"kind": "text", "text": content})
    else:
        parts.extend(_openai_content(_plain(content)))
    for call in getattr(message, "tool_calls", None) or []:
        if isinstance(call, dict):
            parts.append(_call(call.get("name"), _plain(call.get("args")), call.get("id")))
    if kind == "tool":
        output = parts.pop(0)["text"] if parts and parts[0]["kind"] == "text" else None
        parts.insert(0, _output(getattr(message, "name", None), output, message.tool_call_id))
    details = {"id": getattr(message, "id", None)}
    name = getattr(message, "name", None)
    return _entry(
        _ROLES.get(kind, kind),
        parts,
        author=name if kind != "tool" else None,
        details={k: v for k, v in details.items() if v},
    )


def _plain(value: Any, depth: int = 0) -> Any:
    """A decoded value as JSON: models and dataclasses as their fields, bytes as a count."""
    if depth > 50:
        return repr(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_plain(v, depth + 1) for v in items]
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if _is_message(value):
        return _message(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value), depth + 1)
    return repr(value)
