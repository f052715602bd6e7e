"""``StoreBackend``: the operations a backend implements, on records addressed by a ``Key``.

This is the store interface below ``SessionBase``'s user-facing methods. A ``SessionBase``
holds one backend: its methods take ``(session_id, user_id)``, check every argument and turn
module trees into documents, then make one call here. The operations here take a validated
:class:`Key` and checked JSON data, and each one is a single atomic step of the backend. The
server, archives, forks and the command line call them too; a wrapper (encryption, a remote
server, counting) is a backend over another backend, changing what passes through.

Every name says what it acts on (a record, its state, a log, its modules), so none can be
taken for the user-facing method of the same idea (``get_info(session_id, user_id)`` versus
``read_record(key)``). ``docs/pages/stores.md`` describes each one for backend authors, and
``praisonsession.stores.testing`` is the conformance suite a new backend runs against itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from .._internal.json_data import add_numbers
from .._internal.runtime import pause
from ..errors import (
    ConflictError,
    PraisonSessionError,
    SessionExpiredError,
    SessionNotFoundError,
    UnsupportedOperationError,
)
from .record import SNAPSHOT_OWNER, TTL, UNSET, Key, SessionContents, SessionInfo, Unset, check_ttl

__all__ = [
    "TTL",
    "UNSET",
    "Capabilities",
    "Fields",
    "ForeignSessions",
    "ForwardingBackend",
    "Key",
    "LogSpan",
    "LogWrite",
    "ModuleNames",
    "Newest",
    "Stamped",
    "StoreBackend",
    "StoredModules",
    "Unset",
    "all_records",
    "all_records_by_prefix",
    "leaving_foreign",
    "pages_by_prefix",
]


_MAX_CAS_ROUNDS = 1000
T = TypeVar("T")
#: What a narrowed read of a state tests (``read_record_state_matching``): each a path of
#: object keys and the str, int, float or bool found there.
Fields = Sequence[tuple[tuple[str, ...], Any]]
#: The newest values a narrowed read may cut a state to: a path of object keys, and how many.
Newest = tuple[tuple[str, ...], int]


class Capabilities(NamedTuple):
    """What a backend does beyond the protocol, in one value that a wrapper passes on whole."""

    #: Every coroutine of the backend waits only in ``runtime.pause`` and ``runtime.offload``,
    #: so the sync facade may run it on the caller's thread.
    runs_inline: bool = False
    #: The backend checks the encryption key itself (an encrypted backend seals and opens every
    #: value and refuses a record sealed with another key; a remote one's server does): the
    #: store's guard (``stores/guard.py``) then lets reads and writes through.
    checks_keys: bool = False
    #: The backend records each log's length apart from its messages (what ``count_log``
    #: answers): an encrypted store over it then tells a log whose last messages were removed
    #: behind its back from one that ends there.
    keeps_log_lengths: bool = False


class LogWrite(NamedTuple):
    """Messages for one log: replacing it (``start`` None), appended at its end (-1), or
    appended only if it holds exactly ``start`` messages."""

    path: str
    messages: list[dict[str, Any]]
    start: int | None


class StoredModules(NamedTuple):
    """What ``read_modules`` returns: module documents and the message logs below them."""

    documents: dict[str, Any]
    logs: dict[str, list[dict[str, Any]]]


class Stamped(NamedTuple):
    """What ``stamped`` returns: the operation's result, the stamp (None: nothing certified)
    and, for each module name asked for, its document as the stamp saw it (absent: none)."""

    value: Any
    stamp: Any
    documents: dict[str, Any] | None


class ForeignSessions(PraisonSessionError):
    """What a backend raises, instead of adopting them itself, when it finds another library's
    sessions beside its own records (AgentScope's ``as_session`` table, files and keys) that
    it has not adopted yet: ``keys``, and ``take``, which marks them adopted (each is offered
    once) and returns the module documents of each one to write as a session of ours.

    Adopting writes sessions, so the key guard (``guard.py``) does it, as every write: it
    admits the keys by the store's key rule, takes them, writes each through whatever seals
    below, and runs the operation again. A backend with no such data never raises it."""

    def __init__(
        self,
        keys: list[Key],
        take: Callable[[], Awaitable[dict[Key, dict[str, Any]]]],
        where: str,
    ) -> None:
        self.keys = keys
        self.take = take
        super().__init__(
            f"{where} holds AgentScope sessions this store has not adopted yet. Open the store "
            "through its API (a SessionBase: SqliteSession, JSONSession, RedisSession, "
            "open_store), which adopts them under the store's key rule."
        )


async def leaving_foreign(operation: Callable[[], Awaitable[T]]) -> T:
    """``operation()`` of a backend beneath the key guard, for the store floor's own layers
    that work there (an erasure, a rotation): foreign sessions offered on the way (SQLite
    offers AgentScope's once per opening) are left where they are, adopting them being the
    guard's."""
    try:
        return await operation()
    except ForeignSessions:
        return await operation()


#: What ``read_log_and_modules`` asks of its caller: the modules the messages read name.
ModuleNames = Callable[[list[dict[str, Any]]], list[str]]
#: What ``read_modules_and_log`` asks of its caller: the messages the documents read name, as
#: ``read_log``'s ``(start, stop)``, or None for none.
LogSpan = Callable[[dict[str, Any]], "tuple[int, int | None] | None"]


class StoreBackend(ABC):
    """The backend protocol: every operation is atomic and takes a validated ``Key``.

    A record is one session of one user: its info (``SessionInfo``: version, TTL, metadata), its
    key-value state, its module documents and its message logs. A record whose TTL ran out is
    not live: reads treat it as missing (``must_exist`` raises ``SessionExpiredError``) and
    writes start it afresh. Arguments arrive checked; backends do not check them again.
    """

    #: Where the data lives, e.g. ``sqlite:///path/sessions.db`` (passwords never shown).
    url: str = "memory://"
    #: What it does beyond the protocol (:class:`Capabilities`).
    capabilities: Capabilities = Capabilities()

    def __init__(self, *, default_ttl: float | None = None, sliding_ttl: bool = True) -> None:
        #: Seconds a record created without a TTL lives (None: no expiry).
        self.default_ttl = check_ttl(default_ttl)
        #: Whether every read or write of a record restarts its TTL.
        self.sliding_ttl = bool(sliding_ttl)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @property
    def runs_inline(self) -> bool:
        """``capabilities.runs_inline``: what the sync facade asks."""
        return self.capabilities.runs_inline

    def _new_ttl(self, ttl: TTL) -> float | None:
        """The TTL a record gets: ``ttl``, or the default when it is ``UNSET``."""
        return self.default_ttl if ttl is UNSET else ttl

    # -- records ----------------------------------------------------------------------------

    @abstractmethod
    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        """Open the record: create it (or start it afresh if it expired), merge ``metadata``
        into its own and restart its TTL; ``ttl`` replaces the stored one unless ``UNSET``."""

    @abstractmethod
    async def read_record(self, key: Key) -> SessionInfo | None:
        """The live record's info, or None."""

    @abstractmethod
    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        """Merge ``metadata`` into the record's (creating it if needed); moves it on a version."""

    @abstractmethod
    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        """At most ``limit`` live records of the user with a session id above ``after``, in
        session id order."""

    @abstractmethod
    async def delete_record(self, key: Key) -> bool:
        """Remove the record and all it holds; True if it was live."""

    async def delete_record_without_state(self, key: Key) -> bool:
        """Remove the live record if its state holds no key; True if it went. What a record
        kept as state alone (a LangGraph store's namespace) needs when its last key went,
        whatever another writer adds meanwhile: a key written before the removal keeps the
        record. The default reads the whole state, then deletes, two steps (a key written
        between them goes with the record); each of our backends makes it one step."""
        if await self.read_record_state(key, names=None, must_exist=False):
            return False
        return await self.delete_record(key)

    async def drop_record_state(self, key: Key, *, names: list[str]) -> bool:
        """Drop the keys ``names`` from the live record's state, and the record with them
        when no key is left; True if the record went (False for one not live, left as it
        is). What deleting a LangGraph store's item needs. The default is a patch, then
        :meth:`delete_record_without_state`: two steps (a key written between them keeps
        the record); SQLite makes it one."""
        try:
            await self.patch_record_state(
                key,
                updates={},
                deletes=names,
                replace=False,
                expected_version=None,
                must_exist=True,
            )
        except (SessionNotFoundError, SessionExpiredError):
            return False
        return await self.delete_record_without_state(key)

    @abstractmethod
    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        """Restart the live record's TTL (``ttl`` replaces it unless ``UNSET``; 0 ends the
        record now); None if it is not live."""

    @abstractmethod
    async def purge_records(self) -> int:
        """Remove every expired record from storage; how many went."""

    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        """At most ``limit`` live records of every user whose session id starts with
        ``prefix``, ordered by (session id, user id), each after ``after`` (a pair of the
        last page). Records of the reserved owner (snapshots, staging) are never listed.

        What a framework that names its sessions by an application (ADK's ``app_name``,
        LangGraph's threads) lists across users. The default pages through every owner
        (``list_record_owners``), in time proportional to the owners; a backend overrides it
        with an index by session id."""
        found: list[SessionInfo] = []
        for owner in await self.list_record_owners():
            if owner == SNAPSHOT_OWNER:
                continue
            start = prefix
            if after is not None and after[0] >= prefix:
                start = after[0]
            last: str | None = None
            while True:
                page = await self.list_records(owner, limit=limit + 1, after=last or _before(start))
                matches = [
                    info
                    for info in page
                    if info.session_id.startswith(prefix)
                    and (after is None or (info.session_id, info.user_id) > after)
                ]
                found.extend(matches)
                if len(page) <= limit or not page[-1].session_id.startswith(prefix):
                    break
                last = page[-1].session_id
        found.sort(key=lambda info: (info.session_id, info.user_id))
        return found[:limit]

    async def list_record_owners(self) -> set[str]:
        """The owners of live records (the snapshots' owner may be among them). Optional:
        raises ``UnsupportedOperationError`` where a backend cannot tell."""
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot list its users; list them where the sessions are "
            "stored (praisonsession list --store URL)."
        )

    # -- key-value state --------------------------------------------------------------------

    @abstractmethod
    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        """The state (only ``names`` if given); {} for a record that is not live, unless
        ``must_exist`` (``SessionNotFoundError`` / ``SessionExpiredError``)."""

    async def read_record_state_matching(
        self, key: Key, *, fields: Fields, must_exist: bool, newest: Newest | None = None
    ) -> dict[str, Any]:
        """The state, narrowed where the backend can to the keys whose value holds each of
        ``fields`` (a path of object keys and a str, int, float or bool found there): never
        fewer keys than those, perhaps more, so a caller tests each value it gets. A search by
        a field (a LangGraph store's filter) then decodes what may match, not a whole state.
        With ``newest`` (a path and a count), perhaps further to the ``count`` of those values
        greatest at the path (a number; ties by key, ascending): a caller whose tests leave
        fewer than ``count`` of what it got reads again without it. A value the backend
        cannot look into (sealed) always comes back; the default narrows nothing. {} and
        ``must_exist`` as :meth:`read_record_state`."""
        return await self.read_record_state(key, names=None, must_exist=must_exist)

    @abstractmethod
    async def patch_record_state(
        self,
        key: Key,
        *,
        updates: dict[str, Any],
        deletes: list[str],
        replace: bool,
        expected_version: int | None,
        must_exist: bool,
    ) -> int:
        """Set ``updates`` and drop ``deletes`` (every other key too if ``replace``) in one
        step; the record's new version. ``ConflictError`` and no change when
        ``expected_version`` is given and is not the record's (0 for a missing one)."""

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        """Add ``amount`` to the number at ``name`` (``default`` if absent) in one step; the new
        value. ``InvalidValueError`` if the value held is not a number.

        The default is a compare-and-set on the record's version: read the version, then the
        value, add, and write back only if the version is still the one read; else again. A
        backend with an atomic add of its own overrides it."""
        for attempt in range(_MAX_CAS_ROUNDS):
            info = await self.read_record(key)
            held = await self.read_record_state(key, names=[name], must_exist=must_exist)
            value = add_numbers(held.get(name, default), amount, name)
            version = 0 if info is None else info.version
            try:
                await self.patch_record_state(
                    key,
                    updates={name: value},
                    deletes=[],
                    replace=False,
                    expected_version=version,
                    must_exist=must_exist,
                )
            except ConflictError:
                await pause(min(0.0001 * 2 ** min(attempt, 10), 0.01))
                continue
            return value
        raise ConflictError(
            f"increment of {name!r} lost {_MAX_CAS_ROUNDS} compare-and-set rounds to other "
            "writers in a row; try again."
        )

    # -- module documents and message logs --------------------------------------------------

    @abstractmethod
    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        """Store module documents (merged by name) and log writes in one atomic step; return
        each written log's length afterwards, by path.

        ``start`` None replaces the log, -1 appends at its end, and a number appends only if the
        log holds exactly that many messages, else raises ConflictError and changes nothing.
        """

    @abstractmethod
    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        """The documents of modules ``names`` and every log below them, read at once; None
        for a record that is not live.

        A log lies below the document of module ``name`` when its path is ``name`` or starts
        with ``name.``, whatever dots ``name`` holds (``a.b.c`` lies below ``a``, ``a.b`` and
        ``a.b.c``), each log returned once. A name with no document brings no log: its logs
        stay for ``read_log``. (``backends/below.py`` holds the rule.)"""

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        """Create the record, which must not be live (else ``ConflictError`` and nothing
        changes), with ``metadata``, module documents and log writes (each log starts empty),
        as ``write_modules`` writes them; each written log's length afterwards, by path. It
        gets the default TTL, as a record a write creates.

        What a framework's "create a session with its first state" needs in one step: a
        crash cannot leave the record without what it was created with. Memory, JSON,
        SQLite (one commit), Redis (one script), PostgreSQL (one statement) and a remote store
        (one request) make it one step. The default makes it in three (create-if-none, the
        metadata, the modules), each atomic but not the whole: a backend that cannot do better
        inherits it."""
        for write in writes:  # a new record's logs are empty: refused before any step
            if write.start not in (None, -1, 0):
                raise ConflictError(f"Log {write.path!r} holds 0 messages, not {write.start}.")
        await self.patch_record_state(
            key, updates={}, deletes=[], replace=False, expected_version=0, must_exist=False
        )
        if metadata:
            await self.merge_record_metadata(key, metadata=metadata)
        return await self.write_modules(key, documents=documents, writes=writes)

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        """Append one write as ``write_modules`` does (``start`` -1: at the end whatever its
        length); the log's new length. The default is that module write, with no modules."""
        return (await self.write_modules(key, documents={}, writes=[write]))[write.path]

    @abstractmethod
    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        """Messages ``start:stop`` of the log at ``path``; [] if it or the record is missing.

        A negative ``start`` counts from the end, as in a Python slice (``-20, None``: the
        last 20 messages), in the same one step: a conversation's tail costs one read, with
        no count before it that another writer could make stale."""

    async def read_log_and_modules(
        self, key: Key, *, path: str, start: int, stop: int | None, names: ModuleNames
    ) -> tuple[list[dict[str, Any]], StoredModules | None]:
        """``read_log``, then ``read_modules`` of the modules ``names(messages)`` lists (a
        document that the messages name, such as a checkpoint's pending writes): ([], None)
        for a record that is not live, None for no names. ``names`` gets the messages as
        stored, sealed ones included, and must not fail on any. Derived: the default makes
        the two reads (a wrapper's own, so a sealing one opens both); SQLite makes them in
        one transaction."""
        messages = await self.read_log(key, path=path, start=start, stop=stop)
        wanted = names(messages)
        return messages, (await self.read_modules(key, names=wanted) if wanted else None)

    async def read_modules_and_log(
        self, key: Key, *, names: list[str], path: str, span: LogSpan
    ) -> tuple[StoredModules | None, list[dict[str, Any]]]:
        """``read_modules``, then ``read_log`` of the messages ``span(documents)`` names (a
        ``(start, stop)`` as ``read_log`` takes it, or None for none: a document that says
        where a message is, such as a LangGraph checkpoint's position): (None, []) for a
        record that is not live. ``span`` gets the documents as stored, sealed ones included,
        and must not fail on any. Derived, as ``read_log_and_modules`` the other way round:
        the default makes the two reads (a wrapper's own, so a sealing one opens both);
        SQLite makes them in one transaction."""
        stored = await self.read_modules(key, names=names)
        if stored is None:
            return None, []
        where = span(stored.documents)
        if where is None:
            return stored, []
        return stored, await self.read_log(key, path=path, start=where[0], stop=where[1])

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        """Keep the first ``length`` messages of the log and return the ones removed, oldest
        first, in one atomic step that moves the record on one version; with ``expected``
        the log must hold exactly that many messages, else ``ConflictError`` and nothing
        changes. A log shorter than ``length`` is left as it is ([]); a record that is not
        live raises ``SessionNotFoundError``. Optional: the default raises
        ``UnsupportedOperationError``."""
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot remove messages from the end of a log; rewrite "
            "the log instead (write_modules with a LogWrite whose start is None)."
        )

    async def count_log(self, key: Key, *, path: str) -> int:
        """How many messages the log holds. Backends override this with a count that does not
        read the messages."""
        return len(await self.read_log(key, path=path, start=0, stop=None))

    # -- what a cache of reads may trust (optional) -------------------------------------------

    async def stamped(
        self, key: Key, operation: Callable[[], Awaitable[T]], names: Sequence[str] = ()
    ) -> Stamped:
        """``operation()`` (calls of this store on ``key``) and a *stamp* that
        :meth:`unchanged_since` can later certify: nothing in the store changed since the
        operation's first step, and the record of ``key`` can neither expire nor slide by
        time, so what the operation read or wrote is still what a read would find. With
        ``names``, the record's documents of those names as they are at the stamp (after
        the operation's writes). The stamp is None when the backend cannot certify this (the
        default: no cache is then possible); stamps of one state compare equal."""
        return Stamped(await operation(), None, None)

    def unchanged_since(self, stamp: Any) -> bool:
        """True only if nothing in the store changed since ``stamp`` was taken (see
        :meth:`stamped`), as far as this thread can tell; cheap, no read of a record. A
        wrapper that changes what passes through does not forward it (the default: False)."""
        return False

    # -- whole records (forks, snapshots, archives) -----------------------------------------

    async def copy_record(
        self,
        source: Key,
        target: Key,
        *,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: TTL,
    ) -> SessionInfo:
        """Copy the live record ``source`` onto ``target`` in one atomic step.

        ``cut`` keeps only the first n messages of one log. A live target is refused
        (ConflictError) unless ``replace``, which keeps its identity, age and TTL; a new one
        gets ``ttl`` (``UNSET``: the source's). ``metadata`` is merged in. A missing source
        raises ``SessionNotFoundError``. Optional: the default raises
        ``UnsupportedOperationError``.
        """
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot fork, snapshot or archive sessions; for a remote "
            "session, run them on the server (praisonsession fork/export --store URL)."
        )

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        """What the live record holds (info, state, modules, each log's length), read in one
        step; None if it is not live. Optional, like ``copy_record``."""
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot read a whole session; for a remote session, "
            "export it on the server (praisonsession export --store URL)."
        )

    # -- erasure and lifecycle --------------------------------------------------------------

    async def scrub_erased_user(self, user_id: str) -> list[str] | None:
        """After an erasure, remove what the backend still keeps of ``user_id`` beneath the
        API: a write-ahead log, lock files, bookkeeping keys, dead row versions. Nothing to do
        by default; a wrapper forwards it. Returns what it could not remove (one sentence
        each: what stays where, and what the operator can do), if anything."""
        return None

    async def close(self) -> None:  # noqa: B027 - optional: most backends hold nothing
        """Release connections. Idempotent; a closed backend reopens on next use."""


class ForwardingBackend(StoreBackend):
    """A backend over another, forwarding every operation to it unchanged: what a wrapper
    (the key guard, encryption, a counting wrapper of yours) derives from and overrides only
    where it changes what passes through. It takes the wrapped backend's URL, TTL settings
    and capabilities, and never changes that backend."""

    def __init__(self, inner: StoreBackend) -> None:
        super().__init__(default_ttl=inner.default_ttl, sliding_ttl=inner.sliding_ttl)
        self._inner = inner
        self.url = inner.url
        self.capabilities = inner.capabilities

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inner!r})"

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        return await self._inner.create_record(key, ttl=ttl, metadata=metadata)

    async def read_record(self, key: Key) -> SessionInfo | None:
        return await self._inner.read_record(key)

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        return await self._inner.merge_record_metadata(key, metadata=metadata)

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        return await self._inner.list_records(user_id, limit=limit, after=after)

    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        return await self._inner.list_records_by_prefix(prefix, limit=limit, after=after)

    async def list_record_owners(self) -> set[str]:
        return await self._inner.list_record_owners()

    async def delete_record(self, key: Key) -> bool:
        return await self._inner.delete_record(key)

    async def delete_record_without_state(self, key: Key) -> bool:
        return await self._inner.delete_record_without_state(key)

    async def drop_record_state(self, key: Key, *, names: list[str]) -> bool:
        return await self._inner.drop_record_state(key, names=names)

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        return await self._inner.touch_record(key, ttl=ttl)

    async def purge_records(self) -> int:
        return await self._inner.purge_records()

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        return await self._inner.read_record_state(key, names=names, must_exist=must_exist)

    async def read_record_state_matching(
        self, key: Key, *, fields: Fields, must_exist: bool, newest: Newest | None = None
    ) -> dict[str, Any]:
        return await self._inner.read_record_state_matching(
            key, fields=fields, must_exist=must_exist, newest=newest
        )

    async def patch_record_state(
        self,
        key: Key,
        *,
        updates: dict[str, Any],
        deletes: list[str],
        replace: bool,
        expected_version: int | None,
        must_exist: bool,
    ) -> int:
        return await self._inner.patch_record_state(
            key,
            updates=updates,
            deletes=deletes,
            replace=replace,
            expected_version=expected_version,
            must_exist=must_exist,
        )

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        return await self._inner.increment_record_value(
            key, name=name, amount=amount, default=default, must_exist=must_exist
        )

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        return await self._inner.write_modules(key, documents=documents, writes=writes)

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        return await self._inner.read_modules(key, names=names)

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        return await self._inner.create_record_with_modules(
            key, metadata=metadata, documents=documents, writes=writes
        )

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        return await self._inner.append_log(key, write=write)

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        return await self._inner.read_log(key, path=path, start=start, stop=stop)

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        return await self._inner.truncate_log(key, path=path, length=length, expected=expected)

    async def count_log(self, key: Key, *, path: str) -> int:
        return await self._inner.count_log(key, path=path)

    async def copy_record(
        self,
        source: Key,
        target: Key,
        *,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: TTL,
    ) -> SessionInfo:
        return await self._inner.copy_record(
            source, target, cut=cut, metadata=metadata, replace=replace, ttl=ttl
        )

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        return await self._inner.read_record_contents(key)

    async def scrub_erased_user(self, user_id: str) -> list[str] | None:
        return await self._inner.scrub_erased_user(user_id)

    async def close(self) -> None:
        await self._inner.close()


async def all_records(backend: StoreBackend, user_id: str, page: int = 1000) -> list[SessionInfo]:
    """Every live record of ``user_id``, in session id order, read a page at a time."""
    found: list[SessionInfo] = []
    after: str | None = None
    while True:
        records = await backend.list_records(user_id, limit=page, after=after)
        found.extend(records)
        if len(records) < page:
            return found
        after = records[-1].session_id


async def pages_by_prefix(
    backend: StoreBackend, prefix: str, page: int = 1000
) -> AsyncIterator[list[SessionInfo]]:
    """Every user's live records whose session id starts with ``prefix``, a page at a time
    as they are read: a caller that turns each record into an object of its own holds one
    page of records at a time, not all of them (an adapter's listing across users: ADK's
    sessions of an app, AgentScope's schedules)."""
    after: tuple[str, str] | None = None
    while True:
        records = await backend.list_records_by_prefix(prefix, limit=page, after=after)
        if not records:
            return
        last, full = records[-1], len(records) == page
        yield records  # the caller's from now on: it may empty the list as it goes
        if not full:
            return
        after = (last.session_id, last.user_id)


async def all_records_by_prefix(
    backend: StoreBackend, prefix: str, page: int = 1000
) -> list[SessionInfo]:
    """Every user's live records whose session id starts with ``prefix`` (:func:`pages_by_prefix`,
    gathered)."""
    return [info async for records in pages_by_prefix(backend, prefix, page) for info in records]


def _before(session_id: str) -> str | None:
    """An ``after`` for ``list_records`` that starts at ``session_id`` itself: the id just
    before it in order, or None (from the start) for the empty id."""
    if not session_id:
        return None
    last = session_id[-1]
    if last == "\x00":
        return session_id[:-1]
    return session_id[:-1] + chr(ord(last) - 1) + "\U0010ffff"
