"""The ``praisonsession`` command line (console script and ``python -m praisonsession``).

Built on Click. This package holds the command group; each family of commands lives in a
module of its own that adds its commands to :data:`main` when imported below. Nothing here is
imported by ``import praisonsession``.
"""

from __future__ import annotations

import click

from .._version import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="praisonsession")
def main() -> None:
    """Manage praisonsession sessions in any store, and serve agents to remote sessions."""


from . import serve as _serve  # noqa: E402, F401 - adds `praisonsession serve`
