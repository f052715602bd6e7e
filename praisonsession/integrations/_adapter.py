"""What every framework adapter holds and does alike, written once: its settings, its store
and whether it opened that store (and so closes it), closing, the context managers, running
a coroutine from synchronous code (inline or on the runtime's loop), and the checks of the
ids a framework hands over.

The adapters subclass their framework's own base (``BaseSessionService``,
``BaseCheckpointSaver``...) and this one beside it; it defines no framework method, so the
two never collide.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from .._internal import runtime
from .._internal.identifiers import check_session_id, check_user_id
from ..errors import InvalidIdError
from ..session.options import held_store, inline_calls
from ..stores import Key, SessionBase

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["HeldStore", "SyncClose", "checked_key", "checked_user_id"]

T = TypeVar("T")


class HeldStore:
    """The store an adapter keeps its data in, resolved as ``Session(store=..., settings=...)``
    resolves it: a URL, a store instance (its owner's to close) or None for the default."""

    _settings: Settings
    _store: SessionBase
    _owns_store: bool
    _inline: bool

    def _hold(self, store: SessionBase | str | None, settings: Any) -> None:
        self._settings, self._store, self._owns_store = held_store(store, settings)
        self._inline = inline_calls(self._store, self._settings)

    @property
    def store(self) -> SessionBase:
        """The store keeping this adapter's data: list, export or erase it through its API."""
        return self._store

    def __repr__(self) -> str:
        return f"{type(self).__name__}(store={self._store.url!r}{self._repr_more()})"

    def _repr_more(self) -> str:
        return ""

    async def aclose(self) -> None:
        """Release the store's connections if this adapter opened the store (a store passed in
        as an instance is its owner's to close). The data stays; the store reopens on use."""
        if self._owns_store:
            await self._store.close()

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _run(self, work: Coroutine[Any, Any, T], what: str, *, inline: bool | None = None) -> T:
        """``work`` run to its end from synchronous code, within the settings' ``timeout``:
        on this thread when it runs no loop and the store allows it (``inline``, unless the
        call says otherwise), else on the runtime's loop (Jupyter, a thread of an async
        program)."""
        timeout = self._settings.timeout
        return runtime.run(
            runtime.bounded(work, timeout, what),
            timeout=timeout,
            inline=self._inline if inline is None else inline,
            what=what,
        )


class SyncClose(HeldStore):
    """A synchronous ``close()`` and ``with`` for the frameworks whose objects have them."""

    def close(self) -> None:
        """:meth:`aclose`, for synchronous code."""
        if self._owns_store:
            runtime.run(self._store.close())

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def checked_user_id(user_id: Any, what: str = "user_id") -> str:
    """A framework's user id as ours, checked as every public entry point checks it. ``""``
    is refused: the frameworks keep it a user of its own, our stores take it for the default
    user, and the two must never alias (one would read and delete the other's sessions)."""
    if user_id == "" and isinstance(user_id, str):
        raise InvalidIdError(
            f"{what} must not be empty: an empty user id would be the default user's "
            f"({check_user_id('')!r}) here, another user than '' is in the framework's own "
            "services. Pass a name such as 'user_1'."
        )
    if not isinstance(user_id, str):
        raise InvalidIdError(f"{what} must be a str, got {type(user_id).__name__}: {user_id!r}.")
    return check_user_id(user_id)


def checked_key(session_id: Any, user_id: Any) -> Key:
    """The key of ``(user_id, session_id)``, both checked (``""`` refused as a user)."""
    return Key(checked_user_id(user_id), check_session_id(session_id))
