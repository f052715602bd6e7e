"""Key rotation (``praisonsession rekey``): the sessions and the vector store, under a new key.

``stores.wrappers.encrypted.rekey`` re-seals the session store; this module adds what Chroma keeps
under the key: the texts of memories, of their history and of knowledge chunks (sealed under a
key derived from it), the duplicate keys of memories and the ids of knowledge chunks (HMACs
under keys derived from it). Memory ids are what users hold: they are stored, never derived
again, so they survive the rotation. A chunk id is only how adding a chunk twice adds nothing:
a chunk moves to its id under the new key.

Crash-safe by being resumable, as the store part is: each entry is rewritten whole (one
upsert; a moved chunk is written under its new id before the old one goes), so at every moment
it opens with exactly one of the two keys, and a rerun tries the new key, then the old one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .._internal import runtime
from .._internal.redaction import redact_url
from ..errors import DecryptionError, InvalidValueError
from .options import resolve_settings, resolve_store

if TYPE_CHECKING:
    from .._internal.sealing import TextSealer
    from ..settings import Settings
    from ..stores.api import SessionBase
    from ..stores.backend import StoreBackend

__all__ = ["RekeyReport", "arekey", "rekey", "rekey_vectors"]

#: Entries read and rewritten together.
BATCH = 256
_KINDS = ("memory_history", "memory", "knowledge")  # longest first: names share prefixes
_SCOPE_FIELDS = {"global": ("scope",), "user": ("scope", "user_id")}


class RekeyReport(NamedTuple):
    """What ``rekey`` rewrote: sessions of the store, and entries of the vector store
    (``vector_store``: where they live, None when there was none to rotate)."""

    sessions: int
    vector_entries: int
    vector_store: str | None


async def arekey(
    old_key: str,
    new_key: str,
    store: SessionBase | str | None = None,
    *,
    vector_store: str | Path | None = None,
    settings: Settings | dict[str, Any] | None = None,
) -> RekeyReport:
    """Seal everything ``store`` (a store or URL; the settings' store by default) and the vector
    store (a directory, a Chroma server URL or a PostgreSQL one; by default the settings'
    ``vector_store_url``, else the store's database when it is PostgreSQL, else
    ``<data_dir>/chroma`` when it exists) keep with ``new_key`` instead of ``old_key``.

    Stop the programs that write to them first. A run cut short loses nothing, and the same
    call again finishes the rotation."""
    from ..stores.guard import beneath
    from ..stores.wrappers.encrypted import EncryptedBackend, rekey_sessions, unrotated

    resolved = resolve_settings(settings)
    location = _vector_location(vector_store, resolved)  # checked before anything is changed
    target = resolve_store(store, resolved)
    if vector_store is None:  # memory may follow a PostgreSQL store into its database
        location = _vector_location(None, resolved, target.backend)
    plain = beneath(target.backend)  # the key setting may have wrapped it
    if isinstance(plain, EncryptedBackend):
        plain = plain.inner
    unreadable: list[str] = []
    try:
        sessions, unreadable = await rekey_sessions(plain, old_key, new_key)
        entries: int | None = 0
        if location is not None:
            sealed = EncryptedBackend(plain, new_key, old_keys=(old_key,))
            try:
                entries = await _rekey_location(sealed, location, resolved, old_key, new_key)
            except DecryptionError as exc:  # the vector entries neither key opens, named
                unreadable.append(exc.what)
                entries = None
    finally:
        if store is None or isinstance(store, str):
            await target.close()
    shown = None if location is None else redact_url(str(location))
    if unreadable:
        rotated = f"{sessions} session" + ("" if sessions == 1 else "s")
        if location is not None:
            vectors = "the other" if entries is None else f"{entries}"
            rotated += f" and {vectors} vector entries of {redact_url(str(location))}"
        raise unrotated(unreadable, rotated)
    return RekeyReport(sessions, entries or 0, shown)


def rekey(
    old_key: str,
    new_key: str,
    store: SessionBase | str | None = None,
    *,
    vector_store: str | Path | None = None,
    settings: Settings | dict[str, Any] | None = None,
) -> RekeyReport:
    """:func:`arekey`, for synchronous code."""
    return runtime.run(
        arekey(old_key, new_key, store, vector_store=vector_store, settings=settings)
    )


def _vector_location(
    given: str | Path | None, settings: Settings, backend: Any = None
) -> str | Path | None:
    """Where the vectors are: given, else where sessions find them (``recall.vector_location``,
    the store's database when memory follows a PostgreSQL store); None for a default
    directory that is not there (memory and knowledge were never used)."""
    from ..recall.vectors.pgvector import is_postgres_url

    if given is not None:
        server = str(given).startswith(("http://", "https://")) or is_postgres_url(str(given))
        if not server and not Path(given).is_dir():
            raise InvalidValueError(
                f"There is no vector store at {given}: pass the directory memory and "
                "knowledge use (<data_dir>/chroma), the Chroma server's http:// URL or the "
                "postgresql:// URL of their database."
            )
        return given
    from ..recall.core import vector_location_in_use

    return vector_location_in_use(settings, backend)


async def _rekey_location(
    sealed: StoreBackend, location: str | Path, settings: Settings, old_key: str, new_key: str
) -> int:
    from .._internal.runtime import offload
    from .._internal.sealing import TextSealer, load_key
    from ..recall.vectors import chroma_client
    from ..recall.vectors.vault_keys import stored_vault_key

    client = await offload(chroma_client, location, settings.data_dir)
    namespace = settings.vector_namespace
    collections = await offload(_collections, client, namespace)
    vaults: dict[str, bytes | None] = {}
    for _, owner in collections:
        if owner.startswith("sha256:") and owner not in vaults:
            vaults[owner] = await stored_vault_key(sealed, owner[len("sha256:") :])
    old, new = TextSealer(load_key(old_key)), TextSealer(load_key(new_key))
    return await offload(rekey_vectors, client, namespace, old, new, vaults)


def _collections(client: Any, namespace: str) -> list[tuple[str, str]]:
    """(name, recorded owner) of the namespace's collections."""
    found = []
    for collection in client.list_collections():
        if collection.name.startswith(f"{namespace}_"):
            found.append((collection.name, str((collection.metadata or {}).get("owner", ""))))
    return sorted(found)


def rekey_vectors(
    client: Any,
    namespace: str,
    old: TextSealer,
    new: TextSealer,
    vault_keys: dict[str, bytes | None] | None = None,
) -> int:
    """Rewrite the memory, history and knowledge entries of ``namespace`` under ``new`` (a
    Chroma client; ``vault_keys``: a vaulted collection's recorded owner -> its user's key);
    how many entries were rewritten. Entries that open with neither key are left as they
    are, and named by the ``DecryptionError`` raised once the others are done."""
    from ..recall.vectors import Vault, forget_terms

    rewritten = 0
    unreadable: list[str] = []
    collections = _collections(client, namespace)
    forget_terms(client, [name for name, _ in collections])  # hashed under the old key
    for name, owner in collections:
        kind = next((k for k in _KINDS if name.startswith(f"{namespace}_{k}")), None)
        if kind is None:
            continue
        key = (vault_keys or {}).get(owner)
        vault = None if key is None else Vault(key)
        rotation = _Rotation(client.get_collection(name), kind, old, new, vault)
        rewritten += rotation.run()
        unreadable += rotation.unreadable
    if unreadable:
        raise DecryptionError(
            ", ".join(unreadable),
            "it opens with neither the old nor the new key; it was left as it is, and every "
            "other entry now opens with the new key",
        )
    return rewritten


class _Rotation:
    """One collection's entries, each rewritten under the new key unless it is already."""

    def __init__(
        self, collection: Any, kind: str, old: TextSealer, new: TextSealer, vault: Any
    ) -> None:
        self.collection = collection
        self.name = collection.name
        self.kind = kind
        self.old, self.new, self.vault = old, new, vault
        self.memory_key = new.digest_key("memory")
        self.knowledge_key = new.digest_key("knowledge")
        self.unreadable: list[str] = []

    def run(self) -> int:
        ids = self.collection.get(include=[])["ids"]
        done = 0
        for start in range(0, len(ids), BATCH):
            found = self.collection.get(
                ids=ids[start : start + BATCH], include=["documents", "metadatas", "embeddings"]
            )
            writes: list[tuple[str, str, dict[str, Any], list[float]]] = []
            moved: list[str] = []
            for n, stored_id in enumerate(found["ids"]):
                text = found["documents"][n]
                metadata = dict(found["metadatas"][n] or {})
                vector = [float(x) for x in found["embeddings"][n]]
                try:
                    write = self._rewritten(stored_id, text, metadata)
                except DecryptionError:
                    self.unreadable.append(f"entry {stored_id!r} of collection {self.name!r}")
                    continue
                if write is not None:
                    writes.append((*write, vector))
                    if write[0] != stored_id:
                        moved.append(stored_id)
            if writes:
                ids_, texts, metadatas, vectors = (list(x) for x in zip(*writes, strict=True))
                self.collection.upsert(
                    ids=ids_, documents=texts, metadatas=metadatas, embeddings=vectors
                )
            if moved:  # only once their copies under the new ids are there
                self.collection.delete(ids=moved)
            done += len(writes)
        return done

    def _rewritten(
        self, stored_id: str, text: str | None, metadata: dict[str, Any]
    ) -> tuple[str, str, dict[str, Any]] | None:
        """(id, document, metadata) to store, or None when the entry is under the new key."""
        from ..recall.vectors.vault import SEALED

        if SEALED in metadata:
            return self._rewritten_in_vault(stored_id, text, metadata)
        plain, current = self._opened(stored_id, text or "")
        target, changed = self._keyed(stored_id, plain, metadata)
        if current and target == stored_id and changed == metadata:
            return None
        return target, self.new.seal(self.name, target, plain), changed

    def _rewritten_in_vault(
        self, stored_id: str, text: str | None, metadata: dict[str, Any]
    ) -> tuple[str, str, dict[str, Any]] | None:
        """A vaulted entry is sealed under its user's key, which does not change: only its
        duplicate key or chunk id (under the encryption key) may."""
        if self.kind == "memory_history":
            return None
        vault = self.vault
        if vault is None:
            raise DecryptionError(f"entry {stored_id!r}", "its user's vault key is gone")
        entry, given = vault.open_entry(self.name, stored_id, metadata)
        plain = vault.open_text(self.name, stored_id, text) if text else ""
        target, changed = self._keyed(entry, plain, given)
        if target == entry and changed == given:
            return None
        stored = vault.entry_id(target)
        sealed = vault.seal_metadata(self.name, target, changed)
        return stored, vault.seal_text(self.name, stored, plain), sealed

    def _opened(self, stored_id: str, text: str) -> tuple[str, bool]:
        """The text, and whether it is sealed under the new key (tried first) already."""
        try:
            return self.new.open(self.name, stored_id, text), True
        except DecryptionError:
            return self.old.open(self.name, stored_id, text), False

    def _keyed(self, entry: str, text: str, metadata: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The entry's id and metadata with their keyed digests under the new key."""
        from ..recall.knowledge.knowledge_base import chunk_id
        from ..recall.memory.lifecycle import text_key

        if self.kind == "memory":
            user = str(metadata.get("user_id", ""))
            return entry, {**metadata, "text_key": text_key(text, self.memory_key, user)}
        if self.kind == "knowledge":
            scope = str(metadata.get("scope", ""))
            fields = _SCOPE_FIELDS.get(scope, ("scope", "user_id", "session_id"))
            values = [str(metadata.get(field, "")) for field in fields]
            return chunk_id(values, text, self.knowledge_key), metadata
        return entry, metadata
