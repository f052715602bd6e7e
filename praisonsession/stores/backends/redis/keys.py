"""Where a store keeps its data: the names of its Redis keys.

Under ``{key_prefix}ps:`` (``U``/``S``/``L``: the user id, session id and log name written by
``key_segment``, so that distinct ids never share a key and no id can act as a glob pattern)::

    s:U:S:meta      HASH   format, version, created_at, updated_at, ttl, expires_at, user_id,
                           session_id, keys_until and keys_for (the instant every key of the
                           session expires at, past expires_at: ``keep_keys`` in
                           ``lua/prelude.lua``), and the user metadata as "m:<name>" -> JSON
    s:U:S:state     HASH   state key -> JSON value
    s:U:S:modules   HASH   module name -> JSON document
    s:U:S:logs      SET    names of the session's message logs
    s:U:S:lognames  ZSET   the same names, score 0, sorted: the logs below a module are one
                           ZRANGEBYLEX (trusted while the meta hash's "lognames" field equals
                           its version and the two hold as many names; else made again)
    s:U:S:log:L     LIST   one JSON message per item (RPUSH: appends never rewrite history)
    u:U:sessions    ZSET   the user's session ids (score 0, ordered by id: paged listing);
                           SCAN over these lists the store's users (``users.lua``)
    expiry          ZSET   "user_id NUL session_id" scored by expires_at: what purge_expired
                           removes, and how "expired" is told from "never existed"
    imported        SET    "user_id NUL session_id" of the AgentScope sessions imported
    op:TOKEN        STRING reply of a write, kept briefly so that a retried write is not applied
                           twice (see ``RedisSession._call``)

The scripts derive the session's other keys from its meta key (``prelude.lua``), and the
scripts over many sessions build them from the namespace (``list.lua``, ``purge.lua``): this
module and those must agree.

AgentScope's own keys (``{key_prefix}user_id:U:session:S:state``, a JSON object of module
states, with the ids as they are) are read once, on first access, and left in place.
"""

from __future__ import annotations

import re

from ....errors import AmbiguousLegacyDataError
from ...backend import Key

__all__ = ["KeyLayout", "key_segment"]

_ESCAPED = frozenset("%:{}*?[]\\")


def key_segment(text: str) -> str:
    """The injective key segment for an id: ``% : { } * ? [ ] \\`` written as ``%XX``.

    The Lua function ``enc`` (``lua/enc_function.lua``) does the same.
    """
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


class KeyLayout:
    """The key names of one store, given its ``key_prefix``."""

    __slots__ = ("namespace", "raw_prefix")

    def __init__(self, key_prefix: str) -> None:
        self.raw_prefix = key_prefix  # AgentScope's keys use the prefix exactly as given
        separated = key_prefix if not key_prefix or key_prefix.endswith(":") else key_prefix + ":"
        self.namespace = separated + "ps:"

    @property
    def expiry(self) -> str:
        return self.namespace + "expiry"

    @property
    def imported(self) -> str:
        return self.namespace + "imported"

    def meta(self, key: Key) -> str:
        return f"{self.namespace}s:{key_segment(key.user_id)}:{key_segment(key.session_id)}:meta"

    def log(self, key: Key, path: str) -> str:
        """The list of one message log (``log_key`` in ``lua/prelude.lua``)."""
        return self.meta(key)[: -len("meta")] + "log:" + key_segment(path)

    def user_index(self, user_id: str) -> str:
        return f"{self.namespace}u:{key_segment(user_id)}:sessions"

    @property
    def user_indexes(self) -> str:
        """The SCAN pattern that matches every user's index (and nothing else of the store)."""
        return _glob_escaped(self.namespace) + "u:*:sessions"

    def op(self, token: str) -> str:
        """Where a write's reply is kept under its op token (``K_TOKEN`` in ``lua/prelude.lua``)."""
        return self.namespace + "op:" + token

    @property
    def op_keys(self) -> str:
        """The SCAN pattern that matches every op key of the store."""
        return _glob_escaped(self.namespace) + "op:*"

    def session_keys(self, key: Key) -> list[str]:
        """The session's keys (meta, state, modules, logs), its user's index, the expiry
        and imported sets, and the sorted log names (the message lists are named in the
        ``logs`` set)."""
        base = self.meta(key)[: -len("meta")]
        return [
            base + "meta",
            base + "state",
            base + "modules",
            base + "logs",
            self.user_index(key.user_id),
            self.expiry,
            self.imported,
            base + "lognames",
        ]

    def agentscope(self, key: Key) -> str:
        """The key AgentScope's RedisSession keeps this session under."""
        return f"{self.raw_prefix}user_id:{key.user_id}:session:{key.session_id}:state"


def agentscope_owners(user_id: str, session_id: str) -> list[tuple[str, str]]:
    """Every (user, session) pair whose AgentScope key is the one of ``(user_id, session_id)``:
    AgentScope joins them as ``user_id:U:session:S:state``, so each ``:session:`` inside
    ``U:session:S`` (overlaps included) is a place it could have been split."""
    joined = f"{user_id}:session:{session_id}"
    separator = ":session:"
    owners = []
    start = joined.find(separator)
    while start != -1:
        user, session = joined[:start], joined[start + len(separator) :]
        if user and session:
            owners.append((user, session))
        start = joined.find(separator, start + 1)
    return owners


def sole_agentscope_key(name: str, key: Key, refusal: str) -> str:
    """``name``, AgentScope's key of the session ``key``, if no other (user, session) pair can
    own it; else ``AmbiguousLegacyDataError``, whose ``refusal`` says what was refused and what
    to do instead. The one check for the automatic import and the AgentScope layout alike."""
    owners = agentscope_owners(key.user_id, key.session_id)
    if len(owners) > 1:
        raise AmbiguousLegacyDataError(
            f"AgentScope's key {name!r} names each of "
            + ", ".join(f"session {s!r} of user {u!r}" for u, s in owners)
            + f" (AgentScope's keys do not tell them apart), so {refusal}"
        )
    return name


def user_of_segment(segment: str) -> str:
    """The user id a ``key_segment`` was made from (``%XX`` back to its character)."""
    return re.sub(r"%([0-9A-F]{2})", lambda found: chr(int(found.group(1), 16)), segment)


def _glob_escaped(text: str) -> str:
    """``text`` as a literal inside a Redis glob pattern (a key prefix may hold ``*`` or ``[``)."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)
