"""Sessions that branch: forks, snapshots, and the parent/child tree of a user's sessions.

Every operation here stands on two operations of :class:`StoreBackend`, each one atomic
step: ``copy_record`` (a whole session onto another key: state, modules, message logs) and
``read_record_contents`` (what a session holds, read at once). So a fork or a restore is
all or nothing on every backend, crash included, and a snapshot is a copy of the content,
never an index into a log that later edits could shift. Snapshots are records of the reserved
owner (``reserved.py``); a snapshot's id sorts by creation time (strictly, within a process).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from .._internal.checks import check_count
from .._internal.identifiers import check_key, check_user_id, new_session_id
from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    KeyRequiredError,
    SessionNotFoundError,
    SnapshotNotFoundError,
)
from .backend import UNSET, StoreBackend, all_records
from .guard import guard
from .record import Key, SessionInfo, now, record_key
from .reserved import (
    MEMORIES,
    PARENT,
    SEPARATOR,
    SNAPSHOT,
    SNAPSHOT_OWNER,
    snapshot_key,
    snapshot_name,
)

__all__ = ["PARENT", "Branches", "SnapshotInfo", "TreeNode", "snapshot_id_of"]

#: Where a fork records its parent, in the child's metadata.
_MAX_DEPTH = 10_000  # parent links followed before a chain is taken for a cycle
_PAGE = 1000
_stamp_lock = threading.Lock()
_last_stamp = 0


def _snapshot_stamp() -> int:
    """Microseconds now, but always above the last stamp this process gave: two snapshots
    taken in the same tick (or under a frozen test clock) still sort in the order taken."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(int(now() * 1_000_000), _last_stamp + 1)
        return _last_stamp


class SnapshotInfo(NamedTuple):
    """A snapshot of a session: its id (``restore`` and ``delete_snapshot`` take it), the
    session it was taken of, its label, when it was taken, and the session's version then."""

    snapshot_id: str
    session_id: str
    user_id: str
    label: str | None
    created_at: float
    version: int
    messages: int

    def _repr_html_(self) -> str:
        from .._internal.display import SnapshotList  # only when a notebook shows it

        return SnapshotList([self])._repr_html_()


class TreeNode(NamedTuple):
    """One session of a user's tree, and the sessions forked from it."""

    info: SessionInfo
    children: list[TreeNode]

    def _repr_html_(self) -> str:
        from .._internal.display import tree_html  # only when a notebook shows it

        return tree_html([self])


class Branches:
    """Forks, snapshots and the tree of the sessions in one backend. Every method checks its
    arguments as a store does; the CLI, the server, the session browser and ``AsyncSession``
    use it (``Branches(store.backend)``)."""

    def __init__(self, backend: StoreBackend) -> None:
        self.backend = guard(backend)

    # -- forks ----------------------------------------------------------------------------

    async def fork(
        self,
        session_id: str,
        user_id: str = "",
        new_id: str | None = None,
        new_user_id: str | None = None,
        *,
        at_message: tuple[str, int] | None = None,
        memories: str | None = None,
    ) -> SessionInfo:
        """Copy a session (state, modules, message logs) under a new id, in one atomic step,
        recording its parent. ``at_message=(log, n)`` keeps only the first ``n`` messages of
        that log; ``new_user_id`` forks into another user's sessions (a guest's conversation
        moved to the account they signed in with). ``memories``: the token the caller staged
        the fork's long-term memories under, recorded with the parent for the fork to adopt
        them (``AsyncSession.fork``)."""
        source = record_key(session_id, user_id)
        target = record_key(
            new_session_id() if new_id is None else new_id,
            source.user_id if new_user_id is None else new_user_id,
        )
        cut = _check_cut(at_message)
        if cut is not None:
            await self._check_cut_log(source, cut[0])
        if target == source:
            raise ConflictError("A session cannot be forked onto itself; give a new id.")
        if target in await self._lineage(source):
            raise ConflictError(
                f"Session {target.session_id!r} of user {target.user_id!r} is an ancestor of "
                f"{source.session_id!r}: forking onto it would make the tree a cycle."
            )
        link = {"session_id": source.session_id, "user_id": source.user_id}
        parent = {PARENT: link if memories is None else {**link, MEMORIES: memories}}
        return await self.backend.copy_record(
            source, target, cut=cut, metadata=parent, replace=False, ttl=UNSET
        )

    async def _check_cut_log(self, source: Key, log: str) -> None:
        """A cut names a log the session has: a misspelt name would copy every log whole."""
        contents = await self.backend.read_record_contents(source)
        if contents is not None and log not in contents.logs:
            held = ", ".join(sorted(contents.logs)) or "none"
            raise InvalidValueError(
                f"Session {source.session_id!r} has no message log {log!r} to cut; "
                f"its logs: {held}."
            )

    async def parent_of(self, session_id: str, user_id: str = "") -> tuple[str, str] | None:
        """The (session_id, user_id) this session was forked from, or None."""
        info = await self.backend.read_record(record_key(session_id, user_id))
        return None if info is None else _parent(info)

    async def children_of(self, session_id: str, user_id: str = "") -> list[SessionInfo]:
        """The live sessions of this user forked from this session, ordered by id."""
        key = record_key(session_id, user_id)
        return [
            info
            for info in await all_records(self.backend, key.user_id)
            if _parent(info) == (key.session_id, key.user_id)
        ]

    async def tree(self, user_id: str = "") -> list[TreeNode]:
        """A user's live sessions as a forest: each session under the one it was forked from
        (a session whose parent is gone or another user's is a root). Parent links that loop
        (an id deleted, then reused by a fork of its own descendant) are cut where they loop."""
        user = check_user_id(user_id)
        infos = await all_records(self.backend, user)
        nodes = {info.session_id: TreeNode(info, []) for info in infos}
        roots: list[TreeNode] = []
        for info in infos:
            parent = _parent(info)
            if parent is not None and parent[1] == user and parent[0] in nodes:
                nodes[parent[0]].children.append(nodes[info.session_id])
            else:
                roots.append(nodes[info.session_id])
        reached: set[str] = set()

        def reach(node: TreeNode) -> None:
            stack = [node]
            while stack:
                current = stack.pop()
                reached.add(current.info.session_id)
                stack.extend(c for c in current.children if c.info.session_id not in reached)

        for root in roots:
            reach(root)
        for session_id in sorted(nodes):  # what no root reaches sits on a loop of links
            if session_id not in reached:
                node = nodes[session_id]
                for other in nodes.values():  # cut the link into it: it becomes a root
                    if node in other.children:
                        other.children.remove(node)
                roots.append(node)
                reach(node)
        return sorted(roots, key=lambda node: node.info.session_id)

    async def _lineage(self, key: Key) -> set[Key]:
        """The session and its ancestors, as far as links lead (a loop stops the walk)."""
        seen = {key}
        current = key
        for _ in range(_MAX_DEPTH):
            info = await self.backend.read_record(current)
            parent = None if info is None else _parent(info)
            if parent is None:
                break
            current = Key(parent[1], parent[0])
            if current in seen:
                break
            seen.add(current)
        return seen

    # -- logs -------------------------------------------------------------------------------

    async def list_logs(self, session_id: str, user_id: str = "") -> dict[str, int]:
        """The session's message logs by name, each with how many messages it holds."""
        key = record_key(session_id, user_id)
        contents = await self.backend.read_record_contents(key)
        if contents is None:
            raise SessionNotFoundError(key.session_id, key.user_id)
        return dict(sorted(contents.logs.items()))

    # -- snapshots --------------------------------------------------------------------------

    async def snapshot(
        self, session_id: str, user_id: str = "", label: str | None = None
    ) -> SnapshotInfo:
        """Copy the session's content as it is now, to restore later; the copy is not an
        index into the session, so later edits and truncations of its logs leave it whole."""
        key = record_key(session_id, user_id)
        if label is not None:
            check_key(label, "snapshot label")
        contents = await self.backend.read_record_contents(key)
        if contents is None:
            raise SessionNotFoundError(key.session_id, key.user_id)
        snapshot_id = f"{_snapshot_stamp():016d}-{secrets.token_hex(4)}"
        about = {
            "snapshot_id": snapshot_id,
            "session_id": key.session_id,
            "user_id": key.user_id,
            "label": label,
            "version": contents.info.version,
            "messages": sum(contents.logs.values()),
        }
        target = snapshot_key(key, snapshot_id)
        info = await self.backend.copy_record(
            key, target, cut=None, metadata={SNAPSHOT: about}, replace=False, ttl=None
        )
        return _snapshot_info(info)

    async def snapshots(self, session_id: str, user_id: str = "") -> list[SnapshotInfo]:
        """The session's snapshots, oldest first."""
        key = record_key(session_id, user_id)
        prefix = snapshot_name(key, "")
        found: list[SnapshotInfo] = []
        after = prefix
        while True:
            try:
                page = await self.backend.list_records(SNAPSHOT_OWNER, limit=_PAGE, after=after)
            except KeyRequiredError as refused:  # a sealed label is not read as a label
                what = f"A snapshot of session {key.session_id!r} of user {key.user_id!r}"
                raise KeyRequiredError(what, refused.fingerprint) from None
            mine = [info for info in page if info.session_id.startswith(prefix)]
            found.extend(_snapshot_info(info) for info in mine)
            if len(page) < _PAGE or len(mine) < len(page):
                return found
            after = page[-1].session_id

    async def restore(
        self, session_id: str, user_id: str, snapshot: str | SnapshotInfo
    ) -> SessionInfo:
        """Put the session's content back as the snapshot holds it, in one atomic step (a crash
        leaves the session as it was or as restored, never half of each). The session keeps
        its identity and TTL, and moves on one version."""
        key = record_key(session_id, user_id)
        source = snapshot_key(key, snapshot_id_of(snapshot))
        try:
            return await self.backend.copy_record(
                source,
                key,
                cut=None,
                metadata={"restored_from": snapshot_id_of(snapshot)},
                replace=True,
                ttl=UNSET,
            )
        except SessionNotFoundError:
            raise SnapshotNotFoundError(
                key.session_id, key.user_id, snapshot_id_of(snapshot)
            ) from None

    async def delete_snapshot(
        self, session_id: str, user_id: str, snapshot: str | SnapshotInfo
    ) -> bool:
        """Delete one snapshot; True if it was there."""
        key = record_key(session_id, user_id)
        name = snapshot_name(key, snapshot_id_of(snapshot))
        return await self.backend.delete_record(Key(SNAPSHOT_OWNER, name))


def _parent(info: SessionInfo) -> tuple[str, str] | None:
    parent = info.metadata.get(PARENT)
    if isinstance(parent, dict) and isinstance(parent.get("session_id"), str):
        return parent["session_id"], str(parent.get("user_id"))
    return None


def staged_memories(info: SessionInfo) -> str | None:
    """The token a fork's long-term memories were staged under (``fork(memories=...)``), or
    None: the session is no fork, or its fork had no memories to carry."""
    parent = info.metadata.get(PARENT)
    token = parent.get(MEMORIES) if isinstance(parent, dict) else None
    return token if isinstance(token, str) else None


def snapshot_id_of(snapshot: object) -> str:
    """The id of a ``SnapshotInfo``, or a snapshot id checked; takes any value (a caller's
    argument, an archive's field) and refuses what is not one."""
    value = snapshot.snapshot_id if isinstance(snapshot, SnapshotInfo) else snapshot
    if not isinstance(value, str) or not value or SEPARATOR in value or len(value) > 64:
        raise InvalidIdError(
            f"{value!r} is not a snapshot id; pass a SnapshotInfo from snapshot() or snapshots(),"
            " or its snapshot_id."
        )
    return value


def _snapshot_info(info: SessionInfo) -> SnapshotInfo:
    about = dict(info.metadata.get(SNAPSHOT) or {})
    return SnapshotInfo(
        snapshot_id=str(about.get("snapshot_id")),
        session_id=str(about.get("session_id")),
        user_id=str(about.get("user_id")),
        label=about.get("label"),
        created_at=float(about.get("created_at") or info.created_at),  # taken, not imported
        version=int(about.get("version", 0)),
        messages=int(about.get("messages", 0)),
    )


def _check_cut(at_message: Any) -> tuple[str, int] | None:
    if at_message is None:
        return None
    if (
        isinstance(at_message, Sequence)
        and not isinstance(at_message, str)
        and len(at_message) == 2
    ):
        log, count = at_message
        check_key(log, "log name")
        return log, check_count(count, "at_message's message count")
    raise InvalidValueError(
        "at_message is (log name, n): keep the first n messages of that log, e.g. "
        f"('agent:tutor.history', 10) (an agent's log is agent.log_name); got {at_message!r}."
    )
