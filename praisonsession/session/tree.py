"""``AsyncSession``'s branching operations: fork, snapshots, the tree, archives.

A mixin of :class:`~praisonsession.session.core.AsyncSession`, kept in a module of its own:
the store does each step atomically (``stores/hierarchy.py``); this layer adds what belongs to a
session rather than a store: the long-term memories it added (copied with a fork, carried in an
archive) and the session objects handed back.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from ..stores.api import SessionBase

if TYPE_CHECKING:
    from ..archive import ArchiveSummary
    from ..recall.core import Recall
    from ..settings import Settings
    from ..stores.branches import SnapshotInfo, TreeNode
    from ..stores.record import SessionInfo

__all__ = ["SessionTree"]

T = TypeVar("T")


class SessionTree:
    """Forks, snapshots, the tree and archives, for ``AsyncSession``."""

    if TYPE_CHECKING:  # what AsyncSession provides
        _store: SessionBase
        _session_id: str
        _user_id: str
        _opened: bool
        _owns_store: bool
        _settings: Settings
        _memory_config: dict[str, Any]
        _recall: Recall | None

        def __init__(
            self,
            session_id: str | None = None,
            user_id: str | None = None,
            *,
            store: SessionBase | str | None = None,
            settings: Settings | dict[str, Any] | None = None,
        ) -> None: ...

        def _call(self, what: str, work: Awaitable[T]) -> Awaitable[T]: ...

        def _sibling(self, session_id: str, user_id: str) -> SessionTree: ...

        async def open(self) -> SessionInfo: ...

        async def _memory(self) -> Recall: ...

    async def fork(
        self,
        new_session_id: str | None = None,
        *,
        at_message: tuple[Any, int] | None = None,
        user_id: str | None = None,
    ) -> Any:
        """A copy of this session (state, modules, message logs, and the long-term memories
        it added) under a new id, made in one atomic step; it records this one as its parent.

        ``at_message=(log, n)`` keeps only the first ``n`` messages of one log (an agent's log
        is ``agent.log_name``; an Agent itself is taken too). ``user_id`` forks into another
        user's sessions: a guest's conversation moved to the account they signed in with.
        Writing to either afterwards never changes the other.
        """
        info = await self._call(
            "fork",
            self._store.fork_session(
                self._session_id,
                self._user_id,
                new_session_id,
                user_id,
                at_message=_cut(at_message),
            ),
        )
        child = self._sibling(info.session_id, info.user_id)
        child._opened = True
        try:
            await _copy_memories(self, child)
        except BaseException:  # all or nothing: no fork that lacks the memories it should hold
            await self._store.delete_record(self._store.record_key(info.session_id, info.user_id))
            raise
        return child

    @property
    def parent(self) -> Any:
        """The session this one was forked from, as a session object, or None: ``await
        session.parent`` here (``session.parent`` on the synchronous ``Session``)."""
        return self._parent()

    async def _parent(self) -> Any:
        found = await self._call("parent", self._store.parent_of(self._session_id, self._user_id))
        if found is None:
            return None
        parent = self._sibling(*found)
        if await self._store.get_info(*found) is None:
            return None  # it was deleted or has expired
        parent._opened = True
        return parent

    async def children(self) -> list[SessionInfo]:
        """This user's live sessions forked from this one."""
        return await self._call(
            "children", self._store.children_of(self._session_id, self._user_id)
        )

    async def tree(self) -> list[TreeNode]:
        """This user's sessions as a forest: each under the one it was forked from."""
        return await self._call("tree", self._store.session_tree(self._user_id))

    async def snapshot(self, label: str | None = None) -> SnapshotInfo:
        """Keep a copy of the session as it is now (content, not a pointer into it), to come
        back to with ``restore``; later edits and truncations leave it whole."""
        return await self._call(
            "snapshot", self._store.snapshot_session(self._session_id, self._user_id, label)
        )

    async def snapshots(self) -> list[SnapshotInfo]:
        """This session's snapshots, oldest first."""
        return await self._call(
            "snapshots", self._store.list_snapshots(self._session_id, self._user_id)
        )

    async def restore(self, snapshot: SnapshotInfo | str) -> SessionInfo:
        """Put the session back as the snapshot holds it, in one atomic step."""
        return await self._call(
            "restore",
            self._store.restore_snapshot(self._session_id, self._user_id, snapshot),
        )

    async def delete_snapshot(self, snapshot: SnapshotInfo | str) -> bool:
        """Delete one snapshot of this session; True if it was there."""
        return await self._call(
            "delete_snapshot",
            self._store.delete_snapshot(self._session_id, self._user_id, snapshot),
        )

    async def export(
        self, path_or_file: str | os.PathLike[str] | IO[bytes], *, progress: bool = False
    ) -> ArchiveSummary:
        """Write the session to one portable, versioned file (JSON Lines): its metadata,
        state, modules, message logs, snapshots and long-term memories. Streams page by page;
        ``progress=True`` shows a bar. Not bounded by ``timeout`` as a whole."""
        from ..archive import export_session

        if not self._opened:
            await self.open()
        key = self._store.record_key(self._session_id, self._user_id)
        memories = await _memories_of(self)
        with _counting(progress, "Exporting") as tell:
            return await export_session(self._store, key, path_or_file, memories, tell)

    @classmethod
    async def import_archive(
        cls,
        path: str | os.PathLike[str] | IO[bytes],
        store: SessionBase | str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
        progress: bool = False,
    ) -> Any:
        """Read an archive written by ``export`` into ``store`` (any backend), as
        ``session_id`` of ``user_id`` (by default, as archived), and return the session.

        The whole file is checked first: a corrupt one, or one from a newer version of this
        library, imports nothing. Importing onto a session that exists is refused.
        """
        from ..archive import import_session
        from .options import resolve_settings, resolve_store

        resolved = resolve_settings(settings)
        target = resolve_store(store, resolved)
        from ..recall.memory.long_term import check_metadata

        with _counting(progress, "Importing") as tell:
            info, memories, _ = await import_session(
                target, path, session_id, user_id, tell, check_metadata
            )
        imported = cls(info.session_id, info.user_id, store=target, settings=resolved)
        imported._owns_store = not isinstance(store, SessionBase)  # it opened the store
        imported._opened = True
        if memories:
            try:
                recall = await imported._memory()
                await recall.restore_memories(memories)
            except BaseException:  # all or nothing: no import without its memories
                await _unplace(target, info)
                raise
        return imported


async def _unplace(store: SessionBase, info: Any) -> None:
    """Take back an imported session and the snapshots placed with it."""
    for snapshot in await store.list_snapshots(info.session_id, info.user_id):
        await store.delete_snapshot(info.session_id, info.user_id, snapshot.snapshot_id)
    await store.delete_record(store.record_key(info.session_id, info.user_id))


def _cut(at_message: Any) -> Any:
    """``(agent, n)`` means the agent's history log."""
    if isinstance(at_message, tuple) and len(at_message) == 2:
        log = getattr(at_message[0], "log_name", at_message[0])
        return (log, at_message[1])
    return at_message


def _memory_in_use(session: SessionTree) -> bool:
    """Whether this session's vector store exists, so that memories may be there to carry:
    a Chroma server, or the embedded one's directory (opening Chroma costs a second)."""
    settings = session._settings
    if session._recall is not None or session._memory_config.get("vector_store_url"):
        return True
    if settings.vector_store_url:
        return True
    return (Path(settings.data_dir).expanduser() / "chroma").is_dir()


async def _memories_of(session: SessionTree) -> list[dict[str, Any]]:
    if not _memory_in_use(session):
        return []
    return await (await session._memory()).session_memories()


async def _copy_memories(parent: SessionTree, child: SessionTree) -> None:
    memories = await _memories_of(parent)
    if memories:
        await (await child._memory()).restore_memories(memories)


@contextmanager
def _counting(show: bool, title: str) -> Iterator[Callable[[int], Any] | None]:
    """A tqdm bar counting messages when ``show``, else nothing to tell."""
    if not show:
        yield None
        return
    from tqdm.auto import tqdm

    with tqdm(unit="msg", desc=title) as bar:
        yield bar.update
