"""praisonsession: sessions for LLM agents that are remembered.

``from praisonsession import Session`` gives one synchronous object that owns a conversation's
identity, state and TTL, persisted offline with zero setup (SQLite under ``./.praisonsession``),
or in any store you choose. The AgentScope-style async layer (``StateModule``, ``SessionBase``
stores) is exported too, for code that is already async.
"""

from .errors import (
    ConflictError,
    EmbedderMismatchError,
    InvalidIdError,
    InvalidValueError,
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
from .stores import (
    FORMAT_VERSION,
    InMemorySession,
    JSONSession,
    SessionBase,
    SessionInfo,
    SqliteSession,
    open_store,
)

__version__ = "0.1.0"

__all__ = [
    "FORMAT_VERSION",
    "ConflictError",
    "EmbedderMismatchError",
    "InMemorySession",
    "InvalidIdError",
    "InvalidValueError",
    "JSONSession",
    "LoadResult",
    "MessageLog",
    "PraisonSessionError",
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
