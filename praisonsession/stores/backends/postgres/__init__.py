"""PostgreSQL, the fifth store: ``PostgresSession`` over ``PostgresBackend`` (``backend.py``),
with ``pip install ".[postgres]"`` in a clone (``pip install "praisonsession[postgres]"`` once
published).

psycopg and its pool load when a store is made, never at ``import praisonsession``.
"""

from __future__ import annotations

from typing import Any

from ...api import SessionBase
from .backend import PostgresBackend
from .url import parse_url

__all__ = ["PostgresBackend", "PostgresSession"]


class PostgresSession(SessionBase):
    """Sessions in PostgreSQL: ``PostgresSession("postgresql://user@host/db")``.

    ``schema`` names the schema that holds the tables (created on first use; ``public`` by
    default); ``pool_size`` bounds the asyncio pool of each event loop; ``connect_timeout``
    (seconds) bounds waiting for a connection. Other ``conninfo`` parameters (``sslmode``,
    ``application_name``...) pass through to libpq. ``durability`` is what the application
    asks for; the server alone decides what a commit survives (``fsync``,
    ``synchronous_commit``): at ``"power"`` the store checks them on first use and logs a
    warning when they fall short.
    """

    def __init__(
        self,
        conninfo: str = "postgresql://localhost/postgres",
        *,
        schema: str = "public",
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        durability: str = "process",
    ) -> None:
        super().__init__(
            PostgresBackend(
                conninfo,
                schema=schema,
                pool_size=pool_size,
                connect_timeout=connect_timeout,
                default_ttl=default_ttl,
                sliding_ttl=sliding_ttl,
                durability=durability,
            )
        )

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PostgresSession:
        """``postgresql://[user[:password]@]host[:port]/db[?schema=app&pool_size=10&...]``;
        the URL's own options win over ``options``."""
        conninfo, given = parse_url(url)
        if "durability" in given:
            options.pop("durability", None)
        return cls(conninfo, **{**options, **given})
