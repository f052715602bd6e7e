"""Reading an archive into a store: the whole file checked, every section staged, then
placed in atomic copies, the session last."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._internal.checks import is_int
from ..errors import ConflictError, InvalidIdError, InvalidValueError
from ..stores.backend import LogWrite, StoreBackend
from ..stores.branches import snapshot_id_of
from ..stores.record import Key, SessionInfo, copy_conflict, record_key
from ..stores.reserved import SNAPSHOT, snapshot_key
from .layout import ArchiveSummary, Progress, Records, verify
from .staging import STAGING_TTL, Staging

__all__ = ["import_session"]


async def import_session(
    backend: StoreBackend,
    source: Any,
    session_id: str | None,
    user_id: str | None,
    progress: Progress | None = None,
    check_memory: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[SessionInfo, list[dict[str, Any]], ArchiveSummary]:
    """Read an archive into ``backend`` (as ``session_id`` of ``user_id``, or as archived);
    returns the imported session, the memories to add, and a summary.

    The whole file is checked, then every section is written into hidden staging sessions,
    and only then copied into place: the snapshots first, the session last (that copy is what
    makes the import visible; should it fail, the snapshots placed for it go again). A
    conflict, a corrupt record or a crash halfway leaves no trace but staging sessions, which
    are deleted, or expire (:data:`STAGING_TTL`) if the process was killed.

    ``check_memory`` checks each memory's metadata as the vector store will take it, so that a
    memory it would refuse refuses the archive before anything is placed.
    """
    verify(source)
    records = Records(source, getattr(backend, "archive_sealer", lambda: None)())
    records.take("archive", dict)
    archived = SessionInfo.from_json(records.take("session", dict), f"{records.what}'s session")
    records.check_data(dict(archived.metadata), "the session's metadata")
    try:
        record_key(archived.session_id, archived.user_id)
    except InvalidIdError as exc:
        raise records.corrupt(str(exc)) from None
    target = record_key(
        archived.session_id if session_id is None else session_id,
        archived.user_id if user_id is None else user_id,
    )
    if await backend.read_record(target) is not None:
        raise ConflictError(copy_conflict(target))
    staging = Staging(backend, target.user_id)
    snapshots: list[tuple[Key, dict[str, Any]]] = []
    memories: list[dict[str, Any]] = []
    try:
        session, messages = await _stage(backend, records, staging, progress)
        record = records.next()
        while record is not None:
            if "memory" in record:
                memories.append(_memory(records, record, check_memory))
            elif "snapshot" in record:
                snapshot = await _stage_snapshot(
                    backend, records, record, target, staging, progress
                )
                snapshots.append(snapshot)
            else:
                raise records.corrupt(f"it holds an unexpected record {sorted(record)[:3]}")
            record = records.next()
        info = await _place(backend, session, target, archived, snapshots)
    finally:
        await staging.remove()
    summary = ArchiveSummary(
        target.session_id, target.user_id, messages, len(snapshots), len(memories), 0
    )
    return info, memories, summary


async def _stage(
    backend: StoreBackend, records: Records, staging: Staging, progress: Any
) -> tuple[Key, int]:
    """Write one session's sections (state, modules, logs) into a new staging session."""
    key = staging.new("import")
    await backend.create_record(key, ttl=STAGING_TTL, metadata={})
    state = records.take("state", dict)
    modules = records.take("modules", dict)
    records.check_data(state, "state")
    records.check_data(modules, "modules")
    for name, document in modules.items():
        records.check_name(name, "module name")
        if not isinstance(document, dict):
            raise records.corrupt(f"module {name!r} is not an object")
    await backend.patch_record_state(
        key, updates=state, deletes=[], replace=True, expected_version=None, must_exist=False
    )
    await backend.write_modules(key, documents=modules, writes=[])
    total = 0
    seen: set[str] = set()
    while (records.peek() or {}).get("log") is not None:
        record = records.next() or {}
        path = records.field(record, "log", str)
        records.check_name(path, "log name")
        if path in seen:  # an export writes each log once: a second one is not to be merged
            raise records.corrupt(f"log {path!r} appears twice")
        seen.add(path)
        left = records.field(record, "count", int)
        while left > 0:
            page = records.take("messages", list)
            if not page or len(page) > left:
                raise records.corrupt(f"the pages of log {path!r} do not add up to its count")
            records.check_data(page, f"messages of log {path!r}")
            if not all(isinstance(message, dict) for message in page):
                raise records.corrupt(f"a message of log {path!r} is not an object")
            await staging.keep_alive()
            await backend.append_log(key, write=LogWrite(path, page, -1))
            left -= len(page)
            total += len(page)
            if progress is not None:
                progress(len(page))
    return key, total


async def _stage_snapshot(
    backend: StoreBackend,
    records: Records,
    record: dict[str, Any],
    target: Key,
    staging: Staging,
    progress: Any,
) -> tuple[Key, dict[str, Any]]:
    """Stage one snapshot; its staging key and the metadata it gets under the target."""
    about = records.field(record, "snapshot", dict)
    try:
        snapshot_id = snapshot_id_of(about.get("snapshot_id"))
    except InvalidIdError as exc:
        raise records.corrupt(str(exc)) from None
    label = about.get("label")
    created_at = about.get("created_at")
    if label is not None and not isinstance(label, str):
        raise records.corrupt(f"snapshot {snapshot_id!r} has a label that is not text")
    if not isinstance(created_at, (int, float)) or isinstance(created_at, bool):
        raise records.corrupt(f"snapshot {snapshot_id!r} has no time it was taken")
    counts = [about.get("version", 0), about.get("messages", 0)]
    if not all(is_int(n) for n in counts):
        raise records.corrupt(f"snapshot {snapshot_id!r} has a count that is not a number")
    contents = records.take("contents", dict)
    metadata = contents.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise records.corrupt(f"snapshot {snapshot_id!r} has metadata that is not an object")
    records.check_data(metadata, "a snapshot's metadata")
    holding, _ = await _stage(backend, records, staging, progress)
    if records.take("snapshot_end", str) != snapshot_id:
        raise records.corrupt(f"snapshot {snapshot_id!r} is not closed where it ends")
    moved = {
        "snapshot_id": snapshot_id,
        "session_id": target.session_id,
        "user_id": target.user_id,
        "label": label,
        "version": counts[0],
        "messages": counts[1],
        "created_at": created_at,  # when it was taken, not when it was imported
    }
    return holding, {**metadata, SNAPSHOT: moved}


def _memory(
    records: Records, record: dict[str, Any], check: Callable[[dict[str, Any]], None] | None
) -> dict[str, Any]:
    memory = records.field(record, "memory", dict)
    text, metadata, created = memory.get("text"), memory.get("metadata"), memory.get("created_at")
    if not isinstance(text, str) or not isinstance(metadata, (dict, type(None))):
        raise records.corrupt("a memory has no text, or metadata that is not an object")
    if created is not None and (not isinstance(created, (int, float)) or isinstance(created, bool)):
        raise records.corrupt("a memory's time is not a number")
    records.check_data(memory, "a memory")
    if check is not None:
        try:
            check(dict(metadata or {}))
        except InvalidValueError as exc:
            raise records.corrupt(f"a memory's metadata is refused: {exc}") from None
    return memory


async def _place(
    backend: StoreBackend,
    staged: Key,
    target: Key,
    archived: SessionInfo,
    snapshots: list[tuple[Key, dict[str, Any]]],
) -> SessionInfo:
    """Copy the staged snapshots into place, then the session; if its copy fails (another
    process created the session meanwhile), the snapshots placed for it are deleted again."""
    placed: list[Key] = []
    try:
        for holding, metadata in snapshots:
            where = snapshot_key(target, metadata[SNAPSHOT]["snapshot_id"])
            if await backend.read_record(where) is None:  # else: left by an earlier import of it
                placed.append(where)
            await backend.copy_record(
                holding, where, cut=None, metadata=metadata, replace=True, ttl=None
            )
        return await backend.copy_record(
            staged,
            target,
            cut=None,
            metadata=dict(archived.metadata),
            replace=False,
            ttl=archived.ttl,
        )
    except BaseException:
        for where in placed:
            await backend.delete_record(where)
        raise
