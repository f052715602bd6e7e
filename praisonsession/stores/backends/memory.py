"""``InMemorySession``: sessions in a dict, for tests and throw-away work. Lost at exit.

Each user's session ids are also kept sorted, so that a page of ``list_sessions`` costs a
binary search and the page, however many sessions the user has.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any, cast

from ..._internal.json_data import copy_json as _copy
from ...errors import ConflictError
from ..api import SessionBase
from ..backend import TTL, Capabilities, Key, LogWrite, StoreBackend, StoredModules
from ..record import (
    SessionContents,
    SessionInfo,
    check_version,
    copied_info,
    copy_conflict,
    create_conflict,
    now,
)
from ..reserved import SNAPSHOT_OWNER
from .document import SessionDocument, resolve


class InMemorySession(SessionBase):
    """Sessions in this process's memory, for tests and throw-away work: lost at exit."""

    def __init__(self, *, default_ttl: float | None = None, sliding_ttl: bool = True) -> None:
        super().__init__(InMemoryBackend(default_ttl=default_ttl, sliding_ttl=sliding_ttl))


class InMemoryBackend(StoreBackend):
    """Every operation runs under one lock and never awaits, so each one is atomic."""

    url = "memory://"
    capabilities = Capabilities(runs_inline=True)

    def __init__(self, *, default_ttl: float | None = None, sliding_ttl: bool = True) -> None:
        super().__init__(default_ttl=default_ttl, sliding_ttl=sliding_ttl)
        self._docs: dict[Key, SessionDocument] = {}
        self._ids: dict[str, list[str]] = {}  # each user's session ids, sorted
        self._by_id: list[tuple[str, str]] = []  # every (session id, user id), sorted
        self._lock = threading.RLock()

    def _put(self, key: Key, doc: SessionDocument) -> SessionDocument:
        if key not in self._docs:
            bisect.insort(self._ids.setdefault(key.user_id, []), key.session_id)
            bisect.insort(self._by_id, (key.session_id, key.user_id))
        self._docs[key] = doc
        return doc

    def _drop(self, key: Key) -> None:
        if self._docs.pop(key, None) is not None:
            ids = self._ids[key.user_id]
            del ids[bisect.bisect_left(ids, key.session_id)]
            if not ids:
                del self._ids[key.user_id]
            del self._by_id[bisect.bisect_left(self._by_id, (key.session_id, key.user_id))]

    def _live(self, key: Key, at: float, must_exist: bool = False) -> SessionDocument | None:
        return resolve(self._docs.get(key), key, at, must_exist)

    def _writable(self, key: Key, at: float, must_exist: bool) -> SessionDocument:
        """The live document, or a new one in place of a missing or expired one."""
        doc = self._live(key, at, must_exist)
        if doc is None:
            doc = self._put(key, SessionDocument.new(key, self.default_ttl, {}, at))
        doc.touch(at, self.sliding_ttl)
        return doc

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        with self._lock:
            at = now()
            doc = self._live(key, at)
            if doc is None:
                doc = self._put(key, SessionDocument.new(key, self._new_ttl(ttl), metadata, at))
            else:
                doc.merge_metadata(metadata)
                doc.touch(at, self.sliding_ttl, ttl)
            return doc.info

    async def read_record(self, key: Key) -> SessionInfo | None:
        with self._lock:
            doc = self._live(key, now())
            return None if doc is None else doc.info

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        with self._lock:
            at = now()
            doc = self._writable(key, at, True)
            doc.merge_metadata(metadata)
            doc.changed(at)
            return doc.info

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        with self._lock:
            at = now()
            ids = self._ids.get(user_id, [])
            infos: list[SessionInfo] = []
            start = 0 if after is None else bisect.bisect_right(ids, after)
            for index in range(start, len(ids)):  # sorted: it stops at the page's end
                info = self._docs[Key(user_id, ids[index])].info
                if not info.is_expired(at):
                    infos.append(info)
                    if len(infos) == limit:
                        break
            return infos

    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        with self._lock:
            at = now()
            pairs = self._by_id
            start = bisect.bisect_left(pairs, (prefix, ""))
            if after is not None:
                start = max(start, bisect.bisect_right(pairs, after))
            infos: list[SessionInfo] = []
            for session_id, user_id in pairs[start:]:  # sorted: it stops at the prefix's end
                if not session_id.startswith(prefix):
                    break
                info = self._docs[Key(user_id, session_id)].info
                if user_id != SNAPSHOT_OWNER and not info.is_expired(at):
                    infos.append(info)
                    if len(infos) == limit:
                        break
            return infos

    async def list_record_owners(self) -> set[str]:
        with self._lock:
            at = now()
            return {key.user_id for key, doc in self._docs.items() if not doc.info.is_expired(at)}

    async def delete_record(self, key: Key) -> bool:
        with self._lock:
            live = self._live(key, now()) is not None
            self._drop(key)
            return live

    async def delete_record_without_state(self, key: Key) -> bool:
        with self._lock:  # the check and the removal under one lock: no write between them
            doc = self._live(key, now())
            if doc is None or doc.state:
                return False
            self._drop(key)
            return True

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        with self._lock:
            at = now()
            doc = self._live(key, at)
            if doc is None:
                return None
            doc.touch(at, True, ttl)
            return doc.info

    async def purge_records(self) -> int:
        with self._lock:
            at = now()
            gone = [key for key, doc in self._docs.items() if doc.info.is_expired(at)]
            for key in gone:
                self._drop(key)
            return len(gone)

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        with self._lock:
            at = now()
            doc = self._live(key, at, must_exist)
            if doc is None:
                return {}
            doc.touch(at, self.sliding_ttl)
            state = (
                doc.state if names is None else {n: doc.state[n] for n in names if n in doc.state}
            )
            copied: dict[str, Any] = _copy(state)
            return copied

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
        with self._lock:
            at = now()
            live = self._live(key, at, must_exist)
            check_version(
                key.session_id, 0 if live is None else live.info.version, expected_version
            )
            doc = self._writable(key, at, must_exist)
            doc.patch(updates, deletes, replace)
            doc.changed(at)
            return doc.info.version

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        with self._lock:
            at = now()
            doc = self._writable(key, at, must_exist)
            value = doc.increment(name, amount, default)
            doc.changed(at)
            return value

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        with self._lock:
            at = now()
            _check_starts(self._live(key, at), writes)
            return _write(self._writable(key, at, False), documents, writes, at)

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        with self._lock:
            at = now()
            if self._live(key, at) is not None:
                raise ConflictError(create_conflict(key))
            _check_starts(None, writes)
            doc = SessionDocument.new(key, self.default_ttl, _copy(metadata), at)
            lengths = _write(doc, documents, writes, at)
            self._put(key, doc)  # whole, or not at all
            return lengths

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        with self._lock:
            at = now()
            doc = self._live(key, at)
            if doc is None:
                return None
            doc.touch(at, self.sliding_ttl)
            return StoredModules(
                {n: _copy(doc.modules[n]) for n in names if n in doc.modules},
                {p: _copy(doc.logs[p]) for p in doc.logs_below(names)},
            )

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        with self._lock:
            at = now()
            doc = self._writable(key, at, False)
            log = doc.logs.setdefault(write.path, [])
            if write.start not in (-1, None) and write.start != len(log):
                raise ConflictError(
                    f"Log {write.path!r} holds {len(log)} messages, not {write.start}."
                )
            log.extend(_copy(write.messages))
            doc.changed(at)
            return len(log)

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        with self._lock:
            at = now()
            doc = self._live(key, at, must_exist=True)
            assert doc is not None  # must_exist: raised otherwise
            log = doc.logs.get(path, [])
            if expected is not None and len(log) != expected:
                raise ConflictError(f"Log {path!r} holds {len(log)} messages, not {expected}.")
            removed: list[dict[str, Any]] = log[length:]
            if removed:
                del log[length:]
            doc.touch(at, self.sliding_ttl)
            doc.changed(at)
            copied: list[dict[str, Any]] = _copy(removed)
            return copied

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        with self._lock:
            at = now()
            doc = self._live(key, at)
            if doc is None:
                return []
            doc.touch(at, self.sliding_ttl)
            messages: list[dict[str, Any]] = _copy(doc.logs.get(path, [])[start:stop])
            return messages

    async def count_log(self, key: Key, *, path: str) -> int:
        with self._lock:
            doc = self._live(key, now())
            return 0 if doc is None else len(doc.logs.get(path, []))

    # -- copies (fork, snapshot, restore) ---------------------------------------------------

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
        with self._lock:
            at = now()
            doc = cast(SessionDocument, self._live(source, at, must_exist=True))  # else it raised
            current = self._live(target, at)
            if current is not None and not replace:
                raise ConflictError(copy_conflict(target))
            logs = _copy(doc.logs)
            if cut is not None:
                logs[cut[0]] = logs.get(cut[0], [])[: cut[1]]
            info = copied_info(
                doc.info, target, None if current is None else current.info, metadata, ttl, at
            )
            self._put(target, SessionDocument(info, _copy(doc.state), _copy(doc.modules), logs))
            return info

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        with self._lock:
            doc = self._live(key, now())
            if doc is None:
                return None
            counts = {path: len(messages) for path, messages in doc.logs.items()}
            return SessionContents(doc.info, _copy(doc.state), _copy(doc.modules), counts)


def _check_starts(doc: SessionDocument | None, writes: list[LogWrite]) -> None:
    """Refuse (before anything changes) a write expecting a log length the log has not."""
    for write in writes:
        held = 0 if doc is None else len(doc.logs.get(write.path, []))
        if write.start not in (None, -1) and write.start != held:
            raise ConflictError(f"Log {write.path!r} changed since it was last saved.")


def _write(
    doc: SessionDocument, documents: dict[str, Any], writes: list[LogWrite], at: float
) -> dict[str, int]:
    """Module documents and log writes applied to ``doc`` (checked); each log's length."""
    doc.modules.update(_copy(documents))
    lengths = {}
    for write in writes:
        if write.start is None:
            doc.logs[write.path] = _copy(write.messages)
        else:
            doc.logs.setdefault(write.path, []).extend(_copy(write.messages))
        lengths[write.path] = len(doc.logs[write.path])
    doc.changed(at)
    return lengths
