"""``postgresql://`` URLs: our options read out of the query, the rest left for libpq."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ...._internal.redaction import redact_url
from ....errors import InvalidValueError

__all__ = ["OPTIONS", "connection_url", "display_url", "parse_url"]

#: Query parameters that are ``PostgresSession``'s own, and how each is read; any other
#: (``sslmode``, ``application_name``, ``connect_timeout``...) goes to libpq as it is.
OPTIONS: dict[str, type] = {"schema": str, "pool_size": int, "durability": str}


def parse_url(url: str) -> tuple[str, dict[str, Any]]:
    """The libpq connection URL and ``PostgresSession``'s own options of ``url``.

    ``postgres://`` is taken as ``postgresql://``. ``connect_timeout`` serves both: libpq's,
    and the store's patience with a server it cannot reach.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("postgresql", "postgres"):
        raise InvalidValueError(f"{redact_url(url)!r} is not a postgresql:// URL.")
    try:
        parts.port  # noqa: B018 - urllib checks the port when it is read
    except ValueError:
        raise InvalidValueError(f"Store URL {redact_url(url)!r} has an invalid port.") from None
    options: dict[str, Any] = {}
    kept = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in OPTIONS:
            try:
                options[name] = OPTIONS[name](value)
            except ValueError:
                raise InvalidValueError(
                    f"Store URL {redact_url(url)!r}: {name}={value!r} is not valid."
                ) from None
            continue
        if name == "connect_timeout":
            try:
                options[name] = float(value)
            except ValueError:
                raise InvalidValueError(
                    f"Store URL {redact_url(url)!r}: connect_timeout={value!r} is not seconds."
                ) from None
        kept.append((name, value))
    query = urlencode(kept, quote_via=quote)  # libpq reads %20 as a space, not +
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, query, ""))
    return conninfo, options


def display_url(conninfo: str, schema: str) -> str:
    """Where the store lives, for messages and ``repr``: no password, the schema when not the
    default one."""
    if "://" in conninfo:
        shown = redact_url(conninfo)
    else:  # a key=value connection string
        from psycopg.conninfo import conninfo_to_dict

        try:
            found = conninfo_to_dict(conninfo)
        except Exception:  # malformed: psycopg says so when it connects
            return "postgresql://?"
        host = found.get("host", "localhost")
        port = f":{found['port']}" if found.get("port") else ""
        user = f"{found['user']}@" if found.get("user") else ""
        shown = f"postgresql://{user}{host}{port}/{found.get('dbname', '')}"
    if schema != "public":
        shown += ("&" if "?" in shown else "?") + urlencode({"schema": schema})
    return shown


def connection_url(conninfo: str, schema: str) -> str:
    """``conninfo`` (a URL or ``key=value`` pairs) as one ``postgresql://`` URL naming
    ``schema``, for another component to connect the same way (secrets included)."""
    if "://" not in conninfo:
        from psycopg.conninfo import conninfo_to_dict

        pairs = {name: str(value) for name, value in conninfo_to_dict(conninfo).items()}
        conninfo = "postgresql:///?" + urlencode(pairs, quote_via=quote)
    parts = urlsplit(conninfo)
    query = [(n, v) for n, v in parse_qsl(parts.query, keep_blank_values=True) if n != "schema"]
    query.append(("schema", schema))
    return urlunsplit(
        ("postgresql", parts.netloc, parts.path, urlencode(query, quote_via=quote), "")
    )
