"""The command group every family of commands adds itself to: ``praisonsession``."""

from __future__ import annotations

import click

from ..._version import __version__
from .exit_codes import EXIT_CODES_HELP, InterruptibleGroup

__all__ = ["main"]


@click.group(
    cls=InterruptibleGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, "-V", "--version", prog_name="praisonsession")
def main() -> None:
    """Manage praisonsession sessions in any store, and serve agents to remote sessions.

    Every command takes --store URL (default: the store_url setting, else SQLite under
    ./.praisonsession, as Session() uses) and --json, which prints one JSON document on
    stdout for scripts. Commands that destroy something ask first, unless --yes.

    \b
    Example:
      praisonsession list --store sqlite://sessions.db
      praisonsession show chat_1 --user alice --json
    """
