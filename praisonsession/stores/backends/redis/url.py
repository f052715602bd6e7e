"""``redis://`` URLs: read into constructor arguments, and written back without the password."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ...._internal.checks import is_seconds
from ...._internal.redaction import redact_url
from ....errors import InvalidValueError

__all__ = ["QUERY_OPTIONS", "display_url", "parse_url"]

#: The query parameters a redis:// URL takes, and the kind of value each holds. Anything else
#: is refused here: passed on, redis-py would fail later with a bare TypeError.
QUERY_OPTIONS: dict[str, str] = {
    "key_prefix": "text",
    "durability": "text",
    "client_name": "text",
    "default_ttl": "seconds?",
    "key_ttl": "seconds?",
    "layout": "text",
    "sliding_ttl": "flag",
    "retry_attempts": "count",
    "retry_max_delay": "seconds",
    "socket_timeout": "seconds?",
    "socket_connect_timeout": "seconds?",
    "health_check_interval": "seconds",
    "socket_keepalive": "flag",
    "max_connections": "count?",
}


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
        kind = QUERY_OPTIONS.get(name)
        if kind is None:
            raise InvalidValueError(
                f"Store URL {redact_url(url)!r}: {name!r} is not an option of redis:// URLs; "
                f"use {', '.join(sorted(QUERY_OPTIONS))}."
            )
        settings[name] = _read_option(url, name, value, kind)
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


def _read_option(url: str, name: str, value: str, kind: str) -> Any:
    """One query value read as its option's kind, or a typed error naming the option."""
    lowered = value.lower()
    if kind == "text":
        return value
    if lowered in ("none", "null", "") and kind in ("seconds?", "count?"):
        return None
    if kind == "flag":
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0"):
            return False
    else:
        try:
            number = int(value) if kind.startswith("count") else float(value)
        except ValueError:
            number = None
        if number is not None and is_seconds(number):
            return number
    wanted = {
        "flag": "true or false",
        "count": "a whole number >= 0",
        "count?": "a whole number >= 0",
        "seconds": "a number of seconds >= 0",
        "seconds?": "a number of seconds >= 0, or none",
    }[kind]
    raise InvalidValueError(
        f"Store URL {redact_url(url)!r}: {name}={value!r} is not valid; use {wanted}."
    )
