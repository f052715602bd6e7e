"""Every error praisonsession raises, under one base class.

Each message says what was wrong and what to do next. Errors that correspond to a built-in
category also subclass that built-in (``ValueError``, ``KeyError``, ``TypeError``) so that code
written against AgentScope or PraisonAI keeps catching them.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "AgentURLError",
    "AmbiguousLegacyDataError",
    "ConflictError",
    "DamagedArchiveError",
    "DecryptionError",
    "EmbedderMismatchError",
    "InvalidIdError",
    "InvalidSettingError",
    "InvalidValueError",
    "KeyRequiredError",
    "KnowledgeSourceError",
    "MissingDependencyError",
    "OperationTimeoutError",
    "PraisonSessionError",
    "RemoteAuthError",
    "RemoteConnectionError",
    "RemoteError",
    "RemoteModeError",
    "RemoteRequestError",
    "RemoteServerError",
    "RuntimeShutdownError",
    "SessionCorruptedError",
    "SessionExpiredError",
    "SessionNotFoundError",
    "SnapshotNotFoundError",
    "StateDictError",
    "StoreUnavailableError",
    "UnsupportedFormatError",
    "UnsupportedOperationError",
    "VectorExtensionError",
]


class PraisonSessionError(Exception):
    """Base class of every praisonsession error."""


class InvalidIdError(PraisonSessionError, ValueError):
    """A session_id, user_id or key that cannot be used as an identifier."""


class InvalidValueError(PraisonSessionError, TypeError, ValueError):
    """A value that is not JSON data, of the wrong type, or out of range for the operation.

    Both a ``TypeError`` and a ``ValueError``: code written against AgentScope or PraisonAI
    catches one or the other for the same mistakes (PraisonAI raises ValueError for a negative
    TTL, Python raises TypeError for a value it cannot serialise).
    """


class InvalidSettingError(PraisonSessionError, ValueError):
    """A setting that does not exist, or a value that does not fit it. ``name`` is the setting,
    ``source`` where the value came from: "argument", "environment" or ".env"."""

    def __init__(self, message: str, *, name: str = "", source: str = "") -> None:
        super().__init__(message)
        self.name = name
        self.source = source


class SessionNotFoundError(PraisonSessionError, ValueError):
    """The session does not exist (it was never saved, or it was deleted)."""

    def __init__(self, session_id: str, user_id: str, hint: str = "") -> None:
        self.session_id = session_id
        self.user_id = user_id
        super().__init__(
            f"Session {session_id!r} of user {user_id!r} does not exist. "
            + (hint or "Save it first, or pass allow_not_exist=True to start from empty state.")
        )


class SessionExpiredError(PraisonSessionError):
    """The session's TTL ran out; its data is gone for every reader."""

    def __init__(self, session_id: str, user_id: str, expired_at: float | None = None) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.expired_at = expired_at
        super().__init__(
            f"Session {session_id!r} of user {user_id!r} has expired. "
            "Open a new Session(...) with the same id to start it afresh, "
            "or give it a longer session_ttl."
        )


class SessionCorruptedError(PraisonSessionError):
    """Stored data could not be decoded. It is left in place, never replaced by empty state."""

    def __init__(self, what: str, detail: str = "") -> None:
        self.what = what
        super().__init__(
            f"Stored data is corrupt: {what}"
            + (f" ({detail})" if detail else "")
            + ". Nothing was overwritten; restore it from a backup or delete the session."
        )


class DamagedArchiveError(SessionCorruptedError):
    """An archive file that is not whole or not one of ours; the import wrote nothing."""

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        PraisonSessionError.__init__(
            self,
            f"{what[:1].upper()}{what[1:]} is damaged ({detail}). Nothing was imported; "
            "use an intact copy of the archive, or export the session again.",
        )


class SnapshotNotFoundError(SessionNotFoundError):
    """The session has no snapshot of that id (the session itself may well exist)."""

    def __init__(self, session_id: str, user_id: str, snapshot_id: str) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.snapshot_id = snapshot_id
        PraisonSessionError.__init__(
            self,
            f"Session {session_id!r} of user {user_id!r} has no snapshot {snapshot_id!r}; "
            "list its snapshots (session.snapshots()) and pass one of their ids.",
        )


class DecryptionError(SessionCorruptedError):
    """An encrypted store found a value it cannot open: not encrypted at all (plaintext is
    refused, never trusted), altered, moved from elsewhere, or sealed with another key."""

    def __init__(self, what: str, detail: str, changed: str = "Nothing was changed.") -> None:
        self.what = what
        PraisonSessionError.__init__(
            self,
            f"Cannot decrypt {what}: {detail}. {changed} Check encryption_key (a rotated key "
            "needs `praisonsession rekey`), or restore the data from a backup.",
        )


class KeyRequiredError(DecryptionError):
    """A store opened without an encryption key met an encrypted session: it neither writes
    into it (what it wrote would not open) nor returns its ciphertext as values."""

    def __init__(self, what: str, fingerprint: str) -> None:
        self.what = what
        #: The expected key's fingerprint (``key-`` and 16 hex digits), never the key.
        self.fingerprint = fingerprint
        PraisonSessionError.__init__(
            self,
            f"{what} is encrypted with the key {fingerprint}, and this store was opened without "
            "an encryption key: nothing of it is read or written without that key. Nothing "
            "was changed. Open the store with it (settings={'encryption_key_file': ...}, or "
            "PRAISONSESSION_ENCRYPTION_KEY_FILE).",
        )


class UnsupportedFormatError(SessionCorruptedError):
    """A record written by a newer praisonsession than this one."""

    def __init__(self, what: str, found: int, supported: int) -> None:
        self.found = found
        self.supported = supported
        PraisonSessionError.__init__(
            self,
            f"{what} uses storage format {found}, but this praisonsession reads formats up to "
            f"{supported}. Upgrade praisonsession: {install_line(upgrade=True)}.",
        )


class AmbiguousLegacyDataError(PraisonSessionError):
    """Data an older library (AgentScope) stored under a name that more than one (user,
    session) pair maps to. It is never handed to any of them automatically; the message says
    how to import it for the right one."""


class UnsupportedOperationError(PraisonSessionError, NotImplementedError):
    """The store (or a remote session) cannot do this operation; the message says where it
    can be done."""


class ConflictError(PraisonSessionError):
    """A compare-and-set lost: someone else changed the record first."""


class StoreUnavailableError(PraisonSessionError):
    """The store could not be reached after bounded retries; nothing was assumed or written."""


class VectorExtensionError(StoreUnavailableError):
    """PostgreSQL could not give memory its ``vector`` extension (pgvector not installed on the
    server, or no privilege to create it); the message says what to run or choose instead."""


class MissingDependencyError(PraisonSessionError, ImportError):
    """A feature needs a package that is not installed; the message gives the install line.

    Subclasses ``ImportError``, which is what code that probes for optional features catches.
    """


def install_line(extra: str | None = None, *, upgrade: bool = False) -> str:
    """How to install praisonsession (with ``extra``), in the two forms, always together: the
    one that works from a clone of the repository today, and the one that works once the
    package is on PyPI. Every install hint the package prints is built here."""
    clone = "." if extra is None else f'".[{extra}]"'
    published = "praisonsession" if extra is None else f'"praisonsession[{extra}]"'
    if upgrade:
        return (
            f"git pull, then pip install {clone} in your clone of the repository (once "
            f"praisonsession is published: pip install -U {published})"
        )
    return (
        f"pip install {clone} in a clone of the repository (once praisonsession is "
        f"published: pip install {published})"
    )


class OperationTimeoutError(PraisonSessionError, TimeoutError):
    """A call did not finish within the session's ``timeout``; it was abandoned, not retried.

    Subclasses ``TimeoutError`` so that code catching the built-in keeps working.
    """

    def __init__(self, what: str, seconds: float | None) -> None:
        self.what = what
        self.seconds = seconds
        limit = "its deadline" if seconds is None else f"timeout={seconds:g} s"
        super().__init__(
            f"{what} did not finish within {limit}. Pass a larger timeout= to Session(...) if "
            "the work is legitimately slow; otherwise check what it waited for (a store locked "
            "by another process or down, a slow vector store or LLM endpoint)."
        )


class RuntimeShutdownError(PraisonSessionError):
    """The background event loop was shut down while the call was waiting for it."""

    def __init__(self, what: str = "The call") -> None:
        super().__init__(
            f"{what} was cancelled because praisonsession's background loop is shutting down "
            "(runtime.shutdown() or interpreter exit). Nothing more will run; if this was not "
            "the end of the program, make the call again: the loop restarts on demand."
        )


class EmbedderMismatchError(PraisonSessionError):
    """A vector collection was created with another embedder than the one in use now."""


class MemoryNotFoundError(PraisonSessionError, KeyError):
    """No memory has this id in this session or its user's long-term memory (never added, or
    deleted). ``get_memory`` returns None instead; ``list_memories`` shows the ids there are."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class IsolationError(PraisonSessionError):
    """A vector operation read an entry of another user or scope back; it was withheld. Only
    data written around praisonsession (by hand into its collections) can cause it."""


class KnowledgeSourceError(PraisonSessionError, ValueError):
    """A knowledge source that cannot be read: missing, unsupported, empty, binary, or a URL
    that did not answer with a document. Nothing from it was added."""


class RemoteError(PraisonSessionError):
    """A remote agent or LLM endpoint failed or answered with something unusable.

    ``url`` is the endpoint with any credentials masked; ``status`` the HTTP status when there
    was an answer.
    """

    def __init__(self, message: str, *, url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class RemoteConnectionError(RemoteError, ConnectionError):
    """A session server could not be reached, or gave no answer within ``timeout``.

    Subclasses ``ConnectionError``, which is what PraisonAI's remote ``Session`` raises.
    """


class AgentURLError(RemoteConnectionError, InvalidValueError):
    """``agent_url`` cannot name a session server (``mock://agent``, no host, a bad port).

    A ``ConnectionError``, which is what PraisonAI's ``Session(agent_url=...)`` raises for such
    a URL (it cannot connect to it), and an ``InvalidValueError`` (``ValueError``), which is
    what it is.
    """


class RemoteAuthError(RemoteError, PermissionError):
    """The session server refused the request (HTTP 401): no token, or the wrong one."""


class RemoteRequestError(RemoteError):
    """The session server refused a request it understood (no agent at that path, a body
    too large, an operation that server does not offer)."""


class RemoteServerError(RemoteError):
    """The session server failed to answer (HTTP 5xx after bounded retries), or its agent
    failed (its LLM, say)."""


class RemoteModeError(PraisonSessionError, ValueError):
    """An operation of the other mode: ``chat`` on a local session, or memory, knowledge or
    ``Agent`` on a remote one (they run on the server). A ``ValueError``, as in PraisonAI."""


class StateDictError(PraisonSessionError, KeyError):
    """``load_state_dict`` got a state dict whose keys do not match the module.

    Subclasses ``KeyError`` because AgentScope raised ``KeyError`` for a missing key.
    """

    def __init__(
        self,
        module: str,
        missing_keys: Sequence[str] = (),
        unexpected_keys: Sequence[str] = (),
    ) -> None:
        self.missing_keys = list(missing_keys)
        self.unexpected_keys = list(unexpected_keys)
        parts = []
        if self.missing_keys:
            parts.append(f"missing keys {self.missing_keys}")
        if self.unexpected_keys:
            parts.append(f"unexpected keys {self.unexpected_keys}")
        self.message = (
            f"Cannot load state into {module}: {' and '.join(parts)}. Nothing was changed. "
            "Pass strict=False to load the keys that match and keep the rest as they are."
        )
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message
