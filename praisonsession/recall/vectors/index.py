"""One ChromaDB collection, embedded by one embedder that it remembers.

Long-term memory and knowledge both keep vectors here, one collection per scope (a user's
memories, a user's knowledge): a search then needs no metadata filter, which keeps it on
Chroma's fast index path (at 10,000 memories a filtered query took ~66 ms, an unfiltered one
~2.5 ms) and makes one user's data unreachable from another's queries by construction.

Each collection records the embedder's name and dimension when it is created; opening it
later with another embedder raises ``EmbedderMismatchError`` instead of silently comparing
vectors from different spaces.
Vectors are computed by our embedder and handed to Chroma, so Chroma never downloads a model.
chromadb is imported on first use only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..._internal.redaction import redact_text, redact_url
from ...errors import (
    EmbedderMismatchError,
    InvalidValueError,
    MissingDependencyError,
    StoreUnavailableError,
    install_line,
)
from ..embeddings import Embedder, as_chroma_embedding_function
from .vault import SEALED

if TYPE_CHECKING:
    from ..._internal.sealing import TextSealer
    from .vault import Vault

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


@dataclass(frozen=True)
class Hit:
    id: str
    text: str
    score: float
    metadata: dict[str, Any]
    #: the entry's own vector when asked for: a list from ``get``, a numpy row from ``query``
    #: (a search ranks with it and never needs it as Python floats)
    vector: Sequence[float] | None = None


def vector_store(location: str | Path) -> Any:
    """The vector store at ``location``: embedded Chroma in a directory, a Chroma server at an
    ``http(s)://host:port`` URL, or PostgreSQL with pgvector at a ``postgresql://`` URL
    (``pgvector.PgVectorStore``, which answers the calls made here of a Chroma client).

    Clients are shared per location within a process, as Chroma itself expects.
    """
    key = str(location)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _new_client(key)
        return client


def _forget_clients_after_fork() -> None:
    """A forked child must not use the parent's Chroma clients (their SQLite connections and
    threads belong to the parent); it opens its own. The old ones are kept, never used."""
    global _clients_lock
    _inherited.extend(_clients.values())
    _clients.clear()
    _clients_lock = threading.Lock()


_inherited: list[Any] = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_clients_after_fork)


#: The name it had when Chroma was the only store (tests and notebooks use it).
chroma_client = vector_store


def _new_client(location: str) -> Any:
    from .pgvector import PgVectorStore, is_postgres_url

    if is_postgres_url(location):
        return PgVectorStore(location)
    try:
        import chromadb
        from chromadb.config import Settings as ChromaSettings
    except ImportError:
        raise MissingDependencyError(
            "Memory and knowledge keep their vectors in ChromaDB, which is not installed. "
            f"Install it with: {install_line('memory')}."
        ) from None

    settings = ChromaSettings(anonymized_telemetry=False)  # no traffic anywhere but to us
    if location.startswith(("http://", "https://")):
        url = urlsplit(location)
        if not url.hostname:
            raise InvalidValueError(f"Vector store URL {redact_url(location)!r} names no host.")
        try:
            return chromadb.HttpClient(
                host=url.hostname,
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
                settings=settings,
            )
        except Exception as exc:
            raise StoreUnavailableError(
                f"Cannot reach the Chroma server at {redact_url(location)}: "
                f"{redact_text(str(exc))}. Start it (chroma run) or unset "
                "PRAISONSESSION_VECTOR_STORE_URL to use the embedded store."
            ) from None
    Path(location).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=location, settings=settings)


_UNFLUSHED = "hnsw segment reader"
_RETRIES = (0.05, 0.2, 0.5, 1.0)


def _retrying_unflushed(query: Any) -> Any:
    """``query()``, tried again a few times when a Chroma server answers that a collection's
    vector index is not on its disk yet ("Error creating hnsw segment reader: Nothing found on
    disk"): it says so, now and then, for a collection written to a moment before by another
    client (seen under concurrent writes, chromadb 1.5)."""
    for pause in _RETRIES:
        try:
            return query()
        except Exception as exc:  # chromadb.errors.InternalError; chromadb is imported lazily
            if _UNFLUSHED not in str(exc):
                raise
            time.sleep(pause)
    return query()


def erase_owner(client: Any, namespace: str, owner: str, names: list[str]) -> int:
    """Delete the collections of this namespace that ``owner``'s data lives in: the ones named
    (known by construction) and any other that records ``owner``; how many entries went."""
    removed = 0
    for collection in client.list_collections():  # chromadb >= 1.0: collection objects
        name = collection.name
        if not name.startswith(f"{namespace}_"):
            continue
        if name in names or (collection.metadata or {}).get("owner") in (owner, owner_tag(owner)):
            removed += collection.count()
            client.delete_collection(name)
    return removed


def owner_tag(owner: str) -> str:
    """How a vaulted collection names its owner: a digest, as its name does, not the id."""
    return "sha256:" + hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]


def scrub_embedded(directory: Path) -> None:
    """After an erasure, leave none of the deleted texts in the embedded store's SQLite file:
    Chroma deletes rows but not the bytes they held in free pages, nor the terms of its full
    text index. Merging that index and rebuilding the file (``VACUUM``) removes both.

    Chroma also leaves a deleted collection's vector index folder (named by its segment's id)
    on disk: its vectors, and now and then a ``length.bin`` padded with stale heap bytes that
    held the deleted metadata. A folder whose segment is gone from the file is removed."""
    import shutil
    import sqlite3

    path = Path(directory) / "chroma.sqlite3"
    if not path.is_file():
        return
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete=ON")
        # rewrites the index without the deleted documents' terms (if Chroma has one)
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute(
                "INSERT INTO embedding_fulltext_search(embedding_fulltext_search) "
                "VALUES('optimize')"
            )
        conn.execute("VACUUM")
        segments = {row[0] for row in conn.execute("SELECT id FROM segments")}
    finally:
        conn.close()
    for folder in Path(directory).iterdir():
        if folder.is_dir() and _is_uuid(folder.name) and folder.name not in segments:
            shutil.rmtree(folder, ignore_errors=True)


def _is_uuid(name: str) -> bool:
    import uuid

    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False


class VectorIndex:
    """A named collection of texts with vectors and flat metadata.

    The collection is opened (created if need be, its embedder checked) on first use, so a
    session that searches its memories never pays for opening its knowledge, and vice versa.
    ``sealer`` (when ``encryption_key`` is set) stores the texts sealed; ``vault`` (on a Chroma
    server) stores texts and metadata under the owner's key (``vectors/vault.py``).
    """

    def __init__(
        self,
        client: Any,
        name: str,
        embedder: Embedder,
        owner: str | None = None,
        *,
        sealer: TextSealer | None = None,
        vault: Vault | None = None,
        searched: bool = True,
    ) -> None:
        self.name = name
        self.searched = searched  # False: read by id and filters only (pgvector: no HNSW)
        self.embedder = embedder
        self.owner = owner  # the user whose data it holds (None: shared): erase_user finds it
        self.sealer = sealer
        self.vault = vault
        self._plain = False  # with a vault: the collection also holds entries stored before it
        self._client = client
        self._opened: Any = None
        self._opening = threading.Lock()

    @property
    def collection(self) -> Any:
        """The Chroma collection, opened on first use (``EmbedderMismatchError`` then)."""
        collection = self._opened
        if collection is None:
            with self._opening:
                if self._opened is None:
                    self._opened = self._open()
                collection = self._opened
        return collection

    def exists(self) -> bool:
        """Whether the collection is there, found without creating it: for a reader that
        must write nothing (the session browser)."""
        if self._opened is not None:
            return True
        try:
            self._client.get_collection(self.name)
        except Exception as exc:  # chromadb.errors.NotFoundError; chromadb is imported lazily
            if type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc):
                return False
            raise
        return True

    def _open(self) -> Any:
        function = as_chroma_embedding_function(self.embedder)
        embedder = self.embedder
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                collection = self._client.get_or_create_collection(
                    self.name,
                    metadata={
                        "embedder": embedder.name,
                        "dimension": embedder.dimension,
                        **({} if self.owner is None else {"owner": self._owner_stored()}),
                        **({} if self.searched else {"searched": False}),
                    },
                    configuration={"hnsw": {"space": "cosine"}},
                    embedding_function=function,
                )
        except ValueError as exc:  # Chroma's own check of the recorded embedding function
            if "conflict" not in str(exc).lower():
                raise
            raise self._mismatch(str(exc).rsplit("persisted:", 1)[-1].strip(), None) from None
        found = collection.metadata or {}
        if (found.get("embedder"), found.get("dimension")) != (embedder.name, embedder.dimension):
            raise self._mismatch(found.get("embedder"), found.get("dimension"))
        if self.vault is not None:  # entries stored before the vault: keep them reachable
            first = collection.get(limit=1, include=["metadatas"])["metadatas"]
            self._plain = bool(first) and SEALED not in (first[0] or {})
        return collection

    def _owner_stored(self) -> str:
        assert self.owner is not None
        return self.owner if self.vault is None else owner_tag(self.owner)

    def _mismatch(self, found: Any, dimension: Any) -> EmbedderMismatchError:
        size = f" ({dimension} dimensions)" if dimension else ""
        return EmbedderMismatchError(
            f"The collection {self.name!r} was built with the embedder {found!r}{size}, but "
            f"{self.embedder.name!r} ({self.embedder.dimension} dimensions) is in use now. "
            "Use the same embedder, or another data directory for the new one."
        )

    def add(
        self,
        ids: list[str],
        texts: list[str],
        metadatas: list[dict[str, Any]],
        vectors: list[list[float]] | None = None,
    ) -> None:
        if not ids:
            return
        if vectors is None:
            vectors = self.embedder.embed(texts)  # from the text itself: search keeps working
        if self.vault is not None:
            vault, name = self.vault, self.name
            pairs = list(zip(ids, metadatas, strict=True))
            metadatas = [vault.seal_metadata(name, i, m) for i, m in pairs]
            collection = self.collection  # opened first: then it knows what it holds
            if self._plain:  # an entry stored before the vault is replaced, not duplicated
                collection.delete(ids=ids)
            ids = self._ids(ids)
            texts = [vault.seal_text(name, i, t) for i, t in zip(ids, texts, strict=True)]
        elif self.sealer is not None:
            texts = [self.sealer.seal(self.name, i, t) for i, t in zip(ids, texts, strict=True)]
        self.collection.upsert(ids=ids, documents=texts, metadatas=metadatas, embeddings=vectors)

    def _given(
        self, stored_id: str, text: str | None, metadata: Any, copy: bool = False, **more: Any
    ) -> Hit:
        """An entry as it was given (its own id, text and metadata; ``copy``: a metadata dict
        of its own), with ``more`` fields."""
        if self.vault is not None and metadata:
            if SEALED in metadata:
                entry, given = self.vault.open_entry(self.name, stored_id, metadata)
                opened = self.vault.open_text(self.name, stored_id, text) if text else ""
                return Hit(id=entry, text=opened, metadata=given, **more)
            if self.vault.tokenized(metadata):  # read without its sealed part (a server read
                metadata = None  # racing the write): it names nobody, so the scope withholds it
        if self.sealer is not None and text is not None:
            text = self.sealer.open(self.name, stored_id, text)
        metadata = metadata or {}
        return Hit(
            id=stored_id, text=text or "", metadata=dict(metadata) if copy else metadata, **more
        )

    def _ids(self, ids: list[str]) -> list[str]:
        """The ids the entries are stored under."""
        return ids if self.vault is None else [self.vault.entry_id(i) for i in ids]

    def _lookup(self, ids: list[str]) -> list[str]:
        """The ids to find the entries by (with a vault, also those stored before it)."""
        return ids if self.vault is None else self.vault.stored_ids(ids)

    def _where(self, where: dict[str, Any] | None) -> dict[str, Any] | None:
        return where if self.vault is None else self.vault.where(where)

    def existing(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        lookup = self._lookup(ids)  # one id, or a token and the id: each names its entry
        given = dict(zip(lookup, ids * (len(lookup) // len(ids)), strict=True))
        return {given[i] for i in self.collection.get(ids=lookup, include=[])["ids"]}

    def query(
        self,
        vector: list[float],
        limit: int,
        where: dict[str, Any] | None = None,
        vectors: bool = False,
    ) -> list[Hit]:
        return self.query_many([vector], limit, where, vectors)[0]

    def query_many(
        self,
        queries: list[list[float]],
        limit: int,
        where: dict[str, Any] | None = None,
        vectors: bool = False,
    ) -> list[list[Hit]]:
        """The ``limit`` entries closest to each query vector (one Chroma call for all), with
        their own vectors when asked."""
        if not queries:
            return []
        include = ["documents", "metadatas", "distances", *(["embeddings"] if vectors else [])]
        found = _retrying_unflushed(
            lambda: self.collection.query(
                query_embeddings=queries,
                n_results=limit,
                where=self._where(where),
                include=include,
            )
        )
        embedded = found.get("embeddings") if vectors else None
        return [
            [
                self._given(
                    i,
                    text,
                    meta,
                    score=round(1.0 - float(far), 6),
                    vector=None if embedded is None else embedded[q][n],
                )
                for n, (i, text, meta, far) in enumerate(
                    zip(ids, texts, metas, distances, strict=True)
                )
            ]
            for q, (ids, texts, metas, distances) in enumerate(
                zip(
                    found["ids"],
                    found["documents"],
                    found["metadatas"],
                    found["distances"],
                    strict=True,
                )
            )
        ]

    def get(
        self,
        ids: list[str] | None = None,
        where: dict[str, Any] | None = None,
        limit: int | None = None,
        vectors: bool = False,
    ) -> list[Hit]:
        """Entries by id and/or ``where`` (score 0), with their vectors when asked."""
        if ids is not None and not ids:
            return []
        include = ["documents", "metadatas", *(["embeddings"] if vectors else [])]
        found = self.collection.get(
            ids=None if ids is None else self._lookup(ids),
            where=self._where(where),
            limit=limit,
            include=include,
        )
        embedded = found.get("embeddings") if vectors else None
        return [
            self._given(
                i,
                text,
                meta,
                copy=True,
                score=0.0,
                vector=None if embedded is None else [float(x) for x in embedded[n]],
            )
            for n, (i, text, meta) in enumerate(
                zip(found["ids"], found["documents"], found["metadatas"], strict=True)
            )
        ]

    def count(self) -> int:
        entries: int = self.collection.count()
        return entries

    def empty(self) -> bool:
        """Whether the collection holds nothing: one entry looked for, none counted (a count
        reads every row of a PostgreSQL table)."""
        return not self.collection.get(limit=1, include=[])["ids"]

    def delete_ids(self, ids: list[str]) -> None:
        if ids:
            self.collection.delete(ids=self._lookup(ids))

    def delete(self, where: dict[str, Any] | None = None) -> int:
        """Delete the entries matching ``where`` (all of them without it); how many went."""
        stored = self.collection.get(where=self._where(where), include=[])["ids"]
        if stored:
            self.collection.delete(ids=stored)
        return len(stored)
