"""Split text into overlapping chunks that end at natural boundaries.

A chunk ends, in order of preference, at a paragraph break, a line break, the end of a
sentence, or a space, as close to ``size`` characters as possible; the next chunk starts
``overlap`` characters earlier, so a fact cut by a boundary is still whole in one chunk.
"""

from __future__ import annotations

import re

from ...errors import InvalidValueError

DEFAULT_SIZE = 800
DEFAULT_OVERLAP = 120
_BOUNDARIES = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def normalise(text: str) -> str:
    """Collapse runs of spaces and blank lines, which carry no meaning but cost tokens."""
    text = _SPACES.sub(" ", text.replace("\r\n", "\n"))
    text = "\n".join(line.strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


def chunk_text(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP) -> list[str]:
    if size < 50:
        raise InvalidValueError(f"chunk size must be at least 50 characters, got {size}.")
    if not 0 <= overlap < size // 2:
        raise InvalidValueError(f"overlap must be from 0 to {size // 2 - 1}, got {overlap}.")
    text = normalise(text)
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            end = _boundary(text, start + size // 2, end)
        chunk = text[start:end].strip()
        if chunk:
            chunks.append(chunk)
        if end >= len(text):
            break
        start = _next_start(text, max(end - overlap, start + 1), end)
    return chunks


def _boundary(text: str, lowest: int, highest: int) -> int:
    """The best place to cut between lowest and highest: after the last strongest separator."""
    for separator in _BOUNDARIES:
        found = text.rfind(separator, lowest, highest)
        if found != -1:
            return found + len(separator.rstrip()) if separator.strip() else found + 1
    return highest


def _next_start(text: str, earliest: int, end: int) -> int:
    """Start the overlap at a word boundary, so no chunk begins mid-word."""
    space = text.find(" ", earliest, end)
    return space + 1 if space != -1 else earliest
