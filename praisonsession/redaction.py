"""Secrets out of everything we print: error messages, reprs, logs.

A URL may carry a password (``https://user:secret@host``) or a token in its query
(``?api_key=...``); :func:`redact_url` keeps what helps a reader find the endpoint (scheme, user,
host, port, path) and replaces the secret parts with ``***``. :func:`redact_text` does the same
for URLs inside free text, such as the message of an exception raised by another library.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact_text", "redact_url"]

MASK = "***"
#: Query parameters whose values are secrets wherever they appear.
SECRET_PARAMETERS = frozenset(
    {
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "auth",
        "password",
        "passwd",
        "pwd",
        "secret",
        "sig",
        "signature",
    }
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """``url`` with its password and secret query values replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _redact_userinfo(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, has_password, _ = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if has_password else f"{user}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name.lower() in SECRET_PARAMETERS for name, _ in pairs):
            query = urlencode(
                [(n, MASK if n.lower() in SECRET_PARAMETERS else v) for n, v in pairs], safe="*:"
            )
    if netloc == parts.netloc and query == parts.query:
        return url  # nothing secret; rebuilding would turn sqlite:///x into sqlite:/x
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str, *secrets: str | None) -> str:
    """``text`` with every URL in it redacted, and each of ``secrets`` (API keys, tokens)
    replaced by ``***`` wherever it appears."""
    text = _URL.sub(lambda found: redact_url(found.group(0)), text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    return text


def _redact_userinfo(url: str) -> str:
    """Fallback for text that is not a well-formed URL: mask what follows ``user:``."""
    return re.sub(r"(//[^/@:\s]*:)[^@/\s]*@", rf"\1{MASK}@", url)
