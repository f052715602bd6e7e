"""Compaction as a view: a running summary of the turns that left the window.

The raw conversation is never rewritten. A summary is a record appended to the agent's
summaries log (``agent:<name>.summaries``, beside ``agent:<name>.history`` in the session's
store, so forks, snapshots, restores, archives and erasure treat it like the history)::

    {"role": "summary", "version": 3, "covers": [0, 412], "turns": 206, "method": "llm",
     "content": "...", "model": "gpt-4o-mini", "created_at": 1732434000.0, "usage": {...}}

``covers`` is the slice of the history it stands for, ``turns`` how many turns that slice
holds (so the next compaction numbers its turns without reading the history). A fork cut at
message ``n`` keeps every record; the agent uses the newest one whose slice ends at or before
``n``. The summary is cut to its token limit if the model wrote more, so what every request
carries stays bounded.

One compaction makes one summary call: the previous summary and the turns that left the window
since, with :data:`SUMMARY_PROMPT`. If that call fails, the turn goes on with a deterministic
extractive summary (the sentences that state something: numbers, names, "my ..."), recorded
with ``"method": "extractive"``; the next compaction asks the model again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .context_window import split_turns
from .tokens import CUT_MARKER, CachedCounter, TokenCounter, cut_to_tokens

__all__ = [
    "COMPACT_EVERY",
    "SUMMARY_PROMPT",
    "compact",
    "extractive_summary",
    "latest_summary",
    "needs_compaction",
]

Message = dict[str, Any]

#: Turns that must have left the window (and are in no summary yet) before a compaction runs.
COMPACT_EVERY = 8

SUMMARY_PROMPT = (
    "You keep the running summary of a long conversation between a user and an assistant. "
    "Rewrite the summary so that it also covers the new turns below. Keep every durable fact "
    "the user gave (names, numbers, codes, dates, places, preferences, decisions, open tasks) "
    "as a short bullet, word for word where exact values matter. When a later turn corrects "
    "an earlier fact, keep only the corrected value and say it was corrected. Drop small talk. "
    "Answer with the bullets only, at most {words} words."
)

_FACT_HINTS = re.compile(
    r"\d|\b(?:my|mine|i am|i'm|i have|i've|call me|prefer|favou?rite|remember|"
    r"actually|correction|changed|moved|now|always|never|allergic|birthday|name)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"[^.!?\n]+[.!?]?")


def latest_summary(records: Sequence[Message], history_length: int) -> Message | None:
    """The newest summary record that covers no message beyond ``history_length``."""
    for record in reversed(records):
        covers = record.get("covers")
        if (
            record.get("role") == "summary"
            and isinstance(covers, list)
            and len(covers) == 2
            and isinstance(covers[1], int)
            and covers[1] <= history_length
        ):
            return record
    return None


def needs_compaction(
    history: Sequence[Message], covered: int, window_start: int, every: int
) -> bool:
    """Whether at least ``every`` turns between ``covered`` and the window are unsummarised.

    Reads from ``covered`` on only until it has counted ``every`` turns (each starts at a user
    message, or at ``covered``), so a turn's check does not grow with the history.
    """
    if window_start - covered <= 0:
        return False
    turns = 0
    for index in range(covered, window_start):
        if index == covered or history[index].get("role") == "user":
            turns += 1
            if turns >= every:
                return True
    return False


def transcript(messages: Sequence[Message], offset: int = 0) -> str:
    """Turns as numbered plain lines (tool traffic summarised), for a summary prompt."""
    lines = []
    number = 0
    for message in messages:
        role = message.get("role")
        content = " ".join(str(message.get("content") or "").split())
        if role == "user":
            number += 1
            lines.append(f"[{offset + number}] user: {content}")
        elif role == "tool":
            lines.append(f"    tool result: {content[:300]}")
        elif message.get("tool_calls"):
            names = ", ".join(
                str((call.get("function") or {}).get("name", "?"))
                for call in message["tool_calls"]
                if isinstance(call, dict)
            )
            lines.append(f"    assistant called: {names}" + (f" ({content})" if content else ""))
        elif content:
            lines.append(f"    {role}: {content}")
    return "\n".join(lines)


def extractive_summary(
    previous: str, messages: Sequence[Message], counter: TokenCounter, max_tokens: int
) -> str:
    """A summary without a model: the previous summary, then each user sentence that states
    something (a number, a name, "my ...", a correction), oldest first; the oldest lines give
    way when it is over ``max_tokens``. The same input always gives the same text."""
    lines = [line for line in previous.splitlines() if line.strip()]
    seen = set(lines)
    for message in messages:
        if message.get("role") != "user":
            continue
        for match in _SENTENCES.finditer(str(message.get("content") or "")):
            sentence = " ".join(match.group().split())
            if len(sentence) < 4 or not _FACT_HINTS.search(sentence):
                continue
            line = f"- user: {sentence}"
            if line in seen:
                continue
            seen.add(line)
            lines.append(line)
    while lines and counter.count("\n".join(lines)) > max_tokens:
        drop = max(1, len(lines) // 20)
        del lines[:drop]
    return "\n".join(lines)


Complete = Callable[[list[Message]], Awaitable[Any]]


async def compact(
    *,
    history: Sequence[Message],
    previous: Message | None,
    upto: int,
    complete: Complete,
    counter: TokenCounter,
    max_tokens: int,
    input_tokens: int,
    model: str,
) -> Message:
    """The next summary record, covering ``history[:upto]`` (one call to ``complete``).

    ``complete(messages)`` is the agent's own LLM; its reply's ``content`` becomes the summary.
    A failure of any kind leaves an extractive summary instead (and the error's type in the
    record), so the turn that triggered the compaction still succeeds.
    """
    start = int(previous["covers"][1]) if previous else 0
    earlier = str(previous.get("content") or "") if previous else ""
    new = list(history[start:upto])
    before = _turns_covered(previous, history, start)
    text = transcript(new, offset=before)
    words = max(60, max_tokens * 3 // 4)
    record: Message = {
        "role": "summary",
        "version": int(previous.get("version", 0)) + 1 if previous else 1,
        "covers": [0, upto],
        "turns": before + sum(1 for message in new if message.get("role") == "user"),
        "created_at": time.time(),
        "model": model,
    }
    room = input_tokens - counter.count(earlier) - 200
    if counter.count(text) > room:
        # Too much to send at once (an old session compacted for the first time): the oldest
        # part is folded in extractively, the rest goes to the model.
        keep = _tail_that_fits(new, max(room // 2, 200), counter)
        earlier = extractive_summary(earlier, new[: len(new) - len(keep)], counter, room // 2)
        text = transcript(keep, offset=_turns_before(history, upto - len(keep)))
        text = cut_to_tokens(text, max(room - counter.count(earlier), 200), counter)
    prompt = [
        {"role": "system", "content": SUMMARY_PROMPT.format(words=words)},
        {
            "role": "user",
            "content": (
                f"Summary so far:\n{earlier or '(none yet)'}\n\nNew turns:\n{text}\n\n"
                "Write the updated summary."
            ),
        },
    ]
    try:
        reply = await complete(prompt)
        content = str(getattr(reply, "content", None) or "").strip()
        if not content:
            raise ValueError("the model answered the summary request with no text")
    except Exception as exc:  # any failure: the turn goes on with the extractive summary
        record["method"] = "extractive"
        record["error"] = type(exc).__name__
        record["content"] = extractive_summary(
            str(previous.get("content") or "") if previous else "", new, counter, max_tokens
        )
        return record
    record["method"] = "llm"
    # a model that writes past the limit it was asked for (no endpoint has to honour it) would
    # make every later request, and the next summary's prompt, longer than the one before
    record["content"] = _within(content, max_tokens, counter)
    usage = getattr(reply, "usage", None)
    if isinstance(usage, dict):
        record["usage"] = usage
    return record


def _within(summary: str, max_tokens: int, counter: TokenCounter) -> str:
    """``summary`` cut to ``max_tokens`` at a line break (whole bullets), with the marker.

    Each line is counted once and the kept ones once more together, where cutting at the
    exact longest prefix would count prefixes of the whole text again and again; a first
    line longer than the limit is cut within it."""
    if counter.count(summary) <= max_tokens:
        return summary
    count = counter.counter.count if isinstance(counter, CachedCounter) else counter.count
    room = max_tokens - count(CUT_MARKER.format(cut=len(summary)))
    kept: list[str] = []
    spent = 0
    for line in summary.split("\n"):
        spent += count(line) + 1
        if spent > room:
            break
        kept.append(line)
    while kept and count("\n".join(kept)) > room:  # the sum of the lines ran short
        kept.pop()
    if not kept:
        return cut_to_tokens(summary, max_tokens, counter)
    text = "\n".join(kept)
    return text + CUT_MARKER.format(cut=len(summary) - len(text))


def _turns_before(history: Sequence[Message], index: int) -> int:
    return sum(1 for message in history[:index] if message.get("role") == "user")


def _turns_covered(previous: Message | None, history: Sequence[Message], start: int) -> int:
    """How many turns the history holds before ``start``: from the previous summary record,
    so a compaction does not read the whole history (a record written before summaries
    counted their turns is counted from the history once)."""
    turns = previous.get("turns") if previous else 0
    if isinstance(turns, int) and not isinstance(turns, bool) and turns >= 0:
        return turns
    return _turns_before(history, start)


def _tail_that_fits(messages: list[Message], tokens: int, counter: TokenCounter) -> list[Message]:
    """The longest run of whole turns at the end of ``messages`` whose transcript fits."""
    turns = split_turns(messages)
    spent = 0
    first = len(messages)
    for start, stop in reversed(turns):
        cost = counter.count(transcript(messages[start:stop])) + 1
        if spent + cost > tokens:
            break
        spent += cost
        first = start
    return messages[first:]
