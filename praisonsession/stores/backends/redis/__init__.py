"""``RedisSession``: sessions on a Redis server, shared by many processes on many machines.

AgentScope's constructor (``host``, ``port``, ``db``, ``password``, ``connection_pool``,
``key_ttl``, ``key_prefix``, ``**kwargs``), plus a ready ``client``. Every operation is one Lua
script, so it runs as one atomic step on the server: increments, patches, compare-and-set,
appends with an expected length, and the sliding TTL applied to every key of the session.
Nothing is read, changed in Python and written back.

A session with a TTL expires as a whole, for every reader at once: every script checks the
expiry in its meta hash. Its keys share one absolute expiry (PEXPIREAT) a little past that
(by its sliding TTL, an hour at most; none for a fixed expiry), moved only when the session's
expiry passes it or a shorter TTL brings it in (a TTL of 0 deletes them at once), so a write
expires the keys it wrote and not one key per log; Redis frees
them then, ``purge_expired()`` at once. Times come from the server's clock (``TIME``), so
machines with skewed clocks still agree on when a session expires. What an expired session
leaves after that is one member of ``expiry`` (and of its user's index until the next
listing): call ``purge_expired()`` now and then, as with the other stores.

Operational notes: run Redis with ``maxmemory-policy noeviction`` (an evicted key is lost data)
and with an append-only file if sessions must survive a restart. The scripts touch keys they
derive from the session's meta key, so this layout is for standalone Redis (and replicas /
Sentinel), not Redis Cluster.

AgentScope's own keys (``{key_prefix}user_id:U:session:S:state``, a JSON object of module states)
are imported on first access (format 0), once, and left in place.

Modules: ``backend`` (the record operations), ``agentscope`` (AgentScope's keys as a layout),
``keys`` (the key layout), ``scripts`` (the Lua in ``lua/``, run with EVALSHA), ``retries``,
``clients`` (one client per event loop), ``arguments`` and ``replies`` (values to and from the
scripts), ``url``.
"""

from __future__ import annotations

from typing import Any

from ...api import SessionBase
from ...modules import check_layout
from ...record import SessionInfo, record_key
from .agentscope import AgentScopeKeys
from .backend import RedisBackend
from .url import parse_url

__all__ = ["RedisBackend", "RedisSession"]


class RedisSession(SessionBase):
    """Sessions in Redis: every operation is one atomic server-side step.

    ``host``, ``port``, ``db``, ``password``, ``connection_pool``, ``key_ttl`` and
    ``key_prefix`` are AgentScope's; ``key_ttl`` (seconds) is this library's ``default_ttl``.
    ``client`` is a ready ``redis.asyncio.Redis`` (never closed here: its owner closes it).
    Other keyword arguments go to ``redis.asyncio.Redis``.

    A call that cannot reach the server is retried (exponential backoff 0.05, 0.1, 0.2 ... s,
    at most ``retry_attempts`` attempts, no wait ending later than ``retry_max_delay`` seconds
    after the first attempt, none starting after it) and then raises ``StoreUnavailableError``:
    a dead server (refused connections) fails within about ``retry_max_delay``; a hung one
    (it accepts connections and never answers) within ``retry_max_delay + socket_timeout`` at
    most: 7 s with the defaults, and sooner if the session's ``timeout`` ends first (a hang
    right from the first call fails after one ``socket_timeout``). A retried write is never
    applied twice: each write carries a token, and the server answers a retry with the first
    attempt's reply. An injected ``client`` or
    ``connection_pool`` keeps its own redis-py retry settings, which add to these.

    The store can be used from any event loop: each loop gets its own client (redis-py's
    clients are bound to the loop they first ran in). Called from a thread that runs no loop
    (``Session`` in a script), it talks to Redis on that thread with a blocking connection
    of its own, with the same scripts, retries and deadline. ``close()`` closes them all.

    ``durability`` is what the application asks for ("process" or "power"). The server alone
    decides what a write survives (``appendonly`` and ``appendfsync``): at "power" the store
    checks the server's settings on first use and logs a warning when they fall short.

    ``layout="agentscope"`` keeps the modules of ``save_session_state`` and
    ``load_session_state`` under AgentScope's own keys, so that AgentScope loads them (see
    ``docs/pages/stores.md``). Every other argument is :class:`RedisBackend`'s, in AgentScope's
    order: ``host``, ``port``, ``db``, ``password``, ``connection_pool``, ``key_ttl``,
    ``key_prefix``, then by keyword ``client``, ``default_ttl``, ``sliding_ttl``,
    ``retry_attempts``, ``retry_max_delay``, ``socket_timeout``, ``socket_connect_timeout``,
    ``durability`` and redis-py's own options.
    """

    def __init__(self, *args: Any, layout: str = "native", **options: Any) -> None:
        agentscope = check_layout(layout) == "agentscope"
        backend = RedisBackend(*args, **options)
        self._engine = backend  # what only this store offers: its client, imports
        super().__init__(backend, modules=AgentScopeKeys(backend) if agentscope else None)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisSession:
        """``redis://[[user]:password@]host[:port][/db][?key_prefix=...]``; ``rediss://`` = TLS.

        Query parameters other than ``key_prefix`` are passed on as numbers when they look
        like numbers (``socket_timeout=5``), ``true``/``false`` as booleans.
        """
        settings = parse_url(url)
        # Session() passes default_ttl=None etc. from its settings: the URL's own value wins
        given = {k: v for k, v in options.items() if v is not None or k not in settings}
        if "durability" in settings:  # and so does its ?durability= over the settings' one
            given.pop("durability", None)
        return cls(**{**settings, **given})

    def get_client(self) -> Any:
        """The ``redis.asyncio.Redis`` client of the running event loop (AgentScope's call).

        Call it inside a coroutine. It is closed by ``close()`` unless it was passed in.
        """
        return self._engine.get_client()

    async def import_agentscope(self, key: str, session_id: str, user_id: str = "") -> SessionInfo:
        """Import the session AgentScope's RedisSession stored under ``key`` (the full key, as
        AgentScope wrote it) as session ``session_id`` of ``user_id``. The key is left in place.
        """
        target = record_key(session_id, user_id)
        await self.backend.admit_foreign(target)
        return await self._engine.import_agentscope(target, key)
