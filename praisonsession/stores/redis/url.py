"""``redis://`` URLs: read into constructor arguments, and written back without the password."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ...errors import InvalidValueError
from ...redaction import redact_url

__all__ = ["display_url", "parse_url"]


def parse_url(url: str) -> dict[str, Any]:
    """``RedisSession``'s arguments for ``redis://[[user]:password@]host[:port][/db][?...]``.

    ``rediss://`` turns TLS on. Query parameters other than ``key_prefix`` become numbers when
    they look like numbers (``socket_timeout=5``), ``true``/``false`` booleans.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "rediss"):
        raise InvalidValueError(f"{redact_url(url)!r} is not a redis:// or rediss:// URL.")
    try:
        port = parts.port or 6379
    except ValueError:
        raise InvalidValueError(f"Store URL {redact_url(url)!r} has an invalid port.") from None
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise InvalidValueError(
            f"Store URL {redact_url(url)!r}: the path must be a db number, e.g. /0."
        )
    settings: dict[str, Any] = {
        "host": unquote(parts.hostname or "localhost"),
        "port": port,
        "db": int(path or 0),
    }
    if parts.password is not None:
        settings["password"] = unquote(parts.password)
    if parts.username:
        settings["username"] = unquote(parts.username)
    if scheme == "rediss":
        settings["ssl"] = True
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        settings[name] = value if name == "key_prefix" else _query_value(value)
    return settings


def display_url(
    host: str,
    port: int,
    db: int,
    password: str | None,
    *,
    ssl: bool,
    key_prefix: str,
    pool: Any = None,
) -> str:
    """The store's URL for messages and ``repr``, with ``***`` for a password.

    A given connection ``pool`` knows better where the store connects than the arguments.
    """
    if pool is not None:
        found = getattr(pool, "connection_kwargs", {})
        host = found.get("host", host)
        port = found.get("port", port)
        db = found.get("db", db)
        password = found.get("password")
    scheme = "rediss" if ssl else "redis"
    auth = ":***@" if password else ""
    url = f"{scheme}://{auth}{host}:{port}/{db}"
    if key_prefix:
        url += f"?key_prefix={quote(key_prefix, safe=':')}"
    return url


def _query_value(value: str) -> Any:
    lowered = value.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("none", "null", ""):
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value
