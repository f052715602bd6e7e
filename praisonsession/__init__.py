"""praisonsession: sessions for LLM agents that are remembered.

``from praisonsession import Session`` gives one synchronous object that owns a conversation's
identity, state and TTL, persisted offline with zero setup (SQLite under ``./.praisonsession``),
or in any store you choose. The AgentScope-style async layer (``StateModule``, ``SessionBase``
stores) is exported too, for code that is already async.
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    ConflictError,
    EmbedderMismatchError,
    InvalidIdError,
    InvalidValueError,
    KnowledgeSourceError,
    PraisonSessionError,
    RemoteError,
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    StateDictError,
    StoreUnavailableError,
    UnsupportedFormatError,
)
from .session import Session
from .state import LoadResult, MessageLog, StateModule
from .stores import FORMAT_VERSION, SessionBase, SessionInfo, open_store

if TYPE_CHECKING:
    from .stores.json_files import JSONSession
    from .stores.memory import InMemorySession
    from .stores.redis import RedisSession
    from .stores.sqlite import SqliteSession

__version__ = "0.1.0"

__all__ = [
    "FORMAT_VERSION",
    "ConflictError",
    "EmbedderMismatchError",
    "InMemorySession",
    "InvalidIdError",
    "InvalidValueError",
    "JSONSession",
    "KnowledgeSourceError",
    "LoadResult",
    "MessageLog",
    "PraisonSessionError",
    "RedisSession",
    "RemoteError",
    "Session",
    "SessionBase",
    "SessionCorruptedError",
    "SessionExpiredError",
    "SessionInfo",
    "SessionNotFoundError",
    "SqliteSession",
    "StateDictError",
    "StateModule",
    "StoreUnavailableError",
    "UnsupportedFormatError",
    "__version__",
    "open_store",
]


def __getattr__(name: str) -> Any:
    """Store backends load on first use, so that the import stays fast."""
    if name in ("InMemorySession", "JSONSession", "RedisSession", "SqliteSession"):
        from . import stores

        value = getattr(stores, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
