"""What a session is made of, checked and resolved: its settings, its store, its memory and
knowledge configuration. Shared by ``AsyncSession`` and the operations that make sessions
(a fork, an import) without going through its constructor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidValueError
from ..stores.api import SessionBase

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["checked_config", "held_store", "inline_calls", "resolve_settings", "resolve_store"]


def resolve_settings(settings: Any) -> Settings:
    from ..settings import Settings

    if settings is None:
        return Settings()
    if isinstance(settings, Settings):
        return settings
    if isinstance(settings, dict):
        return Settings(**settings)
    raise InvalidValueError(f"settings must be a Settings, a dict or None, got {settings!r}.")


def resolve_store(store: Any, settings: Settings) -> SessionBase:
    if isinstance(store, SessionBase):
        return _encrypted(store, settings)
    if store is not None and not isinstance(store, str):
        raise InvalidValueError(
            f"store must be a SessionBase instance or a URL string, got {store!r}."
        )
    from ..stores.urls import open_store

    url = store or settings.resolved_store_url()
    options: dict[str, Any] = {
        "default_ttl": settings.default_ttl,
        "sliding_ttl": settings.sliding_ttl,
    }
    if not url.lower().startswith("memory:"):  # a URL's own ?durability= wins
        options["durability"] = settings.durability
    if url.lower().startswith("sqlite:"):
        options["busy_timeout"] = settings.sqlite_busy_timeout
    key = settings.resolved_encryption_key()
    if key is not None:  # a bad key is refused before the store is opened
        from ..stores.wrappers.encrypted import load_key

        load_key(key)
    return _encrypted(open_store(url, **options), settings)


def held_store(store: Any, settings: Any) -> tuple[Settings, SessionBase, bool]:
    """What a framework adapter holds: its settings, its store (resolved as ``Session`` does
    it) and whether it opened that store itself, and so closes it (a store passed in as an
    instance is its owner's to close)."""
    resolved = resolve_settings(settings)
    return resolved, resolve_store(store, resolved), not isinstance(store, SessionBase)


def inline_calls(store: SessionBase, settings: Settings) -> bool:
    """Whether synchronous calls may drive ``store`` on the caller's thread (see
    ``praisonsession._internal.runtime``): the store allows it and the ``sync_calls`` setting
    is ``"inline"`` (the default); ``"loop"`` sends every one to the background loop."""
    return store.backend.runs_inline and settings.sync_calls == "inline"


def _encrypted(store: SessionBase, settings: Settings) -> SessionBase:
    """``store`` sealed with the settings' ``encryption_key``, if one is set."""
    key = settings.resolved_encryption_key()
    if key is None or type(store).__name__ == "EncryptedStore":
        return store
    from ..stores.wrappers.encrypted import EncryptedStore

    return EncryptedStore(store, key)


def checked_config(kind: str, config: Any) -> dict[str, Any]:
    """``memory_config`` / ``knowledge_config`` checked (the checks load only when one is given,
    so that ``Session()`` stays quick to start)."""
    if config is None:
        return {}
    from ..recall.options import check_knowledge_config, check_memory_config

    check = check_memory_config if kind == "memory" else check_knowledge_config
    return check(config)
