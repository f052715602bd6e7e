"""``get_context``'s text: labelled sections of what was recalled, within a character budget."""

from __future__ import annotations

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
                entries.append(text)
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
