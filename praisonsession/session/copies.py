"""What a copy of a session needs beyond the store's atomic copy: where its memories may be,
which log an agent's cut names, a progress bar, and taking back an import.

The store copies a session's records in one step (``stores/branches.py``, ``archive/``); the
memories it added live in the vector store, so
:class:`~praisonsession.session.core.AsyncSession` copies them too: a fork stages them before
its copy (``recall/memory/long_term.py``), an import adds them after and takes the copy back
(``unplace``) if they cannot follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..stores.backend import StoreBackend
from ..stores.branches import Branches
from ..stores.record import SessionInfo, record_key

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["agent_cut", "counting", "unplace", "vectors_may_hold"]


async def unplace(backend: StoreBackend, info: SessionInfo) -> None:
    """Take back an imported session and the snapshots placed with it."""
    branches = Branches(backend)
    for snapshot in await branches.snapshots(info.session_id, info.user_id):
        await branches.delete_snapshot(info.session_id, info.user_id, snapshot.snapshot_id)
    await backend.delete_record(record_key(info.session_id, info.user_id))


def agent_cut(at_message: Any) -> Any:
    """``(agent, n)`` means the agent's history log."""
    if isinstance(at_message, tuple) and len(at_message) == 2:
        log = getattr(at_message[0], "log_name", at_message[0])
        return (log, at_message[1])
    return at_message


async def vectors_may_hold(settings: Settings, memory_config: dict[str, Any], backend: Any) -> bool:
    """Whether a session's vector store exists, so that memories may be there to carry: a
    server (Chroma, or PostgreSQL given), the store's PostgreSQL when memory follows it and
    it has collections, or the embedded one's directory (opening memory costs a second)."""
    chosen = memory_config.get("vector_store_url") or settings.vector_store_url
    if chosen is not None and chosen != "embedded":
        return True
    if chosen is None:
        from ..recall.vectors.pgvector import followed_store, holds_collections

        followed = followed_store(backend)
        if followed is not None:
            from .._internal.runtime import offload

            return await offload(holds_collections, followed)
    return (Path(settings.data_dir).expanduser() / "chroma").is_dir()


@contextmanager
def counting(show: bool, title: str) -> Iterator[Callable[[int], Any] | None]:
    """A tqdm bar counting messages when ``show``, else nothing to tell."""
    if not show:
        yield None
        return
    from tqdm.auto import tqdm

    with tqdm(unit="msg", desc=title) as bar:
        yield bar.update
