"""Async session stores (AgentScope's ``SessionBase`` layer), ``open_store``, and the backend
protocol (``StoreBackend`` and the records it passes) that a new backend or a wrapper implements.

The backends load on first use (``from praisonsession.stores import SqliteSession`` works as
usual): each pulls in its own standard-library modules, and ``import praisonsession`` should
not pay for backends a program never opens.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .api import SessionBase
from .backend import UNSET, LogWrite, StoreBackend, StoredModules
from .record import FORMAT_VERSION, Key, SessionContents, SessionInfo
from .urls import open_store

if TYPE_CHECKING:
    from .backends.json.store import JSONSession
    from .backends.memory import InMemorySession
    from .backends.postgres import PostgresSession
    from .backends.redis import RedisSession
    from .backends.sqlite.store import SqliteSession
    from .wrappers.encrypted import EncryptedStore

_BACKENDS = {
    "EncryptedStore": ".wrappers.encrypted",
    "InMemorySession": ".backends.memory",
    "PostgresSession": ".backends.postgres",
    "JSONSession": ".backends.json.store",
    "RedisSession": ".backends.redis",
    "SqliteSession": ".backends.sqlite.store",
}

__all__ = [
    "FORMAT_VERSION",
    "UNSET",
    "EncryptedStore",
    "InMemorySession",
    "JSONSession",
    "Key",
    "LogWrite",
    "PostgresSession",
    "RedisSession",
    "SessionBase",
    "SessionContents",
    "SessionInfo",
    "SqliteSession",
    "StoreBackend",
    "StoredModules",
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
