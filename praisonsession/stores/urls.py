"""``open_store(url)``: pick a backend by URL, the way database libraries do."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import InvalidValueError
from ..redaction import redact_url
from .base import SessionBase

SCHEMES = (
    "memory://",
    "json:///path/to/dir",
    "sqlite:///path/to/file.db",
    "redis://host:6379/0",
)


def open_store(url: str, **options: Any) -> SessionBase:
    """A store for ``memory://``, ``json:///dir``, ``sqlite:///file.db`` or ``redis://...``.

    Relative paths are written with two slashes (``sqlite://sessions.db``) and absolute ones
    with three (``sqlite:///tmp/sessions.db``). Redis URLs are
    ``redis://[[user]:password@]host[:port][/db][?key_prefix=app:]`` (``rediss://`` for TLS).
    Options go to the backend's constructor.
    """
    if not isinstance(url, str) or "://" not in url:
        raise InvalidValueError(
            f"Store URL {_shown(url)} is not a URL; use one of: {', '.join(SCHEMES)}."
        )
    scheme, rest = url.split("://", 1)
    scheme = scheme.lower()
    if scheme == "memory":
        from .memory import InMemorySession

        return InMemorySession(**options)
    if scheme in ("json", "sqlite"):
        path = unquote(urlsplit(url).netloc + urlsplit(url).path) if rest else ""
        if not path:
            raise InvalidValueError(
                f"Store URL {_shown(url)} names no path; e.g. {scheme}:///data."
            )
        if scheme == "json":
            from .json_files import JSONSession

            return JSONSession(path, **options)
        from .sqlite import SqliteSession

        return SqliteSession(path, **options)
    if scheme in ("redis", "rediss"):
        from .redis import RedisSession

        return RedisSession.from_url(url, **options)
    raise InvalidValueError(
        f"Unknown store scheme {scheme!r} in {_shown(url)}; use one of: {', '.join(SCHEMES)}."
    )


def _shown(url: Any) -> str:
    """The URL as an error shows it: quoted, with any password masked."""
    return repr(redact_url(url)) if isinstance(url, str) else repr(url)
