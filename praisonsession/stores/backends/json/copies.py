"""Copies of whole sessions in the JSON store (fork, snapshot, restore), as a mixin of
JSONSession.

Under both sessions' locks (taken in one order, so two copies never wait on each other), the
source's log files are copied to new files beside the target, then the target's document is
replaced in one rename: that rename is the commit point. A crash before it leaves the target as
it was, with unused log files that its next rewrite removes.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ...._internal.identifiers import filename_for
from ...._internal.json_data import copy_json
from ....errors import ConflictError
from ...record import Key, SessionContents, SessionInfo, copied_info, copy_conflict, now
from ..document import SessionDocument, resolve
from .file_lock import FileLock

T = TypeVar("T")


class JSONCopies:
    """``copy_record`` and ``read_record_contents`` for
    :class:`~praisonsession.stores.backends.json.store.JSONSession`."""

    if TYPE_CHECKING:  # what JSONSession provides

        def _guarded(self, function: Callable[..., T], *args: Any) -> T: ...

        async def _run(
            self,
            key: Key,
            work: Callable[[SessionDocument | None, float], tuple[T, SessionDocument | None]],
            must_exist: bool = False,
            writes: bool = True,
            adopt: bool = True,
        ) -> T: ...

    async def copy_record(
        self,
        source: Key,
        target: Key,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: Any,
    ) -> SessionInfo:
        """The record onto another key in one atomic step (see ``StoreBackend.copy_record``)."""
        from ...._internal.runtime import offload

        return await offload(
            self._guarded,
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
        ttl: Any,
    ) -> SessionInfo:
        store: Any = self
        locks = sorted({store._lock_path(source), store._lock_path(target)})
        for lock in locks:
            lock.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as held:
            for lock in locks:
                held.enter_context(FileLock(lock, store.lock_timeout))
            at = now()
            found = resolve(store._read_doc(source, at), source, at, must_exist=True)
            stored = store._read_doc(target, at)
            current = resolve(stored, target, at, False)
            if current is not None and not replace:
                raise ConflictError(copy_conflict(target))
            if current is None and (stored is not None or store._logs_dir(target).exists()):
                store._remove(target)  # an expired session, or a crashed delete's debris
            logs_dir = store._logs_dir(target)
            logs: dict[str, Any] = {}
            for path, ref in found.logs.items():
                data = store._log_bytes(source, path, ref)
                count = ref["count"]
                if cut is not None and path == cut[0] and cut[1] < count:
                    data = b"".join(data.splitlines(keepends=True)[: cut[1]])
                    count = cut[1]
                logs_dir.mkdir(parents=True, exist_ok=True)
                name = f"{filename_for(path)}.{secrets.token_hex(4)}.jsonl"
                store._write_file(logs_dir / name, data)
                logs[path] = {"file": name, "count": count, "bytes": len(data)}
            info = copied_info(
                found.info, target, None if current is None else current.info, metadata, ttl, at
            )
            doc = SessionDocument(info, copy_json(found.state), copy_json(found.modules), logs)
            store._write_doc(target, doc)  # the commit point
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
