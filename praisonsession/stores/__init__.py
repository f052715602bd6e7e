"""Async session stores (AgentScope's ``SessionBase`` layer) and ``open_store``.

The backends load on first use (``from praisonsession.stores import SqliteSession`` works as
usual): each pulls in its own standard-library modules, and ``import praisonsession`` should
not pay for backends a program never opens.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .base import SessionBase
from .record import FORMAT_VERSION, SessionInfo
from .urls import open_store

if TYPE_CHECKING:
    from .json_files import JSONSession
    from .memory import InMemorySession
    from .postgres import PostgresSession
    from .redis import RedisSession
    from .sqlite import SqliteSession

_BACKENDS = {
    "InMemorySession": ".memory",
    "PostgresSession": ".postgres",
    "JSONSession": ".json_files",
    "RedisSession": ".redis",
    "SqliteSession": ".sqlite",
}

__all__ = [
    "FORMAT_VERSION",
    "InMemorySession",
    "JSONSession",
    "PostgresSession",
    "RedisSession",
    "SessionBase",
    "SessionInfo",
    "SqliteSession",
    "open_store",
]


def __getattr__(name: str) -> Any:
    if name in _BACKENDS:
        value = getattr(import_module(_BACKENDS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
