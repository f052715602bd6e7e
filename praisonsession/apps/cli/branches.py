"""``praisonsession fork``, ``snapshots``, ``snapshot`` and ``restore``: sessions that branch,
from a shell (the same operations as ``Session.fork``, ``snapshot`` and ``restore``)."""

from __future__ import annotations

import shlex
from typing import Any, cast

import click

from ..._internal.identifiers import DEFAULT_USER
from ...errors import ConflictError, SnapshotNotFoundError
from ...stores.record import SessionInfo
from .exit_codes import CommandFailed, ExitCode
from .group import main
from .options import json_option, session_argument, store_option, user_option, yes_option
from .output import confirm, print_json, print_table, relative
from .store_access import OpenedStore, opened_store

__all__ = ["fork", "print_snapshots", "restore", "snapshot", "snapshots"]


def _cut(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    """``--at LOG:N`` as ``(LOG, N)``; a log name may itself hold colons."""
    if value is None:
        return None
    log, _, count = value.rpartition(":")
    if not log or not count.isdigit():
        raise click.BadParameter(f"{value!r} is not LOG:N, e.g. agent.memory:10")
    return log, int(count)


@main.command(short_help="Copy a session under a new id, recording its parent.")
@session_argument
@click.argument("new_id", metavar="[NEW_ID]", required=False)
@user_option
@click.option(
    "--at",
    "cut",
    metavar="LOG:N",
    callback=_cut,
    help="Keep only the first N messages of the log LOG (`show` lists a session's logs).",
)
@click.option(
    "--to-user",
    metavar="USER",
    default=None,
    help="Fork into this user's sessions (default: the same user).",
)
@store_option
@json_option
def fork(
    session_id: str,
    new_id: str | None,
    user_id: str,
    cut: tuple[str, int] | None,
    to_user: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Copy a session (state, modules, message logs, long-term memories) under NEW_ID, or a
    fresh id, in one atomic step, recording it as the copy's parent. Writing to either
    afterwards never changes the other.

    \b
    Example:
      praisonsession fork chat_1 chat_1_retry --at agent.memory:4
    """
    with opened_store(store_url) as opened:
        try:
            child = opened.run(_fork(opened, session_id, user_id, new_id, cut, to_user))
        except ConflictError as exc:
            taken = _ids(new_id, to_user or user_id)
            raise CommandFailed(
                f"{str(exc).split(';')[0]}: name another NEW_ID (or none, for a fresh id), or "
                f"delete that session first (praisonsession delete {taken}).",
                ExitCode.FAILED,
            ) from None
    if as_json:
        print_json({"session": child.to_json()})
        return
    kept = f", keeping the first {cut[1]} messages of {cut[0]}" if cut else ""
    click.echo(
        f"Forked session {session_id!r} of user {user_id!r} into {child.session_id!r} of "
        f"user {child.user_id!r}{kept}."
    )


async def _fork(
    opened: OpenedStore,
    session_id: str,
    user_id: str,
    new_id: str | None,
    cut: tuple[str, int] | None,
    to_user: str | None,
) -> SessionInfo:
    await opened.contents(session_id, user_id)  # a missing session: the error names it
    child = await opened.session(session_id, user_id).fork(new_id, at_message=cut, user_id=to_user)
    return cast(SessionInfo, await child.get_info())  # forked live a moment ago


@main.command(short_help="List a session's snapshots.")
@session_argument
@user_option
@store_option
@json_option
def snapshots(session_id: str, user_id: str, store_url: str | None, as_json: bool) -> None:
    """List a session's snapshots, oldest first (those of a deleted session too: restoring
    one brings it back).

    \b
    Example:
      praisonsession snapshots chat_1 --user alice
    """
    with opened_store(store_url) as opened:
        found = opened.run(opened.branches.snapshots(session_id, user_id))
    listed = [snapshot._asdict() for snapshot in found]
    if as_json:
        print_json({"snapshots": listed})
    elif not listed:
        click.echo(f"Session {session_id!r} of user {user_id!r} has no snapshots.")
    else:
        print_snapshots(listed)


@main.command(short_help="Keep a copy of a session, to restore later.")
@session_argument
@user_option
@click.option("--label", default=None, help="A name to recognise the snapshot by.")
@store_option
@json_option
def snapshot(
    session_id: str, user_id: str, label: str | None, store_url: str | None, as_json: bool
) -> None:
    """Keep a copy of a session as it is now (its content, not a pointer into it), to come
    back to with `praisonsession restore`.

    \b
    Example:
      praisonsession snapshot chat_1 --label "before the refund"
    """
    with opened_store(store_url) as opened:
        taken = opened.run(opened.branches.snapshot(session_id, user_id, label))
    if as_json:
        print_json(taken._asdict())
    else:
        click.echo(
            f"Took snapshot {taken.snapshot_id} of session {session_id!r} of user {user_id!r}"
            f" ({taken.messages} messages)."
        )


@main.command(short_help="Put a session back as a snapshot holds it (asks first).")
@session_argument
@click.argument("snapshot_id", metavar="SNAPSHOT_ID")
@user_option
@yes_option
@store_option
@json_option
def restore(
    session_id: str,
    snapshot_id: str,
    user_id: str,
    yes: bool,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Put a session back as one of its snapshots holds it, in one atomic step (a deleted
    session comes back). Its current state and messages are replaced.

    \b
    Example:
      praisonsession restore chat_1 1746094803123456-9f2c01ab --yes
    """
    with opened_store(store_url) as opened:
        if not yes:
            confirm(
                f"Replace the content of session {session_id!r} of user {user_id!r} in "
                f"{opened.shown_url} with snapshot {snapshot_id}?"
            )
        try:
            info = opened.run(opened.branches.restore(session_id, user_id, snapshot_id))
        except SnapshotNotFoundError:
            others = opened.run(opened.owners(session_id, user_id))
            if others:
                hint = opened.not_here(session_id, user_id, others)
                message = f"Session {session_id!r} of user {user_id!r} has no snapshot "
                raise CommandFailed(f"{message}{snapshot_id!r}. {hint}", ExitCode.FAILED) from None
            raise CommandFailed(
                f"Session {session_id!r} of user {user_id!r} has no snapshot {snapshot_id!r}; "
                f"list its snapshots with: praisonsession snapshots {_ids(session_id, user_id)}",
                ExitCode.FAILED,
            ) from None
    if as_json:
        print_json({"session": info.to_json(), "restored_from": snapshot_id})
    else:
        click.echo(
            f"Restored session {session_id!r} of user {user_id!r} from snapshot {snapshot_id}"
            f" (now at version {info.version})."
        )


def _ids(session_id: str | None, user_id: str | None) -> str:
    """``ID [--user USER]`` as a shell would take them back."""
    words = shlex.quote(session_id or "")
    return words if user_id in (None, DEFAULT_USER) else f"{words} --user {shlex.quote(user_id)}"


def print_snapshots(snapshots: list[dict[str, Any]], indent: str = "") -> None:
    """Snapshots (as ``SnapshotInfo._asdict()``) as a table."""
    print_table(
        ("SNAPSHOT", "LABEL", "TAKEN", "VERSION", "MESSAGES"),
        (
            (
                s["snapshot_id"],
                s["label"] or "",
                relative(s["created_at"]),
                s["version"],
                s["messages"],
            )
            for s in snapshots
        ),
        indent,
    )
