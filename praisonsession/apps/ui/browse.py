"""What the session browser reads: read-only views of a store, as JSON-ready dicts.

Every view calls public store operations only (list, read, count, snapshots, tree) and reads
a history one page at a time, never whole: a session with 10,000 messages costs one page per
request, and its overview reads the logs' lengths, the summaries and the usage records.
"""

from __future__ import annotations

import json
from typing import Any

from ..._internal.checks import MAX_COUNT, check_count
from ...agents.usage import USAGE_FIELDS, agent_name_of
from ...errors import InvalidValueError, SessionNotFoundError
from ...stores.api import SessionBase
from ...stores.branches import PARENT, Branches, TreeNode
from ...stores.record import record_key

__all__ = ["MAX_PAGE", "SessionBrowser", "check_page_size"]

#: The most sessions or messages one request returns.
MAX_PAGE = 500
#: Sessions a search reads per request before it answers with a cursor to go on from.
_SEARCH_SCAN = 5000


class SessionBrowser:
    """Read-only views of ``store`` for the UI's JSON API."""

    def __init__(self, store: SessionBase) -> None:
        self.store = store
        self.branches = Branches(store.backend)

    async def users(self) -> list[str]:
        return await self.store.list_users()

    async def sessions(
        self, user_id: str, *, search: str = "", after: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        """One page of the user's sessions whose id or metadata (a title, say) contains
        ``search`` (case-insensitive), ordered by id; ``next`` is the cursor of the
        following page (None at the end)."""
        limit = check_page_size(limit)
        needle = search.casefold()
        found: list[dict[str, Any]] = []
        scanned = 0
        cursor = after or None
        while True:
            page = await self.store.list_sessions(user_id, limit=limit, after=cursor)
            scanned += len(page)
            for info in page:
                cursor = info.session_id
                if needle in info.session_id.casefold() or _in_metadata(needle, info):
                    found.append(_session_row(info))
                    if len(found) == limit:
                        return {"sessions": found, "next": cursor}
            if len(page) < limit:
                return {"sessions": found, "next": None}
            if scanned >= _SEARCH_SCAN:  # answer now; the client asks again from the cursor
                return {"sessions": found, "next": cursor}

    async def session(self, user_id: str, session_id: str) -> dict[str, Any]:
        """The session's metadata, state, logs (names and lengths), summaries, usage,
        snapshots, parent and children."""
        store = self.store
        contents = await store.backend.read_record_contents(record_key(session_id, user_id))
        if contents is None:
            raise SessionNotFoundError(
                session_id, user_id, "It is not in this store, or it has expired."
            )
        info = contents.info

        async def read(log: str) -> list[dict[str, Any]]:
            return await store.read_messages(session_id, user_id, log)

        summaries: dict[str, list[dict[str, Any]]] = {}
        usage_logs: dict[str, list[dict[str, Any]]] = {}
        lengths: dict[str, int] = {}
        for log, length in sorted(contents.logs.items()):
            named = agent_name_of(log)
            if named is None:
                continue
            if named[1] == "summaries":
                summaries[named[0]] = await read(log)
            elif named[1] == "usage":
                usage_logs[named[0]] = await read(log)
            else:  # the history is never read whole here: its length is enough
                lengths[named[0]] = length
        children = await self.branches.children_of(session_id, user_id)
        snapshots = await self.branches.snapshots(session_id, user_id)
        parent = info.metadata.get(PARENT)
        return {
            "session": info.to_json(),
            "parent": parent if isinstance(parent, dict) else None,
            "children": [child.session_id for child in children],
            "state": contents.state,
            "modules": sorted(contents.modules),
            "logs": [{"log": name, "messages": n} for name, n in sorted(contents.logs.items())],
            "summaries": summaries,
            "usage": _usage(lengths, usage_logs, summaries),
            "snapshots": [snapshot._asdict() for snapshot in snapshots],
        }

    async def messages(
        self, user_id: str, session_id: str, log: str, *, start: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        """Messages ``start:start+limit`` of a log and how many it holds: one page read. A
        framework's log (``framework_views.FRAMEWORK_LOGS``) is answered in that framework's
        terms, with ``framework`` naming it: one entry per stored record."""
        limit = check_page_size(limit)
        check_count(start, "start")
        store = self.store
        if await store.get_info(session_id, user_id) is None:
            raise SessionNotFoundError(
                session_id, user_id, "It is not in this store, or it has expired."
            )
        total = await store.message_count(session_id, user_id, log)
        page = await store.read_messages(
            session_id, user_id, log, start, min(start + limit, MAX_COUNT)
        )
        # loaded at the first read of a log, not with the app: it reaches into integrations/
        from .framework_views import framework_of, view_page

        if framework_of(log) is None:
            return {"log": log, "total": total, "start": start, "messages": page}
        return {"log": log, "total": total, "start": start, **view_page(log, page)}

    async def tree(self, user_id: str) -> list[dict[str, Any]]:
        """The user's sessions as a forest: each under the one it was forked from."""
        return [_node(root) for root in await self.branches.tree(user_id)]


def _usage(
    lengths: dict[str, int],
    usage_logs: dict[str, list[dict[str, Any]]],
    summaries: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    """Each agent's totals, as ``agents.usage.usage_totals`` counts them, from the usage and
    summary records and the history's length alone: one usage record per turn, so a long
    history is not read to count its turns."""
    fields = ("turns", "requests", "summaries", *USAGE_FIELDS)
    agents: dict[str, dict[str, int]] = {}
    for name in sorted(set(lengths) | set(usage_logs) | set(summaries)):
        length = lengths.get(name, 0)
        totals = agents[name] = dict.fromkeys(fields, 0)
        for record in usage_logs.get(name, []):
            turn = record.get("turn")
            if isinstance(turn, int) and turn < length:
                totals["turns"] += 1
                _add(totals, record, int(record.get("requests", 1) or 1))
        for record in summaries.get(name, []):
            covers = record.get("covers")
            if (
                record.get("method") == "llm"
                and isinstance(covers, list)
                and len(covers) == 2
                and isinstance(covers[1], int)
                and covers[1] <= length
            ):
                totals["summaries"] += 1
                _add(totals, record.get("usage"), 1)
    session = dict.fromkeys(fields, 0)
    for totals in agents.values():
        for field, value in totals.items():
            session[field] += value
    return {"session": session, "agents": agents}


def _add(totals: dict[str, int], usage: Any, requests: int) -> None:
    totals["requests"] += requests
    if isinstance(usage, dict):
        for field in USAGE_FIELDS:
            value = usage.get(field)
            if isinstance(value, int) and not isinstance(value, bool):
                totals[field] += value


def check_page_size(limit: Any) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
        raise InvalidValueError(
            f"limit must be a whole number from 1 to {MAX_PAGE}, got {limit!r}."
        )
    return limit


def _in_metadata(needle: str, info: Any) -> bool:
    metadata = {name: value for name, value in info.metadata.items() if name != PARENT}
    return bool(metadata) and needle in json.dumps(metadata, ensure_ascii=False).casefold()


def _session_row(info: Any) -> dict[str, Any]:
    return {
        "session_id": info.session_id,
        "updated_at": info.updated_at,
        "created_at": info.created_at,
        "version": info.version,
        "forked": PARENT in info.metadata,
        "title": title if isinstance(title := info.metadata.get("title"), str) else None,
    }


def _node(node: TreeNode) -> dict[str, Any]:
    # iterative, so a chain of thousands of forks cannot exhaust the recursion limit
    root: dict[str, Any] = {
        "session_id": node.info.session_id,
        "updated_at": node.info.updated_at,
        "children": [],
    }
    stack = [(node, root)]
    while stack:
        current, out = stack.pop()
        for child in current.children:
            row: dict[str, Any] = {
                "session_id": child.info.session_id,
                "updated_at": child.info.updated_at,
                "children": [],
            }
            out["children"].append(row)
            stack.append((child, row))
    return root
