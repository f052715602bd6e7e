"""The ``praisonsession`` command line (console script and ``python -m praisonsession``).

Built on Click. This package holds the command group; each family of commands lives in a
module of its own that adds its commands to :data:`main` when imported below. Nothing here is
imported by ``import praisonsession``.
"""

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


# each module adds its commands to `main`
from . import archives as _archives  # noqa: E402, F401 - export, import
from . import branches as _branches  # noqa: E402, F401 - fork, snapshots, snapshot, restore
from . import keys as _keys  # noqa: E402, F401 - rekey
from . import serve as _serve  # noqa: E402, F401 - serve
from . import sessions as _sessions  # noqa: E402, F401 - list, show, delete, purge, erase-user
from . import ui as _ui  # noqa: E402, F401 - ui
