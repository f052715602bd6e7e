"""``SessionBase``: AgentScope's session API and the atomic operations every store offers.

The two AgentScope calls, ``save_session_state`` and ``load_session_state``, keep their exact
signatures. Around them every store offers, atomically: key-value state (read, replace, patch,
increment, compare-and-set), append-only message logs, listing, deletion, metadata and TTL.

A store *holds* its backend (:class:`~praisonsession.stores.backend.StoreBackend`, the record
operations) instead of being one: this class checks every argument once and maps each call
onto one record operation, which never sees an unchecked id or value. Where the modules of
``save_session_state`` live is the store's layout (``stores/modules.py``), chosen once when the
store is made. Forks and snapshots are :class:`~praisonsession.stores.branches.Branches` over
the same backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._internal.checks import check_count, check_flag, check_items
from .._internal.identifiers import DEFAULT_USER, check_key, check_session_id, check_user_id
from .._internal.json_data import JSONValue, check_json_data, detach
from ..errors import InvalidIdError, InvalidValueError
from .backend import UNSET, LogWrite, StoreBackend, StoredModules, Unset
from .guard import KeyGuard, guard
from .modules import ModuleLayout, NativeModules
from .record import Key, SessionInfo, check_ttl, record_key
from .reserved import SNAPSHOT_OWNER

__all__ = [
    "UNSET",
    "Key",
    "LogWrite",
    "SessionBase",
    "StoredModules",
    "Unset",
    "check_messages",
    "check_ttl",
]


class SessionBase:
    """An async store: AgentScope's ``save_session_state`` / ``load_session_state`` and the
    operations every store offers, over one ``backend``. Use it from any event loop, or
    through ``Session``.

    ``session_id`` binds the store to one session, as AgentScope's older API did: its
    ``save_session_state`` and ``load_session_state`` then take no session id. ``modules`` is
    where those two keep modules (the backend's own records unless a store says otherwise);
    ``bound_modules`` where the bound form keeps them (``modules`` unless said otherwise).
    """

    #: The record operations this store maps its calls onto: the backend it holds, behind the
    #: key guard (``stores/guard.py``), the only way any caller reaches its records.
    backend: KeyGuard

    def __init__(
        self,
        backend: StoreBackend | str | None = None,
        *,
        session_id: str | None = None,
        modules: ModuleLayout | None = None,
        bound_modules: ModuleLayout | None = None,
    ) -> None:
        if isinstance(backend, str) and session_id is None:
            # AgentScope's ``SessionBase(session_id)``: a subclass's constructor gives the
            # backend when it calls this again with it
            backend, session_id = None, backend
        #: The session AgentScope's older, bound API saves and loads; None for an unbound store.
        self.session_id = None if session_id is None else check_session_id(session_id)
        if backend is None:
            return
        if not isinstance(backend, StoreBackend):
            raise InvalidValueError(
                f"A store holds a StoreBackend, got {type(backend).__name__}; pass a backend, "
                "e.g. SessionBase(SqliteSession('s.db').backend), or use a store class."
            )
        self.backend = guard(backend)
        self._modules: ModuleLayout = NativeModules(self.backend) if modules is None else modules
        self._bound_modules = self._modules if bound_modules is None else bound_modules

    @property
    def url(self) -> str:
        """Where the data lives, e.g. ``sqlite:///path/sessions.db`` (passwords never shown)."""
        return self.backend.url

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
        from ..state.codec import check_modules

        layout, key = await self._placed(session_id, user_id)
        check_modules("save_session_state", state_modules)
        await layout.save(key, state_modules)

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
        from ..state.codec import check_modules

        layout, key = await self._placed(session_id, user_id)
        check_modules("load_session_state", state_modules)
        await layout.load(key, state_modules, allow_not_exist)

    async def refresh_session_state(
        self, session_id: str, user_id: str = "", **state_modules: Any
    ) -> int:
        """Take into the modules' message logs what other writers appended since they were last
        saved or loaded here; returns how many messages came in.

        One count per log when nothing is new. A log edited here since is left alone: its next
        save writes it as it is. Foreign modules (AgentScope's) have no logs: nothing to take.
        """
        from ..state.codec import check_modules

        key = record_key(session_id, user_id)
        check_modules("refresh_session_state", state_modules)
        return await self._modules.refresh(key, state_modules)

    async def _placed(self, session_id: str | None, user_id: str) -> tuple[ModuleLayout, Key]:
        """The layout and key of a save or load (the bound session's when no id is given),
        admitted by the key guard: a layout of AgentScope's own files or keys keeps modules
        beside the records, so the guard says whether this store may touch them."""
        layout, key = self._place(session_id, user_id)
        if not isinstance(layout, NativeModules):
            await self.backend.admit_foreign(key)
        return layout, key

    def _place(self, session_id: str | None, user_id: str) -> tuple[ModuleLayout, Key]:
        if session_id is not None:
            return self._modules, record_key(session_id, user_id)
        if self.session_id is None:
            raise InvalidIdError(
                "No session_id was given and this store is not bound to one. Pass it first: "
                "save_session_state('chat_123', agent=agent), or bind the store to a session "
                f"as AgentScope's older API did: {type(self).__name__}(session_id=..., ...)."
            )
        if not user_id:
            return self._bound_modules, Key(DEFAULT_USER, self.session_id)
        return self._modules, record_key(self.session_id, user_id)

    # -- sessions -------------------------------------------------------------------------

    async def create_session(
        self,
        session_id: str,
        user_id: str = "",
        *,
        ttl: float | Unset | None = UNSET,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Open a session: create it (or start it afresh if it expired) and refresh its TTL.

        ``ttl`` replaces the stored TTL when given; otherwise an existing session keeps its own
        and a new one gets ``default_ttl``.
        """
        key = record_key(session_id, user_id)
        if ttl is not UNSET:
            ttl = check_ttl(ttl)
        if metadata is not None:
            check_json_data(metadata, "metadata")
        return await self.backend.create_record(
            key, ttl=ttl, metadata=detach(metadata or {}, "metadata")
        )

    async def get_info(self, session_id: str, user_id: str = "") -> SessionInfo | None:
        """The session's metadata, or None if it does not exist or has expired."""
        return await self.backend.read_record(record_key(session_id, user_id))

    async def exists(self, session_id: str, user_id: str = "") -> bool:
        """True if the session is stored and has not expired."""
        return await self.get_info(session_id, user_id) is not None

    async def set_metadata(
        self, session_id: str, user_id: str = "", **metadata: JSONValue
    ) -> SessionInfo:
        """Merge user metadata (JSON data) into the session's metadata."""
        check_json_data(metadata, "metadata")
        key = record_key(session_id, user_id)
        return await self.backend.merge_record_metadata(key, metadata=detach(metadata, "m"))

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
        return await self.backend.list_records(user, limit=limit, after=after)

    async def list_users(self) -> list[str]:
        """Every user with a live session, sorted: where listing a whole store starts.

        Reads every user's entry in the store, so it costs time in proportion to the number
        of users (sessions count only where a user's have all expired). Snapshots are not a
        user's: their reserved owner is never listed.
        """
        return sorted(
            user for user in await self.backend.list_record_owners() if user != SNAPSHOT_OWNER
        )

    async def delete_session(self, session_id: str, user_id: str = "") -> bool:
        """Delete a session and everything in it. True if there was something to delete."""
        key = record_key(session_id, user_id)
        self._modules.forget(key)
        return await self.backend.delete_record(key)

    async def touch(
        self, session_id: str, user_id: str = "", *, ttl: float | Unset | None = UNSET
    ) -> SessionInfo | None:
        """Restart the session's TTL (optionally a new one); None if it is gone."""
        if ttl is not UNSET:
            ttl = check_ttl(ttl)
        return await self.backend.touch_record(record_key(session_id, user_id), ttl=ttl)

    async def expire(self, session_id: str, user_id: str = "") -> bool:
        """End the session now: it is gone for every reader exactly as if its TTL ran out
        (reads that need it raise ``SessionExpiredError``; ``purge_expired`` removes it, and
        opening it again starts it afresh). True if it was live."""
        key = record_key(session_id, user_id)
        self._modules.forget(key)
        return await self.backend.touch_record(key, ttl=0.0) is not None

    async def purge_expired(self) -> int:
        """Remove every expired session from storage; returns how many were removed."""
        return await self.backend.purge_records()

    # -- key-value state ------------------------------------------------------------------

    async def get_state(
        self, session_id: str, user_id: str = "", *, must_exist: bool = False
    ) -> dict[str, JSONValue]:
        """The whole key-value state ({} for a session that does not exist, unless must_exist)."""
        key = record_key(session_id, user_id)
        return await self.backend.read_record_state(key, names=None, must_exist=must_exist)

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
        key = record_key(session_id, user_id)
        state = await self.backend.read_record_state(
            key, names=[check_key(name)], must_exist=must_exist
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
        """Set the keys of ``updates`` (a dict) and delete those of ``delete`` (a list of keys;
        one str is refused, not taken for its letters) in one atomic step; returns the
        session's new version.

        ``replace=True`` drops every key not in ``updates``. With ``expected_version`` the
        change happens only if the session is still at that version, else ConflictError.
        """
        key = record_key(session_id, user_id)
        if updates is not None and not isinstance(updates, Mapping):
            raise InvalidValueError(
                f"The state's updates must be a dict of keys to JSON values, got {updates!r:.80}."
            )
        updates = dict(updates or {})
        for name in updates:
            check_key(name)
        check_json_data(updates, "state")
        keys = check_items(delete, "delete", " of state keys (e.g. delete=['name'])")
        deletes = [check_key(name) for name in keys]
        check_flag(replace, "replace")
        if expected_version is not None:
            check_count(expected_version, "expected_version", low=None)
        return await self.backend.patch_record_state(
            key,
            updates=detach(updates, "state"),
            deletes=deletes,
            replace=replace,
            expected_version=expected_version,
            must_exist=must_exist,
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
        key = record_key(session_id, user_id)
        if type(amount) is not int or not -_SMALL_INT < amount < _SMALL_INT:
            _check_number(amount, "increment")  # the common small int needs no call
        if type(default) is not int or not -_SMALL_INT < default < _SMALL_INT:
            _check_number(default, "default")
        return await self.backend.increment_record_value(
            key, name=check_key(name), amount=amount, default=default, must_exist=must_exist
        )

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
        key = record_key(session_id, user_id)
        items = check_messages(messages)
        start = -1 if expected_length is None else check_count(expected_length, "expected_length")
        return await self.backend.append_log(
            key, write=LogWrite(check_key(log, "log name"), items, start)
        )

    async def read_messages(
        self, session_id: str, user_id: str, log: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """Messages ``start:stop`` of a named log ([] if it does not exist)."""
        key = record_key(session_id, user_id)
        check_count(start, "read_messages: start")
        if stop is not None and check_count(stop, "read_messages: stop") < start:
            raise InvalidValueError("start must be >= 0 and stop (if given) >= start.")
        return await self.backend.read_log(
            key, path=check_key(log, "log name"), start=start, stop=stop
        )

    async def message_count(self, session_id: str, user_id: str, log: str) -> int:
        """How many messages a named log holds (0 if it does not exist)."""
        return await self.backend.count_log(
            record_key(session_id, user_id), path=check_key(log, "log name")
        )

    async def clear_messages(self, session_id: str, user_id: str, log: str) -> None:
        """Empty a named log, in one atomic step."""
        key = record_key(session_id, user_id)
        path = check_key(log, "log name")
        await self.backend.write_modules(key, documents={}, writes=[LogWrite(path, [], None)])

    # -- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        """Release connections. Idempotent; a closed store reopens on next use."""
        await self.backend.close()

    async def __aenter__(self) -> SessionBase:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


#: Ints this small need no further check to be JSON data an increment can take.
_SMALL_INT = 2**62


def _check_number(number: Any, label: str) -> None:
    """An int or float that JSON can hold."""
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
