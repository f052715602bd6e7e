"""``RemoteBackend``: a backend whose sessions live on a session server, reached over HTTP.

A remote ``AsyncSession`` uses a store over it, so every store-backed operation (state,
modules, message logs, TTL, listing) has one code path, local or remote: ``SessionBase``
validates and builds what to write here, exactly as for a local store, and each backend
operation below becomes one ``POST <agent path>/store/<operation>``. The server checks it all
again and runs it on its own store.

An operation whose repetition would apply twice (an increment, an append) is retried only if
the request never left this machine; the others are retried on any transient failure.
"""

from __future__ import annotations

from typing import Any

from ..errors import RemoteRequestError
from ..stores.backend import TTL, UNSET, Capabilities, Key, LogWrite, StoreBackend, StoredModules
from ..stores.record import SessionInfo
from .attempts import offload_request
from .client import RemoteClient

__all__ = ["RemoteBackend"]


class RemoteBackend(StoreBackend):
    """The sessions of the server ``client`` talks to. Closing it closes the client."""

    #: Blocking HTTP runs inline on the caller's thread when it runs no loop (see runtime);
    #: the server's store checks the encryption key (with its own key, or none).
    capabilities = Capabilities(runs_inline=True, checks_keys=True)

    def __init__(self, client: RemoteClient) -> None:
        super().__init__()
        self._client = client
        self.url = client.shown_url

    async def _call(self, operation: str, body: dict[str, Any], *, safe: bool = True) -> Any:
        if self._client.server is None:
            await offload_request(self._client.check_connection, patience=self._client.timeout)
        return await offload_request(
            self._client.store, operation, body, safe, patience=self._client.timeout
        )

    # -- sessions -------------------------------------------------------------------------

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        body = _key(key, metadata=metadata)
        if ttl is not UNSET:
            body["ttl"] = ttl
        return SessionInfo.from_json(await self._call("create", body))

    async def read_record(self, key: Key) -> SessionInfo | None:
        return _info_or_none(await self._call("info", _key(key)))

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        return SessionInfo.from_json(await self._call("set_metadata", _key(key, metadata=metadata)))

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        found = await self._call("list", {"user_id": user_id, "limit": limit, "after": after})
        return [SessionInfo.from_json(item) for item in found]

    async def delete_record(self, key: Key) -> bool:
        return bool(await self._call("delete", _key(key)))

    async def delete_record_without_state(self, key: Key) -> bool:
        """One request, one step of the server's store; a server older than the route (404)
        gets the protocol's two steps."""
        try:
            return bool(await self._call("delete_without_state", _key(key)))
        except RemoteRequestError as missing:
            if missing.status != 404:
                raise
            return await super().delete_record_without_state(key)

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        body = _key(key)
        if ttl is not UNSET:
            body["ttl"] = ttl
        return _info_or_none(await self._call("touch", body))

    async def purge_records(self) -> int:
        return int(await self._call("purge", {}))

    # -- key-value state ------------------------------------------------------------------

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        state: dict[str, Any] = await self._call(
            "get_state", _key(key, names=names, must_exist=must_exist)
        )
        return state

    async def patch_record_state(
        self,
        key: Key,
        *,
        updates: dict[str, Any],
        deletes: list[str],
        replace: bool,
        expected_version: int | None,
        must_exist: bool,
    ) -> int:
        body = _key(
            key,
            updates=updates,
            deletes=deletes,
            replace=replace,
            expected_version=expected_version,
            must_exist=must_exist,
        )
        # setting the same keys again is harmless; a compare-and-set that won would then lose
        return int(await self._call("patch", body, safe=expected_version is None))

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        body = _key(key, name=name, amount=amount, default=default, must_exist=must_exist)
        value: int | float = await self._call("increment", body, safe=False)
        return value

    # -- modules and message logs -----------------------------------------------------------

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        body = _key(key, documents=documents, writes=[_write(w) for w in writes])
        lengths = await self._call(
            "save_modules", body, safe=all(write.start is None for write in writes)
        )
        return {str(path): int(length) for path, length in lengths.items()}

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        """One request, one step of the server's store; a server older than the route (404)
        gets the protocol's three steps."""
        body = _key(key, metadata=metadata, documents=documents, writes=[_write(w) for w in writes])
        try:
            lengths = await self._call("create_with_modules", body, safe=False)
        except RemoteRequestError as missing:
            if missing.status != 404:
                raise
            return await super().create_record_with_modules(
                key, metadata=metadata, documents=documents, writes=writes
            )
        return {str(path): int(length) for path, length in lengths.items()}

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        found = await self._call("load_modules", _key(key, names=names))
        if found is None:
            return None
        return StoredModules(found["documents"], found["logs"])

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        return int(await self._call("append", _key(key, write=_write(write)), safe=False))

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        if start < 0:  # the server reads from a position: count first (two requests)
            start = max(0, await self.count_log(key, path=path) + start)
        messages: list[dict[str, Any]] = await self._call(
            "read_log", _key(key, path=path, start=start, stop=stop)
        )
        return messages

    async def count_log(self, key: Key, *, path: str) -> int:
        return int(await self._call("count_log", _key(key, path=path)))

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        # applied twice, a retry would remove more: sent again only if it never left
        removed: list[dict[str, Any]] = await self._call(
            "truncate_log", _key(key, path=path, length=length, expected=expected), safe=False
        )
        return removed

    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        body = {"prefix": prefix, "limit": limit, "after": None if after is None else list(after)}
        return [SessionInfo.from_json(item) for item in await self._call("list_by_prefix", body)]

    # -- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        self._client.close()


def _key(key: Key, **fields: Any) -> dict[str, Any]:
    return {"user_id": key.user_id, "session_id": key.session_id, **fields}


def _write(write: LogWrite) -> dict[str, Any]:
    return {"path": write.path, "messages": write.messages, "start": write.start}


def _info_or_none(data: Any) -> SessionInfo | None:
    return None if data is None else SessionInfo.from_json(data)
