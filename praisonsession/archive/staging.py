"""Hidden sessions an export reads from and an import writes into, which expire on their own."""

from __future__ import annotations

from ..clock import now
from ..errors import SessionCorruptedError
from ..stores.backend import StoreBackend
from ..stores.record import Key
from ..stores.reserved import staging_key

__all__ = ["STAGING_TTL", "Staging"]

#: Seconds a staging session (the copy an export reads, the sections an import writes) lives
#: once no export or import touches it: what a killed one leaves is gone after this, at the
#: latest by the next ``purge_expired``. A running one keeps its own alive, however long.
STAGING_TTL = 3600.0


class Staging:
    """The hidden sessions one export or import works in. Each expires STAGING_TTL after it
    was last touched, so what a killed process leaves goes; while the work goes on, all of
    them are touched every quarter of that (whatever the store's sliding setting, and also
    the ones written earlier and only read at the end)."""

    def __init__(self, backend: StoreBackend, user_id: str) -> None:
        self.backend = backend
        self.user_id = user_id  # whose data they hold: erase_user removes them too
        self.keys: list[Key] = []
        self._touched = now()

    def new(self, kind: str) -> Key:
        key = staging_key(kind, self.user_id)
        self.keys.append(key)
        return key

    async def keep_alive(self) -> None:
        if now() - self._touched < STAGING_TTL / 4:
            return
        for key in self.keys:
            if await self.backend.touch_record(key, ttl=STAGING_TTL) is None:
                raise SessionCorruptedError(
                    f"the staging session {key.session_id!r}", "it was deleted while in use"
                )
        self._touched = now()

    async def remove(self) -> None:
        for key in self.keys:
            await self.backend.delete_record(key)
        self.keys.clear()
