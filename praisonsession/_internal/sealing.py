"""Texts sealed for the vector store when ``encryption_key`` is set: AES-256-GCM under a key
derived (HKDF-SHA256) per collection, each text bound to its collection and entry id.

The session stores are sealed by ``stores.encrypted``; this is the same idea one floor lower,
for the memory texts and knowledge chunks Chroma keeps. Their embeddings stay as they are: a
search needs them (see docs/pages/encryption.md for what they reveal).
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

from ..errors import DecryptionError, InvalidSettingError, MissingDependencyError, install_line

__all__ = ["TextSealer", "aes_gcm", "key_fingerprint", "load_key"]

_PREFIX = "psenc1:"
_NONCE = 12


def load_key(key: str | bytes, where: str = "encryption_key") -> bytes:
    """The 32 raw bytes of a urlsafe-base64 key; a typed error that never shows the key."""
    if isinstance(key, str):
        key = key.strip().encode("ascii", "replace")
    if not isinstance(key, bytes):
        raise InvalidSettingError(f"{where} must be a str, got {type(key).__name__}.", name=where)
    try:
        raw = base64.urlsafe_b64decode(key.strip())
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise InvalidSettingError(
            f"{where} is not a urlsafe-base64 key of 32 bytes. Make one with: python -c "
            '"import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())"',
            name=where,
        )
    return raw


def key_fingerprint(master: bytes) -> str:
    """A short public name of a master key (HKDF under a label of its own, so it reveals
    nothing of the key): what errors show to say which key is expected, never the key."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    aes_gcm()  # the clear "install cryptography" error when it is missing
    info = b"praisonsession key fingerprint"
    return "key-" + HKDF(hashes.SHA256(), 8, None, info).derive(master).hex()


def aes_gcm() -> Any:
    """cryptography's ``AESGCM`` class, loaded when a key is first used; a clear error saying
    what to install when the package is missing."""
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise MissingDependencyError(
            "Encryption at rest needs the 'cryptography' package. Install it with: "
            f"{install_line('encryption')}."
        ) from None
    return AESGCM


class TextSealer:
    """Seals and opens the texts of vector collections with one master key (32 raw bytes)."""

    def __init__(self, master: bytes) -> None:
        self._aead = aes_gcm()
        self._master = master
        self._ciphers: dict[str, Any] = {}
        self.fingerprint = key_fingerprint(master)

    def _cipher(self, collection: str) -> Any:
        cipher = self._ciphers.get(collection)
        if cipher is None:
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.kdf.hkdf import HKDF

            info = b"praisonsession vectors\x00" + collection.encode("utf-8")
            derived = HKDF(hashes.SHA256(), 32, None, info).derive(self._master)
            cipher = self._ciphers[collection] = self._aead(derived)
        return cipher

    def digest_key(self, purpose: str) -> bytes:
        """A key for keyed digests (HMAC) of ``purpose``, derived from the master key under its
        own HKDF label: ids and duplicate keys computed from texts reveal nothing without it."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        info = b"praisonsession digests\x00" + purpose.encode("utf-8")
        return HKDF(hashes.SHA256(), 32, None, info).derive(self._master)

    def seal(self, collection: str, entry: str, text: str) -> str:
        nonce = os.urandom(_NONCE)
        bound = f"{collection}\x00{entry}".encode()
        sealed = self._cipher(collection).encrypt(nonce, text.encode("utf-8"), bound)
        return _PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, collection: str, entry: str, text: str) -> str:
        what = f"entry {entry!r} of vector collection {collection!r}"
        if not text.startswith(_PREFIX):
            raise DecryptionError(what, "it is not encrypted: refused rather than trusted")
        try:
            raw = base64.urlsafe_b64decode(text[len(_PREFIX) :])
            bound = f"{collection}\x00{entry}".encode()
            plain: bytes = self._cipher(collection).decrypt(raw[:_NONCE], raw[_NONCE:], bound)
            return plain.decode()
        except Exception:  # bad base64, too short, InvalidTag: not ours as it is
            raise DecryptionError(
                what, "it does not open with this key: altered, moved, or another key"
            ) from None
