"""``erase_user``: one call that removes everything a store and the vector store hold of a user.

Every session of the user, every snapshot of them, their message logs, their long-term memories
and their knowledge (user- and session-scoped collections). Another user's data is untouched,
even one whose sessions have the same ids. The report says what went, and what stays beneath
the API that the library could not scrub (``leftovers``: never a silent claim).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .._internal import runtime
from .._internal.redaction import redact_url
from ..stores.reserved import check_erasable_user, erase_user_records
from .options import resolve_settings, resolve_store

if TYPE_CHECKING:
    from ..settings import Settings
    from ..stores.api import SessionBase

__all__ = ["ErasureReport", "aerase_user", "erase_user"]


class ErasureReport(NamedTuple):
    """What ``erase_user`` removed, and ``leftovers``: where bytes of the user may remain
    that the library could not scrub (a missing privilege or server setting, a Chroma server's
    files), one sentence each with what to do. Empty when nothing remains."""

    user_id: str
    sessions: int
    snapshots: int
    vector_entries: int
    session_ids: list[str]
    leftovers: list[str] = []  # noqa: RUF012 - a NamedTuple default, never mutated


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
    from ..recall.core import vector_location_in_use  # where sessions find their vectors

    location = vector_location_in_use(resolved, target.backend)
    try:
        found = await erase_user_records(target.backend, user)
    finally:
        if store is None or isinstance(store, str):
            await target.close()
    vectors, left = await _erase_vectors(user, found["session_ids"], resolved, location)
    leftovers = [*found.get("leftovers", []), *left]
    return ErasureReport(
        user, found["sessions"], found["snapshots"], vectors, found["session_ids"], leftovers
    )


def erase_user(
    user_id: str,
    store: SessionBase | str | None = None,
    *,
    settings: Settings | dict[str, Any] | None = None,
) -> ErasureReport:
    """:func:`aerase_user`, for synchronous code."""
    return runtime.run(aerase_user(user_id, store, settings=settings))


async def _erase_vectors(
    user: str, session_ids: list[str], settings: Settings, location: str | Path | None
) -> tuple[int, list[str]]:
    if location is None:
        return 0, []  # memory and knowledge were never used here
    from .._internal.runtime import offload
    from ..recall.vectors import (
        chroma_client,
        erase_owner,
        is_postgres_url,
        scrub_embedded,
        user_collections,
    )
    from ..recall.vectors.pgvector import holds_collections

    if is_postgres_url(location) and not await offload(holds_collections, str(location)):
        return 0, []  # memory never used this database: nothing to erase, nothing created
    namespace = settings.vector_namespace
    names = user_collections(namespace, user, session_ids)
    client = await offload(chroma_client, location, settings.data_dir)
    removed = await offload(erase_owner, client, namespace, user, names)
    if isinstance(location, Path):
        await offload(scrub_embedded, location, client)
        return removed, []
    if is_postgres_url(location):  # the tables are dropped: the registry, statistics, WAL
        left = await offload(client.scrub)
        for finding in left:
            _logger().warning("erasure of a user: %s", finding)
        return removed, left
    # Measured on chroma run 1.5: deleting the collections leaves their entries in free space
    # of the server's chroma.sqlite3, and no call of its API rewrites that file. What it
    # keeps of the user is sealed under their key (vectors/vault.py), which the store's
    # erasure has just destroyed; the vectors themselves remain until the operator vacuums.
    finding = (
        f"the Chroma server at {redact_url(str(location))} keeps the deleted "
        "entries' vectors in free space of its chroma.sqlite3 (their texts, ids and names only "
        "as ciphertext and keyed tokens under the user's key, destroyed by this erasure) until "
        "its operator runs: chroma vacuum --path <its data directory> --force"
    )
    _logger().warning("erasure of a user: %s", finding)
    return removed, [finding]


def _logger() -> Any:
    import logging

    return logging.getLogger("praisonsession")
