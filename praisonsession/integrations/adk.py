"""Google ADK's sessions on praisonsession stores: :class:`PraisonSessionService`.

``Runner(agent=..., app_name="shop", session_service=PraisonSessionService("sqlite://adk.db"))``
keeps every ADK session as one of our sessions, ``(user_id, session_id)``: ADK's ``user_id`` is
ours, so ``erase_user`` reaches all a user stored, and ``Session(...)``, ``praisonsession
show/export/fork/erase-user``, the browser, TTL and encryption at rest work on it as on any
session. How ADK's model maps onto a store's records (``StoreBackend``):

- **Ids.** ``app_name`` and ADK's session id become one of our session ids,
  ``adk:<length of app_name>:<app_name>:<session id>`` (:func:`session_record_id`): the length
  makes the pair unambiguous, so two apps never share a session and no pair of names collides.
  Ids padded with whitespace are stripped, as ADK's services do. Our ids hold 256 characters,
  so ``app_name`` holds :data:`MAX_APP_NAME` and a session id what is left (47 or more), each
  refused in an error of its own. ``user_id=""`` is refused (``InvalidIdError``): our stores
  take ``""`` for the default user, which ADK keeps apart.
- **Atomic writes.** ``create_session`` and ``append_event`` check every value first (a NaN,
  an infinity, an integer too long to store: ``InvalidValueError``) and write nothing when
  one cannot be stored. ``create_session`` makes the record with its document and the
  listing's copy in one ``create_record_with_modules`` (one commit on SQLite), so no crash
  leaves a session without its state. An event appended again (the same id, equal) is kept
  once and its state delta applied once, as ``InMemorySessionService`` does.
- **Events** are the append-only message log :data:`EVENTS_LOG` of the session, one message per
  event, each the JSON ``event.model_dump_json(exclude_none=True)`` produced; they come back
  equal through ``Event.model_validate``. Reads take the tail by index, never the history.
- **Session state** (keys without a prefix), ``last_update_time`` and the count of events are
  the module document :data:`SESSION_DOC`. ``append_event`` writes the event and the document
  in one ``write_modules`` that holds only
  if the log still has the count the caller's session was read at: a session another writer
  moved on is refused with ADK's ``StaleSessionError`` and nothing is written, so two
  concurrent runs never interleave their events into one history (adk #4751).
- **``user:`` state** is a session of the user named ``adk-user:<length>:<app_name>``, and
  **``app:`` state** a record of the reserved owner (no user's: it is the app's), each merged
  key by key in one atomic ``patch_record_state``, once the event is stored (both at once:
  one commit on SQLite). ``temp:`` state is never stored.
- ``list_sessions(app_name)`` of every user walks ``list_records_by_prefix`` a page at a
  time (an index by session id where the backend has one), of one user a walk of that user's
  records; each page becomes ADK sessions (without events, with their state, as ADK's own
  services list them) before the next is read. Each record's metadata carries a copy of
  :data:`SESSION_DOC`, written beside each append and creation, so a page of sessions is
  listed with their state in one read. The two are separate atomic writes started together:
  on SQLite at durability ``"power"`` they share one commit (group commit), so an append is
  one fsync. ``create_session`` writes the copy in its one step (one fsync; a second, after
  it, only for ``app:`` and ``user:`` keys in its state). A copy whose
  append was refused as stale is set back to the stored document right after. The document
  stays the truth: a writer killed between the two writes, or two appends whose copies land
  out of order, leave a listing one event off until the session's next append;
  ``get_session`` and ``append_event`` always read the document.

Needs the ``adk`` extra; ``import praisonsession`` never imports ADK, and only this module
and ``adk_memory.py`` do.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from operator import attrgetter
from typing import Any, TypeGuard

from .._internal.identifiers import MAX_ID_LENGTH, check_key
from .._internal.json_data import check_json_data
from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    MissingDependencyError,
    install_line,
)
from ..settings import Settings
from ..stores import Key, LogWrite, SessionBase, SessionInfo
from ..stores.backend import pages_by_prefix
from ..stores.record import SNAPSHOT_OWNER
from ._adapter import HeldStore, checked_key, checked_user_id

try:
    from google.adk.errors._stale_session_error import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.sessions import _session_util
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session
    from google.adk.sessions.state import State
except ImportError as missing:  # pragma: no cover - the extra is installed where this runs
    raise MissingDependencyError(
        "praisonsession.integrations.adk needs Google ADK: " + install_line("adk") + "."
    ) from missing

__all__ = [
    "EVENTS_LOG",
    "MAX_APP_NAME",
    "SESSION_DOC",
    "PraisonMemoryService",
    "PraisonSessionService",
    "app_state_key",
    "session_record_id",
    "user_state_id",
]

#: The message log holding a session's events, as ``praisonsession show`` names it.
EVENTS_LOG = "adk.events"
#: The module document ``{"state": {...}, "time": last_update_time, "events": count}``: the
#: session's own state (keys without a prefix) and where its log stands.
SESSION_DOC = "adk_session"
_DOCS = [SESSION_DOC]
_SESSION = "adk"
_USER = "adk-user"
_APP = "adk-app\x1e"  # under the reserved owner: \x1e keeps it apart from snapshots' names
_MARKER = "praisonsession:"  # our marks on Session._storage_update_marker
#: The longest ``app_name``: with it, a session id of ADK's generated kind (36 characters)
#: and longer ones up to 47 characters still fit in one of our ids (256 characters).
MAX_APP_NAME = 200
_PAGE = 1000
#: ADK's order of a listing (its services' ``ORDER BY update_time, user_id, id``).
_LISTING_ORDER = attrgetter("last_update_time", "user_id", "id")
_STALE = (
    "The session has been modified in storage since it was loaded (another run appended "
    "to it). Please reload the session (get_session) before appending more events."
)


def _scope(app_name: str) -> str:
    if not isinstance(app_name, str):
        raise InvalidIdError(
            f"app_name must be a str, got {type(app_name).__name__}: {app_name!r}."
        )
    if len(app_name) > MAX_APP_NAME:
        raise InvalidIdError(
            f"app_name is {len(app_name)} characters long; the limit is {MAX_APP_NAME} (an "
            "app's sessions are ids of ours, which hold 256 characters with the session id). "
            "Use a shorter app name."
        )
    return f"{len(app_name)}:{app_name}"


def session_record_id(app_name: str, session_id: str) -> str:
    """Our session id of ADK's ``(app_name, session_id)``: injective, thanks to the length."""
    record_id = f"{_SESSION}:{_scope(app_name)}:{session_id}"
    if len(record_id) > MAX_ID_LENGTH:
        limit = MAX_ID_LENGTH - (len(record_id) - len(session_id))
        raise InvalidIdError(
            f"session_id is {len(session_id)} characters long; with an app_name of "
            f"{len(app_name)} characters the limit is {limit}. Use a shorter session id."
        )
    return record_id


def user_state_id(app_name: str) -> str:
    """The session id, among the user's, of their ``user:`` state in ``app_name``."""
    return f"{_USER}:{_scope(app_name)}"


def app_state_key(app_name: str) -> Key:
    """Where ``app_name``'s ``app:`` state is kept: a record no user owns."""
    return Key(SNAPSHOT_OWNER, f"{_APP}{_scope(app_name)}")


def _user(user_id: Any) -> str:
    """ADK's user id as ours (checked: printable text of 1 to 256 characters)."""
    return checked_user_id(user_id)


def _storable(state: Any, what: str) -> dict[str, dict[str, Any]]:
    """A state delta split by scope (``temp:`` keys dropped) as ADK's services coerce it,
    checked whole before anything is written: a value no store can hold (NaN, infinity, an
    integer too long) and a scoped key that cannot be one of ours raise here."""
    if not isinstance(state, dict):
        raise InvalidValueError(f"{what} must be a dict or None, got {state!r:.80}.")
    deltas: dict[str, dict[str, Any]] = _session_util.extract_json_safe_state_delta(state)
    named = dict(deltas["session"])
    for prefix, scope in ((State.APP_PREFIX, "app"), (State.USER_PREFIX, "user")):
        for name, value in deltas[scope].items():
            check_key(name, f"{what} key {prefix + name!r}: the name after {prefix!r}")
            named[prefix + name] = value
    check_json_data(named, what)
    return deltas


def _delivered(session: Session, event: Event) -> bool:
    """Whether ``event`` is already among the session's events (the same id, equal): a
    retried append, kept once as ``InMemorySessionService`` keeps it. An event stamped later
    than the session's last one is new without a look (every event a run makes), so the
    look through the history is paid only by an event as old as one already held."""
    events = session.events
    if not events or event.timestamp > events[-1].timestamp:
        return False
    return any(held == event for held in events if held.id == event.id)


def _stripped(session_id: Any) -> Any:
    return session_id.strip() if isinstance(session_id, str) else session_id


class PraisonSessionService(HeldStore, BaseSessionService):
    """ADK's ``BaseSessionService`` over a praisonsession store.

    ``store`` is what ``Session(store=...)`` takes: a URL (``memory://``, ``json:///dir``,
    ``sqlite://file.db``, ``redis://...``, ``postgresql://...``), a store instance, or None
    for the default store (SQLite under ``./.praisonsession/``). ``settings`` are
    praisonsession's (``Settings`` or a dict: ``default_ttl``, ``durability``,
    ``encryption_key``...).
    """

    def __init__(
        self,
        store: SessionBase | str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
    ) -> None:
        self._hold(store, settings)
        self._backend = self._store.backend

    async def close(self) -> None:
        """Release the store's connections (a store passed in as an instance is its owner's
        to close); the sessions stay stored and the service reopens on next use."""
        await self.aclose()

    # -- ADK's protocol -------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = _stripped(session_id) or str(uuid.uuid4())
        key = self._key(app_name, user_id, session_id)
        deltas = _storable({} if state is None else state, "state")  # before any write
        now = time.time()
        doc = {"state": deltas["session"], "time": now, "events": 0}
        try:  # the record, its document and the listing's copy, only if there is none: one
            # atomic step (one commit on SQLite)
            await self._backend.create_record_with_modules(
                key,
                metadata={SESSION_DOC: doc},
                documents={SESSION_DOC: doc},
                writes=[LogWrite(EVENTS_LOG, [], 0)],
            )
        except ConflictError:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        await _together(*self._scoped(app_name, key.user_id, deltas))
        app_state = await self._app_state(app_name)
        user_state = await self._user_state(app_name, key.user_id)
        session = Session(
            app_name=app_name,
            user_id=user_id,
            id=session_id,
            state=_merged(app_state, user_state, deltas["session"]),
            events=[],
            last_update_time=now,
        )
        session._storage_update_marker = f"{_MARKER}0"
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        if config is not None and not isinstance(config, GetSessionConfig):
            raise InvalidValueError(
                "get_session: config is an ADK GetSessionConfig (num_recent_events, "
                f"after_timestamp) or None, got {config!r}."
            )
        session_id = _stripped(session_id)
        key = self._key(app_name, user_id, session_id)
        stored = await self._backend.read_modules(key, names=_DOCS)
        if stored is None:
            return None
        doc = _document(stored.documents, None)
        count = doc["events"]
        events = await self._events(key, count, config)
        app_state = await self._app_state(app_name)
        user_state = await self._user_state(app_name, key.user_id)
        session = Session(
            app_name=app_name,
            user_id=user_id,
            id=session_id,
            state=_merged(app_state, user_state, doc["state"]),
            events=events,
            last_update_time=doc["time"],
        )
        session._storage_update_marker = f"{_MARKER}{count}"
        return session

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        prefix = session_record_id(app_name, "")
        if user_id is None:
            pages = pages_by_prefix(self._backend, prefix, _PAGE)
        else:
            pages = self._one_user(_user(user_id), prefix)
        app_state = await self._app_state(app_name)
        scoped: dict[str, dict[str, Any]] = {}  # by user: the same for each of their sessions
        fields = set(_FIELDS)  # the listing's sessions' fields set: see _listed
        sessions = []
        cut = len(prefix)
        # A page's records become sessions before the next page is read: only the sessions
        # outlive the loop, so a listing of 10,000 leaves the garbage collector less to walk
        # (holding every record first cost two full collections per listing)
        async for page in pages:
            page.reverse()
            while page:
                info = page.pop()
                doc = info.metadata.get(SESSION_DOC)
                if not _is_document(doc):  # no copy in the listing: the document itself
                    stored = await self._backend.read_modules(_key_of(info), names=_DOCS)
                    if stored is None:  # deleted since it was listed
                        continue
                    doc = _document(stored.documents, info)
                owner = info.user_id
                extra = scoped.get(owner)
                if extra is None:
                    extra = scoped[owner] = _scoped(
                        app_state, await self._user_state(app_name, owner)
                    )
                sessions.append(
                    _listed(
                        app_name,
                        owner,
                        info.session_id[cut:],
                        {**doc["state"], **extra},
                        float(doc["time"]),
                        fields,
                    )
                )
        sessions.sort(key=_LISTING_ORDER)
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._backend.delete_record(self._key(app_name, user_id, _stripped(session_id)))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._user_state(app_name, _user(user_id))

    async def append_event(self, session: Session, event: Event) -> Event:
        if not isinstance(session, Session) or not isinstance(event, Event):
            raise InvalidValueError(
                "append_event takes the ADK Session the event belongs to (as get_session or "
                "create_session returned it) and an ADK Event; got "
                f"{type(session).__name__} and {type(event).__name__}."
            )
        if event.partial or _delivered(session, event):
            return event
        key = self._key(session.app_name, session.user_id, session.id)
        delta = event.actions.state_delta if event.actions and event.actions.state_delta else {}
        deltas = _storable(delta, "the event's state_delta")  # before anything changes
        # temp: state reaches the caller's session object for the rest of the invocation,
        # and is trimmed from the event before anything is stored (ADK's own order)
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        doc = await self._append(key, session, event, deltas["session"])
        await _together(*self._scoped(session.app_name, key.user_id, deltas))
        count: int = doc["events"]
        session.last_update_time = event.timestamp
        session._storage_update_marker = f"{_MARKER}{count}"
        committed: Event = self._commit_event_to_session(session, event)
        return committed

    # -- for synchronous code ----------------------------------------------------------------
    # ADK's InMemorySessionService has these four (deprecated there); code written against it
    # runs unchanged on this service, from a script or a notebook whose loop is running.

    def create_session_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """:meth:`create_session`, for synchronous code."""
        made = self.create_session(
            app_name=app_name, user_id=user_id, state=state, session_id=session_id
        )
        return self._run(made, "create_session")

    def get_session_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """:meth:`get_session`, for synchronous code."""
        read = self.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        return self._run(read, "get_session")

    def list_sessions_sync(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """:meth:`list_sessions`, for synchronous code."""
        return self._run(self.list_sessions(app_name=app_name, user_id=user_id), "list_sessions")

    def delete_session_sync(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """:meth:`delete_session`, for synchronous code."""
        deleted = self.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)
        self._run(deleted, "delete_session")

    # -- the work behind them --------------------------------------------------------------

    def _key(self, app_name: str, user_id: str, session_id: str) -> Key:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidIdError(
                f"session_id must be a non-empty str, got {session_id!r}; e.g. the id "
                "create_session returned."
            )
        return checked_key(session_record_id(app_name, session_id), user_id)

    async def _append(
        self, key: Key, session: Session, event: Event, session_delta: dict[str, Any]
    ) -> dict[str, Any]:
        """Write the event and the session's document in one step, only onto the log the
        caller's session was read at; the document written."""
        stored = await self._backend.read_modules(key, names=_DOCS)
        if stored is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        doc = _document(stored.documents, None)
        held = doc["events"]
        expected = await self._expected_count(key, session, held)
        if expected != held:
            raise StaleSessionError(_STALE)
        state = {**doc["state"], **session_delta} if session_delta else doc["state"]
        new = {"state": state, "time": event.timestamp, "events": held + 1}
        message = json.loads(event.model_dump_json(exclude_none=True))
        written = self._backend.write_modules(
            key, documents={SESSION_DOC: new}, writes=[LogWrite(EVENTS_LOG, [message], held)]
        )
        try:  # the listing's copy goes with the write: on SQLite one commit for both
            await _together(written, self._copy(key, new))
        except Exception as refused:
            await self._recopy(key)  # the copy went in without the write: set it back
            if isinstance(refused, ConflictError):
                raise StaleSessionError(_STALE) from None
            raise
        return new

    async def _recopy(self, key: Key) -> None:
        """The listing's copy of the stored document, after a write that was refused (a
        stale session) while its copy went in beside it."""
        stored = await self._backend.read_modules(key, names=_DOCS)
        if stored is not None:
            await self._copy(key, _document(stored.documents, None))

    async def _expected_count(self, key: Key, session: Session, held: int) -> int:
        """How many events the caller's session was read at: our mark on it, else (a
        session made by hand) the stored count if its last event is the stored last one."""
        marker = session._storage_update_marker
        if isinstance(marker, str) and marker.startswith(_MARKER):
            return int(marker[len(_MARKER) :])
        if not session.events:
            return 0
        last = (
            await self._backend.read_log(key, path=EVENTS_LOG, start=held - 1, stop=held)
            if held
            else []
        )
        return held if last and last[0].get("id") == session.events[-1].id else -1

    async def _events(self, key: Key, count: int, config: GetSessionConfig | None) -> list[Event]:
        """The session's events as ``config`` asks: the latest ``num_recent_events`` of the
        first ``count``, those from ``after_timestamp`` on; read from the end, a page at a
        time, so the cost is what is returned, not the history."""
        limit = None if config is None else config.num_recent_events
        after = None if config is None else config.after_timestamp
        if limit == 0 or count == 0:
            return []
        floor = 0 if limit is None else max(0, count - limit)
        if not after:
            found = await self._backend.read_log(key, path=EVENTS_LOG, start=floor, stop=count)
            return [Event.model_validate(message) for message in found]
        kept: list[Event] = []
        stop, page = count, 32
        while stop > floor:
            start = max(floor, stop - page)
            batch = await self._backend.read_log(key, path=EVENTS_LOG, start=start, stop=stop)
            for message in reversed(batch):
                event = Event.model_validate(message)
                if event.timestamp < after:
                    kept.reverse()
                    return kept
                kept.append(event)
            stop, page = start, page * 2
        kept.reverse()
        return kept

    def _copy(self, key: Key, doc: dict[str, Any]) -> Awaitable[Any]:
        """The listing's copy of the session's document, in the record's metadata: one read
        lists a page of sessions with their state."""
        return self._backend.merge_record_metadata(key, metadata={SESSION_DOC: doc})

    def _scoped(self, app_name: str, user_id: str, deltas: dict[str, Any]) -> list[Awaitable[Any]]:
        """The ``app:`` and ``user:`` keys merged into their records, each in one step."""
        scoped = [
            (app_state_key(app_name), deltas["app"]),
            (checked_key(user_state_id(app_name), user_id), deltas["user"]),
        ]  # the keys first: no write is begun before every key is checked
        writes: list[Awaitable[Any]] = []
        writes.extend(
            self._backend.patch_record_state(
                at,
                updates=delta,
                deletes=[],
                replace=False,
                expected_version=None,
                must_exist=False,
            )
            for at, delta in scoped
            if delta
        )
        return writes

    async def _app_state(self, app_name: str) -> dict[str, Any]:
        return await self._backend.read_record_state(
            app_state_key(app_name), names=None, must_exist=False
        )

    async def _user_state(self, app_name: str, user_id: str) -> dict[str, Any]:
        key = checked_key(user_state_id(app_name), user_id)
        return await self._backend.read_record_state(key, names=None, must_exist=False)

    async def _one_user(self, user_id: str, prefix: str) -> AsyncIterator[list[SessionInfo]]:
        after = prefix  # every id of the app is the prefix and more, so above it
        while True:
            page = await self._backend.list_records(user_id, limit=_PAGE, after=after)
            mine = [info for info in page if info.session_id.startswith(prefix)]
            more = len(page) == _PAGE and len(mine) == len(page)
            if mine:
                yield mine  # the caller's from now on: it may empty the list as it goes
            if not more:
                return
            after = page[-1].session_id


async def _together(*writes: Awaitable[Any]) -> None:
    """Run independent writes at once and wait for every one: on SQLite at durability
    ``"power"`` the tasks of one loop share a commit (group commit), so a write and the
    listing's copy of it pay one fsync, not two. Each write
    stays atomic on its own; the first error is raised once all have ended."""
    if not writes:
        return
    if len(writes) == 1:
        await writes[0]
        return
    for outcome in await asyncio.gather(*writes, return_exceptions=True):
        if isinstance(outcome, BaseException):
            raise outcome


def _is_document(doc: Any) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(doc, dict)
        and "events" in doc
        and isinstance(doc.get("state"), dict)
        and isinstance(doc.get("time"), (int, float))
    )


def _document(documents: dict[str, Any], info: SessionInfo | None) -> dict[str, Any]:
    """The session's document; for one without it (a creation cut short by a crash on a
    backend that makes it in steps, such as a remote store whose server predates its one
    request, or made by an older version), no state and no events at its creation time."""
    doc = documents.get(SESSION_DOC)
    if _is_document(doc):
        return dict(doc)
    return {"state": {}, "time": info.created_at if info is not None else 0.0, "events": 0}


def _merged(
    app_state: dict[str, Any], user_state: dict[str, Any], session_state: dict[str, Any]
) -> dict[str, Any]:
    return {**session_state, **_scoped(app_state, user_state)}


def _scoped(app_state: dict[str, Any], user_state: dict[str, Any]) -> dict[str, Any]:
    """The ``app:`` and ``user:`` keys of a session's state, as ADK names them."""
    scoped = {State.APP_PREFIX + name: value for name, value in app_state.items()}
    scoped.update((State.USER_PREFIX + name, value) for name, value in user_state.items())
    return scoped


_new_session = Session.__new__
_set = object.__setattr__
_FIELDS = ("id", "app_name", "user_id", "state", "events", "last_update_time")
#: A fresh Session's private attributes (``_storage_update_marker``), copied per session.
_PRIVATE = {name: attr.get_default() for name, attr in Session.__private_attributes__.items()}


def _listed(
    app_name: str, user_id: str, session_id: str, state: dict[str, Any], at: float, fields: set[str]
) -> Any:
    """A listed ADK Session, made as pydantic's ``model_copy`` makes one (its ``__dict__``,
    fields set, extra and private attributes) without its validation: the values are the
    store's, checked when written, and ``app_name`` was checked by the id (a quarter of the
    time of ``model_copy``). Every field is set, so the sessions of one listing share one
    fields set, which pydantic only adds field names to (a no-op here): each session is
    three objects the garbage collector tracks, not four, and a listing of 10,000 sets off
    a sixth fewer full collections. test_adk pins ADK's fields and compares with
    ``Session(...)``."""
    session = _new_session(Session)
    _set(
        session,
        "__dict__",
        {
            "id": session_id,
            "app_name": app_name,
            "user_id": user_id,
            "state": state,
            "events": [],
            "last_update_time": at,
        },
    )
    _set(session, "__pydantic_extra__", None)
    _set(session, "__pydantic_fields_set__", fields)
    _set(session, "__pydantic_private__", _PRIVATE.copy())
    return session


def _key_of(info: SessionInfo) -> Key:
    return Key(info.user_id, info.session_id)


# Imported last, for ``from praisonsession.integrations.adk import PraisonMemoryService``.
from .adk_memory import PraisonMemoryService  # noqa: E402
