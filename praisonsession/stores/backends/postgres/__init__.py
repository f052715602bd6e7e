"""PostgreSQL, the fifth store: ``PostgresSession`` (``pip install 'praisonsession[postgres]'``).

psycopg and its pool load when a store is made, never at ``import praisonsession``.
"""

from __future__ import annotations

from .store import PostgresSession

__all__ = ["PostgresSession"]
