"""``SavedVectors``: the vectors and terms of an agent's turns, kept in a log beside its
conversation.

An agent reopened in a new process reads them instead of embedding every older turn again
(1,000 turns cost the model about 6 s; reading their vectors, milliseconds). They are saved in
the session's own record, in the log ``$turns/<conversation log>``: so they expire, fork,
snapshot, export, are sealed under the session's key, rekeyed and erased with it, as every log
of the session is. A record holds one batch: no text, only the turns' positions, a digest of
each turn's text, the vectors (float16, which is also what the index ranks with, so that a
saved vector ranks exactly as the one embedded again would) and the terms the turns' lexical
ranking reads (``vectors/terms.py``: with an encryption key, keyed hashes, no word), named by
``Terms.tag``: terms saved under another key (before a rekey) are made again, not compared.

A saved vector is a hint, never trusted on its own: it serves the turn at the same position
whose text has the same digest, embedded by an embedder of the same name. Whatever a log cut,
rewritten or forked at a message holds now, or another process appended, each turn gets its
own text's vector or is embedded again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import TYPE_CHECKING, Any

from ..._internal.runtime import offload

if TYPE_CHECKING:
    import numpy as np

    from .short_term import SessionLogs

__all__ = ["PREFIX", "SavedVectors", "as_saved", "text_digest"]

#: Where the vectors of conversation log ``L`` are kept: the log ``PREFIX + L``.
PREFIX = "$turns/"
_ROLE = "turn_vectors"


def text_digest(text: str) -> str:
    """What a saved vector is matched with: its turn's text, digested (128 bits)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def as_saved(vectors: Any) -> np.ndarray:
    """Vectors rounded as they are saved (float16), held as float32 rows for ranking."""
    import numpy as np

    return np.asarray(vectors, dtype=np.float32).astype(np.float16).astype(np.float32)


class SavedVectors:
    """The saved vectors of one conversation log, as read so far by this process."""

    def __init__(self, logs: SessionLogs, log: str, embedder: str, lexicon: str) -> None:
        self.logs = logs
        self.name = PREFIX + log
        self.embedder = embedder
        self.lexicon = lexicon  # the ``Terms.tag`` of the terms this process reads and saves
        self._read = 0  # records read so far
        # (start, digest) -> the row as saved (float16: half the memory, the same values)
        self._found: dict[tuple[int, str], Any] = {}
        # (start, digest) -> the turn's terms, saved under this ``lexicon``
        self._terms: dict[tuple[int, str], list[str]] = {}
        self._width = 0  # the length of the vectors read (0: none yet)

    async def take_in(self) -> None:
        """Read the records saved since the last read, by this process or another."""
        first = self._read
        records = await self.logs.read_messages(self.name, first)
        if not records and first and await self.logs.message_count(self.name) < first:
            self._read, self._found, self._terms, self._width = 0, {}, {}, 0  # cleared: again
            first, records = 0, await self.logs.read_messages(self.name)
        # max: two event loops of one process may read the same records at once
        self._read = max(self._read, first + len(records))
        if records:  # 10,000 turns' vectors decode in a tenth of a second: off the loop
            await offload(self._take, records)

    def _take(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            rows = self._rows(record)
            self._found.update(rows)
            if rows:
                self._terms.update(self._terms_of(record))

    def get(self, start: int, digest: str) -> Any:
        """The saved vector (float16) of the turn at ``start`` whose text has ``digest``, or
        None."""
        return self._found.get((start, digest))

    def terms(self, start: int, digest: str) -> list[str] | None:
        """The saved terms of the turn at ``start`` whose text has ``digest``, or None."""
        return self._terms.get((start, digest))

    async def save(
        self, starts: list[int], digests: list[str], rows: np.ndarray, terms: list[list[str]]
    ) -> None:
        """Save one batch (``rows`` as ``as_saved`` made them, each turn's ``terms``), as one
        appended record."""
        if not starts:
            return
        packed = rows.astype("<f2")
        record = {
            "role": _ROLE,
            "embedder": self.embedder,
            "starts": starts,
            "digests": digests,
            "vectors": base64.b64encode(packed.tobytes()).decode("ascii"),
            "lexicon": self.lexicon,
            "terms": [" ".join(found) for found in terms],
        }
        await self.logs.append_messages(self.name, [record])
        self._width = self._width or rows.shape[1]
        for start, digest, row, found in zip(starts, digests, packed, terms, strict=True):
            self._found[(start, digest)] = row
            self._terms[(start, digest)] = found

    def _rows(self, record: Any) -> dict[tuple[int, str], Any]:
        """A record's vectors by (start, digest); {} for one of another embedder, or one that
        does not read as a record this module wrote."""
        import numpy as np

        if not isinstance(record, dict) or record.get("embedder") != self.embedder:
            return {}
        starts, digests, packed = record.get("starts"), record.get("digests"), record.get("vectors")
        if not (isinstance(starts, list) and isinstance(digests, list) and isinstance(packed, str)):
            return {}
        try:
            flat = np.frombuffer(base64.b64decode(packed, validate=True), dtype="<f2")
        except (binascii.Error, ValueError):
            return {}
        if not starts or len(starts) != len(digests) or flat.size % len(starts):
            return {}
        rows = flat.reshape(len(starts), -1)
        if self._width and rows.shape[1] != self._width:
            return {}
        self._width = rows.shape[1]
        return {
            (start, digest): row
            for start, digest, row in zip(starts, digests, rows, strict=True)
            if isinstance(start, int) and isinstance(digest, str)
        }

    def _terms_of(self, record: dict[str, Any]) -> dict[tuple[int, str], list[str]]:
        """A record's terms by (start, digest); {} for a record saved before turns kept terms,
        or under another lexicon (another key, or none)."""
        terms = record.get("terms")
        if record.get("lexicon") != self.lexicon or not isinstance(terms, list):
            return {}
        starts, digests = record["starts"], record["digests"]
        if len(terms) != len(starts) or not all(isinstance(found, str) for found in terms):
            return {}
        return {
            (start, digest): found.split()
            for start, digest, found in zip(starts, digests, terms, strict=True)
        }
