"""``open_store(url)``: pick a backend by URL, the way database libraries do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .._internal.redaction import redact_url
from ..errors import InvalidValueError
from .api import SessionBase


def _switch(value: str) -> bool:
    """An on/off query parameter: on, off, true, false, 1 or 0."""
    found = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}
    try:
        return found[value.lower()]
    except KeyError:
        raise ValueError(value) from None


#: Query parameters the file stores take in their URL, and how each is read.
FILE_OPTIONS: dict[str, dict[str, Callable[[str], Any]]] = {
    "sqlite": {
        "durability": str,
        "synchronous": str,
        "busy_timeout": float,
        "group_commit": _switch,
    },
    "json": {"durability": str, "lock_timeout": float, "layout": str},
}

SCHEMES = (
    "memory://",
    "json:///path/to/dir",
    "sqlite:///path/to/file.db",
    "redis://host:6379/0",
    "postgresql://user@host:5432/db",
)


def open_store(url: str, **options: Any) -> SessionBase:
    """A store for ``memory://``, ``json:///dir``, ``sqlite://file.db``, ``redis://...`` or
    ``postgresql://...``.

    Relative paths are written with two slashes (``sqlite://sessions.db``) and absolute ones
    with three (``sqlite:///tmp/sessions.db``). Redis URLs are
    ``redis://[[user]:password@]host[:port][/db][?key_prefix=app:]`` (``rediss://`` for TLS).
    PostgreSQL URLs are ``postgresql://[user[:password]@]host[:port]/db[?schema=app]``
    (``postgres://`` too; other query parameters, such as ``sslmode``, go to libpq).
    Options go to the backend's constructor; the file stores also take some in the URL's query
    (``sqlite://s.db?durability=power``, see :data:`FILE_OPTIONS`), which win over them.
    """
    if not isinstance(url, str) or "://" not in url:
        raise InvalidValueError(
            f"Store URL {_shown(url)} is not a URL; use one of: {', '.join(SCHEMES)}."
        )
    scheme, rest = url.split("://", 1)
    scheme = scheme.lower()
    if scheme == "memory":
        from .backends.memory import InMemorySession

        return InMemorySession(**options)
    if scheme in ("json", "sqlite"):
        parts = urlsplit(url)
        path = unquote(parts.netloc + parts.path) if rest else ""
        if not path:
            example = "sessions" if scheme == "json" else "sessions.db"
            raise InvalidValueError(
                f"Store URL {_shown(url)} names no path; e.g. {scheme}://{example} (in the "
                f"current directory) or {scheme}:///home/me/{example} (an absolute path)."
            )
        options = {**options, **_file_options(url, scheme, parts.query)}  # the URL's own win
        if scheme == "json":
            from .backends.json import JSONSession

            return JSONSession(path, **options)
        from .backends.sqlite import SqliteSession

        return SqliteSession(path, **options)
    if scheme in ("redis", "rediss"):
        from .backends.redis import RedisSession

        return RedisSession.from_url(url, **options)
    if scheme in ("postgresql", "postgres"):
        from .backends.postgres import PostgresSession

        return PostgresSession.from_url(url, **options)
    raise InvalidValueError(
        f"Unknown store scheme {scheme!r} in {_shown(url)}; use one of: {', '.join(SCHEMES)}."
    )


def _shown(url: Any) -> str:
    """The URL as an error shows it: quoted, with any password masked."""
    return repr(redact_url(url)) if isinstance(url, str) else repr(url)


def _file_options(url: str, scheme: str, query: str) -> dict[str, Any]:
    """``?durability=power&...`` of a sqlite:// or json:// URL, as constructor arguments."""
    if not query:
        return {}
    known = FILE_OPTIONS[scheme]
    found: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in known:
            raise InvalidValueError(
                f"Store URL {_shown(url)}: {name!r} is not an option of {scheme}:// URLs; "
                f"use {', '.join(known)}."
            )
        try:
            found[name] = known[name](value)
        except ValueError:
            raise InvalidValueError(
                f"Store URL {_shown(url)}: {name}={value!r} is not valid."
            ) from None
    return found
