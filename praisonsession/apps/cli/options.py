"""The options and arguments the commands share, declared once so that they read the same
everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from ..._internal.identifiers import DEFAULT_USER

__all__ = [
    "json_option",
    "listen_options",
    "progress_option",
    "session_argument",
    "store_option",
    "user_option",
    "yes_option",
]

F = TypeVar("F", bound=Callable[..., object])

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


def listen_options(port: int) -> Callable[[F], F]:
    """``--host``, ``--port`` (default ``port``) and ``--token`` of the commands that serve
    over HTTP (``serve``, ``ui``): the same words and the same rules in both."""
    options = (
        click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind."),
        click.option(
            "--port",
            default=port,
            show_default=True,
            type=click.IntRange(0, 65535),
            help="Port to listen on.",
        ),
        click.option(
            "--token",
            envvar="PRAISONSESSION_REMOTE_TOKEN",
            show_envvar=True,
            default=None,
            help="The admin token: it reaches every user's sessions. Off loopback the command "
            "refuses to start without a token (or user tokens).",
        ),
    )

    def add(command: F) -> F:
        for option in reversed(options):  # listed in --help in the order above
            command = option(command)
        return command

    return add
