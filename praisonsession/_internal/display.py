"""What a Jupyter notebook shows for results: HTML tables instead of a wall of dicts.

Search hits, snapshot lists and a fork tree are plain lists (``==``, JSON and slicing work as
on any list); the subclasses here only add ``_repr_html_``, which Jupyter calls to display a
cell's value and nothing else does. Every text is escaped: stored text is never markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["SearchHits", "SnapshotList", "TreeList", "html_table", "moment", "tree_html"]

_SHOWN_TEXT = 200  # characters of a hit's text in a table cell


def html_table(caption: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A table with a caption and a header row; every cell escaped."""
    import html  # for display only: ``import praisonsession`` stays fast

    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f"<td style='text-align:left'>{html.escape(str(cell))}</td>" for cell in row)
        + "</tr>"
        for row in rows
    )
    return (
        f"<table><caption>{html.escape(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def moment(seconds: float | None) -> str:
    """A stored time as people read it (UTC)."""
    from datetime import datetime, timezone

    if seconds is None:
        return "never"
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _clip(text: Any) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= _SHOWN_TEXT else flat[: _SHOWN_TEXT - 1] + "…"


class SearchHits(list[dict[str, Any]]):
    """The hits of ``search_memory`` / ``search_knowledge``, best first: a list of dicts that
    a notebook shows as a table (score, text, where it came from)."""

    def _repr_html_(self) -> str:
        rows = [
            (
                f"{hit.get('score', 0):.3f}",
                _clip(hit.get("text", "")),
                hit.get("source")
                or (hit.get("metadata") or {}).get("memory_type")
                or (hit.get("metadata") or {}).get("source")
                or "",
            )
            for hit in self
        ]
        caption = f"{len(self)} hit{'' if len(self) == 1 else 's'}"
        return html_table(caption, ("score", "text", "from"), rows)


class SnapshotList(list[Any]):
    """A session's snapshots, oldest first; a notebook shows them as a table."""

    def _repr_html_(self) -> str:
        rows = [
            (s.snapshot_id, s.label or "", moment(s.created_at), s.version, s.messages)
            for s in self
        ]
        return html_table(
            f"{len(self)} snapshot{'' if len(self) == 1 else 's'}",
            ("snapshot", "label", "taken", "version", "messages"),
            rows,
        )


def tree_html(nodes: Sequence[Any]) -> str:
    """Sessions as nested lists, each fork under its parent (``TreeNode``: info, children)."""
    import html

    if not nodes:
        return "<ul></ul>"
    items = []
    for node in nodes:
        info = node.info
        label = (
            f"<code>{html.escape(info.session_id)}</code> "
            f"<small>v{info.version}, updated {html.escape(moment(info.updated_at))}</small>"
        )
        below = tree_html(node.children) if node.children else ""
        items.append(f"<li>{label}{below}</li>")
    return f"<ul>{''.join(items)}</ul>"


class TreeList(list[Any]):
    """A user's sessions as a forest (``TreeNode`` roots); a notebook draws it as a tree."""

    def _repr_html_(self) -> str:
        return f"<div><strong>praisonsession sessions</strong>{tree_html(self)}</div>"
