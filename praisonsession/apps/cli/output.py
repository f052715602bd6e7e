"""What the commands print: aligned tables and times for people, one JSON document for scripts.

Everything goes to stdout through :func:`click.echo`; messages about the work (prompts,
progress, a summary beside an archive written to stdout) go to stderr, so that ``--json``
output is always exactly one document.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

import click

from ...stores.record import now

__all__ = [
    "clip",
    "compact",
    "confirm",
    "moment",
    "plural",
    "print_json",
    "print_table",
    "relative",
]

_UNITS = (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1))


def print_json(document: Any) -> None:
    """``document`` as JSON on stdout. Text is kept readable; a lone surrogate (which the
    stores keep as they were given) is written as a ``\\u`` escape, which JSON allows."""
    text = json.dumps(document, ensure_ascii=False, indent=2)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(document, indent=2)
    click.echo(text)


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], indent: str = "") -> None:
    """Rows under their headers, each column as wide as its widest cell."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max([len(row[n]) for row in cells], default=0) for n in range(len(headers))]
    widths = [max(width, len(header)) for width, header in zip(widths, headers, strict=True)]
    for row in [list(headers), *cells]:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        click.echo(indent + line.rstrip())


def relative(seconds: float | None, never: str = "never") -> str:
    """A time as people say it: ``5 min ago``, ``in 2 h``, ``now``."""
    if seconds is None:
        return never
    delta = seconds - now()
    span = abs(delta)
    if span < 1:
        return "now"
    unit, size = next((unit, size) for unit, size in _UNITS if span >= size)
    amount = f"{int(span // size)} {unit}"
    return f"in {amount}" if delta > 0 else f"{amount} ago"


def moment(seconds: float | None, never: str = "never") -> str:
    """A time in full: ``2025-05-01 12:00:03 UTC (5 min ago)``."""
    if seconds is None:
        return never
    stamp = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({relative(seconds)})"


def compact(value: Any) -> str:
    """JSON data on one line, as short as it reads."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def clip(text: str, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis (a lone surrogate,
    which no terminal can show, as its ``\\u`` escape)."""
    flat = " ".join(text.split()).encode("utf-8", "backslashreplace").decode("utf-8")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 session``, ``2 sessions`` (``nouns`` where adding an s will not do)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def confirm(question: str) -> None:
    """Ask on stderr (stdout stays for the output); anything but yes ends the command with
    "Aborted!" and exit code 1, and no answer at all (no terminal to ask on: a script, a
    pipe, a cron job) says to pass ``--yes``."""
    try:
        answer = click.confirm(question, err=True)
    except click.Abort:  # end of input: nobody there to answer
        click.echo("", err=True)
        raise click.ClickException(
            "Aborted: no answer (there is no terminal to ask on). Pass --yes to go ahead "
            "without the question."
        ) from None
    if not answer:
        raise click.Abort()
