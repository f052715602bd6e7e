"""A backend as a process without an encryption key may use it, for callers below the store API.

The framework adapters, the server's store routes and the browser call a backend directly, for
speed. Over a store without a key they go through ``without_key(backend)``, which keeps the
promise the store API keeps (``stores/keyless.py``): a read that finds sealed values raises
``KeyRequiredError`` instead of handing back ciphertext as if it were the value, and a write
into an encrypted session is refused before it writes (by the backend itself where it
``refuses_sealed_writes``, else after a read). Over an encrypted or remote backend, which
check keys themselves, ``without_key`` returns the backend as it is.
"""

from __future__ import annotations

from typing import Any

from ..backend import LogWrite, StoreBackend, StoredModules
from ..keyless import (
    check_keyless_copy,
    check_keyless_read,
    check_keyless_write,
    refuse_sealed_info,
)
from ..record import Key, SessionContents, SessionInfo

__all__ = ["KeylessBackend", "without_key"]


def without_key(backend: StoreBackend) -> StoreBackend:
    """``backend`` for a caller that reads and writes it without an encryption key."""
    if backend.checks_keys or isinstance(backend, KeylessBackend):
        return backend
    return KeylessBackend(backend)


class KeylessBackend(StoreBackend):
    """Forwards to ``inner``; refuses sealed values on reads and encrypted sessions on writes."""

    def __init__(self, inner: StoreBackend) -> None:
        super().__init__(default_ttl=inner.default_ttl, sliding_ttl=inner.sliding_ttl)
        self.inner = inner
        self.url = inner.url
        self.runs_inline = inner.runs_inline
        self.refuses_sealed_writes = inner.refuses_sealed_writes

    def __repr__(self) -> str:
        return f"KeylessBackend({self.inner!r})"

    def admit_sealed_writes(self) -> None:
        raise TypeError("a backend used without a key does not take sealed writes")

    async def close(self) -> None:
        await self.inner.close()

    # -- records ---------------------------------------------------------------------------

    async def create_record(self, key: Key, ttl: Any, metadata: dict[str, Any]) -> SessionInfo:
        await check_keyless_write(self.inner, key)
        return await self.inner.create_record(key, ttl, metadata)

    async def read_record(self, key: Key) -> SessionInfo | None:
        info = await self.inner.read_record(key)
        if info is not None:
            refuse_sealed_info(info)
        return info

    async def merge_record_metadata(self, key: Key, metadata: dict[str, Any]) -> SessionInfo:
        await check_keyless_write(self.inner, key)
        return await self.inner.merge_record_metadata(key, metadata)

    async def list_records(self, user_id: str, limit: int, after: str | None) -> list[SessionInfo]:
        return _unsealed(await self.inner.list_records(user_id, limit, after))

    async def list_records_by_prefix(
        self, prefix: str, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        return _unsealed(await self.inner.list_records_by_prefix(prefix, limit, after))

    async def list_record_owners(self) -> set[str]:
        return await self.inner.list_record_owners()

    async def delete_record(self, key: Key) -> bool:
        return await self.inner.delete_record(key)

    async def touch_record(self, key: Key, ttl: Any) -> SessionInfo | None:
        return await self.inner.touch_record(key, ttl)

    async def purge_records(self) -> int:
        return await self.inner.purge_records()

    async def scrub_erased_user(self, user_id: str) -> list[str] | None:
        return await self.inner.scrub_erased_user(user_id)

    # -- state -----------------------------------------------------------------------------

    async def read_record_state(
        self, key: Key, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        state = await self.inner.read_record_state(key, names, must_exist)
        await check_keyless_read(self.inner, key, state.values())
        return state

    async def patch_record_state(
        self,
        key: Key,
        updates: dict[str, Any],
        deletes: list[str],
        replace: bool,
        expected_version: int | None,
        must_exist: bool,
    ) -> int:
        await check_keyless_write(self.inner, key)
        return await self.inner.patch_record_state(
            key, updates, deletes, replace, expected_version, must_exist
        )

    async def increment_record_value(
        self, key: Key, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        await check_keyless_write(self.inner, key)
        return await self.inner.increment_record_value(key, name, amount, default, must_exist)

    # -- modules and logs ------------------------------------------------------------------

    async def write_modules(
        self, key: Key, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        await check_keyless_write(self.inner, key)
        return await self.inner.write_modules(key, documents, writes)

    async def read_modules(self, key: Key, names: list[str]) -> StoredModules | None:
        stored = await self.inner.read_modules(key, names)
        if stored is not None:
            await check_keyless_read(self.inner, key, stored.documents.values())
            for messages in stored.logs.values():
                await check_keyless_read(self.inner, key, messages[:1])
        return stored

    async def append_log(self, key: Key, write: LogWrite) -> int:
        await check_keyless_write(self.inner, key)
        return await self.inner.append_log(key, write)

    async def read_log(
        self, key: Key, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        messages = await self.inner.read_log(key, path, start, stop)
        await check_keyless_read(self.inner, key, messages)
        return messages

    async def truncate_log(
        self, key: Key, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        await check_keyless_write(self.inner, key)
        return await self.inner.truncate_log(key, path, length, expected)

    async def count_log(self, key: Key, path: str) -> int:
        return await self.inner.count_log(key, path)

    # -- whole records ---------------------------------------------------------------------

    async def copy_record(
        self,
        source: Key,
        target: Key,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: Any,
    ) -> SessionInfo:
        await check_keyless_copy(self.inner, source)
        return await self.inner.copy_record(source, target, cut, metadata, replace, ttl)

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        contents = await self.inner.read_record_contents(key)
        if contents is not None:
            refuse_sealed_info(contents.info)
        return contents


def _unsealed(found: list[SessionInfo]) -> list[SessionInfo]:
    for info in found:
        refuse_sealed_info(info)
    return found
