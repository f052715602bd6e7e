"""Sessions that branch: forks, snapshots, the parent/child tree, and erasing a user.

Every operation here stands on two operations of :class:`StoreBackend`, each one atomic
step: ``copy_record`` (a whole session onto another key: state, modules, message logs) and
``read_record_contents`` (what a session holds, read at once). So a fork or a restore is
all or nothing on every backend, crash included, and a snapshot is a copy of the content,
never an index into a log that later edits could shift.

Snapshots are kept as sessions of a reserved owner (:data:`SNAPSHOT_OWNER`), an id no user can
have (ids are printable text; this one begins with a control character), so they never show up
in a user's listing and cannot collide with a session. A snapshot's id sorts by creation time
(strictly, within one process).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from .._internal.checks import check_count
from .._internal.display import SnapshotList, TreeList, tree_html
from .._internal.identifiers import DEFAULT_USER, check_key, check_user_id, new_session_id
from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    SessionNotFoundError,
    SnapshotNotFoundError,
)
from .backend import UNSET, LogWrite, StoreBackend
from .record import Key, SessionInfo, now

__all__ = [
    "SNAPSHOT_OWNER",
    "HierarchyOperations",
    "SnapshotInfo",
    "TreeNode",
    "staging_key",
    "stored_vault_key",
    "vault_key",
]

#: The owner of every snapshot: not a valid user id (see ``identifiers.check_user_id``).
SNAPSHOT_OWNER = "\x1esnapshots"
#: Where a fork records its parent, in the child's metadata.
PARENT = "parent"
#: Where a snapshot records what it is, in its own metadata.
SNAPSHOT = "snapshot"
_SEPARATOR = "\x1e"
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
        return SnapshotList([self])._repr_html_()


class TreeNode(NamedTuple):
    """One session of a user's tree, and the sessions forked from it."""

    info: SessionInfo
    children: list[TreeNode]

    def _repr_html_(self) -> str:
        return tree_html([self])


class HierarchyOperations(StoreBackend):
    """Forks, snapshots, the tree and erasing a user, for :class:`SessionBase`."""

    # -- forks ----------------------------------------------------------------------------

    async def fork_session(
        self,
        session_id: str,
        user_id: str = "",
        new_id: str | None = None,
        new_user_id: str | None = None,
        *,
        at_message: tuple[str, int] | None = None,
    ) -> SessionInfo:
        """Copy a session (state, modules, message logs) under a new id, in one atomic step,
        recording its parent. ``at_message=(log, n)`` keeps only the first ``n`` messages of
        that log; ``new_user_id`` forks into another user's sessions (a guest's conversation
        moved to the account they signed in with)."""
        source = self.record_key(session_id, user_id)
        target = self.record_key(
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
        parent = {PARENT: {"session_id": source.session_id, "user_id": source.user_id}}
        return await self.copy_record(source, target, cut, parent, False, UNSET)

    async def _check_cut_log(self, source: Key, log: str) -> None:
        """A cut names a log the session has: a misspelt name would copy every log whole."""
        contents = await self.read_record_contents(source)
        if contents is not None and log not in contents.logs:
            held = ", ".join(sorted(contents.logs)) or "none"
            raise InvalidValueError(
                f"Session {source.session_id!r} has no message log {log!r} to cut; "
                f"its logs: {held}."
            )

    async def parent_of(self, session_id: str, user_id: str = "") -> tuple[str, str] | None:
        """The (session_id, user_id) this session was forked from, or None."""
        info = await self.read_record(self.record_key(session_id, user_id))
        return None if info is None else _parent(info)

    async def children_of(self, session_id: str, user_id: str = "") -> list[SessionInfo]:
        """The live sessions of this user forked from this session, ordered by id."""
        key = self.record_key(session_id, user_id)
        return [
            info
            for info in await self._all_sessions(key.user_id)
            if _parent(info) == (key.session_id, key.user_id)
        ]

    async def session_tree(self, user_id: str = "") -> list[TreeNode]:
        """A user's live sessions as a forest: each session under the one it was forked from
        (a session whose parent is gone or another user's is a root). Parent links that loop
        (an id deleted, then reused by a fork of its own descendant) are cut where they loop."""
        user = check_user_id(user_id)
        infos = await self._all_sessions(user)
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
        return TreeList(sorted(roots, key=lambda node: node.info.session_id))

    async def _lineage(self, key: Key) -> set[Key]:
        """The session and its ancestors, as far as links lead (a loop stops the walk)."""
        seen = {key}
        current = key
        for _ in range(_MAX_DEPTH):
            info = await self.read_record(current)
            parent = None if info is None else _parent(info)
            if parent is None:
                break
            current = Key(parent[1], parent[0])
            if current in seen:
                break
            seen.add(current)
        return seen

    async def _all_sessions(self, user_id: str) -> list[SessionInfo]:
        found: list[SessionInfo] = []
        after: str | None = None
        while True:
            page = await self.list_records(user_id, _PAGE, after)
            found.extend(page)
            if len(page) < _PAGE:
                return found
            after = page[-1].session_id

    # -- logs -------------------------------------------------------------------------------

    async def list_logs(self, session_id: str, user_id: str = "") -> dict[str, int]:
        """The session's message logs by name, each with how many messages it holds."""
        key = self.record_key(session_id, user_id)
        contents = await self.read_record_contents(key)
        if contents is None:
            raise SessionNotFoundError(key.session_id, key.user_id)
        return dict(sorted(contents.logs.items()))

    # -- snapshots --------------------------------------------------------------------------

    async def snapshot_session(
        self, session_id: str, user_id: str = "", label: str | None = None
    ) -> SnapshotInfo:
        """Copy the session's content as it is now, to restore later; the copy is not an
        index into the session, so later edits and truncations of its logs leave it whole."""
        key = self.record_key(session_id, user_id)
        if label is not None:
            check_key(label, "snapshot label")
        contents = await self.read_record_contents(key)
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
        target = Key(SNAPSHOT_OWNER, _snapshot_name(key, snapshot_id))
        info = await self.copy_record(key, target, None, {SNAPSHOT: about}, False, None)
        return _snapshot_info(info)

    async def list_snapshots(self, session_id: str, user_id: str = "") -> list[SnapshotInfo]:
        """The session's snapshots, oldest first."""
        key = self.record_key(session_id, user_id)
        prefix = _snapshot_name(key, "")
        found: list[SnapshotInfo] = []
        after = prefix
        while True:
            page = await self.list_records(SNAPSHOT_OWNER, _PAGE, after)
            mine = [info for info in page if info.session_id.startswith(prefix)]
            found.extend(_snapshot_info(info) for info in mine)
            if len(page) < _PAGE or len(mine) < len(page):
                return SnapshotList(found)
            after = page[-1].session_id

    async def restore_snapshot(
        self, session_id: str, user_id: str, snapshot: str | SnapshotInfo
    ) -> SessionInfo:
        """Put the session's content back as the snapshot holds it, in one atomic step (a crash
        leaves the session as it was or as restored, never half of each). The session keeps
        its identity and TTL, and moves on one version."""
        key = self.record_key(session_id, user_id)
        source = Key(SNAPSHOT_OWNER, _snapshot_name(key, snapshot_id_of(snapshot)))
        try:
            return await self.copy_record(
                source, key, None, {"restored_from": snapshot_id_of(snapshot)}, True, UNSET
            )
        except SessionNotFoundError:
            raise SnapshotNotFoundError(
                key.session_id, key.user_id, snapshot_id_of(snapshot)
            ) from None

    async def delete_snapshot(
        self, session_id: str, user_id: str, snapshot: str | SnapshotInfo
    ) -> bool:
        """Delete one snapshot; True if it was there."""
        key = self.record_key(session_id, user_id)
        name = _snapshot_name(key, snapshot_id_of(snapshot))
        return await self.delete_record(Key(SNAPSHOT_OWNER, name))

    # -- erasing a user -----------------------------------------------------------------------

    async def erase_user_sessions(self, user_id: str) -> dict[str, Any]:
        """Delete every session and snapshot of a user; what went, by kind and session id.

        Expired sessions are purged first (anyone's: they were gone for every reader), so
        none of the user's stays stored until the next purge."""
        user = check_erasable_user(user_id)
        await self.purge_records()
        erased: list[str] = []
        for info in await self._all_sessions(user):
            await self.delete_record(Key(user, info.session_id))
            erased.append(info.session_id)
        snapshots = staging = 0
        for info in await self._all_sessions(SNAPSHOT_OWNER):
            about = info.metadata.get(SNAPSHOT) or {}
            if about.get("user_id") == user:
                snapshots += await self.delete_record(info_key(info))
            elif _staged_for(info.session_id, user):  # an export's copy, an import's sections
                staging += await self.delete_record(info_key(info))
        leftovers = await self.scrub_erased_user(user)
        return {
            "sessions": len(erased),
            "snapshots": snapshots,
            "staging": staging,
            "session_ids": erased,
            "leftovers": list(leftovers or []),
        }

    async def scrub_erased_user(self, user_id: str) -> list[str] | None:
        """After an erasure, remove what the backend still keeps of ``user_id`` beneath the
        API: a write-ahead log, lock files, bookkeeping keys, dead row versions. Nothing to do
        by default; a store that wraps another forwards it. Returns what it could not remove
        (one sentence each: what stays where, and what the operator can do), if anything."""


def check_erasable_user(user_id: Any) -> str:
    """The user to erase, spelled out: elsewhere an empty id means the default user, which an
    erasure must not reach by accident."""
    if user_id is None or user_id == "":
        raise InvalidIdError(
            f"Erasing needs the user id spelled out; {user_id!r} would mean the default user. "
            f"Pass {DEFAULT_USER!r} if that is the user to erase."
        )
    return check_user_id(user_id)


def info_key(info: SessionInfo) -> Key:
    return Key(info.user_id, info.session_id)


def _parent(info: SessionInfo) -> tuple[str, str] | None:
    parent = info.metadata.get(PARENT)
    if isinstance(parent, dict) and isinstance(parent.get("session_id"), str):
        return parent["session_id"], str(parent.get("user_id"))
    return None


def snapshot_key(key: Key, snapshot_id: str) -> Key:
    """Where a snapshot of the session ``key`` is kept."""
    return Key(SNAPSHOT_OWNER, _snapshot_name(key, snapshot_id))


def staging_key(kind: str, user_id: str) -> Key:
    """A new hidden session for an export's copy or an import's sections of one of a user's
    sessions; its name carries a digest of the user, so that erasing the user removes it."""
    token = secrets.token_hex(8)
    return Key(SNAPSHOT_OWNER, f"{kind}{_SEPARATOR}{_user_digest(user_id)}{_SEPARATOR}{token}")


async def vault_key(store: StoreBackend, user_id: str, create: bool = True) -> bytes | None:
    """The user's key for what a Chroma server keeps of them (``vectors/vault.py``): made on
    first use, the same for every process (the first key appended to an empty log wins), and
    erased with the user: its hidden session is named like a staging one, with their digest.
    ``create=False`` (a reader): None when the user has none yet."""
    key = _vault_record(_user_digest(user_id))
    found = await store.read_log(key, "vault", 0, 1)
    if not found and not create:
        return None
    if not found:
        await store.create_record(key, None, {})  # no expiry, whatever the store's default
        made = base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")
        with contextlib.suppress(ConflictError):  # another process appended first: theirs
            await store.append_log(key, LogWrite("vault", [{"key": made}], 0))
        found = await store.read_log(key, "vault", 0, 1)
    return base64.urlsafe_b64decode(found[0]["key"])


async def stored_vault_key(store: StoreBackend, user_digest: str) -> bytes | None:
    """The vault key of the user whose digest this is (what a vaulted collection records as
    its owner), or None when there is none (never made, or erased): read, never made."""
    found = await store.read_log(_vault_record(user_digest), "vault", 0, 1)
    return base64.urlsafe_b64decode(found[0]["key"]) if found else None


def _vault_record(user_digest: str) -> Key:
    return Key(SNAPSHOT_OWNER, f"vault{_SEPARATOR}{user_digest}{_SEPARATOR}key")


def _staged_for(name: str, user_id: str) -> bool:
    parts = name.split(_SEPARATOR)
    return len(parts) == 3 and parts[1] == _user_digest(user_id)


def _user_digest(user_id: str) -> str:
    return hashlib.sha256(user_id.encode()).hexdigest()[:32]


def _snapshot_name(key: Key, snapshot_id: str) -> str:
    """Snapshots of one session share a prefix: a digest of its key (ids may be long)."""
    digest = hashlib.sha256(f"{key.user_id}\x1f{key.session_id}".encode()).hexdigest()[:32]
    return f"{digest}{_SEPARATOR}{snapshot_id}"


def snapshot_id_of(snapshot: str | SnapshotInfo) -> str:
    value = snapshot.snapshot_id if isinstance(snapshot, SnapshotInfo) else snapshot
    if not isinstance(value, str) or not value or _SEPARATOR in value or len(value) > 64:
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
