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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from ..._internal.file_lock import FileLock
from ..._internal.redaction import redact_text, redact_url
from ...errors import (
    DecryptionError,
    EmbedderMismatchError,
    InvalidValueError,
    MissingDependencyError,
    PraisonSessionError,
    StoreUnavailableError,
    install_line,
)
from ..embeddings import Embedder, as_chroma_embedding_function
from . import chroma_file
from .freshness import SAVED_EVERY, STALE_ERRORS, Freshness, engine_of, saved_often
from .fusion import DEPTH, fuse
from .index_files import clear_unused
from .lexical import LexicalFile
from .pgvector import is_postgres_url
from .terms import Terms
from .vault import SEALED

if TYPE_CHECKING:
    from ..._internal.sealing import TextSealer
    from .vault import Vault

T = TypeVar("T")

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()
#: The lexical file of each Chroma client (by ``id``), where it is kept and, once used, open.
_lexical_paths: dict[int, Path] = {}
_lexical_files: dict[int, LexicalFile] = {}
#: What each embedded Chroma client's indexes hold here (``freshness.py``), by ``id``.
_freshness: dict[int, Freshness] = {}
#: Collections whose lexical index was found to match them, in this process: (client, name)
#: -> the collection's id (one made again under the name, after an erasure, is checked again).
_lexicons_checked: dict[tuple[int, str], Any] = {}
_checking = threading.Lock()


@dataclass(frozen=True)
class Hit:
    id: str
    text: str
    score: float
    metadata: dict[str, Any]
    #: the entry's own vector when asked for: a list from ``get``, a numpy row from ``query``
    #: (a search ranks with it and never needs it as Python floats)
    vector: Sequence[float] | None = None


def vector_store(location: str | Path, data_dir: str | Path | None = None) -> Any:
    """The vector store at ``location``: embedded Chroma in a directory, a Chroma server at an
    ``http(s)://host:port`` URL, or PostgreSQL with pgvector at a ``postgresql://`` URL
    (``pgvector.PgVectorStore``, which answers the calls made here of a Chroma client).
    ``data_dir``: where the client keeps a Chroma server's lexical index (``lexical.py``).

    Clients are shared per location within a process, as Chroma itself expects.
    """
    where = str(location)
    lexical = None if is_postgres_url(where) else lexical_path(where, data_dir)
    # a server's client per data directory too: each keeps its lexical file there
    key = where if lexical is None or not _remote(where) else f"{where}\x00{lexical}"
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _new_client(where)
            if lexical is not None:
                _lexical_paths[id(client)] = lexical
            engine = None if lexical is None or _remote(where) else engine_of(client)
            if engine is not None:
                _freshness[id(client)] = Freshness(Path(where), lambda: _restart(where, engine))
        return client


def _remote(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def lexical_path(location: str, data_dir: str | Path | None = None) -> Path:
    """Where the lexical index of a Chroma store is kept: beside the embedded store's
    directory, or for a server under ``data_dir`` (default ``.praisonsession``), by a digest
    of its URL."""
    if _remote(location):
        digest = hashlib.sha256(location.rstrip("/").encode("utf-8")).hexdigest()[:24]
        home = Path(data_dir if data_dir is not None else ".praisonsession").expanduser()
        return home.resolve() / "lexical" / f"chroma-{digest}.sqlite3"
    directory = Path(location)
    return directory.parent / f"{directory.name}-lexical.sqlite3"


def lexical_file(client: Any) -> LexicalFile | None:
    """The lexical file of a Chroma client, opened on first use (None for pgvector, whose
    terms live in the collection's own table)."""
    key = id(client)
    with _clients_lock:
        found = _lexical_files.get(key)
        if found is None and key in _lexical_paths:
            found = _lexical_files[key] = LexicalFile(_lexical_paths[key])
        return found


def _forget_clients_after_fork() -> None:
    """A forked child must not use the parent's Chroma clients (their SQLite connections and
    threads belong to the parent); it opens its own. The old ones are kept, never used."""
    global _clients_lock
    _inherited.extend(_clients.values())
    _inherited.extend(_lexical_files.values())
    _inherited.extend(_freshness.values())
    _clients.clear()
    _lexical_paths.clear()
    _lexical_files.clear()
    _freshness.clear()
    _lexicons_checked.clear()
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
    # Chroma makes its tables at a new folder's first opening with no lock of its own: two
    # processes opening one new folder at once both made them and one failed ("table
    # collections already exists"). Openings of a folder take turns; the lock is held only
    # while the folder opens, and the system frees it if its holder dies.
    with _opening_lock(location):
        return chromadb.PersistentClient(path=location, settings=settings)


def _opening_lock(location: str) -> FileLock:
    return FileLock(Path(location) / _OPENING_LOCK, _OPENING_PATIENCE, _OPENING_ADVICE)


def _restart(location: str, engine: Any) -> None:
    """Open the folder's engine afresh in place (chromadb's own ``start``): the collections
    opened on it keep working, and each index loads again at its next use."""
    with _opening_lock(location):
        engine.start()


_OPENING_LOCK = ".praisonsession-opening.lock"
#: how long an opening waits for another process's: an opening takes a second or two, a
#: first one (tables made) or one after an upgrade of chromadb (its migrations) longer
_OPENING_PATIENCE = 120.0
_OPENING_ADVICE = (
    "Another process has been opening this memory folder all that time and may be stuck; "
    "stop it and try again."
)


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


def collection_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says a collection does not exist (deleted: ``erase_user``, here or in
    another process): chromadb's ``NotFoundError``, imported lazily, so known by name, or
    pgvector's table found dropped."""
    if isinstance(exc, PraisonSessionError):
        return False
    return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc)


def erase_owner(client: Any, namespace: str, owner: str, names: list[str]) -> int:
    """Delete the collections of this namespace that ``owner``'s data lives in: the ones named
    (known by construction) and any other that records ``owner``, their lexical tables with
    them; how many entries went."""
    removed = 0
    lexical = lexical_file(client)
    for collection in client.list_collections():  # chromadb >= 1.0: collection objects
        name = collection.name
        if not name.startswith(f"{namespace}_"):
            continue
        if name in names or (collection.metadata or {}).get("owner") in (owner, owner_tag(owner)):
            removed += collection.count()
            if lexical is not None:
                lexical.drop(name)
            client.delete_collection(name)
    if lexical is not None:
        for name in names:  # a table whose collection is already gone
            lexical.drop(name)
        lexical.vacuum()
    return removed


def forget_terms(client: Any, names: list[str]) -> None:
    """After a rekey: the lexical terms of these collections, hashed under the old key, go at
    once; each collection's are made again, under the key then in use, when it is next used
    (as for a collection from before the lexical index)."""
    from .pgvector import PgVectorStore

    lexical = lexical_file(client)
    for name in names:
        _lexicons_checked.pop((id(client), name), None)
        if lexical is not None:
            lexical.drop(name)
        elif isinstance(client, PgVectorStore):
            client.get_collection(name).clear_terms()
    if lexical is not None:
        lexical.vacuum()


def owner_tag(owner: str) -> str:
    """How a vaulted collection names its owner: a digest, as its name does, not the id."""
    return "sha256:" + hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]


def scrub_embedded(directory: Path, client: Any = None) -> None:
    """After an erasure, leave none of the deleted texts in the embedded store's SQLite file:
    Chroma deletes rows but not the bytes they held in free pages, nor the terms of its full
    text index. Merging that index and rebuilding the file (``VACUUM``) removes both.

    Chroma also leaves a deleted collection's vector index folder (named by its segment's id)
    on disk: its vectors, and now and then a ``length.bin`` padded with stale heap bytes that
    held the deleted metadata. A folder whose segment is gone from the file is removed. The
    kept collections' folders hold stale memory too, in the slots no entry holds, which can
    be the erased user's data (``index_files``): those slots are zeroed, inside ``client``'s
    write lock (its lexical file's) when given, so that no write of ours grows them meanwhile."""
    import shutil

    path = Path(directory) / "chroma.sqlite3"
    if not path.is_file():
        return
    # in the helper process (``chroma_file``), never with a second SQLite in this one
    try:
        chroma_file.run(path, [("PRAGMA secure_delete=ON", ())])
        # rewrites the index without the deleted documents' terms (if Chroma has one)
        try:
            chroma_file.run(path, [(_OPTIMIZE_FULLTEXT, ())])
        except chroma_file.ChromaFileError as exc:
            if not exc.operational:
                raise
        _, rows = chroma_file.run(path, [("VACUUM", ()), ("SELECT id FROM segments", ())])
    finally:
        chroma_file.forget(path)
    segments = {row[0] for row in rows}
    kept = []
    for folder in Path(directory).iterdir():
        if folder.is_dir() and _is_uuid(folder.name):
            if folder.name in segments:
                kept.append(folder)
            else:
                shutil.rmtree(folder, ignore_errors=True)
    lexical = None if client is None else lexical_file(client)
    with contextlib.nullcontext() if lexical is None else lexical.writing():
        for folder in kept:
            clear_unused(folder)


_OPTIMIZE_FULLTEXT = (
    "INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')"
)


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
        # the lexical index's terms: keyed hashes under the owner's vault key or the
        # encryption key, so that it holds no readable word when either is set
        key = vault.terms_key if vault is not None else None
        if key is None and sealer is not None:
            key = sealer.digest_key("lexical")
        self.terms = Terms(key)
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
        except Exception as exc:
            if collection_gone(exc):
                return False
            raise
        return True

    def _open(self) -> Any:
        # pgvector is given the vectors, never a function: chromadb is not imported for it
        function = None if self._on_pgvector() else as_chroma_embedding_function(self.embedder)
        embedder = self.embedder
        watch = self._freshness()
        hnsw = {"space": "cosine", **({} if watch is None else {"sync_threshold": SAVED_EVERY})}
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
                    configuration={"hnsw": hnsw},
                    embedding_function=function,
                )
        except ValueError as exc:  # Chroma's own check of the recorded embedding function
            if "conflict" not in str(exc).lower():
                raise
            raise self._mismatch(str(exc).rsplit("persisted:", 1)[-1].strip(), None) from None
        found = collection.metadata or {}
        if (found.get("embedder"), found.get("dimension")) != (embedder.name, embedder.dimension):
            raise self._mismatch(found.get("embedder"), found.get("dimension"))
        if watch is not None:  # before its first use here: the position its index will hold
            saved_often(collection)
            watch.track(str(collection.id))
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
        terms = [self.terms.of(text) for text in texts] if self.searched else None
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
        collection = self.collection
        self._written(
            ids,
            terms,
            lambda **lexical: collection.upsert(
                ids=ids, documents=texts, metadatas=metadatas, embeddings=vectors, **lexical
            ),
        )

    # -- the lexical index ----------------------------------------------------------------

    def _written(
        self, stored: list[str], terms: list[list[str]] | None, write: Callable[..., None]
    ) -> None:
        """Run ``write`` (the vector store's upsert) with the entries' terms written in the
        same step: into the same rows and transaction on pgvector, inside an SQLite
        transaction around it on Chroma (committed only when the vectors are written)."""
        lexical = self._lexical() if terms is not None else None
        if terms is not None and self._on_pgvector():
            write(terms=terms)
        elif lexical is None or terms is None:
            self._locked(write)
        else:
            with lexical.writing():
                lexical.replace(self.name, stored, terms)
                self._writing(write)

    def _removed(self, stored: list[str], remove: Callable[[], None]) -> None:
        """Run ``remove`` (the vector store's delete), the entries' terms going with it."""
        lexical = self._lexical() if self.searched else None
        if lexical is None:
            self._locked(remove)
            return
        with lexical.writing():
            lexical.delete(self.name, stored)
            self._writing(remove)

    def _locked(self, write: Callable[[], None]) -> None:
        """A write with no terms (a collection that is not searched): on embedded Chroma
        inside the lexical file's write lock all the same, as every write there is, so that
        its index files are cleared (``index_files``) while no other write grows them."""
        watch = self._freshness()
        lexical = None if watch is None else lexical_file(self._client)
        if watch is None or lexical is None:
            write()
            return
        with lexical.writing():
            write()
            watch.clear_index(str(self.collection.id))

    def _writing(self, write: Callable[[], None]) -> None:
        """A write to a searched embedded collection, inside its lexical file's write lock
        (every process's writes to the store's searched collections take turns on it): on an
        index current with the log (an outdated one saved later would overwrite other
        processes' entries on disk), which then holds the log to this write."""
        watch = self._freshness()
        if watch is None:
            write()
            return
        collection = str(self.collection.id)
        generation = watch.current(collection)
        write()
        watch.wrote(collection, generation)
        watch.clear_index(collection)

    def _freshness(self) -> Freshness | None:
        """What this process's indexes of the embedded store hold (None: not embedded)."""
        return _freshness.get(id(self._client))

    def _consulting(self, read: Callable[[], T]) -> T:
        """``read``, which consults the collection's vector index (a query, or vectors got),
        on an index current with what other processes wrote; tried once more on a reopened
        engine when Chroma still finds the index lacking an entry (a writer that is not us)."""
        watch = self._freshness()
        if watch is None:
            return read()
        watch.current(str(self.collection.id))
        try:
            return read()
        except Exception as exc:  # chromadb.errors.InternalError; chromadb is imported lazily
            if not any(said in str(exc) for said in STALE_ERRORS):
                raise
        watch.restart()
        return read()

    def _on_pgvector(self) -> bool:
        from .pgvector import PgVectorStore

        return isinstance(self._client, PgVectorStore)

    def _lexical(self) -> LexicalFile | None:
        """The Chroma store's lexical file (None on pgvector, whose rows hold their terms, and
        for a client made around ``vector_store``), first made to match the collection: rebuilt
        from it when it does not (a crash between the two writes, a file lost, entries another
        client wrote to a Chroma server, or from before it). On pgvector, rows from before
        terms get theirs."""
        collection = self.collection
        key = (id(self._client), self.name)
        lexical = lexical_file(self._client)
        made = getattr(collection, "id", self.name)  # Chroma's id of it (pgvector: none)
        if _lexicons_checked.get(key) == made:
            return lexical
        with _checking:
            if _lexicons_checked.get(key) != made:
                if lexical is not None:  # its table may have gone with an earlier collection
                    lexical.forget(self.name)
                if self._on_pgvector():
                    collection.fill_terms(self._terms_of_stored)
                elif lexical is not None and lexical.count(self.name) != collection.count():
                    self._rebuild(lexical)
                _lexicons_checked[key] = made
        return lexical

    def _terms_of_stored(self, stored: str, text: str | None, metadata: Any) -> list[str]:
        """The terms of an entry as the store holds it (its text opened)."""
        try:
            return self.terms.of(self._given(stored, text, metadata, score=0.0).text)
        except DecryptionError:  # sealed with another key: found by meaning only
            return []

    def _rebuild(self, lexical: LexicalFile) -> None:
        found = self.collection.get(include=["documents", "metadatas"])
        ids = list(found["ids"])
        terms = [
            self._terms_of_stored(i, text, meta)
            for i, text, meta in zip(ids, found["documents"], found["metadatas"], strict=True)
        ]
        with lexical.writing():
            lexical.clear(self.name)
            lexical.replace(self.name, ids, terms)

    def lexical(self, text: str, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` entries whose terms best match ``text`` (BM25): stored ids, scores."""
        terms = self.terms.query(text)
        if not terms:
            return []
        lexical = self._lexical()
        if self._on_pgvector():
            found: list[tuple[str, float]] = self.collection.lexical(terms, limit)
            return found
        return [] if lexical is None else lexical.search(self.name, terms, limit)

    def search(
        self,
        text: str,
        vector: list[float],
        limit: int,
        where: dict[str, Any] | None = None,
        vectors: bool = False,
    ) -> list[Hit]:
        """The ``limit`` best entries for a question, by meaning and by words: the dense and
        the lexical side bring :data:`DEPTH` candidates each, ranked together by
        ``fusion.fuse``. A hit's ``score`` stays its cosine similarity to ``vector``."""
        depth = max(limit, DEPTH)
        dense = self.query(vector, depth, where, vectors=vectors)
        words = self.lexical(text, depth)
        if not words:
            return dense[:limit]
        scores = dict(words)
        seen = dict(zip(self._ids([hit.id for hit in dense]), dense, strict=True))
        extra = [stored for stored, _ in words if stored not in seen]
        hits = list(dense)
        stored_of = list(seen)
        if extra:
            for stored, hit in self._stored_hits(extra, where, vector):
                hits.append(hit)
                stored_of.append(stored)
        order = fuse([hit.score for hit in hits], [scores.get(i, 0.0) for i in stored_of])
        return [hits[i] for i in order[:limit]]

    def _stored_hits(
        self, stored: list[str], where: dict[str, Any] | None, vector: list[float]
    ) -> list[tuple[str, Hit]]:
        """Entries by their stored ids, that pass ``where``, scored by cosine to ``vector``."""
        import numpy as np  # installed with the memory extra

        found = self._consulting(
            lambda: self.collection.get(
                ids=stored,
                where=self._where(where),
                include=["documents", "metadatas", "embeddings"],
            )
        )
        query = np.asarray(vector, dtype=np.float32)
        query = query / max(float(np.linalg.norm(query)), 1e-12)
        out = []
        for i, text, meta, row in zip(
            found["ids"], found["documents"], found["metadatas"], found["embeddings"], strict=True
        ):
            own = np.asarray(row, dtype=np.float32)
            cosine = float(own @ query) / max(float(np.linalg.norm(own)), 1e-12)
            out.append((i, self._given(i, text, meta, score=round(cosine, 6), vector=own)))
        return out

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
            lambda: self._consulting(
                lambda: self.collection.query(
                    query_embeddings=queries,
                    n_results=limit,
                    where=self._where(where),
                    include=include,
                )
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

        def read() -> Any:
            return self.collection.get(
                ids=None if ids is None else self._lookup(ids),
                where=self._where(where),
                limit=limit,
                include=include,
            )

        found = self._consulting(read) if vectors else read()  # vectors come from the index
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
            stored = self._lookup(ids)
            self._removed(stored, lambda: self.collection.delete(ids=stored))

    def delete(self, where: dict[str, Any] | None = None) -> int:
        """Delete the entries matching ``where`` (all of them without it); how many went."""
        stored = self.collection.get(where=self._where(where), include=[])["ids"]
        if stored:
            self._removed(stored, lambda: self.collection.delete(ids=stored))
        return len(stored)
