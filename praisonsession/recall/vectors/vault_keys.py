"""Where each user's vault key lives (``vault.py``): in the session store, beside their
sessions, so that erasing the user destroys it.

It is a hidden record of the reserved owner (``stores/reserved.py``), named after a digest of
the user: made on first use, the same for every process (the first key appended to an empty
log wins), and erased with the user's other records.
"""

from __future__ import annotations

import base64
import contextlib
import os

from ...errors import ConflictError
from ...stores.backend import LogWrite, StoreBackend
from ...stores.reserved import user_digest, vault_record

__all__ = ["stored_vault_key", "vault_key"]


async def vault_key(backend: StoreBackend, user_id: str, create: bool = True) -> bytes | None:
    """The user's key for what a Chroma server keeps of them. ``create=False`` (a reader):
    None when the user has none yet."""
    key = vault_record(user_digest(user_id))
    found = await backend.read_log(key, path="vault", start=0, stop=1)
    if not found and not create:
        return None
    if not found:
        await backend.create_record(
            key, ttl=None, metadata={}
        )  # no expiry, whatever the store's default
        made = base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")
        with contextlib.suppress(ConflictError):  # another process appended first: theirs
            await backend.append_log(key, write=LogWrite("vault", [{"key": made}], 0))
        found = await backend.read_log(key, path="vault", start=0, stop=1)
    return base64.urlsafe_b64decode(found[0]["key"])


async def stored_vault_key(backend: StoreBackend, digest: str) -> bytes | None:
    """The vault key of the user whose digest this is (what a vaulted collection records as
    its owner), or None when there is none (never made, or erased): read, never made."""
    found = await backend.read_log(vault_record(digest), path="vault", start=0, stop=1)
    return base64.urlsafe_b64decode(found[0]["key"]) if found else None
