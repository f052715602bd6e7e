"""The one guard: a store's key rule, enforced in one layer that every caller goes through.

The rule: a store opened without a session's key, or with another key, reads nothing of it
and changes nothing of it, deletes included. ``SessionBase`` installs a :class:`KeyGuard` over
whatever backend it holds (keyless or keyed alike) and hands out only the guard as
``store.backend``: the store API, forks and snapshots, the framework adapters, the server's
store routes, the command line, the browser and archives all reach records through it. No
other module checks keys, and no backend checks them inside its writes.

Over a backend that seals (an encrypted one) the guard lets reads and writes through, since
that backend opens nothing sealed with another key; it reads the record before a change that
would destroy data (a delete, a truncation, a TTL change), so that a wrong key changes
nothing. Over a plain backend (a store without a key) it refuses sealed values on reads, and
every write once the store is marked encrypted (``keyless.STORE_MARK``, written by the first
encrypted write). The mark is read once and cached, so the default path (a plain store, no
key) pays no read before its writes; an encrypted store in this process updates the cache at
once, and another process's mark is seen within :data:`RECHECK_SECONDS`.

Another library's sessions that a backend finds beside its own (AgentScope's ``as_session``
table, files and keys) are adopted here too, never inside the backend: the backend offers them
(``ForeignSessions``) and the guard admits them by the same rule before it writes each one
through whatever seals below, so a store without the key adopts nothing in an encrypted store,
and a key holder's store seals what it adopts.

Names (state keys, module names, log paths) are checked here too, once for every caller: a
name that no backend can store (a lone surrogate) is ``InvalidIdError`` on every backend.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from .._internal.identifiers import check_key
from ..errors import DecryptionError, KeyRequiredError
from .backend import (
    TTL,
    Fields,
    ForeignSessions,
    ForwardingBackend,
    LogSpan,
    LogWrite,
    ModuleNames,
    Newest,
    Stamped,
    StoreBackend,
    StoredModules,
)
from .keyless import (
    looks_sealed,
    refuse_sealed_info,
    refuse_sealed_infos,
    sealed_by,
    store_sealed_with,
)
from .record import Key, SessionContents, SessionInfo

__all__ = ["RECHECK_SECONDS", "KeyGuard", "beneath", "guard", "note_marked"]

T = TypeVar("T")
P = ParamSpec("P")
_Op = Callable[..., Coroutine[Any, Any, T]]
_Co = Coroutine[Any, Any, T]
#: How many offers of foreign data one operation adopts before it runs as it is (a copy meets
#: its source's and its target's; each is offered once).
_ADOPTIONS = 3

#: How long a store without a key trusts that the store is not encrypted before it reads
#: the store's mark again (another process may have made it encrypted meanwhile).
RECHECK_SECONDS = 0.5

# The store's mark as last read, by place: (fingerprint or None, when it was read, by
# time.monotonic()). A store is found by its URL (which names the file, the Redis prefix or the
# PostgreSQL schema); an in-memory one, which has no place but itself, by its object.
_Mark = tuple[str | None, float]
_by_url: dict[str, _Mark] = {}
_by_object: weakref.WeakKeyDictionary[StoreBackend, _Mark] = weakref.WeakKeyDictionary()


def _table(backend: StoreBackend) -> tuple[Any, Any]:
    """Where the mark of ``backend`` (a raw backend) is cached, and under which key."""
    if backend.url.startswith("memory:"):
        return _by_object, backend
    return _by_url, backend.url


def note_marked(backend: StoreBackend, fingerprint: str | None) -> None:
    """What an encrypted store tells the guards of this process when it marks ``backend``
    (a raw backend) as encrypted, or a rotation when it changes the key."""
    table, place = _table(backend)
    table[place] = (fingerprint, time.monotonic())


def guard(backend: StoreBackend) -> KeyGuard:
    """``backend`` behind the guard (a guard stays as it is)."""
    return backend if isinstance(backend, KeyGuard) else KeyGuard(backend)


def beneath(backend: StoreBackend) -> StoreBackend:
    """The backend a guard stands on. For the store floor's own layers that apply the rule
    themselves from below (an encrypted backend seals under its key; a rotation and an
    erasure rewrite or remove everything, whatever it is sealed with); no caller above them
    uses it."""
    return backend._inner if isinstance(backend, KeyGuard) else backend


def _adopting(
    method: Callable[Concatenate[KeyGuard, P], Awaitable[T]],
) -> Callable[Concatenate[KeyGuard, P], Coroutine[Any, Any, T]]:
    """The guard's ``method``, adopting the foreign sessions the backend offers on the way
    (``KeyGuard._adopt``), then run again."""

    async def adopting(self: KeyGuard, /, *args: P.args, **kwargs: P.kwargs) -> T:
        for _ in range(_ADOPTIONS):
            try:
                return await method(self, *args, **kwargs)
            except ForeignSessions as offer:
                await self._adopt(offer)
        return await method(self, *args, **kwargs)

    functools.update_wrapper(adopting, method)
    return adopting


class KeyGuard(ForwardingBackend):
    """Forwards every operation to the backend it guards, holding the key rule."""

    def __init__(self, inner: StoreBackend) -> None:
        super().__init__(inner)
        #: Keys are checked below (an encrypted backend, a remote server's guard).
        self.checks_keys = inner.capabilities.checks_keys
        self._marks, self._place = _table(beneath(inner))

    def __repr__(self) -> str:
        return repr(self._inner)

    def __getattr__(self, name: str) -> Any:
        """What a caller may learn of the backend below (where it keeps its data, its
        durability, what seals an archive): found down the wrappers. The record operations
        are all the guard's own, so none reaches the backend around it."""
        if name != "inner" and not name.startswith("__"):
            found: Any = self.__dict__.get("_inner")
            while found is not None:
                if hasattr(found, name):
                    return getattr(found, name)
                found = getattr(found, "inner", None)
        raise AttributeError(name)

    # -- the rule ---------------------------------------------------------------------------

    def _write(self, operation: _Op[T], key: Key, **args: Any) -> _Co[T]:
        """``operation`` on ``key`` as this store may make it: straight through where nothing
        needs a read first (the default path)."""
        if self.checks_keys:
            return operation(key, **args)
        mark = self._marks.get(self._place)
        if mark is not None and mark[0] is None and time.monotonic() - mark[1] < RECHECK_SECONDS:
            return operation(key, **args)
        return self._after_mark(operation, key, args)

    async def _after_mark(self, operation: _Op[T], key: Key, args: dict[str, Any]) -> T:
        await self._refuse_if_marked(key)
        return await operation(key, **args)

    async def _refuse_if_marked(self, key: Key) -> None:
        mark = self._marks.get(self._place)
        if mark is None or time.monotonic() - mark[1] >= RECHECK_SECONDS:
            fingerprint = await store_sealed_with(self._inner)
            note_marked(self._inner, fingerprint)
        else:
            fingerprint = mark[0]
        if fingerprint is not None:
            raise KeyRequiredError(
                f"Session {key.session_id!r} of user {key.user_id!r} (in an encrypted store: "
                "every session of it)",
                fingerprint,
            )

    async def admit_foreign(self, key: Key) -> None:
        """The rule for what a store keeps of ``key`` outside the record operations (AgentScope's
        own files and keys, ``layout="agentscope"``, and their imports): a store without a key
        reads and writes none of it in an encrypted store (``KeyRequiredError``). Such data is
        plain JSON a key holder's store would adopt as a session of its own, and none of it can
        say whose it is. Over a plain store it costs what a write's check costs: the cached
        mark, no read. An encrypted store with another key than the store's adopts none of
        it either (``DecryptionError``)."""
        if not self.checks_keys:
            await self._refuse_if_marked(key)
            return
        # a sealing store adopts it only with the key the store is encrypted with: with
        # another, the data would be sealed where the store's owner cannot open it
        ours, below = getattr(self._inner, "fingerprint", None), getattr(self._inner, "inner", None)
        if isinstance(ours, str) and isinstance(below, StoreBackend):
            marked = await store_sealed_with(below)
            if marked is not None and marked != ours:
                raise DecryptionError(
                    f"AgentScope's data for session {key.session_id!r} of user {key.user_id!r}",
                    f"the store is encrypted with the key {marked}, and this process has the "
                    f"key {ours}; only a store with the store's key adopts it",
                )

    async def _adopt(self, offer: ForeignSessions) -> None:
        """Adopt what the backend offers as sessions of this store: admitted as above, taken
        (the backend offers each once), and written as every write is, sealed where the
        backend below seals. Taken before written: a failure between the two leaves the
        data where AgentScope left it (SQLite's table, a ``.migrated`` file, Redis's key)."""
        for key in offer.keys:
            await self.admit_foreign(key)
        for key, documents in (await offer.take()).items():
            await self._inner.write_modules(key, documents=documents, writes=[])

    async def _destroy(self, operation: _Op[T], key: Key, **args: Any) -> T:
        """A change that removes data: over a sealing backend, the record is read first (it
        refuses one sealed with another key), so that a wrong key removes nothing."""
        if self.checks_keys:
            await self._inner.read_record(key)
            return await operation(key, **args)
        return await self._write(operation, key, **args)

    async def _read(self, key: Key, values: Iterable[Any]) -> None:
        """Refuse a read without a key that found sealed values: ciphertext is never handed
        out as a value."""
        if self.checks_keys:
            return
        for value in values:  # a loop, not any(): every read without a key comes here
            if (type(value) is not dict or len(value) == 1) and looks_sealed(value):
                break  # a dict of more keys is never sealed
        else:
            return
        info = await self._inner.read_record(key)
        fingerprint = None if info is None else sealed_by(info)
        raise KeyRequiredError(
            f"Session {key.session_id!r} of user {key.user_id!r}",
            fingerprint or "that sealed it (not recorded)",
        )

    def _listed(self, found: list[SessionInfo]) -> list[SessionInfo]:
        if not self.checks_keys:
            refuse_sealed_infos(found)
        return found

    # -- records ----------------------------------------------------------------------------

    @_adopting
    def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> _Co[SessionInfo]:
        return self._write(self._inner.create_record, key, ttl=ttl, metadata=metadata)

    @_adopting
    async def read_record(self, key: Key) -> SessionInfo | None:
        info = await self._inner.read_record(key)
        if info is not None and not self.checks_keys:
            refuse_sealed_info(info)
        return info

    @_adopting
    def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> _Co[SessionInfo]:
        return self._write(self._inner.merge_record_metadata, key, metadata=metadata)

    @_adopting
    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        return self._listed(await self._inner.list_records(user_id, limit=limit, after=after))

    @_adopting
    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        return self._listed(
            await self._inner.list_records_by_prefix(prefix, limit=limit, after=after)
        )

    @_adopting
    async def delete_record(self, key: Key) -> bool:
        return await self._destroy(self._inner.delete_record, key)

    @_adopting
    async def delete_record_without_state(self, key: Key) -> bool:
        return await self._destroy(self._inner.delete_record_without_state, key)

    @_adopting
    async def drop_record_state(self, key: Key, *, names: list[str]) -> bool:
        _check_names(names, "state key")
        return await self._destroy(self._inner.drop_record_state, key, names=names)

    @_adopting
    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        return await self._destroy(self._inner.touch_record, key, ttl=ttl)

    @_adopting
    async def list_record_owners(self) -> set[str]:
        return await self._inner.list_record_owners()

    @_adopting
    async def purge_records(self) -> int:
        return await self._inner.purge_records()

    # -- state ------------------------------------------------------------------------------

    @_adopting
    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        state = await self._inner.read_record_state(key, names=names, must_exist=must_exist)
        await self._read(key, state.values())
        return state

    @_adopting
    async def read_record_state_matching(
        self, key: Key, *, fields: Fields, must_exist: bool, newest: Newest | None = None
    ) -> dict[str, Any]:
        state = await self._inner.read_record_state_matching(
            key, fields=fields, must_exist=must_exist, newest=newest
        )
        await self._read(key, state.values())  # sealed values are never narrowed away
        return state

    @_adopting
    def patch_record_state(
        self,
        key: Key,
        *,
        updates: dict[str, Any],
        deletes: list[str],
        replace: bool,
        expected_version: int | None,
        must_exist: bool,
    ) -> _Co[int]:
        _check_names(updates, "state key")
        _check_names(deletes, "state key")
        return self._write(
            self._inner.patch_record_state,
            key,
            updates=updates,
            deletes=deletes,
            replace=replace,
            expected_version=expected_version,
            must_exist=must_exist,
        )

    @_adopting
    def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> _Co[int | float]:
        check_key(name)
        return self._write(
            self._inner.increment_record_value,
            key,
            name=name,
            amount=amount,
            default=default,
            must_exist=must_exist,
        )

    # -- modules and logs -------------------------------------------------------------------

    @_adopting
    def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> _Co[dict[str, int]]:
        _check_modules(documents, writes)
        return self._write(self._inner.write_modules, key, documents=documents, writes=writes)

    @_adopting
    def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> _Co[dict[str, int]]:
        _check_modules(documents, writes)
        return self._write(
            self._inner.create_record_with_modules,
            key,
            metadata=metadata,
            documents=documents,
            writes=writes,
        )

    @_adopting
    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        stored = await self._inner.read_modules(key, names=names)
        await self._read_stored(key, stored)
        return stored

    async def _read_stored(self, key: Key, stored: StoredModules | None) -> None:
        if stored is not None:
            await self._read(key, stored.documents.values())
            for messages in stored.logs.values():
                await self._read(key, messages[:1])

    @_adopting
    def append_log(self, key: Key, *, write: LogWrite) -> _Co[int]:
        check_key(write.path, "log name")
        return self._write(self._inner.append_log, key, write=write)

    @_adopting
    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        messages = await self._inner.read_log(key, path=path, start=start, stop=stop)
        await self._read(key, messages)
        return messages

    @_adopting
    async def read_modules_and_log(
        self, key: Key, *, names: list[str], path: str, span: LogSpan
    ) -> tuple[StoredModules | None, list[dict[str, Any]]]:
        stored, messages = await self._inner.read_modules_and_log(
            key, names=names, path=path, span=span
        )
        await self._read_stored(key, stored)
        await self._read(key, messages)
        return stored, messages

    @_adopting
    async def read_log_and_modules(
        self, key: Key, *, path: str, start: int, stop: int | None, names: ModuleNames
    ) -> tuple[list[dict[str, Any]], StoredModules | None]:
        messages, stored = await self._inner.read_log_and_modules(
            key, path=path, start=start, stop=stop, names=names
        )
        await self._read(key, messages)
        await self._read_stored(key, stored)
        return messages, stored

    async def stamped(
        self, key: Key, operation: Callable[[], Awaitable[T]], names: Sequence[str] = ()
    ) -> Stamped:
        """The backend's stamp, passed through: ``operation`` calls this guard, so the rule
        holds for what it reads and writes. A document the stamp read is handed out only
        as the rule hands out a read: a sealed one, to a store without the key, voids the
        stamp (nothing is cached) instead of failing the operation that succeeded."""
        found = await self._inner.stamped(key, operation, names)
        documents = found.documents
        if documents and not self.checks_keys and any(map(looks_sealed, documents.values())):
            return Stamped(found.value, None, None)
        return found

    def unchanged_since(self, stamp: Any) -> bool:
        """The backend's answer: a stamp certifies the store's state, not a key's data."""
        return self._inner.unchanged_since(stamp)

    @_adopting
    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        check_key(path, "log name")
        return await self._destroy(
            self._inner.truncate_log, key, path=path, length=length, expected=expected
        )

    @_adopting
    async def count_log(self, key: Key, *, path: str) -> int:
        return await self._inner.count_log(key, path=path)

    # -- whole records ----------------------------------------------------------------------

    @_adopting
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
        await self.read_record(source)  # a copy reads its source, as every read does
        if replace:  # a restore replaces what the target holds: a change of it
            await self.read_record(target)
        return await self._write(
            self._copy, target, source=source, cut=cut, metadata=metadata, replace=replace, ttl=ttl
        )

    async def _copy(
        self,
        target: Key,
        *,
        source: Key,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: TTL,
    ) -> SessionInfo:
        return await self._inner.copy_record(
            source, target, cut=cut, metadata=metadata, replace=replace, ttl=ttl
        )

    @_adopting
    async def read_record_contents(self, key: Key) -> SessionContents | None:
        contents = await self._inner.read_record_contents(key)
        if contents is not None and not self.checks_keys:
            refuse_sealed_info(contents.info)
        return contents

    @_adopting
    async def scrub_erased_user(self, user_id: str) -> list[str] | None:
        return await self._inner.scrub_erased_user(user_id)


def _check_names(names: Iterable[str], what: str) -> None:
    for name in names:
        check_key(name, what)


def _check_modules(documents: dict[str, Any], writes: list[LogWrite]) -> None:
    _check_names(documents, "module name")
    for write in writes:
        check_key(write.path, "log name")
