"""``praisonsession export`` and ``import``: a session as one portable archive file, from any
store into any other (``Session.export`` / ``Session.import_archive`` underneath, so the
archive also carries the session's snapshots and long-term memories)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

import click

from ...agents.usage import agent_name_of
from ...archive import ArchiveSummary
from ...errors import ConflictError
from ...recall.memory.turn_vectors import PREFIX as SAVED_VECTORS
from ...session.core import AsyncSession
from ...stores.backends.json.agentscope_files import layout_file, module_states, serialise_modules
from ...stores.record import record_key
from .exit_codes import CommandFailed, ExitCode
from .group import main
from .options import json_option, progress_option, session_argument, store_option, user_option
from .output import plural, print_json
from .store_access import OpenedStore, opened_store

__all__ = ["export", "import_command"]


@main.command(short_help="Write a session to a portable archive file.")
@session_argument
@click.argument("file", type=click.Path(writable=True, allow_dash=True))
@user_option
@click.option(
    "--agentscope",
    "agentscope_file",
    is_flag=True,
    help="Write AgentScope 1.0's session file instead: the session's modules as "
    "{name: state dict}, which AgentScope's JSONSession loads. FILE may be a directory: the "
    "file then gets AgentScope's name there ({user}_{session}.json, or {session}.json for "
    "the default user).",
)
@progress_option
@store_option
@json_option
def export(
    session_id: str,
    file: str,
    user_id: str,
    agentscope_file: bool,
    progress: bool | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Write a session to one portable archive FILE (- for stdout): JSON Lines holding its
    metadata, state, modules, message logs, snapshots and long-term memories. It streams, so
    a long session exports in little memory; `praisonsession import` reads it into any store.

    \b
    Example:
      praisonsession export chat_1 chat_1.jsonl --store redis://localhost:6379/0
      praisonsession export chat_1 ./agentscope-sessions --agentscope --user bob
    """
    if agentscope_file:
        _export_agentscope(session_id, Path(file), user_id, store_url, as_json)
        return
    to_stdout = file == "-"
    if Path(file).is_dir():
        raise click.BadParameter(f"{file} is a directory; name the archive file", param_hint="FILE")
    if to_stdout and as_json:
        raise click.UsageError("--json and FILE - would both write to stdout; name a file.")
    if not to_stdout and not Path(file).absolute().parent.is_dir():
        raise click.BadParameter(f"there is no directory {Path(file).parent}", param_hint="FILE")
    destination: Any = click.open_file("-", "wb") if to_stdout else file
    with opened_store(store_url) as opened:
        summary, logs = opened.run(
            _export(opened, session_id, user_id, destination, _showing(progress))
        )
    entries = log_entries(logs)
    if as_json:
        print_json({**summary._asdict(), "log_entries": entries, "file": file})
        return
    click.echo(
        f"Exported session {session_id!r} of user {user_id!r}: "
        f"{_what_it_holds(summary, entries)} -> {'stdout' if to_stdout else file}",
        err=to_stdout,  # stdout holds the archive
    )


def _export_agentscope(
    session_id: str, file: Path, user_id: str, store_url: str | None, as_json: bool
) -> None:
    """The session's modules in AgentScope's session-file format (its state, logs outside
    modules, snapshots and memories have no place there and are left out)."""
    with opened_store(store_url) as opened:
        key = record_key(session_id, user_id)
        if file.is_dir():
            file = layout_file(file, key)
        elif not file.absolute().parent.is_dir():
            raise click.BadParameter(f"there is no directory {file.parent}", param_hint="FILE")
        states = opened.run(_agentscope_states(opened, session_id, user_id))
    file.write_bytes(serialise_modules(states))
    if as_json:
        print_json({"file": str(file), "modules": sorted(states)})
        return
    click.echo(
        f"Exported the {plural(len(states), 'module')} of session {session_id!r} of user "
        f"{user_id!r} as AgentScope's session file {file}"
    )


async def _agentscope_states(opened: OpenedStore, session_id: str, user_id: str) -> dict[str, Any]:
    contents = await opened.contents(session_id, user_id)
    logs = {}
    for path in contents.logs:
        if path.split(".")[0] in contents.modules:
            logs[path] = await opened.store.read_messages(session_id, user_id, path)
    return module_states(contents.modules, logs)


async def _export(
    opened: OpenedStore, session_id: str, user_id: str, destination: Any, progress: bool
) -> tuple[ArchiveSummary, dict[str, int]]:
    contents = await opened.contents(session_id, user_id)  # exporting opens it: never make one
    summary = await opened.session(session_id, user_id).export(destination, progress=progress)
    return summary, contents.logs


@main.command("import", short_help="Read an archive into the store as a new session.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option(
    "--session-id",
    metavar="ID",
    default=None,
    help="Import as this session id (default: the archived one).",
)
@click.option(
    "--user",
    "user_id",
    metavar="USER",
    default=None,
    help="Import into this user's sessions (default: the archived user).",
)
@progress_option
@store_option
@json_option
def import_command(
    file: str,
    session_id: str | None,
    user_id: str | None,
    progress: bool | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Read an archive written by `praisonsession export` (FILE, or - for stdin) into the
    store as a new session. The whole file is checked first: a damaged, truncated or newer
    archive imports nothing, and importing onto a session that exists is refused.

    \b
    Example:
      praisonsession import chat_1.jsonl --store sqlite://sessions.db --session-id chat_1_copy
    """
    source = _stdin_copy() if file == "-" else file
    with opened_store(store_url, create=True) as opened:
        try:
            imported = opened.run(_import(opened, source, session_id, user_id, _showing(progress)))
        except ConflictError as exc:
            raise CommandFailed(
                f"{str(exc).split(';')[0]}: import the archive under another id with "
                "--session-id ID (or for another user with --user USER), or delete that "
                "session first (praisonsession delete).",
                ExitCode.FAILED,
            ) from None
    if as_json:
        print_json(imported)
        return
    session = imported["session"]
    click.echo(
        f"Imported session {session['session_id']!r} of user {session['user_id']!r} into "
        f"{opened.shown_url}: {_entries_text(imported['log_entries'])}, "
        f"{plural(imported['snapshots'], 'snapshot')}."
    )


async def _import(
    opened: OpenedStore,
    source: Any,
    session_id: str | None,
    user_id: str | None,
    progress: bool,
) -> dict[str, Any]:
    session = await AsyncSession.import_archive(
        source, opened.store, session_id, user_id, settings=opened.settings, progress=progress
    )
    contents = await opened.contents(session.session_id, session.user_id)
    snapshots = await opened.branches.snapshots(session.session_id, session.user_id)
    return {
        "session": contents.info.to_json(),
        "messages": sum(contents.logs.values()),
        "log_entries": log_entries(contents.logs),
        "snapshots": len(snapshots),
    }


def _stdin_copy() -> IO[bytes]:
    """stdin, copied into a temporary file: an import reads the archive twice (it checks the
    whole of it before writing anything). The file is made before the message: a Ctrl+C
    after it never meets Python's first look at the temporary directory, which leaves its
    probe file behind when interrupted."""
    copy = tempfile.TemporaryFile()  # noqa: SIM115 - the import reads it; gone at exit
    click.echo("Reading the archive from stdin...", err=True)
    with click.open_file("-", "rb") as stdin:
        shutil.copyfileobj(stdin, copy)
    return copy


def _showing(progress: bool | None) -> bool:
    """Whether to draw a progress bar: as asked, else when someone watches stderr."""
    return sys.stderr.isatty() if progress is None else progress


#: What each kind of agent log holds, as the reports name it (any other log holds messages).
_RECORDS = {"usage": "usage_records", "summaries": "summary_records"}


def log_entries(logs: dict[str, int]) -> dict[str, int]:
    """The entries of a session's logs by what they are: messages (an agent's history or any
    other log), the usage and summary records agents keep beside their history, and the
    records of their turns' saved vectors."""
    entries = {"messages": 0, "usage_records": 0, "summary_records": 0, "vector_records": 0}
    for path, count in logs.items():
        named = agent_name_of(path)
        if path.startswith(SAVED_VECTORS):
            entries["vector_records"] += count
        else:
            entries[_RECORDS.get(named[1], "messages") if named else "messages"] += count
    return entries


def _entries_text(entries: dict[str, int]) -> str:
    """``8 messages``, or ``9 log entries (6 messages, 3 usage records)`` when agents'
    records are among them: a count of "messages" must not include what is not one."""
    parts = [plural(entries["messages"], "message")]
    for key, noun in (
        ("usage_records", "usage record"),
        ("summary_records", "summary record"),
        ("vector_records", "saved vector record"),
    ):
        if entries[key]:
            parts.append(plural(entries[key], noun))
    if len(parts) == 1:
        return parts[0]
    return f"{plural(sum(entries.values()), 'log entry', 'log entries')} ({', '.join(parts)})"


def _what_it_holds(summary: ArchiveSummary, entries: dict[str, int]) -> str:
    return (
        f"{_entries_text(entries)}, {plural(summary.snapshots, 'snapshot')}, "
        f"{plural(summary.memories, 'long-term memory', 'long-term memories')}"
    )
