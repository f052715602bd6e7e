"""The one place that decides whose vectors an operation may touch.

Every vector operation of memory and knowledge goes through a :class:`ScopedIndex` built from a
:class:`Scope`: the scope names the collection (one per user for memory, one per knowledge scope),
stamps its fields on every entry written, and checks every entry read back. A user's collection
holds only that user's entries, so a search needs no user filter (keeping Chroma on its fast
path), and the check on the way out turns any mistake into an error instead of a leak.
``erase_user`` finds the same names here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import IsolationError
from ..embeddings import Embedder
from .index import Hit, VectorIndex

if TYPE_CHECKING:
    from ..._internal.sealing import TextSealer
    from .vault import Vault

__all__ = [
    "IsolationError",
    "Scope",
    "ScopedIndex",
    "collection_name",
    "knowledge_scope",
    "memory_scope",
    "user_collections",
]


def collection_name(namespace: str, kind: str, *scope: str) -> str:
    """A valid Chroma name per scope; ids can hold any text, so they go in as a digest."""
    if not scope:
        return f"{namespace}_{kind}"
    digest = hashlib.sha256("\x1f".join(scope).encode("utf-8")).hexdigest()[:32]
    return f"{namespace}_{kind}_{digest}"


@dataclass(frozen=True)
class Scope:
    """Whose entries a collection holds: ``fields`` are stamped on each and checked on reads."""

    namespace: str
    kind: str
    fields: tuple[tuple[str, str], ...]
    owner: str | None  # the user, None for data shared by everyone

    @property
    def collection(self) -> str:
        return collection_name(self.namespace, self.kind, *(value for _, value in self.fields))

    def stamp(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return {**metadata, **dict(self.fields)}

    def check(self, metadata: dict[str, Any] | None, entry_id: str) -> bool:
        """True for an entry of this scope; an entry that names another owner raises. One that
        names no owner at all is withheld (False): a Chroma server read that races a write can
        return an entry of this collection without its metadata, and it is nobody's to show."""
        for key, value in self.fields:
            found = metadata.get(key) if metadata else None
            if found is None:
                return False
            if found != value:
                raise IsolationError(
                    f"Entry {entry_id!r} of collection {self.collection!r} has {key}="
                    f"{found!r}, not {value!r}; it was withheld. Erase the data "
                    "directory's chroma folder if it was written by hand."
                )
        return True

    def related(self, kind: str) -> Scope:
        """The same owner's collection of another kind (memory -> its history)."""
        return Scope(self.namespace, kind, self.fields, self.owner)


def memory_scope(namespace: str, user_id: str) -> Scope:
    """A user's long-term memories: every session of the user, no other user."""
    return Scope(namespace, "memory", (("user_id", user_id),), user_id)


def knowledge_scope(namespace: str, scope: str, user_id: str, session_id: str) -> Scope:
    """Knowledge shared by all (``global``), one user's (``user``) or one session's."""
    if scope == "global":
        return Scope(namespace, "knowledge", (("scope", "global"),), None)
    if scope == "user":
        return Scope(namespace, "knowledge", (("scope", "user"), ("user_id", user_id)), user_id)
    fields = (("scope", "session"), ("user_id", user_id), ("session_id", session_id))
    return Scope(namespace, "knowledge", fields, user_id)


def user_collections(namespace: str, user_id: str, session_ids: list[str]) -> list[str]:
    """Names of every collection that holds ``user_id``'s data (for ``erase_user``)."""
    memory = memory_scope(namespace, user_id)
    return [
        memory.collection,
        memory.related("memory_history").collection,
        knowledge_scope(namespace, "user", user_id, "").collection,
        *(knowledge_scope(namespace, "session", user_id, s).collection for s in session_ids),
    ]


class ScopedIndex:
    """A :class:`VectorIndex` that writes and reads only within one :class:`Scope`
    (``sealer`` and ``vault``: see :class:`VectorIndex`)."""

    def __init__(
        self,
        client: Any,
        scope: Scope,
        embedder: Embedder,
        *,
        sealer: TextSealer | None = None,
        vault: Vault | None = None,
        searched: bool = True,
    ) -> None:
        self.scope = scope
        self.index = VectorIndex(
            client,
            scope.collection,
            embedder,
            owner=scope.owner,
            sealer=sealer,
            vault=vault,
            searched=searched,
        )

    @property
    def sealer(self) -> TextSealer | None:
        """The ``TextSealer`` the texts are stored sealed with (``encryption_key``), or None."""
        return self.index.sealer

    @property
    def vault(self) -> Vault | None:
        """The ``Vault`` of the owner's key on a Chroma server (crypto-erasure), or None."""
        return self.index.vault

    @property
    def collection(self) -> Any:
        """The Chroma collection itself (benchmarks time it bare)."""
        return self.index.collection

    @property
    def name(self) -> str:
        """The collection's name: what a caller remembers an emptiness or a count by."""
        return self.index.name

    def add(
        self,
        ids: list[str],
        texts: list[str],
        metadatas: list[dict[str, Any]],
        vectors: list[list[float]] | None = None,
    ) -> None:
        stamped = [self.scope.stamp(metadata) for metadata in metadatas]
        self.index.add(ids, texts, stamped, vectors)

    def query(
        self,
        vector: list[float],
        limit: int,
        where: dict[str, Any] | None = None,
        vectors: bool = False,
    ) -> list[Hit]:
        return self._checked(self.index.query(vector, limit, where, vectors))

    def search(
        self,
        text: str,
        vector: list[float],
        limit: int,
        where: dict[str, Any] | None = None,
        vectors: bool = False,
    ) -> list[Hit]:
        """The hybrid search of :meth:`VectorIndex.search`, within the scope."""
        return self._checked(self.index.search(text, vector, limit, where, vectors))

    def query_many(
        self, vectors: list[list[float]], limit: int, where: dict[str, Any] | None = None
    ) -> list[list[Hit]]:
        return [self._checked(hits) for hits in self.index.query_many(vectors, limit, where)]

    def get(
        self,
        ids: list[str] | None = None,
        where: dict[str, Any] | None = None,
        limit: int | None = None,
        vectors: bool = False,
    ) -> list[Hit]:
        return self._checked(self.index.get(ids, where, limit, vectors))

    def existing(self, ids: list[str]) -> set[str]:
        return {hit.id for hit in self.get(ids)}

    def delete(self, ids: list[str] | None = None, where: dict[str, Any] | None = None) -> int:
        """Delete by ids and/or ``where`` (everything in the scope without either)."""
        found = self.get(ids, where) if (ids is not None or where is not None) else None
        if found is None:
            return self.index.delete()
        self.index.delete_ids([hit.id for hit in found])
        return len(found)

    def count(self) -> int:
        return self.index.count()

    def empty(self) -> bool:
        return self.index.empty()

    def exists(self) -> bool:
        """Whether the scope's collection is there (it is not created to find out)."""
        return self.index.exists()

    def _checked(self, hits: list[Hit]) -> list[Hit]:
        return [hit for hit in hits if self.scope.check(hit.metadata, hit.id)]
