"""A backend wrapper written only against the public backend protocol: it takes a backend, is
a backend, and counts the record operations that reach the one it wraps.

It proves that a wrapper (encryption, caching) needs nothing private: the conformance suite runs
on a store over it as one more backend (``wrapped`` in ``backends.CONFORMANCE_BACKENDS``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from praisonsession.stores import (
    TTL,
    ForwardingBackend,
    Key,
    LogWrite,
    SessionContents,
    SessionInfo,
    StoreBackend,
    StoredModules,
)


class CountingBackend(ForwardingBackend):
    """Forwards every record operation to ``inner`` (the base does: URL, TTL settings and
    capabilities are taken from it) and counts it in ``calls``."""

    def __init__(self, inner: StoreBackend) -> None:
        super().__init__(inner)
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def _count(self, operation: str) -> StoreBackend:
        self.calls[operation] += 1
        return self.inner

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        return await self._count("create_record").create_record(key, ttl=ttl, metadata=metadata)

    async def read_record(self, key: Key) -> SessionInfo | None:
        return await self._count("read_record").read_record(key)

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        return await self._count("merge_record_metadata").merge_record_metadata(
            key, metadata=metadata
        )

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        return await self._count("list_records").list_records(user_id, limit=limit, after=after)

    async def delete_record(self, key: Key) -> bool:
        return await self._count("delete_record").delete_record(key)

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        return await self._count("touch_record").touch_record(key, ttl=ttl)

    async def purge_records(self) -> int:
        return await self._count("purge_records").purge_records()

    async def list_record_owners(self) -> set[str]:
        return await self._count("list_record_owners").list_record_owners()

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        return await self._count("read_record_state").read_record_state(
            key, names=names, must_exist=must_exist
        )

    async def patch_record_state(self, key: Key, **change: Any) -> int:
        return await self._count("patch_record_state").patch_record_state(key, **change)

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        inner = self._count("increment_record_value")
        return await inner.increment_record_value(
            key, name=name, amount=amount, default=default, must_exist=must_exist
        )

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        return await self._count("write_modules").write_modules(
            key, documents=documents, writes=writes
        )

    async def create_record_with_modules(self, key: Key, **contents: Any) -> dict[str, int]:
        inner = self._count("create_record_with_modules")
        return await inner.create_record_with_modules(key, **contents)

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        return await self._count("read_modules").read_modules(key, names=names)

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        return await self._count("append_log").append_log(key, write=write)

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        return await self._count("read_log").read_log(key, path=path, start=start, stop=stop)

    async def count_log(self, key: Key, *, path: str) -> int:
        return await self._count("count_log").count_log(key, path=path)

    async def truncate_log(self, key: Key, **how: Any) -> list[Any]:
        return await self._count("truncate_log").truncate_log(key, **how)

    async def list_records_by_prefix(self, prefix: str, **page: Any) -> list[SessionInfo]:
        return await self._count("list_records_by_prefix").list_records_by_prefix(prefix, **page)

    async def copy_record(self, source: Key, target: Key, **how: Any) -> SessionInfo:
        return await self._count("copy_record").copy_record(source, target, **how)

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        return await self._count("read_record_contents").read_record_contents(key)

    async def scrub_erased_user(self, user_id: str) -> list[str] | None:
        return await self._count("scrub_erased_user").scrub_erased_user(user_id)
