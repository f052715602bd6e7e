"""The commands that look after sessions from a shell: ``list``, ``show``, ``delete``,
``purge`` and ``erase-user``.

Each opens the store ``--store`` names (:mod:`.store_access`), works through the store's own
operations, and prints a table, or one JSON document with ``--json``. A command that would
destroy something asks first, unless ``--yes``. Archives (``export``, ``import``) and branches
(``fork``, snapshots) have modules of their own.
"""

from __future__ import annotations

import shlex
from typing import Any

import click

from ...agents.usage import agent_name_of, read_usage
from ...session.erasure import aerase_user
from ...stores.api import SessionBase
from ...stores.branches import PARENT
from ...stores.record import SessionInfo
from .branches import print_snapshots
from .group import main
from .options import json_option, session_argument, store_option, user_option, yes_option
from .output import clip, compact, confirm, moment, plural, print_json, print_table, relative
from .store_access import OpenedStore, opened_store

__all__ = ["delete", "erase_user", "list_command", "purge", "show"]

_PAGE = 1000  # sessions read per call while listing


# -- list --------------------------------------------------------------------------------------


@main.command("list", short_help="List sessions: every user's, or one user's.")
@click.option(
    "--user",
    "user_id",
    metavar="USER",
    default=None,
    help="Only this user's sessions (default: every user's).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, metavar="N", help="At most N sessions."
)
@store_option
@json_option
def list_command(
    user_id: str | None, limit: int | None, store_url: str | None, as_json: bool
) -> None:
    """List live sessions, by user then id: when each was made, last used and expires.

    \b
    Example:
      praisonsession list --store sqlite://sessions.db --user alice
    """
    with opened_store(store_url) as opened:
        infos = opened.run(sessions_of(opened.store, user_id, limit))
    if as_json:
        print_json({"store": opened.shown_url, "sessions": [info.to_json() for info in infos]})
    elif not infos:
        click.echo(f"No sessions in {opened.shown_url}.")
    else:
        print_table(
            ("USER", "SESSION", "CREATED", "UPDATED", "EXPIRES", "VERSION", "PARENT"),
            (
                (
                    info.user_id,
                    info.session_id,
                    relative(info.created_at),
                    relative(info.updated_at),
                    relative(info.expires_at),
                    info.version,
                    _parent_of(info) or "",
                )
                for info in infos
            ),
        )


async def sessions_of(
    store: SessionBase, user_id: str | None, limit: int | None
) -> list[SessionInfo]:
    """One user's live sessions (every user's when ``user_id`` is None), at most ``limit``."""
    users = await store.list_users() if user_id is None else [user_id]
    found: list[SessionInfo] = []
    for user in users:
        after: str | None = None
        while True:
            page = await store.list_sessions(user, limit=_PAGE, after=after)
            found.extend(page)
            if limit is not None and len(found) >= limit:
                return found[:limit]
            if len(page) < _PAGE:
                break
            after = page[-1].session_id
    return found


def _parent_of(info: SessionInfo) -> str | None:
    """The session it was forked from, as ``id`` (or ``id (user)`` for another user's)."""
    parent = info.metadata.get(PARENT)
    if not isinstance(parent, dict):
        return None
    if parent.get("user_id") == info.user_id:
        return str(parent.get("session_id"))
    return f"{parent.get('session_id')} ({parent.get('user_id')})"


# -- show --------------------------------------------------------------------------------------


@main.command(short_help="Show a session: state, logs, last messages, snapshots.")
@session_argument
@user_option
@click.option(
    "--messages",
    "last",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    metavar="N",
    help="Show the last N messages of each log.",
)
@store_option
@json_option
def show(session_id: str, user_id: str, last: int, store_url: str | None, as_json: bool) -> None:
    """Show one session: its metadata, parent and children, TTL, state, message logs (with
    their last messages) and snapshots.

    \b
    Example:
      praisonsession show chat_1 --user alice --messages 10
    """
    with opened_store(store_url) as opened:
        details = opened.run(_details(opened, session_id, user_id, last))
    if as_json:
        print_json(details)
    else:
        _print_details(details)


async def _details(opened: OpenedStore, session_id: str, user_id: str, last: int) -> dict[str, Any]:
    store = opened.store
    contents = await opened.contents(session_id, user_id)
    logs = []
    for path, count in sorted(contents.logs.items()):
        start = max(0, count - last)
        recent = await store.read_messages(session_id, user_id, path, start, count) if last else []
        logs.append({"log": path, "messages": count, "last": recent})
    children = await opened.branches.children_of(session_id, user_id)
    snapshots = await opened.branches.snapshots(session_id, user_id)

    async def read(path: str) -> list[dict[str, Any]]:
        return await store.read_messages(session_id, user_id, path)

    summaries = {}
    for path in sorted(contents.logs):
        named = agent_name_of(path)
        if named is not None and named[1] == "summaries":
            summaries[named[0]] = await read(path)
    return {
        "session": contents.info.to_json(),
        "children": [child.session_id for child in children],
        "state": contents.state,
        "modules": sorted(contents.modules),
        "logs": logs,
        "summaries": summaries,
        "usage": await read_usage(contents.logs, read),
        "snapshots": [snapshot._asdict() for snapshot in snapshots],
    }


def _print_details(details: dict[str, Any]) -> None:
    info = SessionInfo.from_json(details["session"])
    expiry = moment(info.expires_at)
    if info.ttl is not None:
        expiry += f"; TTL {info.ttl:g} s"
    fields = [
        ("session", info.session_id),
        ("user", info.user_id),
        ("created", moment(info.created_at)),
        ("updated", moment(info.updated_at)),
        ("expires", expiry),
        ("version", info.version),
        ("parent", _parent_of(info) or "none"),
        ("children", ", ".join(details["children"]) or "none"),
    ]
    metadata = {name: value for name, value in info.metadata.items() if name != PARENT}
    if metadata:
        fields.append(("metadata", clip(compact(metadata), 200)))
    for label, value in fields:
        click.echo(f"{label:<9} {value}")
    state = details["state"]
    click.echo(f"\nState: {plural(len(state), 'key')}")
    if state:
        rows = ((name, clip(compact(value))) for name, value in sorted(state.items()))
        print_table(("KEY", "VALUE"), rows, "  ")
    click.echo(f"\nModules: {', '.join(details['modules']) or 'none'}")
    click.echo(f"\nMessage logs: {len(details['logs'])}")
    if details["logs"]:
        rows = ((log["log"], log["messages"]) for log in details["logs"])
        print_table(("LOG", "MESSAGES"), rows, "  ")
    for log in details["logs"]:
        if log["last"]:
            first = log["messages"] - len(log["last"])
            click.echo(f"\nLast {len(log['last'])} of {log['messages']} messages in {log['log']}")
            print_table(
                ("#", "ROLE", "CONTENT"),
                (
                    (first + n + 1, message.get("role", ""), _message_text(message))
                    for n, message in enumerate(log["last"])
                ),
                "  ",
            )
    _print_summaries(details["summaries"])
    _print_usage(details["usage"])
    snapshots = details["snapshots"]
    click.echo(f"\nSnapshots: {len(snapshots)}")
    if snapshots:
        print_snapshots(snapshots, "  ")


def _print_summaries(summaries: dict[str, list[dict[str, Any]]]) -> None:
    """Each agent's running summary: how many versions, and what the newest covers."""
    click.echo(f"\nSummaries: {sum(len(records) for records in summaries.values())}")
    for agent, records in summaries.items():
        if not records:
            continue
        latest = records[-1]
        start, stop = latest.get("covers", [0, 0])
        click.echo(
            f"  {agent}: version {latest.get('version')} covers messages {start}-{stop} "
            f"({latest.get('method')}, {len(records)} versions)"
        )
        click.echo(f"    {clip(' '.join(str(latest.get('content', '')).split()), 200)}")


def _print_usage(usage: dict[str, Any]) -> None:
    """Tokens per agent and for the session, as the LLM reported them."""
    agents = usage["agents"]
    click.echo(f"\nUsage: {plural(len(agents), 'agent')}")
    if not agents:
        return
    columns = ("turns", "requests", "prompt_tokens", "completion_tokens", "total_tokens")
    rows = [(name, *(totals[c] for c in columns)) for name, totals in agents.items()]
    rows.append(("(session)", *(usage["session"][c] for c in columns)))
    print_table(("AGENT", "TURNS", "REQUESTS", "PROMPT", "COMPLETION", "TOTAL"), rows, "  ")


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return clip(content, 100)
    return clip(compact({k: v for k, v in message.items() if k != "role"}), 100)


# -- delete, purge, erase-user -----------------------------------------------------------------


@main.command(short_help="Delete a session (asks first).")
@session_argument
@user_option
@yes_option
@store_option
@json_option
def delete(session_id: str, user_id: str, yes: bool, store_url: str | None, as_json: bool) -> None:
    """Delete a session and everything in it. Its snapshots are kept: `restore` brings it
    back from one.

    \b
    Example:
      praisonsession delete chat_1 --user alice --store sqlite://sessions.db --yes
    """
    with opened_store(store_url) as opened:
        if not yes:
            contents = opened.run(opened.contents(session_id, user_id))
            messages = plural(sum(contents.logs.values()), "message")
            confirm(
                f"Delete session {session_id!r} of user {user_id!r} ({messages}) "
                f"from {opened.shown_url}?"
            )
        if not opened.run(opened.store.delete_session(session_id, user_id)):
            raise opened.run(opened.missing(session_id, user_id))  # gone, or another user's
        kept = len(opened.run(opened.branches.snapshots(session_id, user_id)))
    if as_json:
        print_json({"deleted": {"session_id": session_id, "user_id": user_id}, "snapshots": kept})
        return
    click.echo(f"Deleted session {session_id!r} of user {user_id!r}.")
    if kept:
        click.echo(
            f"Its snapshots stay ({kept}): `praisonsession snapshots {shlex.quote(session_id)}`"
            " lists them, `praisonsession restore` brings the session back."
        )


@main.command(short_help="Remove expired sessions from the store (asks first).")
@yes_option
@store_option
@json_option
def purge(yes: bool, store_url: str | None, as_json: bool) -> None:
    """Remove every expired session from the store. Expired sessions are already gone for
    every reader; purging frees their space.

    \b
    Example:
      praisonsession purge --store sqlite://sessions.db --yes
    """
    with opened_store(store_url) as opened:
        if not yes:
            confirm(f"Remove every expired session from {opened.shown_url}?")
        removed = opened.run(opened.store.purge_expired())
    if as_json:
        print_json({"purged": removed})
    else:
        click.echo(f"Removed {plural(removed, 'expired session')} from {opened.shown_url}.")


@main.command("erase-user", short_help="Erase everything of one user (asks first).")
@click.argument("user_id", metavar="USER")
@yes_option
@store_option
@json_option
def erase_user(user_id: str, yes: bool, store_url: str | None, as_json: bool) -> None:
    """Erase everything of one user: every session, snapshot and message log in the store,
    and their long-term memories and knowledge in the vector store. Other users' sessions stay
    untouched, even those with the same ids.

    \b
    Example:
      praisonsession erase-user alice --store redis://localhost:6379/0 --yes
    """
    with opened_store(store_url) as opened:
        if not yes:
            sessions = opened.run(sessions_of(opened.store, user_id, None))
            confirm(
                f"Erase user {user_id!r} from {opened.shown_url}: "
                f"{plural(len(sessions), 'session')}, their snapshots, long-term memories and "
                "knowledge? This cannot be undone."
            )
        report = opened.run(aerase_user(user_id, opened.store, settings=opened.settings))
    if as_json:
        print_json(report._asdict())
        return
    click.echo(
        f"Erased user {report.user_id!r}: {plural(report.sessions, 'session')}, "
        f"{plural(report.snapshots, 'snapshot')}, "
        f"{plural(report.vector_entries, 'vector entry', 'vector entries')} (memories, knowledge)."
    )
    for finding in report.leftovers:  # what stays beneath the API: said, never claimed away
        click.echo(f"Not scrubbed: {finding}", err=True)
