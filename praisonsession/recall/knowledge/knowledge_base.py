"""A knowledge base: documents chunked, embedded and searchable, without duplicates.

Every chunk's id is a hash of its scope and its text, so adding the same file, folder or page
again adds nothing. All sources are read before anything is written: a bad source in a batch
adds nothing at all.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import clock
from ..._internal.checks import KNOWLEDGE_SCOPES, KnowledgeScope, check_choice
from ..._internal.display import html_table
from ..._internal.progress import progress_bar
from ...errors import KnowledgeSourceError
from ...settings import DEFAULT_TIMEOUT
from ..embeddings import Embedder
from ..vectors import ScopedIndex, Where, knowledge_scope
from .chunking import DEFAULT_OVERLAP, DEFAULT_SIZE, chunk_text
from .sources import Document, fetch_url, files_in, is_url, looks_like_path, read_file

if TYPE_CHECKING:
    from ..._internal.sealing import TextSealer
    from ..vectors import Vault

#: Chunks embedded and upserted together. The embedder sorts each call's texts by token count
#: before padding them into model batches, so a call of many similar-length chunks wastes
#: almost nothing on padding (64 per call ran ~1.3 model positions per real token here).
BATCH = 256
_PROGRESS_FROM = 128  # chunks; smaller additions finish too fast for a bar to help
Piece = tuple[str, str, dict[str, Any]]  # a chunk's id, text and metadata


@dataclass(frozen=True)
class KnowledgeAdded:
    """What ``add_knowledge`` did: sources read, chunks added, chunks already known."""

    sources: list[str] = field(default_factory=list)
    chunks_added: int = 0
    chunks_skipped: int = 0

    @property
    def files(self) -> int:
        return sum(1 for source in self.sources if not is_url(source) and source != "<text>")

    def __repr__(self) -> str:
        return (
            f"KnowledgeAdded({_count(len(self.sources), 'source')}, "
            f"{_count(self.chunks_added, 'chunk')} added, {self.chunks_skipped} already known)"
        )

    def _repr_html_(self) -> str:
        caption = (
            f"Knowledge added: {_count(self.chunks_added, 'chunk')} new, "
            f"{self.chunks_skipped} already known"
        )
        return html_table(caption, ("source",), [(source,) for source in self.sources])


class KnowledgeBase:
    """One scope's knowledge, in its own collection (see ``vectors.collection_name``).

    When the store is encrypted, ``sealer`` seals the texts Chroma keeps and chunk ids are
    HMACs under ``digest_key``; ``vault`` is the user's on a Chroma server, used for their own
    knowledge only: global knowledge is nobody's.
    """

    def __init__(
        self,
        client: Any,
        namespace: str,
        embedder: Embedder,
        user_id: str,
        session_id: str,
        scope: KnowledgeScope = "user",
        chunk_size: int = DEFAULT_SIZE,
        chunk_overlap: int = DEFAULT_OVERLAP,
        timeout: float = DEFAULT_TIMEOUT,
        progress: bool = True,
        *,
        sealer: TextSealer | None = None,
        digest_key: bytes | None = None,
        vault: Vault | None = None,
    ) -> None:
        check_choice(scope, KNOWLEDGE_SCOPES, "knowledge scope", KnowledgeSourceError)
        self.scope = scope
        self.user_id = user_id
        self.session_id = session_id
        stored_in = knowledge_scope(namespace, scope, user_id, session_id)
        users_vault = vault if stored_in.owner is not None else None  # global: nobody's
        self.index = ScopedIndex(client, stored_in, embedder, sealer=sealer, vault=users_vault)
        self.embedder = embedder
        self.digest_key = digest_key
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.timeout = timeout
        self.progress = progress

    # -- reading --------------------------------------------------------------------------

    def read(self, source: str | Path) -> list[Document]:
        if isinstance(source, Path):
            return self._read_path(source)
        if not isinstance(source, str):
            raise KnowledgeSourceError(
                f"add_knowledge takes a path, a folder, a URL or text, got {type(source).__name__}."
            )
        if not source.strip():
            raise KnowledgeSourceError("add_knowledge got empty text; pass some content.")
        if is_url(source):
            return [fetch_url(source, self.timeout)]
        if looks_like_path(source) or _is_existing_path(source):
            return self._read_path(Path(source))
        return [Document(source, "<text>", "raw")]

    def _read_path(self, path: Path) -> list[Document]:
        path = path.expanduser()
        if path.is_dir():
            files = files_in(path)
            if not files:
                raise KnowledgeSourceError(
                    f"The folder {path} holds no text, Markdown, HTML or PDF files."
                )
            return [read_file(file) for file in files]
        if not path.exists():
            raise KnowledgeSourceError(f"{path} does not exist. Check the path.")
        return [read_file(path)]

    # -- adding ---------------------------------------------------------------------------

    def add(self, source: str | Path) -> KnowledgeAdded:
        documents = self.read(source)
        at = clock.now()
        pieces: list[Piece] = []
        for document in documents:
            chunks = chunk_text(document.text, self.chunk_size, self.chunk_overlap)
            if not chunks and len(documents) == 1:
                raise KnowledgeSourceError(f"{document.source} holds no text; nothing was added.")
            for number, chunk in enumerate(chunks):
                pieces.append((self._chunk_id(chunk), chunk, self._metadata(document, number, at)))
        unique = list({piece[0]: piece for piece in pieces}.values())
        known = self.index.existing([piece[0] for piece in unique])
        if self.digest_key is not None:  # chunks stored before ids were keyed keep plain ids
            plain = {self._chunk_id(piece[1], keyed=False): piece[0] for piece in unique}
            known |= {plain[found] for found in self.index.existing(list(plain))}
        new = [piece for piece in unique if piece[0] not in known]
        # Similar lengths batch together, so the model pads less.
        new.sort(key=lambda piece: len(piece[1]))
        show = self.progress and len(new) >= _PROGRESS_FROM
        with progress_bar(len(new), show, "chunk", "Adding knowledge") as bar:
            self._embed_and_write([new[s : s + BATCH] for s in range(0, len(new), BATCH)], bar)
        return KnowledgeAdded(
            sources=[document.source for document in documents],
            chunks_added=len(new),
            chunks_skipped=len(pieces) - len(new),
        )

    def _embed_and_write(self, batches: list[list[Piece]], bar: Any) -> None:
        """Embed each batch and write it to Chroma, writing one batch while the next is
        embedded: the model runs in native code, so the write (SQLite, the vector index) is
        hidden behind it instead of added to it. The batches are written in order; an error
        stops the rest, after the write under way has finished."""
        if len(batches) < 2:
            for batch in batches:
                self._write(batch, self.embedder.embed([piece[1] for piece in batch]), bar)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1, thread_name_prefix="praisonsession-knowledge-write") as pool:
            writing = None
            for batch in batches:
                vectors = self.embedder.embed([piece[1] for piece in batch])
                if writing is not None:
                    writing.result()  # raises the write's error, if any
                writing = pool.submit(self._write, batch, vectors, bar)
            if writing is not None:
                writing.result()

    def _write(self, batch: list[Piece], vectors: list[list[float]], bar: Any) -> None:
        ids, texts, metadatas = zip(*batch, strict=True)
        self.index.add(list(ids), list(texts), list(metadatas), vectors)
        bar.update(len(batch))

    def _chunk_id(self, chunk: str, keyed: bool = True) -> str:
        """A chunk's id: a digest of its scope and text, so adding it again adds nothing; an
        HMAC under ``digest_key`` when the store is encrypted, so that the id does not let
        anyone without the key recognise the text."""
        values = [value for _, value in self.index.scope.fields]
        return chunk_id(values, chunk, self.digest_key if keyed else None)

    def _metadata(self, document: Document, number: int, at: float) -> dict[str, Any]:
        return {"source": document.source, "kind": document.kind, "chunk": number, "created_at": at}

    # -- searching ------------------------------------------------------------------------

    def search(
        self, query: str, vector: list[float], limit: int, where: Where | None = None
    ) -> list[dict[str, Any]]:
        """The chunks that best answer ``query`` (embedded as ``vector``), by meaning and by
        words; ``where`` filters on source, kind, chunk (its number in the source) and
        created_at."""
        chroma_where = None if where is None else where.to_chroma()
        hits = self.index.search(query, vector, limit, chroma_where)
        return [
            {
                "id": hit.id,
                "text": hit.text,
                "score": hit.score,
                "metadata": hit.metadata,
                "source": hit.metadata.get("source"),
            }
            for hit in hits
        ]

    def count(self) -> int:
        return self.index.count()

    def clear(self) -> int:
        return self.index.delete()


def chunk_id(scope_values: list[str], chunk: str, key: bytes | None) -> str:
    """The id of ``chunk`` in the scope with these field values; an HMAC under ``key`` (the
    knowledge digest key of an encrypted store), a plain digest without one."""
    scope = "\x1f".join(scope_values)
    data = f"{scope}\x1e{chunk}".encode("utf-8", "replace")
    if key is not None:
        return "k" + hmac.new(key, data, hashlib.sha256).hexdigest()[:40]
    return "k" + hashlib.sha256(data).hexdigest()[:40]


def _is_existing_path(text: str) -> bool:
    if "\n" in text or len(text) > 4096:
        return False
    try:
        return Path(text).expanduser().exists()
    except (OSError, ValueError):  # too long for a file name, or a NUL inside
        return False


def _count(count: int, noun: str) -> str:
    """``1 source``, ``2 sources``: a report reads as a sentence."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
