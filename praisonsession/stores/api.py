"""``SessionBase``: the async store every backend is, a template over ``StoreBackend``.

The two AgentScope calls, ``save_session_state`` and ``load_session_state``, keep their exact
signatures. Around them every backend offers, atomically: key-value state (read, replace,
patch, increment, compare-and-set), append-only message logs, listing, deletion, metadata and
TTL. This class validates every argument once and maps each call onto the record operations
of :class:`~praisonsession.stores.backend.StoreBackend`, which backends implement and which
never see an unchecked id or value. Module trees become documents through the codec in
``state/codec.py``; the hierarchy operations (``hierarchy.py``) and the ack bookkeeping
(``acks.py``) live apart.

One module past 500 lines, on purpose: it is the contract, every public store call with its
checks beside the record operation it maps to, so a backend author reads one file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_count
from .._internal.identifiers import check_key, check_session_id, check_user_id
from .._internal.json_data import JSONValue, check_json_data, detach
from ..errors import InvalidIdError, InvalidValueError, SessionNotFoundError
from .acks import LogAcks
from .backend import UNSET, LogWrite, StoredModules
from .branches import SNAPSHOT_OWNER, HierarchyOperations
from .record import Key, SessionInfo

if TYPE_CHECKING:  # loaded by the first save or load of modules: a cold start skips them
    from ..state.message_log import MessageLog

__all__ = [
    "UNSET",
    "Key",
    "LogWrite",
    "SessionBase",
    "StoredModules",
    "check_messages",
    "check_ttl",
]


class SessionBase(HierarchyOperations):
    """Base class of every store. Async; use it from any event loop, or through ``Session``.

    ``default_ttl`` (seconds) applies to sessions created without an explicit TTL;
    ``sliding_ttl`` makes every read or write of a session restart its TTL.
    """

    #: A short text naming where the data lives, e.g. ``sqlite:///path/sessions.db``.
    url: str = "memory://"
    #: True when every coroutine of the store waits only in ``runtime.pause``, so that the sync
    #: facade may run it on the caller's thread (see :func:`praisonsession._internal.runtime.run`).
    runs_inline: bool = False

    def __init__(
        self,
        session_id: str | None = None,
        *,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
    ) -> None:
        #: AgentScope's older API bound a store to one session: its ``save_session_state`` and
        #: ``load_session_state`` then take no session id. None for an unbound store.
        self.session_id = None if session_id is None else check_session_id(session_id)
        self.default_ttl = check_ttl(default_ttl)
        self.sliding_ttl = bool(sliding_ttl)
        self._acks = LogAcks()
        self._keys_seen: dict[tuple[str, str], Key] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # -- AgentScope's API -----------------------------------------------------------------

    async def save_session_state(
        self, session_id: str | None = None, user_id: str = "", **state_modules: Any
    ) -> None:
        """Save the named modules. Modules saved earlier under other names are kept.

        A module is this library's StateModule or any object with ``state_dict()`` and
        ``load_state_dict(state_dict, strict=...)`` (AgentScope's agents, memories, toolkits),
        saved as its state dict, atomically with the others.

        A message log this store already holds is appended to, not rewritten, when it was only
        appended to since; messages other writers appended meanwhile are kept, before ours, and
        taken into the log so that it reads as the store does. An edited log is written in full.
        """
        from ..state.codec import check_modules, snapshot_module

        key = self.record_key(self._bound_id(session_id), user_id)
        check_modules("save_session_state", state_modules)
        logs: dict[str, MessageLog] = {}
        documents = {
            name: snapshot_module(module, name, logs) for name, module in state_modules.items()
        }
        writes = []
        synced: dict[str, int] = {}
        for path, log in logs.items():
            start = self._acks.synced_length(key, path, log)
            if start is None:
                messages = log.messages_since(0)
                check_json_data(messages, f"message log {path!r}")  # edited in place, maybe
                writes.append(LogWrite(path, messages, None))
            else:
                synced[path] = start
                writes.append(LogWrite(path, log.messages_since(start), -1))
        lengths = await self.write_modules(key, documents, writes)
        for write in writes:
            log, length = logs[write.path], lengths[write.path]
            start = synced.get(write.path)
            if start is not None:
                ours_at = length - len(write.messages)
                await self._take_in_others(key, write.path, log, start, ours_at)
            self._acks.record(key, write.path, log, length)

    async def _take_in_others(
        self, key: Key, path: str, log: MessageLog, start: int, ours_at: int
    ) -> None:
        """Our appended messages landed at ``ours_at``; bring in what others stored before."""
        if ours_at > start:  # other writers appended between our last sync and our append
            log.absorb(start, await self.read_log(key, path, start, ours_at))
        elif ours_at < start:  # someone rewrote the log meanwhile: take it as stored
            log.reset(await self.read_log(key, path, 0, None))

    async def load_session_state(
        self,
        session_id: str | None = None,
        user_id: str = "",
        allow_not_exist: bool = True,
        **state_modules: Any,
    ) -> None:
        """Load the named modules; all of them are checked before any of them changes.

        A module the session does not hold is left as it is. With ``allow_not_exist=False`` a
        missing session raises SessionNotFoundError (a ``ValueError``, as in AgentScope).
        """
        from ..state.codec import attach_logs, check_modules, is_ours, load_states, logs_of, ours

        key = self.record_key(self._bound_id(session_id), user_id)
        check_modules("load_session_state", state_modules)
        stored = await self.read_modules(key, list(state_modules))
        if stored is None:
            self._nothing_stored_for(key, state_modules)
            if allow_not_exist:
                _logger().info(
                    "Session %r of user %r does not exist. Skip loading.",
                    key.session_id,
                    key.user_id,
                )
                return
            raise SessionNotFoundError(key.session_id, key.user_id)
        documents = {
            name: attach_logs(module, name, stored.documents[name], stored.logs)
            if is_ours(module)
            else stored.documents[name]
            for name, module in state_modules.items()
            if name in stored.documents
        }
        load_states(state_modules, documents, f"session {key.session_id!r}", trusted=True)
        for name, module in ours(state_modules).items():
            if name in stored.documents:
                for path, log in logs_of(module, name).items():
                    self._acks.record(key, path, log, len(log))
        self._nothing_stored_for(
            key, {n: m for n, m in state_modules.items() if n not in stored.documents}
        )

    def _nothing_stored_for(self, key: Key, modules: dict[str, Any]) -> None:
        """Modules the store does not hold: their logs are synced at length 0, so that their
        first save appends after whatever another writer stores there meanwhile."""
        from ..state.codec import logs_of, ours

        for name, module in ours(modules).items():
            for path, log in logs_of(module, name).items():
                self._acks.record(key, path, log, 0)

    async def refresh_session_state(
        self, session_id: str, user_id: str = "", **state_modules: Any
    ) -> int:
        """Take into the modules' message logs what other writers appended since they were last
        saved or loaded here; returns how many messages came in.

        One count per log when nothing is new. A log edited here since is left alone: its next
        save writes it as it is. Foreign modules (AgentScope's) have no logs: nothing to take.
        """
        from ..state.codec import check_modules, logs_of, ours

        key = self.record_key(session_id, user_id)
        check_modules("refresh_session_state", state_modules)
        taken = 0
        for name, module in ours(state_modules).items():
            for path, log in logs_of(module, name).items():
                start = self._acks.synced_length(key, path, log)
                if start is None:
                    continue
                held = await self.count_log(key, path)
                if held == start:
                    continue
                if held > start:
                    newer = await self.read_log(key, path, start, held)
                    log.absorb(start, newer)
                    taken += len(newer)
                    held = start + len(newer)
                else:  # rewritten by someone else: ours had nothing unsaved, so take theirs
                    stored = await self.read_log(key, path, 0, None)
                    log.reset(stored)
                    taken += len(stored)
                    held = len(stored)
                self._acks.record(key, path, log, held)
        return taken

    # -- sessions -------------------------------------------------------------------------

    async def create_session(
        self,
        session_id: str,
        user_id: str = "",
        *,
        ttl: float | None = UNSET,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Open a session: create it (or start it afresh if it expired) and refresh its TTL.

        ``ttl`` replaces the stored TTL when given; otherwise an existing session keeps its own
        and a new one gets ``default_ttl``.
        """
        key = self.record_key(session_id, user_id)
        if ttl is not UNSET:
            ttl = check_ttl(ttl)
        if metadata is not None:
            check_json_data(metadata, "metadata")
        return await self.create_record(key, ttl, detach(metadata or {}, "metadata"))

    async def get_info(self, session_id: str, user_id: str = "") -> SessionInfo | None:
        """The session's metadata, or None if it does not exist or has expired."""
        return await self.read_record(self.record_key(session_id, user_id))

    async def exists(self, session_id: str, user_id: str = "") -> bool:
        """True if the session is stored and has not expired."""
        return await self.get_info(session_id, user_id) is not None

    async def set_metadata(
        self, session_id: str, user_id: str = "", **metadata: JSONValue
    ) -> SessionInfo:
        """Merge user metadata (JSON data) into the session's metadata."""
        check_json_data(metadata, "metadata")
        return await self.merge_record_metadata(
            self.record_key(session_id, user_id), detach(metadata, "m")
        )

    async def list_sessions(
        self, user_id: str = "", *, limit: int = 100, after: str | None = None
    ) -> list[SessionInfo]:
        """One page of a user's live sessions, ordered by session_id.

        Pass the last session_id of a page as ``after`` to get the next page.
        """
        user = check_user_id(user_id)
        check_count(limit, "limit", low=1, high=10_000)
        if after is not None:
            check_session_id(after)
        return await self.list_records(user, limit, after)

    async def list_users(self) -> list[str]:
        """Every user with a live session, sorted: where listing a whole store starts.

        Reads every user's entry in the store, so it costs time in proportion to the number
        of users (sessions count only where a user's have all expired). Snapshots are not a
        user's: their reserved owner is never listed.
        """
        return sorted(user for user in await self.list_record_owners() if user != SNAPSHOT_OWNER)

    async def delete_session(self, session_id: str, user_id: str = "") -> bool:
        """Delete a session and everything in it. True if there was something to delete."""
        key = self.record_key(session_id, user_id)
        self._acks.forget(key)
        return await self.delete_record(key)

    async def touch(
        self, session_id: str, user_id: str = "", *, ttl: float | None = UNSET
    ) -> SessionInfo | None:
        """Restart the session's TTL (optionally a new one); None if it is gone."""
        if ttl is not UNSET:
            ttl = check_ttl(ttl)
        return await self.touch_record(self.record_key(session_id, user_id), ttl)

    async def expire(self, session_id: str, user_id: str = "") -> bool:
        """End the session now: it is gone for every reader exactly as if its TTL ran out
        (reads that need it raise ``SessionExpiredError``; ``purge_expired`` removes it, and
        opening it again starts it afresh). True if it was live."""
        key = self.record_key(session_id, user_id)
        self._acks.forget(key)
        return await self.touch_record(key, 0.0) is not None

    async def purge_expired(self) -> int:
        """Remove every expired session from storage; returns how many were removed."""
        return await self.purge_records()

    # -- key-value state ------------------------------------------------------------------

    async def get_state(
        self, session_id: str, user_id: str = "", *, must_exist: bool = False
    ) -> dict[str, JSONValue]:
        """The whole key-value state ({} for a session that does not exist, unless must_exist)."""
        return await self.read_record_state(self.record_key(session_id, user_id), None, must_exist)

    async def get_value(
        self,
        session_id: str,
        user_id: str,
        name: str,
        default: JSONValue = None,
        *,
        must_exist: bool = False,
    ) -> JSONValue:
        """One value of a session's state, or ``default`` if the key is not set."""
        state = await self.read_record_state(
            self.record_key(session_id, user_id), [check_key(name)], must_exist
        )
        return state.get(name, default)

    async def patch_state(
        self,
        session_id: str,
        user_id: str = "",
        updates: dict[str, JSONValue] | None = None,
        *,
        delete: Sequence[str] = (),
        replace: bool = False,
        expected_version: int | None = None,
        must_exist: bool = False,
    ) -> int:
        """Set (and delete) keys in one atomic step; returns the session's new version.

        ``replace=True`` drops every key not in ``updates``. With ``expected_version`` the
        change happens only if the session is still at that version, else ConflictError.
        """
        key = self.record_key(session_id, user_id)
        updates = dict(updates or {})
        for name in updates:
            check_key(name)
        check_json_data(updates, "state")
        deletes = [check_key(name) for name in delete]
        if expected_version is not None:
            check_count(expected_version, "expected_version", low=None)
        return await self.patch_record_state(
            key, detach(updates, "state"), deletes, replace, expected_version, must_exist
        )

    async def replace_state(
        self, session_id: str, user_id: str, state: dict[str, JSONValue], **options: Any
    ) -> int:
        """Replace a session's whole state with ``state``, in one atomic step."""
        return await self.patch_state(session_id, user_id, state, replace=True, **options)

    async def compare_and_set(
        self,
        session_id: str,
        user_id: str,
        expected_version: int,
        updates: dict[str, JSONValue],
    ) -> int:
        """Patch the state only if nobody changed the session since ``expected_version``."""
        return await self.patch_state(
            session_id, user_id, updates, expected_version=expected_version
        )

    async def increment(
        self,
        session_id: str,
        user_id: str,
        name: str,
        amount: int | float = 1,
        default: int | float = 0,
        *,
        must_exist: bool = False,
    ) -> int | float:
        """Add ``amount`` to a numeric key atomically (starting from ``default``); the new value."""
        key = self.record_key(session_id, user_id)
        _check_number(amount, "increment")
        _check_number(default, "default")
        return await self.increment_record_value(key, check_key(name), amount, default, must_exist)

    # -- message logs ---------------------------------------------------------------------

    async def append_messages(
        self,
        session_id: str,
        user_id: str,
        log: str,
        messages: Sequence[dict[str, Any]],
        *,
        expected_length: int | None = None,
    ) -> int:
        """Append messages to a named log; returns its new length.

        With ``expected_length`` the append happens only if the log still has that many
        messages, else ConflictError.
        """
        key = self.record_key(session_id, user_id)
        items = check_messages(messages)
        start = -1 if expected_length is None else expected_length
        return await self.append_log(key, LogWrite(check_key(log, "log name"), items, start))

    async def read_messages(
        self, session_id: str, user_id: str, log: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """Messages ``start:stop`` of a named log ([] if it does not exist)."""
        key = self.record_key(session_id, user_id)
        for name, value in (("start", start), ("stop", stop)):
            if (value is not None or name == "start") and (
                isinstance(value, bool) or not isinstance(value, int)
            ):
                raise InvalidValueError(
                    f"read_messages: {name} must be a whole number (an int), got "
                    f"{type(value).__name__} {value!r}."
                )
        if start < 0 or (stop is not None and stop < start):
            raise InvalidValueError("start must be >= 0 and stop (if given) >= start.")
        return await self.read_log(key, check_key(log, "log name"), start, stop)

    async def message_count(self, session_id: str, user_id: str, log: str) -> int:
        """How many messages a named log holds (0 if it does not exist)."""
        return await self.count_log(
            self.record_key(session_id, user_id), check_key(log, "log name")
        )

    async def clear_messages(self, session_id: str, user_id: str, log: str) -> None:
        """Empty a named log, in one atomic step."""
        key = self.record_key(session_id, user_id)
        await self.write_modules(key, {}, [LogWrite(check_key(log, "log name"), [], None)])

    # -- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        """Release connections. Idempotent; a closed store reopens on next use."""

    async def __aenter__(self) -> SessionBase:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- helpers for backends -------------------------------------------------------------

    def _bound_id(self, session_id: str | None) -> str:
        """The session id given, or the one the store is bound to (AgentScope's older API)."""
        if session_id is not None:
            return session_id
        if self.session_id is None:
            raise InvalidIdError(
                "No session_id was given and this store is not bound to one. Pass it first: "
                "save_session_state('chat_123', agent=agent), or bind the store to a session "
                f"as AgentScope's older API did: {type(self).__name__}(session_id=..., ...)."
            )
        return self.session_id

    def _new_ttl(self, ttl: float | None) -> float | None:
        return self.default_ttl if ttl is UNSET else ttl


def _logger() -> Any:
    import logging  # on first use: ``import praisonsession`` stays fast

    return logging.getLogger("praisonsession")


def check_wait(seconds: Any, name: str) -> float:
    """How long a store waits for a lock (``busy_timeout``, ``lock_timeout``): a finite number
    of seconds >= 0. A negative or NaN wait would turn every contended write into a failure."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise InvalidValueError(f"{name} must be a number of seconds, got {seconds!r}.")
    if not 0 <= seconds < float("inf"):  # NaN fails too
        raise InvalidValueError(
            f"{name}={seconds!r} is not valid; use a finite number of seconds >= 0, e.g. 30."
        )
    return float(seconds)


def check_ttl(ttl: Any) -> float | None:
    """A TTL in seconds as a float, or None (no expiry); the server and sessions check theirs
    here too."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise InvalidValueError(
            f"ttl must be a number of seconds or None (no expiry), got {type(ttl).__name__}."
        )
    if not ttl >= 0 or ttl == float("inf"):  # NaN fails the first test
        raise InvalidValueError(
            f"Invalid session_ttl={ttl!r}. Use None (no expiry) or a finite, non-negative "
            "number of seconds."
        )
    return float(ttl)


def _check_number(number: Any, label: str) -> None:
    """An int or float that JSON can hold (the common small int is checked in one step)."""
    if type(number) is int and -(2**62) < number < 2**62:
        return
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise InvalidValueError(f"{label} must be an int or float, got {number!r}.")
    check_json_data(number, label)


def check_messages(messages: Any) -> list[dict[str, Any]]:
    """Messages as detached dicts of JSON data, each refused with its index if it is not."""
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise InvalidValueError("messages must be a list of dicts.")
    items = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidValueError(
                f"Message {index} is a {type(message).__name__}; messages are dicts such as "
                '{"role": "user", "content": "hi"}.'
            )
        items.append(detach(message, f"message {index}"))
    return items
