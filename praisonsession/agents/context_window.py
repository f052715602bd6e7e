"""What an agent sends, assembled within a token budget.

Parts, in the order of priority the design gives: the system message (instructions), the new
message, the most recent turns, memory and knowledge context, older turns recalled by
similarity, and the running summary of everything older. Each part takes what it needs up to
its share of what the parts before it left; what a part leaves unused goes to the next ones.
So on every turn, whatever the history length, the request fits the budget, and the
lower-priority parts are the ones cut first.

Everything but the recent turns and the new message goes into the one system message (several
chat templates refuse a second one). Turns are kept whole: an assistant's tool calls always
travel with their results, and a call whose result never came (a turn cut off by a crash) is
left out of the request, never sent alone. A single message larger than what is left is cut
with a marker, never sent whole and never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .prompt import SAID_AT, for_model
from .tokens import ESTIMATE_MARGIN, MESSAGE_OVERHEAD, TokenCounter, cut_to_tokens, message_tokens

__all__ = [
    "DEFAULT_CONTEXT_BUDGET",
    "MODEL_CONTEXT_WINDOWS",
    "RECALL_HEADER",
    "SUMMARY_HEADER",
    "Request",
    "assemble",
    "default_budget",
    "fit_turn",
    "split_turns",
]

Message = dict[str, Any]

#: The budget when neither the agent, the settings nor the model table give one.
DEFAULT_CONTEXT_BUDGET = 8000
#: A per-model default never goes above this: a long conversation should not cost a full
#: 128k-token window on every turn.
MAX_MODEL_DEFAULT = 32000
#: Context windows (tokens) of well-known models, matched by prefix of the model name.
MODEL_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "claude": 200_000,
    "gemini": 1_000_000,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama3": 8192,
    "llama2": 4096,
    "mistral": 32_768,
    "mixtral": 32_768,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "gemma2": 8192,
    "gemma3": 131_072,
    "phi3": 4096,
    "phi4": 16_384,
    "deepseek": 65_536,
}

SUMMARY_HEADER = "Summary of the earlier conversation:\n"
RECALL_HEADER = "Earlier turns related to the new message (oldest first):\n"

# Shares of what is left when each part's turn comes (the rest flows to later parts).
_RECENT_SHARE = 0.5
_CONTEXT_SHARE = 0.35
_RECALL_SHARE = 0.6


def default_budget(model: str) -> int:
    """A model's default budget: three quarters of its context window (the rest is for the
    reply), at most :data:`MAX_MODEL_DEFAULT`; :data:`DEFAULT_CONTEXT_BUDGET` if unknown."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefix in sorted(MODEL_CONTEXT_WINDOWS, key=len, reverse=True):
        if name.startswith(prefix):
            return min(MAX_MODEL_DEFAULT, MODEL_CONTEXT_WINDOWS[prefix] * 3 // 4)
    return DEFAULT_CONTEXT_BUDGET


@dataclass
class Request:
    """An assembled request: the messages and what each part cost."""

    messages: list[Message]
    budget: int
    #: Tokens per part: system, message, recent, context, recalled, summary.
    parts: dict[str, int] = field(default_factory=dict)
    #: Index in the history of the first message sent as a recent turn (len(history) if none).
    window_start: int = 0
    #: How many recalled turns made it in.
    recalled: int = 0
    #: Whether some text was cut with a marker.
    cut: bool = False
    counter: TokenCounter | None = field(default=None, repr=False, compare=False)

    @cached_property
    def tokens(self) -> int:
        """What the whole request counts, counted when first asked: a turn never needs it,
        and its system message (recalled turns, summary) is new text on every turn."""
        if self.counter is None:
            raise ValueError("this Request was made without a counter")
        return sum(message_tokens(m, self.counter) for m in self.messages)


def split_turns(messages: Sequence[Message], offset: int = 0) -> list[tuple[int, int]]:
    """``(start, stop)`` index pairs of the turns in ``messages``: each turn starts at a user
    message (messages before the first user message form a turn of their own)."""
    turns: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(messages) + 1):
        if index == len(messages) or messages[index].get("role") == "user":
            turns.append((start + offset, index + offset))
            start = index
    return turns if messages else []


def _turns_from_end(messages: Sequence[Message]) -> Iterator[tuple[int, int]]:
    """``split_turns`` newest first, scanning back only as far as the caller reads, so the
    cost of a turn does not grow with the length of the history."""
    stop = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user" or index == 0:
            yield index, stop
            stop = index


def paired(messages: Sequence[Message]) -> list[Message]:
    """The turn as it may be sent: tool calls without a result, and results without their
    call, are left out (an endpoint rejects either)."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    asked: set[Any] = set()
    out: list[Message] = []
    for message in messages:
        calls = message.get("tool_calls")
        if message.get("role") == "assistant" and calls:
            kept = [c for c in calls if isinstance(c, dict) and c.get("id") in answered]
            asked.update(c.get("id") for c in kept)
            if len(kept) != len(calls):
                message = {k: v for k, v in message.items() if k != "tool_calls"}
                if kept:
                    message["tool_calls"] = kept
                elif not message.get("content"):
                    continue
        elif message.get("role") == "tool" and message.get("tool_call_id") not in asked:
            continue
        out.append(message)
    return out


def assemble(
    *,
    system: str,
    message: str,
    history: Sequence[Message],
    budget: int,
    counter: TokenCounter,
    max_turns: int | None = None,
    context: str = "",
    recalled: Sequence[tuple[int, Sequence[Message]]] = (),
    summary: str = "",
) -> Request:
    """The request for one turn, within ``budget`` tokens (see the module's docstring).

    ``history`` is the saved conversation (the raw log, never changed here); ``max_turns``
    bounds the recent turns (the agent's ``history_window``); ``recalled`` are older turns
    chosen by similarity as ``(start index, messages)`` in the order they happened (those that
    are in the recent window anyway are skipped).
    """
    limit = budget if counter.exact else int(budget * (1 - ESTIMATE_MARGIN))
    parts: dict[str, int] = {}
    cut = False

    # 1. the system message's own text (instructions), cut only if it alone is half the budget
    base = system
    base_tokens = counter.count(base) + MESSAGE_OVERHEAD
    if base_tokens > limit // 2:
        base = cut_to_tokens(system, limit // 2 - MESSAGE_OVERHEAD, counter)
        base_tokens = counter.count(base) + MESSAGE_OVERHEAD
        cut = True
    parts["system"] = base_tokens
    left = limit - base_tokens

    # 2. the new message, cut with a marker if it does not fit what is left
    text = message
    new_tokens = counter.count(text) + MESSAGE_OVERHEAD
    if new_tokens > left:
        text = cut_to_tokens(message, max(left - MESSAGE_OVERHEAD, 1), counter)
        new_tokens = counter.count(text) + MESSAGE_OVERHEAD
        cut = True
    parts["message"] = new_tokens
    left -= new_tokens

    # 3. the most recent turns, newest first, whole, up to their share
    share = int(left * _RECENT_SHARE)
    recent: list[Message] = []
    used = 0
    window_start = len(history)
    for count, (start, stop) in enumerate(_turns_from_end(history)):
        if max_turns is not None and count >= max_turns:
            break
        turn = paired(for_model(list(history[start:stop])))
        cost = sum(message_tokens(m, counter) for m in turn)
        if used + cost > share:
            if count == 0 and share - used > 4 * MESSAGE_OVERHEAD:
                turn = fit_turn(turn, share - used, counter)  # the last turn alone is too big
                cost = sum(message_tokens(m, counter) for m in turn)
                if used + cost <= share:
                    cut = True
                    recent[:0] = turn
                    used += cost
                    window_start = start
            break
        recent[:0] = turn
        used += cost
        window_start = start
    parts["recent"] = used
    left -= used

    # 4-6. memory/knowledge context, recalled turns, then the summary, in the system message
    sections: list[str] = []
    header_cost = 2  # the blank line between sections
    context_text = context.strip()
    if context_text:
        room = int(left * _CONTEXT_SHARE) - header_cost
        fitted = _fit_text(_CONTEXT_HEADER + context_text, room, counter)
        cut |= fitted != _CONTEXT_HEADER + context_text
        parts["context"] = counter.count(fitted) + header_cost if fitted else 0
        left -= parts["context"]
        if fitted:
            sections.append(fitted)
    kept = 0
    if recalled:
        room = int(left * _RECALL_SHARE) - header_cost - counter.count(RECALL_HEADER)
        lines: list[str] = []
        spent = 0
        for start, older in recalled:
            if start >= window_start:
                continue
            line = _turn_text(older)
            cost = counter.count(line) + 1
            if spent + cost > room:
                continue  # a long old turn gives way; a shorter one after it may still fit
            lines.append(line)
            spent += cost
            kept += 1
        if lines:
            block = RECALL_HEADER + "\n".join(lines)
            parts["recalled"] = counter.count(block) + header_cost
            left -= parts["recalled"]
            sections.append(block)
    if summary.strip():
        room = left - header_cost
        fitted = _fit_text(SUMMARY_HEADER + summary.strip(), room, counter)
        cut |= fitted != SUMMARY_HEADER + summary.strip()
        if fitted:
            parts["summary"] = counter.count(fitted) + header_cost
            left -= parts["summary"]
            sections.insert(0, fitted)  # the story so far reads best before the details

    system_text = "\n\n".join([base, *sections]) if sections else base
    messages: list[Message] = [{"role": "system", "content": system_text}]
    messages += recent
    messages.append({"role": "user", "content": text})
    return Request(
        messages=messages,
        budget=budget,
        counter=counter,
        parts=parts,
        window_start=window_start,
        recalled=kept,
        cut=cut,
    )


_CONTEXT_HEADER = "Relevant context:\n"


def _fit_text(text: str, room: int, counter: TokenCounter) -> str:
    """``text`` cut to ``room`` tokens; "" when there is no useful room at all."""
    if room < 16:
        return ""
    return cut_to_tokens(text, room, counter)


def _turn_text(turn: Sequence[Message]) -> str:
    """An old turn as lines of the system message: who said what (tool traffic as a note)."""
    lines = []
    for message in turn:
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            lines.append(f"  (tool result: {_flat(content, 300)})")
        elif message.get("tool_calls"):
            names = ", ".join(
                str((c.get("function") or {}).get("name", "?"))
                for c in message["tool_calls"]
                if isinstance(c, dict)
            )
            lines.append(f"  (assistant called {names})")
        elif content:
            lines.append(f"- {_when(message)}{role}: {_flat(content, 2000)}")
    return "\n".join(lines)


def _when(message: Message) -> str:
    """When a recalled user's message was said, as a memory's context shows it (local time, to
    the minute), then a space; "" for a message that does not say (saved before it did)."""
    metadata = message.get("metadata")
    said = metadata.get(SAID_AT) if isinstance(metadata, dict) else None
    if (
        message.get("role") == "user"
        and isinstance(said, (int, float))
        and not isinstance(said, bool)
    ):
        from ..recall.memory.context import said_when

        return f"[{said_when(float(said))}] "
    return ""


def _flat(content: Any, limit: int) -> str:
    text = " ".join(str(content).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fit_turn(turn: list[Message], room: int, counter: TokenCounter) -> list[Message]:
    """The newest turn made to fit ``room``: its longest texts cut with a marker, its
    structure (tool calls and their results) kept."""
    turn = [dict(m) for m in turn]
    for _ in range(4 * len(turn)):
        total = sum(message_tokens(m, counter) for m in turn)
        if total <= room:
            break
        index = max(
            range(len(turn)),
            key=lambda i: counter.count(str(turn[i].get("content") or "")),
        )
        content = str(turn[index].get("content") or "")
        own = counter.count(content)
        if own == 0:
            break
        target = max(own - (total - room), 0)
        turn[index]["content"] = cut_to_tokens(content, target, counter)
        if counter.count(turn[index]["content"]) >= own:
            break
    return turn
