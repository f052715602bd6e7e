"""``JSONBackend``: human-readable files, one JSON document per session.

Layout under ``save_dir``::

    <user>/<session>.json                the session: metadata, state, module documents
    <user>/<session>.logs/<log>.<g>.jsonl its message logs, one JSON message per line
    <user>/<session>.lock                taken (flock) by every operation on the session
    <user>/.sessions.*                   the user's session ids, sorted (``index.py``)

An AgentScope ``JSONSession`` file found where AgentScope kept it (``<session>.json`` or
``<user>_<session>.json`` directly under ``save_dir``) is offered to the key guard on first
read (``ForeignSessions``), which adopts it as a session, so pointing this class at an
AgentScope directory just works.

``<user>``, ``<session>`` and ``<log>`` are
:func:`~praisonsession._internal.identifiers.filename_for` encodings, so no id escapes the
directory and no two ids share a file. The document is
replaced atomically (temp file, rename); a log grows by appending, and the document records
how many bytes of it are acknowledged, so a crash mid-append leaves only an ignored tail. A
rewritten log goes to a new generation file that the document switches to in one rename.

Durability: at ``durability="process"`` (the default) a write is in the operating system's page
cache when it returns, which a crash of the process cannot take away. At ``"power"`` every file
written is fsynced before its rename, and its directory after, so the write is on the disk.

One module past 500 lines, on purpose: the file layout above and every operation that reads
or writes it (the copies of forks and snapshots included) belong together; the document
format, the lock, the index and AgentScope's files live in modules of their own.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

from ...._internal.checks import check_seconds
from ...._internal.file_lock import FileLock
from ...._internal.identifiers import filename_for
from ...._internal.json_data import copy_json, dumps, loads
from ...._internal.runtime import offload
from ....errors import (
    ConflictError,
    PraisonSessionError,
    SessionCorruptedError,
    StoreUnavailableError,
)
from ...backend import (
    TTL,
    Capabilities,
    ForeignSessions,
    Key,
    LogWrite,
    StoreBackend,
    StoredModules,
)
from ...durability import check_durability
from ...record import (
    SessionContents,
    SessionInfo,
    check_version,
    copied_info,
    copy_conflict,
    create_conflict,
    now,
)
from ...reserved import SNAPSHOT_OWNER
from ..below import paths_below
from ..document import SessionDocument, resolve
from .agentscope_files import adoptable, read_modules
from .index import SessionIndex

T = TypeVar("T")


def _logger() -> Any:
    import logging

    return logging.getLogger("praisonsession")


# Work on the live document (None if there is none) at a time; returns the result and the
# document to write back, or None when nothing changed.
Work = Callable[[SessionDocument | None, float], tuple[T, SessionDocument | None]]


class JSONBackend(StoreBackend):
    """The record operations on a directory of JSON files (see :class:`JSONSession`).

    ``adopt_agentscope`` offers an AgentScope file to the key guard, which adopts it into
    this layout, the first time its session is read, when its name says whose it is (the
    native layout does; AgentScope's own layout leaves AgentScope's files where they are).
    File I/O runs in a worker thread when called from a running loop, and directly on the
    caller's thread when run inline.
    """

    capabilities = Capabilities(runs_inline=True)

    def __init__(
        self,
        save_dir: str | os.PathLike[str],
        *,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        lock_timeout: float = 30.0,
        durability: str = "process",
        adopt_agentscope: bool = True,
    ) -> None:
        super().__init__(default_ttl=default_ttl, sliding_ttl=sliding_ttl)
        self.save_dir = Path(save_dir).expanduser().resolve()
        self.lock_timeout = check_seconds(lock_timeout, "lock_timeout")
        self.url = f"json://{self.save_dir}"
        #: "process" or "power": whether each write is fsynced (file and directory).
        self.durability = check_durability(durability)
        self.fsync = self.durability == "power"
        self.adopt_agentscope = bool(adopt_agentscope)

    async def import_agentscope(self, key: Key, file: str | os.PathLike[str]) -> SessionInfo:
        """Import an AgentScope session file as the record ``key`` (see
        ``JSONSession.import_agentscope``); ``file`` is a path, or a file name under
        ``save_dir``."""
        source = Path(file)
        if not source.is_absolute() and not source.exists():
            source = self.save_dir / source

        def work(doc: SessionDocument | None, at: float) -> tuple[SessionInfo, SessionDocument]:
            if doc is not None:
                raise ConflictError(
                    f"Session {key.session_id!r} of user {key.user_id!r} already exists here; "
                    "delete it first, or import under another session_id."
                )
            doc = self._writable_doc(None, key, at)
            doc.modules = read_modules(source)
            doc.changed(at)
            return doc.info, doc

        return await self._run(key, work, adopt=False)

    # -- paths ----------------------------------------------------------------------------

    def _user_dir(self, user_id: str) -> Path:
        return self.save_dir / filename_for(user_id)

    def _doc_path(self, key: Key) -> Path:
        return self._user_dir(key.user_id) / f"{filename_for(key.session_id)}.json"

    def _logs_dir(self, key: Key) -> Path:
        return self._user_dir(key.user_id) / f"{filename_for(key.session_id)}.logs"

    # -- documents on disk ----------------------------------------------------------------

    def _read_doc(self, key: Key, at: float, adopt: bool = True) -> SessionDocument | None:
        path = self._doc_path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:  # AgentScope's layout leaves AgentScope's files where they are
            if self._adopts(key, adopt):
                take = partial(offload, self.guarded, self._take_legacy, key)
                raise ForeignSessions([key], take, str(self.save_dir)) from None
            return None
        return self._decode_doc(raw, key, at, f"session file {path}")

    def _adopts(self, key: Key, adopt: bool) -> bool:
        """Whether reading ``key`` meets an AgentScope file to offer (then read under the lock)."""
        return adopt and self.adopt_agentscope and adoptable(self.save_dir, key) is not None

    def _take_legacy(self, key: Key) -> dict[Key, dict[str, Any]]:
        """The modules of this session's AgentScope file, if only this session can own it and
        it is no session here yet, marked adopted: renamed to *.migrated (kept)."""
        self._user_dir(key.user_id).mkdir(parents=True, exist_ok=True)
        with FileLock(self._lock_path(key), self.lock_timeout):
            legacy = adoptable(self.save_dir, key)
            if legacy is None or self._doc_path(key).exists():
                return {}
            modules = read_modules(legacy)
            legacy.rename(legacy.with_name(legacy.name + ".migrated"))
            return {key: modules}

    def _decode_doc(
        self, raw: bytes, key: Key, at: float, what: str, errors: str = "strict"
    ) -> SessionDocument:
        try:
            text = raw.decode("utf-8", errors)
        except UnicodeDecodeError as exc:
            raise SessionCorruptedError(what, str(exc)) from None
        try:
            return SessionDocument.from_json(loads(text, what), key, what, at)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, SessionCorruptedError):
                raise
            raise SessionCorruptedError(what, str(exc)) from None

    def _index(self, user_id: str) -> SessionIndex:
        user_dir = self._user_dir(user_id)
        return SessionIndex(
            user_dir,
            lambda: (info.session_id for info in self._stored_infos(user_dir)),
            self.lock_timeout,
            self.fsync,
        )

    def _write_doc(self, key: Key, doc: SessionDocument) -> None:
        """Replace the document (under the session's lock); a new session enters the user's
        index first, so the index names every session that has a file."""
        path = self._doc_path(key)
        if not path.exists():
            self._index(key.user_id).add(key.session_id)
        atomic_write(path, dumps(doc.to_json()).encode("utf-8"), self.fsync)

    def _remove(self, key: Key) -> None:
        path = self._doc_path(key)
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        else:
            if self.fsync:
                _fsync_dir(path.parent)
            self._index(key.user_id).discard(key.session_id)
        shutil.rmtree(self._logs_dir(key), ignore_errors=True)

    def _update(
        self, key: Key, work: Work[T], must_exist: bool, writes: bool, adopt: bool = True
    ) -> T:
        """Run ``work`` on the live document under the session's lock; save it if it says so.

        Before a write, an expired session (or the debris of a crashed delete) is removed, so
        the write starts the session afresh; reads leave it for ``purge_expired``. A read of a
        session that has no file makes none (no directory, no lock file): there is nothing to
        lock, and a writer replaces a document in one rename.
        """
        if not writes and not self._doc_path(key).exists() and not self._adopts(key, adopt):
            at = now()
            return work(resolve(None, key, at, must_exist), at)[0]
        self._user_dir(key.user_id).mkdir(parents=True, exist_ok=True)
        with FileLock(self._lock_path(key), self.lock_timeout):
            at = now()
            stored = self._read_doc(key, at, adopt)
            doc = resolve(stored, key, at, must_exist)
            if writes and doc is None and (stored is not None or self._logs_dir(key).exists()):
                self._remove(key)
            result, changed = work(doc, at)
            if changed is not None:
                self._write_doc(key, changed)
            return result

    def _writable_doc(self, doc: SessionDocument | None, key: Key, at: float) -> SessionDocument:
        """The live document a write changes, or a new one."""
        if doc is None:
            return SessionDocument.new(key, self.default_ttl, {}, at)
        return doc

    async def _run(
        self,
        key: Key,
        work: Work[T],
        must_exist: bool = False,
        writes: bool = True,
        adopt: bool = True,
    ) -> T:
        return await offload(self.guarded, self._update, key, work, must_exist, writes, adopt)

    def guarded(self, function: Callable[..., T], *args: Any) -> T:
        """File-system failures as a typed error that says where and what to do."""
        try:
            return function(*args)
        except PraisonSessionError:
            raise  # already typed (OperationTimeoutError is an OSError, via TimeoutError)
        except OSError as exc:
            raise StoreUnavailableError(
                f"Cannot use the JSON store directory {self.save_dir}: "
                f"{exc.strerror or exc} ({exc.filename or self.save_dir}). Choose a directory "
                "you can write to (store='json:///path/to/dir')."
            ) from None

    # -- sessions -------------------------------------------------------------------------

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        def work(doc: SessionDocument | None, at: float) -> tuple[SessionInfo, SessionDocument]:
            if doc is None:
                doc = SessionDocument.new(key, self._new_ttl(ttl), metadata, at)
            else:
                doc.merge_metadata(metadata)
                doc.touch(at, self.sliding_ttl, ttl)
            return doc.info, doc

        return await self._run(key, work)

    async def read_record(self, key: Key) -> SessionInfo | None:
        def work(doc: SessionDocument | None, at: float) -> tuple[SessionInfo | None, None]:
            return (None if doc is None else doc.info), None

        return await self._run(key, work, writes=False)

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        def work(live: SessionDocument | None, at: float) -> tuple[SessionInfo, SessionDocument]:
            doc = cast(SessionDocument, live)  # must_exist: _update raised if there is none
            doc.merge_metadata(metadata)
            doc.touch(at, self.sliding_ttl)
            doc.changed(at)
            return doc.info, doc

        return await self._run(key, work, must_exist=True)

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        def scan() -> list[SessionInfo]:
            user_dir = self._user_dir(user_id)
            if not user_dir.is_dir():
                return []
            at = now()
            infos: list[SessionInfo] = []
            folder = os.path.join(user_dir, "")  # a page builds 100 paths: strings, not Paths
            for session_id in self._index(user_id).ids_after(after):
                info = self._stored_info(f"{folder}{filename_for(session_id)}.json")
                # a name whose file is gone (a crash between the two) is passed over
                if info is not None and info.user_id == user_id and not info.is_expired(at):
                    infos.append(info)
                    if len(infos) >= limit:
                        break
            return infos

        return await offload(self.guarded, scan)

    async def list_record_owners(self) -> set[str]:
        def scan() -> set[str]:
            if not self.save_dir.is_dir():
                return set()
            at = now()
            return {
                user
                for user_dir in self.save_dir.iterdir()
                if user_dir.is_dir() and (user := self._live_owner(user_dir, at)) is not None
            }

        return await offload(self.guarded, scan)

    def _live_owner(self, user_dir: Path, at: float) -> str | None:
        """The user a directory belongs to, read from its first live session file (the
        directory's name may be a digest of the id); None if none of its sessions is live."""
        for info in self._stored_infos(user_dir):
            if filename_for(info.user_id) == user_dir.name and not info.is_expired(at):
                return info.user_id
        return None

    def _stored_infos(self, user_dir: Path) -> Iterator[SessionInfo]:
        """The metadata in each session file of a user's directory. AgentScope files (adopted
        when their session is opened) and files deleted meanwhile are passed over; so is a
        damaged file, with a warning: it must not hide the user's other sessions, and reading
        that session still raises, so nothing is ever taken for empty."""
        for path in user_dir.glob("*.json"):
            info = self._stored_info(path)
            if info is not None:
                yield info

    def _stored_info(self, path: str | Path) -> SessionInfo | None:
        """The metadata in one session file (see ``_stored_infos``)."""
        what = f"session file {path}"
        try:
            with open(path, "rb") as file:
                data = loads(file.read(), what)
            if isinstance(data, dict) and "format" not in data:
                return None
            return SessionInfo.from_json(data, what)
        except FileNotFoundError:
            return None
        except SessionCorruptedError as exc:
            _logger().warning("Listing skipped a damaged session file: %s", exc)
            return None

    async def delete_record(self, key: Key) -> bool:
        def work(doc: SessionDocument | None, at: float) -> tuple[bool, None]:
            if doc is not None:
                self._remove(key)
            return doc is not None, None

        return await self._run(key, work)

    async def delete_record_without_state(self, key: Key) -> bool:
        def work(doc: SessionDocument | None, at: float) -> tuple[bool, None]:
            if doc is None or doc.state:
                return False, None
            self._remove(key)  # under the session file's lock: no write between check and removal
            return True, None

        return await self._run(key, work)

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        def work(
            doc: SessionDocument | None, at: float
        ) -> tuple[SessionInfo | None, SessionDocument | None]:
            if doc is None:
                return None, None
            doc.touch(at, True, ttl)
            return doc.info, doc

        return await self._run(key, work)

    async def purge_records(self) -> int:
        def scan() -> list[Key]:
            at = now()
            expired = []
            for path in self.save_dir.glob("*/*.json"):
                try:
                    data = loads(path.read_bytes(), f"session file {path}")
                except (FileNotFoundError, SessionCorruptedError):
                    continue
                if isinstance(data, dict) and "format" in data:
                    try:
                        info = SessionInfo.from_json(data, f"session file {path}")
                    except SessionCorruptedError:
                        continue  # purging only removes what it can read as expired
                    if info.is_expired(at):
                        expired.append(Key(info.user_id, info.session_id))
            return expired

        count = 0
        for key in await offload(self.guarded, scan):
            count += await self._delete_if_expired(key)
        return count

    async def scrub_erased_user(self, user_id: str) -> None:
        """After an erasure: the user's lock files and crash debris go, and with them the
        directory whose name spells the user id; the snapshots' leftover lock files too."""

        def sweep(folder: Path, remove_folder: bool) -> None:
            for lock in folder.glob("*.lock"):
                stem = lock.name[: -len(".lock")]
                with FileLock(lock, self.lock_timeout) as held:
                    if (folder / f"{stem}.json").exists() or (folder / f"{stem}.logs").exists():
                        continue  # a live session (another user's snapshot, say)
                    (folder / f".{stem}.json.tmp").unlink(missing_ok=True)
                    held.remove()
            if remove_folder:
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only if nothing else is left in it

        await offload(self.guarded, self._index(user_id).remove)
        # the snapshots' index journal names the erased user's snapshots: fold it away
        await offload(self.guarded, self._index(SNAPSHOT_OWNER).compact)
        await offload(self.guarded, sweep, self._user_dir(user_id), True)
        await offload(self.guarded, sweep, self._user_dir(SNAPSHOT_OWNER), False)

    async def _delete_if_expired(self, key: Key) -> bool:
        def work(doc: SessionDocument | None, at: float) -> tuple[bool, None]:
            return doc is None, None  # _update has removed it if it had expired

        return await self._run(key, work)

    # -- key-value state ------------------------------------------------------------------

    def _sliding(self, doc: SessionDocument, at: float) -> SessionDocument | None:
        """Reads refresh a sliding TTL, which means writing the document."""
        if doc.info.ttl is None or not self.sliding_ttl:
            return None
        doc.touch(at, True)
        return doc

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        def work(
            doc: SessionDocument | None, at: float
        ) -> tuple[dict[str, Any], SessionDocument | None]:
            if doc is None:
                return {}, None
            state = (
                doc.state if names is None else {n: doc.state[n] for n in names if n in doc.state}
            )
            return dict(state), self._sliding(doc, at)

        return await self._run(key, work, must_exist, writes=False)

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
        def work(doc: SessionDocument | None, at: float) -> tuple[int, SessionDocument]:
            doc = self._writable_doc(doc, key, at)
            check_version(key.session_id, doc.info.version, expected_version)
            doc.patch(updates, deletes, replace)
            doc.touch(at, self.sliding_ttl)
            doc.changed(at)
            return doc.info.version, doc

        return await self._run(key, work, must_exist)

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        def work(doc: SessionDocument | None, at: float) -> tuple[int | float, SessionDocument]:
            doc = self._writable_doc(doc, key, at)
            value = doc.increment(name, amount, default)
            doc.touch(at, self.sliding_ttl)
            doc.changed(at)
            return value, doc

        return await self._run(key, work, must_exist)

    # -- modules and logs -----------------------------------------------------------------

    def _write_log(self, key: Key, doc: SessionDocument, write: LogWrite) -> bool:
        """Append to (or replace) a log file and record the acknowledged size in ``doc``.

        Returns True when it wrote a new file generation (older ones can then be deleted).
        """
        logs_dir = self._logs_dir(key)
        ref = doc.logs.get(write.path)
        count = 0 if ref is None else ref["count"]
        if write.start is not None and write.start not in (-1, count):
            raise ConflictError(f"Log {write.path!r} holds {count} messages, not {write.start}.")
        payload = b"".join(dumps(m).encode("utf-8") + b"\n" for m in write.messages)
        logs_dir.mkdir(exist_ok=True)
        if ref is None or write.start is None:
            name = f"{filename_for(write.path)}.{secrets.token_hex(4)}.jsonl"
            atomic_write(logs_dir / name, payload, self.fsync)
            doc.logs[write.path] = {
                "file": name,
                "count": len(write.messages),
                "bytes": len(payload),
            }
            return True
        fd = os.open(logs_dir / ref["file"], os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, ref["bytes"])  # drop a tail a crashed append left behind
            os.lseek(fd, ref["bytes"], os.SEEK_SET)
            _write_all(fd, payload)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        doc.logs[write.path] = {
            **ref,
            "count": count + len(write.messages),
            "bytes": ref["bytes"] + len(payload),
        }
        return False

    def _read_log_file(
        self, key: Key, path: str, ref: dict[str, Any], start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """Messages ``start:stop`` of a log (indexes >= 0), decoding only those: the file is
        read line by line, so a page of a long log costs little memory (an export reads its
        logs page by page)."""
        what = f"message log {path!r} in {self._logs_dir(key) / ref['file']}"
        return [
            loads(line, what)
            for number, line in enumerate(self._acknowledged_lines(key, path, ref))
            if start <= number and (stop is None or number < stop)
        ]

    def _log_bytes(self, key: Key, path: str, ref: dict[str, Any]) -> bytes:
        """The acknowledged bytes of a log file in one read (a copy takes them whole), checked
        as ``_acknowledged_lines`` checks them."""
        file = self._logs_dir(key) / ref["file"]
        try:
            with open(file, "rb") as handle:
                data = handle.read(ref["bytes"])
        except FileNotFoundError:
            raise _log_damage(path, file, "the file is missing") from None
        _check_log(path, file, ref, len(data), data.count(b"\n"))
        return data

    def _acknowledged_lines(self, key: Key, path: str, ref: dict[str, Any]) -> Iterator[bytes]:
        """The lines of a log file up to the size its document acknowledges (bytes past it are
        a write that never finished), read one at a time, then checked against the document."""
        file = self._logs_dir(key) / ref["file"]
        limit = ref["bytes"]
        consumed = count = 0
        try:
            with open(file, "rb") as handle:
                for line in handle:
                    line = line[: limit - consumed]
                    consumed += len(line)
                    if not line.endswith(b"\n"):
                        break  # the acknowledged bytes end inside this line
                    count += 1
                    yield line
                    if consumed == limit:
                        break
        except FileNotFoundError:
            raise _log_damage(path, file, "the file is missing") from None
        _check_log(path, file, ref, consumed, count)

    def write_file(self, path: Path, data: bytes) -> None:
        """Replace ``path`` with ``data`` atomically, at the backend's durability."""
        atomic_write(path, data, self.fsync)

    def _lock_path(self, key: Key) -> Path:
        return self._user_dir(key.user_id) / f"{filename_for(key.session_id)}.lock"

    def _commit_logs(self, key: Key, doc: SessionDocument, writes: list[LogWrite]) -> None:
        # At durability "power", new log files were fsynced with their directory by
        # atomic_write; appends add no directory entry. The document's write comes last.
        rewrote = any([self._write_log(key, doc, write) for write in writes])  # all, not lazily
        self._write_doc(key, doc)
        if rewrote:  # drop replaced generations, and any a killed writer left behind
            wanted = {ref["file"] for ref in doc.logs.values()}
            for path in self._logs_dir(key).iterdir():
                if path.name not in wanted:
                    path.unlink(missing_ok=True)

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        def work(doc: SessionDocument | None, at: float) -> tuple[dict[str, int], None]:
            return self._save_modules(key, self._writable_doc(doc, key, at), documents, writes, at)

        return await self._run(key, work)

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        """One step: the document, written last in one rename, makes the record (its new
        log files before it are debris until then, removed by the next write)."""

        def work(doc: SessionDocument | None, at: float) -> tuple[dict[str, int], None]:
            if doc is not None:
                raise ConflictError(create_conflict(key))
            doc = SessionDocument.new(key, self.default_ttl, metadata, at)
            return self._save_modules(key, doc, documents, writes, at)

        return await self._run(key, work)

    def _save_modules(
        self,
        key: Key,
        doc: SessionDocument,
        documents: dict[str, Any],
        writes: list[LogWrite],
        at: float,
    ) -> tuple[dict[str, int], None]:
        """``write_modules`` on ``doc`` (under the session's lock), committed by its write."""
        for write in writes:
            held = doc.logs.get(write.path, {}).get("count", 0)
            if write.start not in (None, -1) and write.start != held:
                raise ConflictError(f"Log {write.path!r} changed since it was last saved.")
        doc.modules.update(documents)
        doc.touch(at, self.sliding_ttl)
        doc.changed(at)
        self._commit_logs(key, doc, writes)
        return {write.path: doc.logs[write.path]["count"] for write in writes}, None

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        def work(
            doc: SessionDocument | None, at: float
        ) -> tuple[StoredModules | None, SessionDocument | None]:
            if doc is None:
                return None, None
            # the document was just read whole: one pass over its paths costs half what the
            # index (SessionDocument.logs_below) costs to make, and it would not be kept
            documents = {n: doc.modules[n] for n in names if n in doc.modules}
            logs = {
                path: self._read_log_file(key, path, doc.logs[path])
                for path in paths_below(doc.logs, documents)
            }
            found = StoredModules(documents, logs)
            return found, self._sliding(doc, at)

        return await self._run(key, work, writes=False)

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        def work(doc: SessionDocument | None, at: float) -> tuple[int, None]:
            doc = self._writable_doc(doc, key, at)
            doc.touch(at, self.sliding_ttl)
            doc.changed(at)
            self._commit_logs(key, doc, [write])
            return doc.logs[write.path]["count"], None

        return await self._run(key, work)

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        def work(
            doc: SessionDocument | None, at: float
        ) -> tuple[list[dict[str, Any]], SessionDocument | None]:
            if doc is None or path not in doc.logs:
                return [], None
            ref = doc.logs[path]
            first, last, _ = slice(start, stop).indices(ref["count"])
            messages = self._read_log_file(key, path, ref, first, last) if first < last else []
            return messages, self._sliding(doc, at)

        return await self._run(key, work, writes=False)

    async def count_log(self, key: Key, *, path: str) -> int:
        def work(doc: SessionDocument | None, at: float) -> tuple[int, None]:
            ref = None if doc is None else doc.logs.get(path)
            return (0 if ref is None else ref["count"]), None

        return await self._run(key, work, writes=False)

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        """The document is the commit point: it acknowledges fewer bytes of the log file, in
        one rename. The file is cut to that size right after, so a removed message does not
        linger on disk (a crash in between leaves bytes that every reader ignores and the
        next append cuts). Only the removed lines are read, from the end of the file."""

        def work(doc: SessionDocument | None, at: float) -> tuple[list[dict[str, Any]], None]:
            assert doc is not None  # must_exist: resolve() raised otherwise
            ref = doc.logs.get(path)
            held = 0 if ref is None else ref["count"]
            if expected is not None and held != expected:
                raise ConflictError(f"Log {path!r} holds {held} messages, not {expected}.")
            removed: list[dict[str, Any]] = []
            if ref is not None and length < held:
                removed, kept = self._last_lines(key, path, ref, held - length)
                doc.logs[path] = {**ref, "count": length, "bytes": kept}
            doc.touch(at, self.sliding_ttl)
            doc.changed(at)
            self._write_doc(key, doc)
            if removed:
                assert ref is not None
                with contextlib.suppress(FileNotFoundError):
                    os.truncate(self._logs_dir(key) / ref["file"], doc.logs[path]["bytes"])
            return removed, None

        return await self._run(key, work, must_exist=True)

    def _last_lines(
        self, key: Key, path: str, ref: dict[str, Any], count: int
    ) -> tuple[list[dict[str, Any]], int]:
        """The last ``count`` messages of a log and the acknowledged size without them, read
        backwards from the end in growing blocks: the cost is what is removed, not the log."""
        file = self._logs_dir(key) / ref["file"]
        end = ref["bytes"]
        data = b""
        position, block = end, 1 << 14
        try:
            with open(file, "rb") as handle:
                while position > 0 and data.count(b"\n") <= count:
                    step = min(block, position)
                    position -= step
                    handle.seek(position)
                    chunk = handle.read(step)
                    if len(chunk) != step:
                        raise _log_damage(
                            path, file, "the file is shorter than its acknowledged size"
                        )
                    data = chunk + data
                    block *= 2
        except FileNotFoundError:
            raise _log_damage(path, file, "the file is missing") from None
        if not data.endswith(b"\n"):
            raise _log_damage(path, file, "its acknowledged bytes do not end a line")
        cut = len(data) - 1  # the newline ending the last message
        for _ in range(count):
            cut = data.rfind(b"\n", 0, cut)
            if cut < 0:
                break
        lines = data[cut + 1 :].split(b"\n")[:-1]
        if len(lines) != count or (cut < 0 and position > 0):
            raise _log_damage(path, file, f"fewer lines than its {ref['count']} messages")
        what = f"message log {path!r} in {file}"
        return [loads(line, what) for line in lines], position + cut + 1

    # -- whole records (forks, snapshots, archives) ---------------------------------------
    # Under both sessions' locks (taken in one order, so two copies never wait on each
    # other), the source's log files are copied to new files beside the target, then the
    # target's document is replaced in one rename: that rename is the commit point. A crash
    # before it leaves the target as it was, with unused log files its next rewrite removes.

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
        """The record onto another key in one atomic step (see ``StoreBackend.copy_record``)."""
        from ...._internal.runtime import offload

        return await offload(
            self.guarded,
            self._copy_locked,
            source,
            target,
            cut,
            metadata,
            replace,
            ttl,
        )

    def _copy_locked(
        self,
        source: Key,
        target: Key,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: TTL,
    ) -> SessionInfo:
        locks = sorted({self._lock_path(source), self._lock_path(target)})
        for lock in locks:
            lock.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as held:
            for lock in locks:
                held.enter_context(FileLock(lock, self.lock_timeout))
            at = now()
            stored_source = self._read_doc(source, at)
            found = cast(SessionDocument, resolve(stored_source, source, at, must_exist=True))
            stored = self._read_doc(target, at)
            current = resolve(stored, target, at, False)
            if current is not None and not replace:
                raise ConflictError(copy_conflict(target))
            if current is None and (stored is not None or self._logs_dir(target).exists()):
                self._remove(target)  # an expired session, or a crashed delete's debris
            logs_dir = self._logs_dir(target)
            logs: dict[str, Any] = {}
            for path, ref in found.logs.items():
                data = self._log_bytes(source, path, ref)
                count = ref["count"]
                if cut is not None and path == cut[0] and cut[1] < count:
                    data = b"".join(data.splitlines(keepends=True)[: cut[1]])
                    count = cut[1]
                logs_dir.mkdir(parents=True, exist_ok=True)
                name = f"{filename_for(path)}.{secrets.token_hex(4)}.jsonl"
                self.write_file(logs_dir / name, data)
                logs[path] = {"file": name, "count": count, "bytes": len(data)}
            info = copied_info(
                found.info, target, None if current is None else current.info, metadata, ttl, at
            )
            doc = SessionDocument(info, copy_json(found.state), copy_json(found.modules), logs)
            self._write_doc(target, doc)  # the commit point
            wanted = {ref["file"] for ref in logs.values()}
            if logs_dir.exists():
                for file in logs_dir.iterdir():
                    if file.name not in wanted:
                        file.unlink(missing_ok=True)
            return info

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        """What the live record holds, read in one step (see ``StoreBackend``)."""

        def work(doc: SessionDocument | None, at: float) -> tuple[SessionContents | None, None]:
            if doc is None:
                return None, None
            counts = {path: ref["count"] for path, ref in doc.logs.items()}
            found = SessionContents(doc.info, copy_json(doc.state), copy_json(doc.modules), counts)
            return found, None

        return await self._run(key, work, writes=False)


def _check_log(path: str, file: Path, ref: dict[str, Any], size: int, lines: int) -> None:
    """A log file read up to its acknowledged size must be that long and hold one line per
    message its document records; anything else is corruption, never an empty log."""
    if size != ref["bytes"]:
        raise _log_damage(path, file, "the file is shorter than its acknowledged size")
    if lines != ref["count"]:
        raise _log_damage(path, file, f"{lines} lines for {ref['count']} messages")


def _log_damage(path: str, file: Path, detail: str) -> SessionCorruptedError:
    return SessionCorruptedError(f"message log {path!r} in {file}", detail)


def atomic_write(path: Path, data: bytes, fsync: bool) -> None:
    """Replace ``path`` with ``data`` or leave it as it was. Call under the session's lock.

    With ``fsync`` the data is on the disk before the rename, and the rename after it.
    The temp file's name is fixed, so a writer killed mid-write leaves one file that the next
    write of the same path reuses, never a growing pile.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        _fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:  # os.write may write less than asked (a signal, a nearly full disk)
        view = view[os.write(fd, view) :]


def _fsync_dir(path: Path) -> None:
    if os.name == "nt":  # pragma: no cover - directories cannot be fsynced on Windows
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
