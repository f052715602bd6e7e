"""Documented import paths that moved when the floors became folders keep working.

``import praisonsession.server.tokens`` (the path ``docs/pages/security.md`` gave before the
programs moved to ``apps/``) finds the module at its new path and warns once with
``DeprecationWarning`` naming it. Only documented paths are listed: everything else of the
old layout was private and is simply gone.
"""

from __future__ import annotations

import sys
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "install"]

#: Old dotted name -> new dotted name.
MOVED = {
    "praisonsession.server": "praisonsession.apps.server",
    "praisonsession.server.tokens": "praisonsession.apps.server.access_tokens",
}


class _Alias(Loader):
    """Loads the module at its new path; the old name then refers to the same object."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib
        import warnings

        warnings.warn(
            f"{spec.name} moved to {self.new}; import it from there.",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new path ran when it was imported."""


class _MovedFinder(MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        new = MOVED.get(name)
        if new is None:
            return None
        package = any(other.startswith(name + ".") for other in MOVED)
        return ModuleSpec(name, _Alias(new), is_package=package)


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
