"""praisonsession: sessions for LLM agents that are remembered.

``from praisonsession import Session`` gives one synchronous object that owns a conversation's
identity, state and TTL, persisted offline with zero setup (SQLite under ``./.praisonsession``),
or in any store you choose. ``AsyncSession`` is the same API as coroutines, for async code; the
AgentScope-style layer (``StateModule``, ``SessionBase`` stores) is exported too.
"""

from typing import TYPE_CHECKING, Any

from ._internal import moved
from ._version import __version__
from .errors import (
    AgentURLError,
    AmbiguousLegacyDataError,
    ConflictError,
    DamagedArchiveError,
    DecryptionError,
    EmbedderMismatchError,
    InvalidIdError,
    InvalidSettingError,
    InvalidValueError,
    KeyRequiredError,
    KnowledgeSourceError,
    MemoryNotFoundError,
    MissingDependencyError,
    OperationTimeoutError,
    PraisonSessionError,
    RemoteAuthError,
    RemoteConnectionError,
    RemoteError,
    RemoteModeError,
    RemoteRequestError,
    RemoteServerError,
    RuntimeShutdownError,
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    SnapshotNotFoundError,
    StateDictError,
    StoreUnavailableError,
    UnsupportedFormatError,
    UnsupportedOperationError,
    VectorExtensionError,
)
from .recall.memory.lifecycle import MemoryId
from .session.core import AsyncSession
from .session.sync import Session
from .stores import FORMAT_VERSION, SessionBase, SessionInfo, open_store

if TYPE_CHECKING:
    from .session.erasure import ErasureReport, aerase_user, erase_user
    from .state import LoadResult, MessageLog, StateModule
    from .stores.backends.json import JSONSession
    from .stores.backends.memory import InMemorySession
    from .stores.backends.postgres import PostgresSession
    from .stores.backends.redis import RedisSession
    from .stores.backends.sqlite import SqliteSession
    from .stores.wrappers.encrypted import EncryptedStore


__all__ = [
    "FORMAT_VERSION",
    "AgentURLError",
    "AmbiguousLegacyDataError",
    "AsyncSession",
    "ConflictError",
    "DamagedArchiveError",
    "DecryptionError",
    "EmbedderMismatchError",
    "EncryptedStore",
    "ErasureReport",
    "InMemorySession",
    "InvalidIdError",
    "InvalidSettingError",
    "InvalidValueError",
    "JSONSession",
    "KeyRequiredError",
    "KnowledgeSourceError",
    "LoadResult",
    "MemoryId",
    "MemoryNotFoundError",
    "MessageLog",
    "MissingDependencyError",
    "OperationTimeoutError",
    "PostgresSession",
    "PraisonSessionError",
    "RedisSession",
    "RemoteAuthError",
    "RemoteConnectionError",
    "RemoteError",
    "RemoteModeError",
    "RemoteRequestError",
    "RemoteServerError",
    "RuntimeShutdownError",
    "Session",
    "SessionBase",
    "SessionCorruptedError",
    "SessionExpiredError",
    "SessionInfo",
    "SessionNotFoundError",
    "SnapshotNotFoundError",
    "SqliteSession",
    "StateDictError",
    "StateModule",
    "StoreUnavailableError",
    "UnsupportedFormatError",
    "UnsupportedOperationError",
    "VectorExtensionError",
    "__version__",
    "aerase_user",
    "erase_user",
    "open_store",
]


moved.install()  # documented paths of the old layout (praisonsession.server.tokens) still import

_STORES = (
    "EncryptedStore",
    "InMemorySession",
    "JSONSession",
    "PostgresSession",
    "RedisSession",
    "SqliteSession",
)


def __getattr__(name: str) -> Any:
    """Store backends and state modules load on first use, so that the import stays fast."""
    if name in _STORES:
        from . import stores

        value = getattr(stores, name)
        globals()[name] = value
        return value
    if name in ("LoadResult", "MessageLog", "StateModule"):
        from . import state

        value = getattr(state, name)
        globals()[name] = value
        return value
    if name in ("ErasureReport", "aerase_user", "erase_user"):
        from .session import erasure

        value = getattr(erasure, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
