"""The ``praisonsession`` command line (console script and ``python -m praisonsession``).

Built on Click. ``group.py`` holds the command group; each family of commands lives in a
module of its own that adds its commands to :data:`main` when imported below. Nothing here is
imported by ``import praisonsession``.
"""

from __future__ import annotations

from .group import main

__all__ = ["main"]

# each module adds its commands to `main`
from . import archives as _archives  # noqa: F401 - export, import
from . import branches as _branches  # noqa: F401 - fork, snapshots, snapshot, restore
from . import keys as _keys  # noqa: F401 - rekey
from . import serve as _serve  # noqa: F401 - serve
from . import sessions as _sessions  # noqa: F401 - list, show, delete, purge, erase-user
from . import ui as _ui  # noqa: F401 - ui
