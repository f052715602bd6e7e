"""``erase_user``: one call that removes everything a store and the vector store hold of a user.

Every session of the user, every snapshot of them, their message logs, their long-term memories
and their knowledge (user- and session-scoped collections). Another user's data is untouched,
even one whose sessions have the same ids. The report says what went.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import runtime
from .session_options import resolve_settings, resolve_store
from .stores.hierarchy import check_erasable_user

if TYPE_CHECKING:
    from .settings import Settings
    from .stores.base import SessionBase

__all__ = ["ErasureReport", "aerase_user", "erase_user"]


class ErasureReport(NamedTuple):
    """What ``erase_user`` removed."""

    user_id: str
    sessions: int
    snapshots: int
    vector_entries: int
    session_ids: list[str]


async def aerase_user(
    user_id: str,
    store: SessionBase | str | None = None,
    *,
    settings: Settings | dict[str, Any] | None = None,
) -> ErasureReport:
    """Remove every session, snapshot, log, memory and knowledge entry of ``user_id`` from
    ``store`` (a store or URL; the settings' store by default) and from the vector store."""
    user = check_erasable_user(user_id)
    resolved = resolve_settings(settings)
    target = resolve_store(store, resolved)
    try:
        found = await target.erase_user_sessions(user)
    finally:
        if store is None or isinstance(store, str):
            await target.close()
    vectors = await _erase_vectors(user, found["session_ids"], resolved)
    return ErasureReport(user, found["sessions"], found["snapshots"], vectors, found["session_ids"])


def erase_user(
    user_id: str,
    store: SessionBase | str | None = None,
    *,
    settings: Settings | dict[str, Any] | None = None,
) -> ErasureReport:
    """:func:`aerase_user`, for synchronous code."""
    return runtime.run(aerase_user(user_id, store, settings=settings))


async def _erase_vectors(user: str, session_ids: list[str], settings: Settings) -> int:
    embedded = Path(settings.data_dir).expanduser().resolve() / "chroma"
    location = settings.vector_store_url or embedded
    if not settings.vector_store_url and not Path(location).is_dir():
        return 0  # memory and knowledge were never used here
    from .execution import offload
    from .vectors import chroma_client, erase_owner, scrub_embedded, user_collections

    namespace = settings.vector_namespace
    names = user_collections(namespace, user, session_ids)
    client = await offload(chroma_client, location)
    removed = await offload(erase_owner, client, namespace, user, names)
    if not settings.vector_store_url:  # a server's files are its operator's to vacuum
        await offload(scrub_embedded, Path(location))
    return removed
