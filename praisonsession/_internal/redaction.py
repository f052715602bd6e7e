"""Secrets out of everything we print: error messages, reprs, logs.

A URL may carry a password (``https://user:secret@host``) or a token in its query
(``?api_key=...``); :func:`redact_url` keeps what helps a reader find the endpoint (scheme, user,
host, port, path) and replaces the secret parts with ``***``. :func:`redact_text` does the same
for URLs inside free text, such as the message of an exception raised by another library.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from ..errors import InvalidValueError

__all__ = ["clean_secret", "is_secret_parameter", "redact_text", "redact_url"]

MASK = "***"
#: A query parameter with a word that holds one of these carries a secret, whatever the rest of
#: its name says (``auth_token``, ``client_secret``, ``x-api-key``, ``X-Amz-Signature``...).
#: Masking a harmless parameter by mistake costs a reader little; printing a secret costs much.
_SECRET_WORD = re.compile(
    r"token|key|secret|passw|pwd|auth|signature|signed|credential|cookie|session|jwt|bearer|private"
    r"|^sig$",
    re.IGNORECASE,
)
#: ...unless the word after it says the value only describes the secret: ``key_prefix`` and
#: ``key_ttl`` (a Redis store's options) name a prefix and a lifetime, not a key.
_DESCRIBES = frozenset({"prefix", "ttl", "name", "type", "size", "length", "format", "version"})
#: Where a parameter's name splits into words: ``-``, ``_``, ``.`` and camelCase humps.
_WORD_BREAK = re.compile(r"[-_.]+|(?<=[a-z0-9])(?=[A-Z])")
#: A URL in free text; punctuation that ends a sentence is not part of it.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]*[^\s'\"<>.,;:!?)\]]")


def is_secret_parameter(name: str) -> bool:
    """Whether a query parameter named ``name`` holds a secret."""
    words = [word for word in _WORD_BREAK.split(name) if word]
    for index, word in enumerate(words):
        following = words[index + 1].lower() if index + 1 < len(words) else None
        if _SECRET_WORD.search(word) and following not in _DESCRIBES:
            return True
    return False


def redact_url(url: str) -> str:
    """``url`` with its password and secret query values replaced by ``***``.

    Everything else is kept as written, its slashes included (``sqlite:///x.db?token=***``).
    """
    scheme, found, rest = url.partition("://")
    if not found:
        scheme, rest = "", url  # "user:password@host", a URL without its scheme
    authority, tail = _split_authority(rest)
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        user, has_password, _ = userinfo.partition(":")
        authority = f"{user}:{MASK}@{host}" if has_password else f"{user}@{host}"
    before, question, query = tail.partition("?")
    if question:
        query, hash_, fragment = query.partition("#")
        pairs = [part.partition("=") for part in query.split("&")]
        query = "&".join(
            f"{name}{eq}{MASK}" if eq and is_secret_parameter(unquote(name)) else f"{name}{eq}{v}"
            for name, eq, v in pairs
        )
        tail = f"{before}?{query}{hash_}{fragment}"
    return f"{scheme}{found}{authority}{tail}"


def redact_text(text: str, *secrets: str | None) -> str:
    """``text`` with every URL in it redacted, and each of ``secrets`` (API keys, tokens)
    replaced by ``***`` wherever it appears."""
    text = _URL.sub(lambda found: redact_url(found.group(0)), text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    return text


def _split_authority(rest: str) -> tuple[str, str]:
    """``[userinfo@]host[:port]``, and what follows it (path, query, fragment)."""
    for index, char in enumerate(rest):
        if char in "/?#":
            return rest[:index], rest[index:]
    return rest, ""


def clean_secret(secret: str, what: str) -> str:
    """An API key or token ready for an HTTP header: the whitespace around it dropped (a key
    read from a file ends with a newline), and refused, without being shown, when a character
    in it cannot go in a header. Left alone, either would fail deep in the HTTP library with
    an error whose text holds the whole key."""
    cleaned = secret.strip()
    if not cleaned:
        raise InvalidValueError(f"{what} is empty; pass the key itself, not a blank line.")
    for position, char in enumerate(cleaned, 1):
        if not " " <= char <= "~":
            raise InvalidValueError(
                f"{what} has a character that cannot be sent in an HTTP header at position "
                f"{position} of {len(cleaned)} (U+{ord(char):04X}); keys and tokens are plain "
                "ASCII. Check that it was copied whole and from the right place."
            )
    return cleaned
