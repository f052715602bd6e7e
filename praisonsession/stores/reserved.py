"""Records no user owns: snapshots, archive staging and vault keys, and erasing a user.

They are sessions of a reserved owner (:data:`SNAPSHOT_OWNER`), an id no user can have (ids are
printable text; this one begins with a control character), so they never show up in a user's
listing and cannot collide with a session. Each is named after whose data it holds (a digest of
the user, or of the session a snapshot was taken of), so that erasing a user finds them all.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from .._internal.identifiers import DEFAULT_USER, check_user_id
from ..errors import InvalidIdError, UnsupportedOperationError
from .backend import StoreBackend, all_records, leaving_foreign
from .guard import beneath
from .record import SNAPSHOT_OWNER, Key, SessionInfo

#: The metadata of a fork naming the session it was forked from (``branches``).
PARENT = "parent"
#: In a fork's ``PARENT``: the token its long-term memories were staged under (``fork``).
MEMORIES = "memories"

__all__ = [
    "MEMORIES",
    "PARENT",
    "SNAPSHOT",
    "SNAPSHOT_OWNER",
    "check_erasable_user",
    "erase_user_records",
    "snapshot_key",
    "staging_key",
    "vault_record",
]

#: Where a snapshot records what it is, in its own metadata.
SNAPSHOT = "snapshot"
SEPARATOR = "\x1e"


def user_digest(user_id: str) -> str:
    """What a reserved record's name holds of its user: a digest, never the id itself."""
    return hashlib.sha256(user_id.encode()).hexdigest()[:32]


def snapshot_name(key: Key, snapshot_id: str) -> str:
    """Snapshots of one session share a prefix: a digest of its key (ids may be long)."""
    digest = hashlib.sha256(f"{key.user_id}\x1f{key.session_id}".encode()).hexdigest()[:32]
    return f"{digest}{SEPARATOR}{snapshot_id}"


def snapshot_key(key: Key, snapshot_id: str) -> Key:
    """Where a snapshot of the session ``key`` is kept."""
    return Key(SNAPSHOT_OWNER, snapshot_name(key, snapshot_id))


def staging_key(kind: str, user_id: str) -> Key:
    """A new hidden session for an export's copy or an import's sections of one of a user's
    sessions; its name carries a digest of the user, so that erasing the user removes it."""
    token = secrets.token_hex(8)
    return Key(SNAPSHOT_OWNER, f"{kind}{SEPARATOR}{user_digest(user_id)}{SEPARATOR}{token}")


def vault_record(digest: str) -> Key:
    """Where the vault key of the user with this digest is kept (``recall/vectors/vault.py``):
    named like a staging session, so that erasing the user destroys it."""
    return Key(SNAPSHOT_OWNER, f"vault{SEPARATOR}{digest}{SEPARATOR}key")


def _staged_for(name: str, user_id: str) -> bool:
    parts = name.split(SEPARATOR)
    return len(parts) == 3 and parts[1] == user_digest(user_id)


def check_erasable_user(user_id: Any) -> str:
    """The user to erase, spelled out: elsewhere an empty id means the default user, which an
    erasure must not reach by accident."""
    if user_id is None or user_id == "":
        raise InvalidIdError(
            f"Erasing needs the user id spelled out; {user_id!r} would mean the default user. "
            f"Pass {DEFAULT_USER!r} if that is the user to erase."
        )
    return check_user_id(user_id)


async def erase_user_records(backend: StoreBackend, user_id: str) -> dict[str, Any]:
    """Delete every session and snapshot of a user, and the hidden records that hold their
    data; what went, by kind and session id.

    Expired sessions are purged first (anyone's: they were gone for every reader), so none of
    the user's stays stored until the next purge."""
    user = check_erasable_user(user_id)
    # an erasure removes the user's data whatever key sealed it: the one change the store's
    # guard does not stand in front of (``stores/guard.py``), made by the operator
    backend = beneath(backend)
    await leaving_foreign(backend.purge_records)
    erased: list[str] = []
    for info in await all_records(backend, user):
        await backend.delete_record(Key(user, info.session_id))
        erased.append(info.session_id)
    snapshots = staging = 0
    # a snapshot's name starts with a digest of its session: found so even where its metadata
    # is sealed and this store holds no key (then only snapshots of sessions still there)
    of_sessions = tuple(snapshot_name(Key(user, session_id), "") for session_id in erased)
    for info in await all_records(backend, SNAPSHOT_OWNER):
        about = info.metadata.get(SNAPSHOT)
        if (isinstance(about, dict) and about.get("user_id") == user) or (
            of_sessions and info.session_id.startswith(of_sessions)
        ):
            snapshots += await backend.delete_record(_key_of(info))
        elif _staged_for(info.session_id, user):  # an export's copy, an import's sections
            staging += await backend.delete_record(_key_of(info))
    unread = await _unlink_forks_of(backend, user)
    leftovers = list(await backend.scrub_erased_user(user) or [])  # after every write that erases
    if unread:
        leftovers.append(
            f"{unread} sealed parent link(s) of other users' sessions, which a store opened "
            "without the encryption key cannot read: erase the user again with the key to "
            "unlink those that name them"
        )
    return {
        "sessions": len(erased),
        "snapshots": snapshots,
        "staging": staging,
        "session_ids": erased,
        "leftovers": leftovers,
    }


async def _unlink_forks_of(backend: StoreBackend, user: str) -> int:
    """Forks of the user's sessions made for other users keep their data (theirs now) but not
    the link to the erased parent, which named the user and their session. A backend that
    cannot list its records' owners (an optional operation) has no way to find them: there the
    links stay, as they did before erasure learned to unlink them. Returns how many links were
    sealed, so that a store without the key could not read them."""
    try:
        owners = await backend.list_record_owners()
    except UnsupportedOperationError:
        return 0
    unread = 0
    for owner in sorted(owners):
        if owner == user:
            continue
        for info in await all_records(backend, owner):
            parent = info.metadata.get(PARENT)
            if isinstance(parent, dict) and parent.get("user_id") == user:
                # the fork keeps the name of its memories' copy (``branches.fork``)
                kept = {k: v for k, v in parent.items() if k == MEMORIES}
                await backend.merge_record_metadata(
                    _key_of(info), metadata={PARENT: {"erased": True, **kept}}
                )
            elif parent is not None and not isinstance(parent, dict):
                unread += 1
    return unread


def _key_of(info: SessionInfo) -> Key:
    return Key(info.user_id, info.session_id)
