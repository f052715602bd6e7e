"""User tokens: a signed claim "this bearer is user X until time T", made from the server's
secret.

A token is ``ps1.<user, base64url>.<expiry, unix seconds>.<HMAC-SHA256, base64url>``, the MAC
taken with the secret over the version, the user and the expiry. The server checks the MAC in
constant time and the expiry against its clock, and keeps no list of tokens: rotating the
secret is what revokes them all (see docs/pages/security.md). The secret comes from a file
(``--secret-file``) or the environment (``PRAISONSESSION_SERVER_SECRET``), never from a
command line, where any local user could read it in the process list.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import time
from pathlib import Path

from ..._internal.checks import is_seconds
from ..._internal.identifiers import check_user_id
from ...errors import InvalidValueError, RemoteAuthError

__all__ = [
    "MIN_SECRET",
    "SECRET_ENV",
    "issue_token",
    "load_secret",
    "looks_like_user_token",
    "user_of_token",
]

SECRET_ENV = "PRAISONSESSION_SERVER_SECRET"
#: Fewer characters than this cannot be a secret worth signing with.
MIN_SECRET = 32
_PREFIX = "ps1."
#: Longest TTL a token may have: ten years, so an expiry is always a sane number.
MAX_TTL = 10 * 365 * 86400


def load_secret(path: str | os.PathLike[str] | None = None) -> bytes | None:
    """The server's secret: the file at ``path`` (trailing newline dropped), else the
    environment variable, else None (no user tokens)."""
    if path is not None:
        try:
            text = Path(path).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidValueError(
                f"Cannot read the secret file {str(path)!r} ({type(exc).__name__}); make one "
                "with: python -c 'import secrets; print(secrets.token_urlsafe(48))' > server.secret"
            ) from None
        origin = f"the secret file {str(path)!r}"
    else:
        text = os.environ.get(SECRET_ENV) or ""
        if not text:
            return None
        origin = f"the environment variable {SECRET_ENV}"
    secret = text.strip()
    if len(secret) < MIN_SECRET:
        raise InvalidValueError(
            f"The secret in {origin} is {len(secret)} characters; use at least {MIN_SECRET}, "
            "e.g. python -c 'import secrets; print(secrets.token_urlsafe(48))'."
        )
    return secret.encode("utf-8")


def issue_token(secret: bytes, user_id: str, ttl: float, *, now: float | None = None) -> str:
    """A token for ``user_id`` valid for ``ttl`` seconds from ``now``."""
    user_id = check_user_id(user_id)
    if not is_seconds(ttl, positive=True) or ttl > MAX_TTL:
        raise InvalidValueError(f"ttl must be seconds between 1 and {MAX_TTL}, got {ttl!r}.")
    expires = int((time.time() if now is None else now) + ttl)
    user = _b64(user_id.encode("utf-8"))
    return f"{_PREFIX}{user}.{expires}.{_mac(secret, user, expires)}"


def looks_like_user_token(token: str) -> bool:
    return token.startswith(_PREFIX)


def user_of_token(secret: bytes, token: str, *, now: float | None = None) -> str:
    """The user a valid token names; :class:`RemoteAuthError` (401) if it is forged, damaged
    or expired. The message never repeats the token."""
    parts = token[len(_PREFIX) :].split(".")
    if (
        not token.isascii()  # what the server issues is ASCII: any other byte is not ours
        or len(parts) != 3
        or not parts[1].isdigit()  # ASCII digits only, after isascii (not "¹²" or "١")
        or len(parts[1]) > 12
    ):
        raise _refused("is not a token this server issued (malformed)")
    user, expires_text, mac = parts
    expires = int(expires_text)
    expected = _mac(secret, user, expires).encode("ascii")
    if not hmac.compare_digest(mac.encode("ascii"), expected):
        raise _refused(
            "has a signature that does not match this server's secret (forged, damaged, or "
            "issued before the secret was rotated)"
        )
    if expires <= (time.time() if now is None else now):
        raise _refused(
            f"expired at {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(expires))}; ask "
            "for a new one (praisonsession token --user NAME --ttl SECONDS)"
        )
    try:
        return base64.urlsafe_b64decode(user + "=" * (-len(user) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):  # signed, so ours: cannot happen
        raise _refused("names no readable user") from None


def _mac(secret: bytes, user: str, expires: int) -> str:
    message = f"{_PREFIX}{user}.{expires}".encode("ascii")
    return _b64(hmac.new(secret, message, hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _refused(why: str) -> RemoteAuthError:
    return RemoteAuthError(f"Unauthorized: the user token {why}.", status=401)
