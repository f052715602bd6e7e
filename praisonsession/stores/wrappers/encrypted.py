"""``EncryptedStore``: encryption at rest, as a backend over any other backend
(``EncryptedBackend``).

Every state value, module document, message and metadata value is sealed with AES-256-GCM
before it reaches the inner store, under a key derived for its session (HKDF-SHA256 over the
user and session ids) from one master key (``encryption_key``: 32 bytes, urlsafe base64, as
``Fernet.generate_key()`` makes). Each sealed value is bound (as associated data) to its session,
its kind and its name, so a value moved to another key or another session does not open. A value
that is not sealed, or does not open, is refused with ``DecryptionError``: plaintext is never
taken for data.

A copy (fork, snapshot, archive staging) keeps the key of the session it was copied from: the
record's metadata names that origin, so the inner store's atomic copy needs no re-encryption.
What stays readable: ids, state keys, module and log names, metadata keys, sizes, counts, times.

Increments read, add and write back with a compare-and-set on the record's version, retried on
conflict: the inner store cannot add to a number it cannot read. A message is sealed at its
position in its log (format 2), so an append counts the log and appends only at that length,
again on a conflict: both stay exact under many processes.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..._internal.json_data import decode, dumps
from ..._internal.runtime import pause
from ..._internal.sealing import TextSealer, aes_gcm, key_fingerprint, load_key
from ...errors import ConflictError, DecryptionError
from ..api import SessionBase
from ..backend import (
    TTL,
    UNSET,
    Fields,
    ForwardingBackend,
    LogWrite,
    Newest,
    Stamped,
    StoreBackend,
    StoredModules,
    all_records,
    leaving_foreign,
)
from ..guard import beneath, note_marked
from ..keyless import ORIGIN, SEALED_WITH, STORE_MARK, mark_store
from ..record import Key, SessionContents, SessionInfo
from ..reserved import SNAPSHOT_OWNER, snapshot_name

__all__ = [
    "ORIGIN",
    "EncryptedBackend",
    "EncryptedStore",
    "load_key",
    "rekey",
    "rekey_sessions",
    "unrotated",
]

_PREFIX = "psenc1:"
#: A sealed message of format 2: bound to its log and to its position in it.
_MESSAGE = "psenc2:"
#: A sealed origin: which session's key seals the record, bound to the record's own ids, and the
#: format of its messages (2: every message bound to its position; 1: older ones may not be).
_TOKEN = "psorigin1:"
_POSITIONS = 2
_NONCE = 12
_KEYS_REMEMBERED = 4096
_MAX_INCREMENT_RETRIES = 1000
T = TypeVar("T")


class EncryptedStore(SessionBase):
    """A store that keeps ``inner``'s data sealed; use it as any store.

    ``key`` is the master key (32 bytes, urlsafe base64); ``old_keys`` are tried, after it, to
    open what was sealed before a rotation. Everything is written with ``key``.
    """

    def __init__(
        self, inner: SessionBase, key: str | bytes, *, old_keys: tuple[str | bytes, ...] = ()
    ) -> None:
        self._inner = beneath(inner.backend)
        super().__init__(EncryptedBackend(self._inner, key, old_keys=old_keys))

    def __repr__(self) -> str:
        return f"EncryptedStore({self._inner!r})"


class EncryptedBackend(ForwardingBackend):
    """A backend that seals what it passes to ``inner`` and opens what it reads back."""

    def __init__(
        self,
        inner: StoreBackend,
        key: str | bytes,
        *,
        old_keys: tuple[str | bytes, ...] = (),
        legacy_origins: bool = False,
    ) -> None:
        """``legacy_origins``: also trust an origin written in clear by an older version (only
        ``rekey`` does, to seal it)."""
        super().__init__(inner)
        self.capabilities = inner.capabilities._replace(checks_keys=True)
        #: The backend it seals into (a rotation reads it; memory may follow its database).
        self.inner = inner
        self._marked = False  # the store marked encrypted (on the first write)
        self._masters = [load_key(key), *(load_key(k, "an old key") for k in old_keys)]
        self._aead = aes_gcm()
        self.fingerprint = key_fingerprint(self._masters[0])
        self._placements = [self._aead(_derive(m, b"praisonsession origin")) for m in self._masters]
        self._legacy_origins = legacy_origins
        self._ciphers: OrderedDict[tuple[int, str, str], Any] = OrderedDict()
        self._origins: OrderedDict[Key, tuple[str, str]] = OrderedDict()
        #: Each record's message format, as its sealed origin says (kept beside ``_origins``).
        self._formats: dict[Key, int] = {}

    def __repr__(self) -> str:
        return f"EncryptedBackend({self.inner!r})"

    def archive_sealer(self) -> TextSealer:
        """What seals an archive exported from this store (and opens one imported into it)."""
        return TextSealer(self._masters[0])

    # -- sealing -------------------------------------------------------------------------

    def _cipher(self, origin: tuple[str, str], which: int = 0) -> Any:
        cache_key = (which, *origin)
        cipher = self._ciphers.get(cache_key)
        if cipher is None:
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.kdf.hkdf import HKDF

            info = b"praisonsession session key\x00" + "\x00".join(origin).encode("utf-8")
            derived = HKDF(hashes.SHA256(), 32, None, info).derive(self._masters[which])
            cipher = self._ciphers[cache_key] = self._aead(derived)
            if len(self._ciphers) > _KEYS_REMEMBERED:
                self._ciphers.popitem(last=False)
        return cipher

    def _seal(
        self, origin: tuple[str, str], kind: str, name: str, value: Any, index: int | None = None
    ) -> str:
        """A value sealed under ``origin``'s key, bound to its kind and name (and, a message,
        to its ``index`` in its log: format 2)."""
        nonce = os.urandom(_NONCE)
        sealed = self._cipher(origin).encrypt(
            nonce, dumps(value).encode("utf-8"), _bound(origin, kind, name, index)
        )
        prefix = _PREFIX if index is None else _MESSAGE
        return prefix + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def _open(
        self,
        origin: tuple[str, str],
        kind: str,
        name: str,
        value: Any,
        index: int | None = None,
        what: str = "",
    ) -> Any:
        """``value`` opened; ``index`` (a message's position) is checked when it was sealed
        in format 2, and a message of format 1 is taken only where ``index`` is None."""
        what = what or f"{kind} {name!r} of session {origin[1]!r}"
        prefix = _MESSAGE if isinstance(value, str) and value.startswith(_MESSAGE) else _PREFIX
        if not isinstance(value, str) or not value.startswith(prefix):
            raise DecryptionError(what, "it is not encrypted: refused rather than trusted")
        if prefix == _PREFIX:
            index = None  # an older message, bound to its log alone
        try:
            raw = base64.urlsafe_b64decode(value[len(prefix) :])
        except (binascii.Error, ValueError):
            raw = b""
        for which in range(len(self._masters)):
            try:
                plain = self._cipher(origin, which).decrypt(
                    raw[:_NONCE], raw[_NONCE:], _bound(origin, kind, name, index)
                )
            except Exception:  # InvalidTag, too short: "not ours as it is" with this key
                continue
            return decode(plain)
        moved = "moved (to another session, log or position)" if index is not None else "moved"
        raise DecryptionError(
            what, f"it does not open with this key: altered, {moved}, or another key"
        )

    async def _origin(
        self, key: Key, *, writing: bool = False, creating: bool = False
    ) -> tuple[str, str]:
        """The session whose key seals ``key``'s values: its own, or its copy source's.

        A write always reads it from the record: another process may have deleted the session
        and made a new one (a fork, an import) under the same id since it was remembered.
        A write that would make the record (``creating``) makes it first, marked as sealed
        with this key and binding its messages to their positions: a store without the key
        then refuses to write into it, however the record came to be."""
        if (writing or creating) and not self._marked:
            await self._mark()
        origin = None if writing or creating else self._origins.get(key)
        if origin is None:
            info = await self.inner.read_record(key)
            if info is None and creating:
                own = (key.user_id, key.session_id)
                info = await self.inner.create_record(
                    key, ttl=UNSET, metadata=self._token(key, own, _POSITIONS)
                )
            origin = self._origin_of(info, key)
            self._remember(key, origin)
        return origin

    async def _mark(self) -> None:
        """Mark the store as encrypted before the first sealed write, once per process: from
        then on a store opened without a key writes nothing in it (``stores/guard.py``)."""
        await mark_store(self.inner, self.fingerprint)
        note_marked(self.inner, self.fingerprint)
        self._marked = True

    def _origin_of(self, info: SessionInfo | None, key: Key) -> tuple[str, str]:
        """The record's origin, opened and checked to belong to this record; a record sealed
        with another key is refused here, before anything is read or written. Its message
        format goes to ``_formats``."""
        found = None if info is None else info.metadata.get(ORIGIN)
        self._formats[key] = 1  # unless its sealed origin says otherwise
        if found is None:
            return (key.user_id, key.session_id)
        if isinstance(found, str) and found.startswith(_TOKEN):
            try:
                raw = base64.urlsafe_b64decode(found[len(_TOKEN) :])
            except (binascii.Error, ValueError):
                raw = b""
            for placement in self._placements:
                try:
                    plain = placement.decrypt(raw[:_NONCE], raw[_NONCE:], _placed(key))
                except Exception:  # InvalidTag, too short: not this key's, or not this record's
                    continue
                origin = decode(plain)
                if isinstance(origin, list) and len(origin) in (2, 3):
                    self._formats[key] = int(origin[2]) if len(origin) == 3 else 1
                    return (str(origin[0]), str(origin[1]))
            raise self._not_ours(info, key)
        if _is_pair(found) and (self._legacy_origins or _trusted_in_clear(found, key)):
            return (found[0], found[1])
        raise DecryptionError(
            f"the origin of session {key.session_id!r} of user {key.user_id!r}",
            "it names another user's session in clear text, which is not trusted (a fork to "
            "another user written by an older version, or forged); run `praisonsession rekey` "
            "with this key as both keys to seal it",
        )

    def _not_ours(self, info: SessionInfo | None, key: Key) -> DecryptionError:
        said = None if info is None else info.metadata.get(SEALED_WITH)
        expected = f"the key {said}" if isinstance(said, str) else "another key"
        return DecryptionError(
            f"session {key.session_id!r} of user {key.user_id!r}",
            f"it is sealed with {expected}, and this process has the key {self.fingerprint} "
            "(or its record was copied from another session); nothing is read or written "
            "without the key it expects",
        )

    def _token(self, key: Key, origin: tuple[str, str], fmt: int) -> dict[str, Any]:
        """The metadata that says, authenticated, which key seals ``key``'s values, and whether
        every message of it is bound to its position (``fmt`` 2)."""
        nonce = os.urandom(_NONCE)
        payload = dumps([*origin, fmt]).encode()
        sealed = self._placements[0].encrypt(nonce, payload, _placed(key))
        token = _TOKEN + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")
        return {ORIGIN: token, SEALED_WITH: self.fingerprint}

    def _remember(self, key: Key, origin: tuple[str, str]) -> None:
        self._origins[key] = origin
        if len(self._origins) > _KEYS_REMEMBERED:
            self._formats.pop(self._origins.popitem(last=False)[0], None)

    def _open_info(self, info: SessionInfo) -> SessionInfo:
        key = Key(info.user_id, info.session_id)
        origin = self._origin_of(info, key)
        self._remember(key, origin)
        metadata = {
            name: self._open(origin, "metadata", name, value)
            for name, value in info.metadata.items()
            if name not in (ORIGIN, SEALED_WITH)  # the store's bookkeeping, not the user's
        }
        return info._replace(metadata=metadata)

    def _seal_metadata(self, origin: tuple[str, str], metadata: dict[str, Any]) -> dict[str, Any]:
        return {n: self._seal(origin, "metadata", n, v) for n, v in metadata.items()}

    # -- records -------------------------------------------------------------------------

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        """Create, or merge into a live record (whose origin, a copy's source, is kept)."""
        if not self._marked:
            await self._mark()
        held = await self.inner.read_record(key)
        origin = self._origin_of(held, key)
        sealed = self._seal_metadata(origin, metadata)
        if held is None or held.metadata.get(ORIGIN) is None:  # a new record: format 2
            sealed.update(self._token(key, origin, _POSITIONS if held is None else 1))
        info = await self.inner.create_record(key, ttl=ttl, metadata=sealed)
        return self._open_info(info)

    async def read_record(self, key: Key) -> SessionInfo | None:
        info = await self.inner.read_record(key)
        return None if info is None else self._open_info(info)

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        origin = await self._origin(key, writing=True)
        info = await self.inner.merge_record_metadata(
            key, metadata=self._seal_metadata(origin, metadata)
        )
        return self._open_info(info)

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        found = await self.inner.list_records(user_id, limit=limit, after=after)
        return [self._open_info(i) for i in found if (i.user_id, i.session_id) != STORE_MARK]

    async def delete_record(self, key: Key) -> bool:
        self._origins.pop(key, None)
        return await self.inner.delete_record(key)

    async def delete_record_without_state(self, key: Key) -> bool:
        self._origins.pop(key, None)
        return await self.inner.delete_record_without_state(key)

    async def drop_record_state(self, key: Key, *, names: list[str]) -> bool:
        self._origins.pop(key, None)  # names and deletes are never sealed: passed through
        return await self.inner.drop_record_state(key, names=names)

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        info = await self.inner.touch_record(key, ttl=ttl)
        return None if info is None else self._open_info(info)

    async def purge_records(self) -> int:
        self._origins.clear()
        return await self.inner.purge_records()

    # -- state ---------------------------------------------------------------------------

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        found = await self.inner.read_record_state(key, names=names, must_exist=must_exist)
        if not found:
            return found
        origin = await self._origin(key)
        return {name: self._open(origin, "state", name, value) for name, value in found.items()}

    async def read_record_state_matching(
        self, key: Key, *, fields: Fields, must_exist: bool, newest: Newest | None = None
    ) -> dict[str, Any]:
        """Ciphertext cannot be narrowed: the whole state, opened (callers test each value)."""
        return await self.read_record_state(key, names=None, must_exist=must_exist)

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
        # made first only when the write can succeed on a missing record (its version is 0)
        creating = not must_exist and expected_version in (None, 0)
        origin = await self._origin(key, writing=True, creating=creating)
        sealed = {name: self._seal(origin, "state", name, v) for name, v in updates.items()}
        return await self.inner.patch_record_state(
            key,
            updates=sealed,
            deletes=deletes,
            replace=replace,
            expected_version=expected_version,
            must_exist=must_exist,
        )

    #: The inner store cannot add to a number it cannot read: the protocol's compare-and-set
    #: on the record's version (read it, then the value, add, write back if still at it).
    increment_record_value = StoreBackend.increment_record_value

    # -- modules and logs ----------------------------------------------------------------

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        """Each message is sealed at its position: an append at the end (-1) first counts the
        log, then appends only at that length, again on a conflict with another writer."""
        creating = all(write.start in (None, -1, 0) for write in writes)  # else it conflicts
        origin = await self._origin(key, writing=True, creating=creating)
        sealed = {name: self._seal(origin, "module", name, d) for name, d in documents.items()}
        for attempt in range(_MAX_INCREMENT_RETRIES):
            placed = [await self._placed_write(key, write) for write in writes]
            try:
                return await self.inner.write_modules(
                    key,
                    documents=sealed,
                    writes=[self._seal_write(origin, write) for write in placed],
                )
            except ConflictError:
                if not await self._only_ends_moved(key, writes):
                    raise
                await pause(min(0.0001 * 2 ** min(attempt, 10), 0.01))
        raise ConflictError("an append lost to other writers too many times in a row; try again.")

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        """One step of the backend below, sealed under the record's own key: a new record is
        its own origin and every log starts empty, so each message's position is known
        without a read (an append at the end, -1, is at 0)."""
        if not self._marked:
            await self._mark()
        origin = (key.user_id, key.session_id)
        sealed = {**self._seal_metadata(origin, metadata), **self._token(key, origin, _POSITIONS)}
        placed = [w._replace(start=0) if w.start == -1 else w for w in writes]
        try:
            lengths = await self.inner.create_record_with_modules(
                key,
                metadata=sealed,
                documents={n: self._seal(origin, "module", n, d) for n, d in documents.items()},
                writes=[self._seal_write(origin, write) for write in placed],
            )
        except ConflictError:  # it exists: one sealed with another key says so, as any write
            self._origin_of(await self.inner.read_record(key), key)
            raise
        self._remember(key, origin)
        self._formats[key] = _POSITIONS
        return lengths

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        creating = write.start in (None, -1, 0)  # a missing log holds 0: else it conflicts
        origin = await self._origin(key, writing=True, creating=creating)
        for attempt in range(_MAX_INCREMENT_RETRIES):
            placed = await self._placed_write(key, write)
            try:
                return await self.inner.append_log(key, write=self._seal_write(origin, placed))
            except ConflictError:
                if write.start is not None and write.start >= 0:
                    raise
                await pause(min(0.0001 * 2 ** min(attempt, 10), 0.01))
        raise ConflictError("an append lost to other writers too many times in a row; try again.")

    async def _placed_write(self, key: Key, write: LogWrite) -> LogWrite:
        """``write`` with the position of its first message: an append at the end (-1) is
        made an append at the log's length now."""
        if write.start is None or write.start >= 0:
            return write
        return write._replace(start=await self.inner.count_log(key, path=write.path))

    async def _only_ends_moved(self, key: Key, writes: list[LogWrite]) -> bool:
        """After a conflict: True when only logs appended at their end had moved on (another
        writer's append), so the write may be placed again; False when a caller's own
        expected length no longer holds."""
        for write in writes:
            expected = write.start is not None and write.start >= 0
            if expected and await self.inner.count_log(key, path=write.path) != write.start:
                return False
        return any(w.start is not None and w.start < 0 for w in writes)

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        stored = await self.inner.read_modules(key, names=names)
        if stored is None:
            return None
        origin = await self._origin(key)
        return StoredModules(
            {n: self._open(origin, "module", n, d) for n, d in stored.documents.items()},
            {p: self._open_messages(key, origin, p, m, 0) for p, m in stored.logs.items()},
        )

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        length = None
        if start < 0 or (stop is not None and stop < 0):  # a slice from the end: where is it?
            length = await self.inner.count_log(key, path=path)
            start = max(0, length + start) if start < 0 else start
            stop = None if stop is None else max(0, length + stop) if stop < 0 else stop
        messages = await self.inner.read_log(key, path=path, start=start, stop=stop)
        if stop is None and self.inner.capabilities.keeps_log_lengths:
            messages += await self._missing_tail(key, path, start + len(messages), length)
        if not messages:
            return messages
        return self._open_messages(key, await self._origin(key), path, messages, start)

    async def _missing_tail(
        self, key: Key, path: str, read: int, held: int | None
    ) -> list[dict[str, Any]]:
        """What a read to the end of a log missed, where the store records the log's length
        apart from its messages (``held``, when the read already counted it): messages
        appended meanwhile; or, when they cannot be found, a tail removed behind the store's
        back (``DecryptionError``)."""
        if held is None:
            held = await self.inner.count_log(key, path=path)
        if held <= read:
            return []
        appended = await self.inner.read_log(key, path=path, start=read, stop=held)
        if len(appended) == held - read:
            return appended
        raise DecryptionError(
            f"log {path!r} of session {key.session_id!r} of user {key.user_id!r}",
            f"the store records {held} messages and holds {read + len(appended)}: its last "
            "messages were removed behind its back",
        )

    async def stamped(
        self, key: Key, operation: Callable[[], Awaitable[T]], names: Sequence[str] = ()
    ) -> Stamped:
        """The inner store's stamp: what ``operation`` read through here was opened here, and
        the stamp certifies the sealed data did not change. Documents asked for by name would
        come back sealed, so such a stamp is not offered (None)."""
        if names:
            return Stamped(await operation(), None, None)
        return await self.inner.stamped(key, operation)

    def unchanged_since(self, stamp: Any) -> bool:
        return self.inner.unchanged_since(stamp)

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        removed = await self.inner.truncate_log(key, path=path, length=length, expected=expected)
        if not removed:
            return removed
        return self._open_messages(key, await self._origin(key), path, removed, length)

    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        found = await self.inner.list_records_by_prefix(prefix, limit=limit, after=after)
        return [self._open_info(info) for info in found]

    def _seal_write(self, origin: tuple[str, str], write: LogWrite) -> LogWrite:
        """Each message sealed at its position (``write.start`` is placed: never -1)."""
        base = write.start or 0
        sealed = [
            {"sealed": self._seal(origin, "log", write.path, m, base + i)}
            for i, m in enumerate(write.messages)
        ]
        return write._replace(messages=sealed)

    def _open_messages(
        self,
        key: Key,
        origin: tuple[str, str],
        path: str,
        messages: list[dict[str, Any]],
        base: int,
    ) -> list[dict[str, Any]]:
        """Messages read from position ``base`` on, each opened at its position; a record of
        format 2 takes no message of format 1 (one bound to its log alone)."""
        positions = self._formats.get(key, 1) >= _POSITIONS
        opened = []
        for i, message in enumerate(messages):
            what = (
                f"message {base + i} of log {path!r} of session {key.session_id!r} of user "
                f"{key.user_id!r}"
            )
            if not isinstance(message, dict) or set(message) != {"sealed"}:
                raise DecryptionError(what, "it is not encrypted: refused rather than trusted")
            value = message["sealed"]
            if positions and isinstance(value, str) and not value.startswith(_MESSAGE):
                raise DecryptionError(
                    what,
                    "it is not sealed to its position, which every message of this session is: "
                    "refused rather than trusted (an older message put back, or forged)",
                )
            opened.append(self._open(origin, "log", path, value, base + i, what))
        return opened

    # -- whole records ---------------------------------------------------------------------

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
        if not replace and SNAPSHOT_OWNER != source.user_id != target.user_id != SNAPSHOT_OWNER:
            return await self._copy_to_another_user(source, target, cut, metadata, ttl)
        origin = await self._origin(source, writing=True)
        fmt = self._formats.get(source, 1)  # a copy's messages are its source's
        if replace:  # a restore: the target's values will be the source's, sealed as they are
            self._origins.pop(target, None)
        sealed = {**self._seal_metadata(origin, metadata), **self._token(target, origin, fmt)}
        info = await self.inner.copy_record(
            source, target, cut=cut, metadata=sealed, replace=replace, ttl=ttl
        )
        return self._open_info(info)

    async def _copy_to_another_user(
        self,
        source: Key,
        target: Key,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        ttl: TTL,
    ) -> SessionInfo:
        """A fork to another user is sealed afresh, under a key of the new user's own (staged
        as a session of theirs, then copied onto ``target`` in one step), so that nothing in
        it names the source's user or session: erasing them leaves no trace in the fork."""
        contents = await self.read_record_contents(source)
        if contents is None:  # not live: the plain copy raises what a fork of it raises
            return await self.inner.copy_record(
                source, target, cut=cut, metadata={}, replace=False, ttl=ttl
            )
        logs = {}
        for path, count in contents.logs.items():
            keep = count if cut is None or cut[0] != path else min(count, cut[1])
            logs[path] = await self.read_log(source, path=path, start=0, stop=keep) if keep else []
        staging = Key(target.user_id, f"resealing-{os.urandom(16).hex()}")
        try:
            await self.create_record(staging, ttl=None, metadata=dict(contents.info.metadata))
            if contents.state:
                await self.patch_record_state(
                    staging,
                    updates=contents.state,
                    deletes=[],
                    replace=True,
                    expected_version=None,
                    must_exist=True,
                )
            writes = [LogWrite(path, messages, None) for path, messages in logs.items()]
            await self.write_modules(staging, documents=contents.modules, writes=writes)
            if not isinstance(ttl, (int, float)) and ttl is not None:  # UNSET: the source's
                ttl = contents.info.ttl
            return await self.copy_record(
                staging, target, cut=None, metadata=metadata, replace=False, ttl=ttl
            )
        finally:
            self._origins.pop(staging, None)
            self._formats.pop(staging, None)
            await self.inner.delete_record(staging)

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        contents = await self.inner.read_record_contents(key)
        if contents is None:
            return None
        info = self._open_info(contents.info)
        origin = self._origin_of(contents.info, key)
        return contents._replace(
            info=info,
            state={n: self._open(origin, "state", n, v) for n, v in contents.state.items()},
            modules={n: self._open(origin, "module", n, d) for n, d in contents.modules.items()},
        )


def _bound(origin: tuple[str, str], kind: str, name: str, index: int | None = None) -> bytes:
    """The associated data: a sealed value opens only as this kind and name of this session
    (and a message of format 2 only at its ``index`` in its log)."""
    bound = "\x00".join((*origin, kind, name))
    return (bound if index is None else f"{bound}\x00{index}").encode("utf-8")


def _placed(key: Key) -> bytes:
    """The associated data of an origin: it opens only in the record it was sealed for."""
    return "\x00".join(("origin", key.user_id, key.session_id)).encode("utf-8")


def _trusted_in_clear(found: list[str], key: Key) -> bool:
    """Whether an origin an older version wrote in clear is taken as it is: where a forged one
    could open nothing but the same user's own data. That is a session of the same user (a
    fork, a restore), or a snapshot of the very session it names (its name carries a digest of
    that session). A fork to another user is taken only once ``rekey`` has sealed its origin."""
    if found[0] == key.user_id:
        return True
    source = Key(found[0], found[1])
    return key.user_id == SNAPSHOT_OWNER and key.session_id.startswith(snapshot_name(source, ""))


def _is_pair(found: Any) -> bool:
    return isinstance(found, list) and len(found) == 2 and all(isinstance(x, str) for x in found)


def _derive(master: bytes, info: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    derived: bytes = HKDF(hashes.SHA256(), 32, None, info).derive(master)
    return derived


async def rekey(store: SessionBase | StoreBackend, old_key: str, new_key: str) -> int:
    """Seal everything in ``store`` (a plain store or backend, not an encrypted one) with
    ``new_key``; the number of sessions rewritten.

    Crash-safe by being resumable: every value is rewritten on its own, and a value sealed with
    either key opens during the rotation, so a run cut short leaves a store that the next run
    (with the same two keys) finishes. Run it while no program writes to the store: a message
    appended between a log's read and its rewrite would be lost. A session that opens with
    neither key is left as it is, and named by the ``DecryptionError`` raised once every other
    session is rotated.

    The sessions alone: ``praisonsession.session.rotation.rekey`` also rotates the vector
    store (memory and knowledge), which no longer opens after this call by itself.
    """
    done, unreadable = await rekey_sessions(store, old_key, new_key)
    if unreadable:
        raise unrotated(unreadable, f"the other {_sessions(done)}")
    return done


def unrotated(entries: list[str], rotated: str) -> DecryptionError:
    """The error a rotation ends with when some entries open with neither key: it names them
    and says what was rotated (``rotated``: "the other 12 sessions", ...)."""
    return DecryptionError(
        ", ".join(entries),
        "it opens with neither the old nor the new key, so it was left as it is",
        f"Every other entry was rotated: {rotated} now open with the new key.",
    )


def _sessions(count: int) -> str:
    return f"{count} session" + ("" if count == 1 else "s")


async def rekey_sessions(
    store: SessionBase | StoreBackend, old_key: str, new_key: str
) -> tuple[int, list[str]]:
    """:func:`rekey` without the final error: how many sessions were rewritten, and those
    that open with neither key (left as they are)."""
    plain = beneath(store.backend if isinstance(store, SessionBase) else store)
    sealed = EncryptedBackend(plain, new_key, old_keys=(old_key,), legacy_origins=True)
    done = 0
    unreadable: list[str] = []
    for owner in sorted(await leaving_foreign(plain.list_record_owners) | {SNAPSHOT_OWNER}):
        for listed in await all_records(plain, owner):  # ids alone: nothing to open yet
            key = Key(owner, listed.session_id)
            if key == STORE_MARK:
                continue
            try:
                rotated = await _rekey_session(sealed, key)
            except DecryptionError:
                unreadable.append(f"session {key.session_id!r} of user {key.user_id!r}")
                continue
            done += rotated
    await mark_store(plain, sealed.fingerprint, replace=True)
    note_marked(plain, sealed.fingerprint)
    return done, unreadable


async def _rekey_session(sealed: EncryptedBackend, key: Key) -> int:
    """Rewrite one session under the new key: 1, or 0 when it went meanwhile."""
    contents = await sealed.read_record_contents(key)
    if contents is None:
        return 0  # it expired or went meanwhile
    stored = await sealed.read_modules(key, names=list(contents.modules))
    documents = {} if stored is None else stored.documents
    paths = set(contents.logs) | set({} if stored is None else stored.logs)
    logs = {
        path: await sealed.read_log(key, path=path, start=0, stop=None) for path in sorted(paths)
    }
    # everything read and opened before anything is written: a session that does not open
    # is left whole, as it was
    if contents.info.metadata:
        await sealed.merge_record_metadata(key, metadata=dict(contents.info.metadata))
    await sealed.patch_record_state(
        key,
        updates=contents.state,
        deletes=[],
        replace=True,
        expected_version=None,
        must_exist=False,
    )
    await sealed.write_modules(
        key, documents=documents, writes=[LogWrite(p, m, None) for p, m in logs.items()]
    )
    origin = await sealed._origin(key, writing=True)
    # sealed last: from now on every message of it must be bound to its position
    await sealed.inner.merge_record_metadata(key, metadata=sealed._token(key, origin, _POSITIONS))
    return 1
