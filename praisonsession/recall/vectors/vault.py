"""Crypto-erasure for a Chroma server: what it stores of a user opens only with that user's key.

A Chroma server keeps deleted entries in free space of its own files, and no call of its API
rewrites them (measured on ``chroma run`` 1.5). So nothing readable of a user goes there: each
user has a random key, kept in the session store and destroyed by ``erase_user``, and
:class:`Vault` seals every text with it (AES-256-GCM, bound to the collection and the entry),
replaces every string of the metadata by a keyed token (HMAC-SHA256, so that equality filters
still work: ``where`` values go through the same tokens) and keeps the metadata itself sealed
beside them for reading back, and stores each entry under a keyed token of its id (our ids are
digests of the text: guessable). Numbers, booleans and the vectors stay as they are: see
docs/pages/hierarchy.md for what they reveal.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from ..._internal.sealing import TextSealer

__all__ = ["SEALED", "Vault"]

#: The metadata field that holds the sealed metadata.
SEALED = "ps_sealed"
_TOKEN = "psk1:"


class Vault:
    """Seals and tokenizes the entries of one user's collections with their key (32 bytes)."""

    def __init__(self, key: bytes) -> None:
        self._sealer = TextSealer(key)
        self._mac = hashlib.sha256(b"praisonsession vault tokens\x00" + key).digest()
        #: what the lexical index hashes this user's words with (``terms.py``)
        self.terms_key = hashlib.sha256(b"praisonsession vault terms\x00" + key).digest()

    def entry_id(self, entry: str) -> str:
        """The id an entry is stored under: a keyed token, not the digest of its text."""
        return self._token("\x00id", entry)

    def seal_text(self, collection: str, stored_id: str, text: str) -> str:
        return self._sealer.seal(collection, stored_id, text)

    def open_text(self, collection: str, stored_id: str, text: str) -> str:
        return self._sealer.open(collection, stored_id, text)

    def seal_metadata(
        self, collection: str, entry: str, metadata: dict[str, Any]
    ) -> dict[str, Any]:
        """Tokens for the strings (what filters match), and the entry's own id and metadata
        sealed beside them (what reads give back)."""
        stored = {name: self._stored(name, value) for name, value in metadata.items()}
        whole = json.dumps({"id": entry, "metadata": metadata})
        stored[SEALED] = self._sealer.seal(collection, f"{self.entry_id(entry)}\x00meta", whole)
        return stored

    def open_entry(
        self, collection: str, stored_id: str, stored: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """The entry's own id and metadata, from what :meth:`seal_metadata` stored."""
        opened = json.loads(self._sealer.open(collection, f"{stored_id}\x00meta", stored[SEALED]))
        return opened["id"], dict(opened["metadata"])

    def where(self, where: dict[str, Any] | None) -> dict[str, Any] | None:
        """A Chroma ``where`` in which a string matches its token, or the string itself as an
        entry stored before the vault holds it (reachable, and erasable; one written around
        the library is then found, and refused by the scope's check)."""
        if where is None:
            return None
        out: dict[str, Any] = {}
        for name, condition in where.items():
            if name in ("$and", "$or"):
                out[name] = [self.where(part) for part in condition]
            elif isinstance(condition, dict):
                out[name] = dict(self._compared(name, op, v) for op, v in condition.items())
            else:  # {"field": value}: equality
                out[name] = dict([self._compared(name, "$eq", condition)])
        return out

    def _compared(self, name: str, op: str, value: Any) -> tuple[str, Any]:
        """Strings compare by equality only (``filters.py`` keeps ranges for numbers)."""
        values = value if isinstance(value, list) else [value]
        if not any(isinstance(item, str) for item in values):
            return op, value
        either = [self._stored(name, item) for item in values] + values
        return ("$nin" if op in ("$ne", "$nin") else "$in"), either

    def tokenized(self, stored: dict[str, Any]) -> bool:
        """Whether these metadata came from :meth:`seal_metadata` (they hold tokens)."""
        return any(isinstance(value, str) and value.startswith(_TOKEN) for value in stored.values())

    def stored_ids(self, entries: list[str]) -> list[str]:
        """The ids to look ``entries`` up by: their tokens, and themselves (as an entry stored
        before the vault has it)."""
        return [self.entry_id(entry) for entry in entries] + list(entries)

    def _stored(self, name: str, value: Any) -> Any:
        """How a metadata value is stored: a string as its token, anything else as it is."""
        return self._token(name, value) if isinstance(value, str) else value

    def _token(self, name: str, text: str) -> str:
        mac = hmac.new(self._mac, f"{name}\x00{text}".encode(), hashlib.sha256)
        return _TOKEN + mac.hexdigest()[:40]
