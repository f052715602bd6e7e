"""``praisonsession rekey``: seal a store's sessions with a new encryption key."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import InvalidSettingError
from ..stores.encrypted import load_key, rekey
from . import main
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


@main.command("rekey", short_help="Seal every session with a new encryption key.")
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
@yes_option
@store_option
@json_option
def rekey_command(
    old_key_file: Path, new_key_file: Path, yes: bool, store_url: str | None, as_json: bool
):
    """Rewrite every session, snapshot and message of the store sealed with a new key.

    Stop the programs that write to the store first. A run cut short (a crash, Ctrl-C) loses
    nothing: what it rewrote opens with the new key, the rest with the old one, and running
    the same command again finishes the rotation. Then give the programs the new key.

    \b
    Example:
      praisonsession rekey --old-key-file old.key --new-key-file new.key --store sqlite://s.db
    """
    old = _key_from(old_key_file, "--old-key-file")
    new = _key_from(new_key_file, "--new-key-file")
    with opened_store(store_url) as opened:
        plain = getattr(opened.store, "inner", opened.store)  # the key setting may wrap it
        if not yes:
            confirm(f"Seal every session of {opened.shown_url} with the new key?")
        done = opened.run(rekey(plain, old, new))
    if as_json:
        print_json({"rekeyed": done})
    else:
        click.echo(f"Sealed {plural(done, 'session')} of {opened.shown_url} with the new key.")
