"""``praisonsession rekey``: seal a store's sessions and its vector store with a new key."""

from __future__ import annotations

from pathlib import Path

import click

from ..._internal.redaction import redact_url
from ...errors import InvalidSettingError
from ...session.rotation import arekey
from ...stores.wrappers.encrypted import load_key
from .group import main
from .options import json_option, store_option, yes_option
from .output import confirm, plural, print_json
from .store_access import opened_store

__all__ = ["rekey_command"]


def _key_from(path: Path, what: str) -> str:
    """The first line of a key file, checked; the key itself is never on the command line."""
    try:
        with open(path, "rb") as file:
            key = file.readline(1024).decode("ascii", "replace").strip()
    except OSError as exc:
        raise click.UsageError(f"{what} {path} cannot be read ({type(exc).__name__}).") from None
    try:
        load_key(key, what)
    except InvalidSettingError as exc:
        raise click.UsageError(str(exc)) from None
    return key


@main.command("rekey", short_help="Seal every session and memory with a new encryption key.")
@click.option(
    "--old-key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File whose first line is the key the store is sealed with now.",
)
@click.option(
    "--new-key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File whose first line is the new key.",
)
@click.option(
    "--vector-store",
    "vector_store",
    metavar="DIR|URL",
    default=None,
    help="Where memory and knowledge keep their vectors: a directory or a Chroma server URL "
    "(default: PRAISONSESSION_VECTOR_STORE_URL, else <data_dir>/chroma if it exists).",
)
@yes_option
@store_option
@json_option
def rekey_command(
    old_key_file: Path,
    new_key_file: Path,
    vector_store: str | None,
    yes: bool,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Rewrite every session, snapshot and message of the store, and every memory, memory
    history and knowledge entry of the vector store, sealed with a new key.

    Stop the programs that write to them first. A run cut short (a crash, Ctrl-C) loses
    nothing: what it rewrote opens with the new key, the rest with the old one, and running
    the same command again finishes the rotation. Memory ids stay as they are. Then give the
    programs the new key.

    \b
    Example:
      praisonsession rekey --old-key-file old.key --new-key-file new.key \\
          --store sqlite://s.db --vector-store ./praisonsession_data/chroma
    """
    old = _key_from(old_key_file, "--old-key-file")
    new = _key_from(new_key_file, "--new-key-file")
    with opened_store(store_url) as opened:
        if not yes:
            confirm(f"Seal every session of {opened.shown_url} and its memories with the new key?")
        report = opened.run(
            arekey(old, new, opened.store, vector_store=vector_store, settings=opened.settings)
        )
    shown = None if report.vector_store is None else redact_url(report.vector_store)
    if as_json:
        print_json(
            {"rekeyed": report.sessions, "vector_entries": report.vector_entries, "vectors": shown}
        )
        return
    click.echo(
        f"Sealed {plural(report.sessions, 'session')} of {opened.shown_url} with the new key."
    )
    if shown is not None:
        entries = plural(report.vector_entries, "vector entry", "vector entries")
        click.echo(f"Sealed {entries} of {shown} with the new key.")
