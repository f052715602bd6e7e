"""Which logs ``read_modules`` returns with a module's document: the rule, in one place.

The log at ``path`` lies below module ``name`` when it is named ``name`` or ``name.*``, whatever
dots ``name`` holds itself: ``a.b.c`` lies below ``a``, ``a.b`` and ``a.b.c``. That is what one
range of a sorted key finds ([name, name/), '/' following '.'), as SQLite, PostgreSQL and Redis
read it; memory keeps an index by the paths' parts and JSON makes one pass over its paths.
``read_modules`` returns the logs below the documents it found, not below a name it did not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["lies_below", "outermost", "paths_below"]


def lies_below(path: str, name: str) -> bool:
    """Whether the log at ``path`` lies below module ``name``."""
    return path == name or path.startswith(name + ".")


def paths_below(paths: Iterable[str], names: Iterable[str]) -> list[str]:
    """The paths lying below any of modules ``names``, in one pass: each path's own name and
    each part of it before a dot looked up."""
    wanted = set(names)
    if not any("." in name for name in wanted):  # the common case: one look-up a path
        return [path for path in paths if path.split(".", 1)[0] in wanted]
    return [path for path in paths if any(map(wanted.__contains__, _heads(path)))]


def outermost(names: Iterable[str]) -> list[str]:
    """``names`` each once, less those lying below another of them (whose range holds
    theirs): a backend reading a range per name reads each log once."""
    wanted = dict.fromkeys(names)
    return [name for name in wanted if not any(map(wanted.__contains__, _heads(name, False)))]


def _heads(path: str, whole: bool = True) -> Iterator[str]:
    """The modules ``path`` lies below: each part of it before a dot and (``whole``) itself."""
    dot = path.find(".")
    while dot >= 0:
        yield path[:dot]
        dot = path.find(".", dot + 1)
    if whole:
        yield path
