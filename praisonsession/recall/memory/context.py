"""``get_context``'s text: labelled sections of what was recalled, within a character budget.

A memory's line starts with when it was said (``said_at``, local time), so that "when did I
...?" can be answered from the context alone; knowledge has no such time.
"""

from __future__ import annotations

import time
from typing import Any

DEFAULT_BUDGET = 4000


def build_context(sections: list[tuple[str, list[dict[str, Any]]]], budget: int) -> str:
    """Sections in order, each a heading and bullet lines; stops before exceeding ``budget``.

    A line too long for what is left is cut at a word boundary with an ellipsis, so the most
    relevant items are never dropped for a long one; empty sections are left out.
    """
    lines: list[str] = []
    used = 0
    seen: set[str] = set()
    for title, hits in sections:
        entries = []
        for hit in hits:
            text = " ".join(str(hit.get("text", "")).split())
            if text and text not in seen:
                seen.add(text)
                entries.append(_dated(text, (hit.get("metadata") or {}).get("said_at")))
        if not entries:
            continue
        heading = f"## {title}"
        if used + len(heading) + 1 > budget:
            break
        block = [heading]
        used += len(heading) + 1
        for text in entries:
            room = budget - used - 3  # "- " and the newline
            if room < 20:
                break
            line = text if len(text) <= room else _cut(text, room)
            block.append(f"- {line}")
            used += len(line) + 3
        if len(block) > 1:
            lines.extend([*block, ""])
    return "\n".join(lines).strip()


def _cut(text: str, room: int) -> str:
    cut = text[: room - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > room // 2 else cut) + "…"


def said_when(said_at: float) -> str:
    """How a context shows when a memory was said: local time, to the minute."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(said_at))


def _dated(text: str, said_at: Any) -> str:
    if isinstance(said_at, (int, float)) and not isinstance(said_at, bool):
        return f"[{said_when(float(said_at))}] {text}"
    return text
