"""What an agent sends: one system message, a window of recent turns, then the new message.

The instructions and the session's context go into a single system message at the start,
because several chat templates (Mistral's, on vLLM or Ollama) refuse a second system message.
The window counts turns, not messages: it always starts at a user message, so an assistant's
tool calls are never separated from their results, which every endpoint would reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "CONTEXT_HEADER",
    "LOCAL_FIELDS",
    "SAID_AT",
    "for_model",
    "recent_turns",
    "system_prompt",
]

CONTEXT_HEADER = "Relevant context:\n"
#: Message fields kept in the history for this library only (a turn's idempotency key, say);
#: never sent, since OpenAI refuses a message with a field it does not know.
LOCAL_FIELDS = frozenset({"metadata"})
#: When a user's message was said (seconds since the epoch, as a memory's ``said_at``), in its
#: ``metadata``: shown where the turn is recalled, so "when did I ...?" can be answered.
SAID_AT = "said_at"


def system_prompt(
    name: str,
    role: str,
    instructions: str | None = None,
    goal: str | None = None,
    backstory: str | None = None,
    context: str = "",
) -> str:
    """The system message text; ``context`` (memory and knowledge) comes last when present."""
    parts = [f"You are {name}. Your role: {role}."]
    if goal:
        parts.append(f"Your goal: {goal}")
    if backstory:
        parts.append(backstory)
    if instructions:
        parts.append(instructions)
    if context:
        parts.append(CONTEXT_HEADER + context)
    return "\n\n".join(parts)


def recent_turns(history: Sequence[dict[str, Any]], turns: int | None) -> list[dict[str, Any]]:
    """The messages of the last ``turns`` turns (all of them for None).

    Scans back from the end only as far as the window reaches, so the cost does not grow with
    the length of the history.
    """
    if turns is None:
        return list(history)
    if turns <= 0:
        return []
    seen = 0
    for index in range(len(history) - 1, -1, -1):
        if history[index].get("role") == "user":
            seen += 1
            if seen == turns:
                return list(history[index:])
    return list(history)


def for_model(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as the endpoint may see them: without :data:`LOCAL_FIELDS` (copied only
    where there is something to drop)."""
    return [
        {k: v for k, v in message.items() if k not in LOCAL_FIELDS}
        if LOCAL_FIELDS.intersection(message)
        else message
        for message in messages
    ]
