"""The store floor: ``SessionBase`` (AgentScope's session API, user-facing), which holds a
``StoreBackend`` (the record operations a backend implements, and a wrapper forwards),
``open_store`` (a store by URL), ``Branches`` (forks and snapshots), and the five backends.

It imports only the state modules and the ground floor below it. ``testing`` is the
conformance suite a backend of yours runs against itself (it needs pytest, and nothing in the
package imports it).

The backends load on first use (``from praisonsession.stores import SqliteSession`` works as
usual): each pulls in its own standard-library modules, and ``import praisonsession`` should
not pay for backends a program never opens.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .api import SessionBase
from .backend import (
    TTL,
    UNSET,
    Capabilities,
    ForeignSessions,
    ForwardingBackend,
    LogWrite,
    StoreBackend,
    StoredModules,
)
from .branches import Branches, SnapshotInfo, TreeNode
from .record import FORMAT_VERSION, Key, SessionContents, SessionInfo, record_key
from .urls import open_store

if TYPE_CHECKING:
    from .backends.json import JSONSession
    from .backends.memory import InMemorySession
    from .backends.postgres import PostgresSession
    from .backends.redis import RedisSession
    from .backends.sqlite import SqliteSession
    from .wrappers.encrypted import EncryptedStore

_BACKENDS = {
    "EncryptedStore": ".wrappers.encrypted",
    "InMemorySession": ".backends.memory",
    "PostgresSession": ".backends.postgres",
    "JSONSession": ".backends.json",
    "RedisSession": ".backends.redis",
    "SqliteSession": ".backends.sqlite",
}

__all__ = [
    "FORMAT_VERSION",
    "TTL",
    "UNSET",
    "Branches",
    "Capabilities",
    "EncryptedStore",
    "ForeignSessions",
    "ForwardingBackend",
    "InMemorySession",
    "JSONSession",
    "Key",
    "LogWrite",
    "PostgresSession",
    "RedisSession",
    "SessionBase",
    "SessionContents",
    "SessionInfo",
    "SnapshotInfo",
    "SqliteSession",
    "StoreBackend",
    "StoredModules",
    "TreeNode",
    "open_store",
    "record_key",
]


def __getattr__(name: str) -> Any:
    if name in _BACKENDS:
        value = getattr(import_module(_BACKENDS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
