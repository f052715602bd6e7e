"""The options and arguments the commands share, declared once so that they read the same
everywhere."""

from __future__ import annotations

import click

from ..identifiers import DEFAULT_USER

__all__ = [
    "json_option",
    "progress_option",
    "session_argument",
    "store_option",
    "user_option",
    "yes_option",
]

session_argument = click.argument("session_id", metavar="ID")

store_option = click.option(
    "--store",
    "store_url",
    metavar="URL",
    default=None,
    help="Where sessions are kept: sqlite://sessions.db (a relative path; three slashes for "
    "an absolute one: sqlite:///srv/sessions.db), json://sessions-dir, redis://host:6379/0, "
    "postgresql://user@host/db. "
    "Default: the store_url setting (PRAISONSESSION_STORE_URL), else SQLite under "
    "./.praisonsession, as Session() uses.",
)

json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document on stdout, and nothing else there.",
)

user_option = click.option(
    "--user",
    "user_id",
    metavar="USER",
    default=DEFAULT_USER,
    show_default=True,
    help="The user the session belongs to.",
)

yes_option = click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")

progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on stderr (default: when stderr is a terminal).",
)
