"""``RedisSession``: sessions on a Redis server, shared by many processes on many machines.

AgentScope's constructor (``host``, ``port``, ``db``, ``password``, ``connection_pool``,
``key_ttl``, ``key_prefix``, ``**kwargs``), plus a ready ``client``. Every operation is one Lua
script, so it runs as one atomic step on the server: increments, patches, compare-and-set,
appends with an expected length, and the sliding TTL applied to every key of the session.
Nothing is read, changed in Python and written back.

A session with a TTL has the same absolute expiry (PEXPIREAT) on all of its keys, so Redis
deletes all of it at that moment and every reader sees it gone. Times come from the server's
clock (``TIME``), so machines with skewed clocks still agree on when a session expires. What an
expired session leaves is one member of ``expiry`` (and of its user's index until the next
listing): call ``purge_expired()`` now and then, as with the other stores.

Operational notes: run Redis with ``maxmemory-policy noeviction`` (an evicted key is lost data)
and with an append-only file if sessions must survive a restart. The scripts touch keys they
derive from the session's meta key, so this layout is for standalone Redis (and replicas /
Sentinel), not Redis Cluster.

AgentScope's own keys (``{key_prefix}user_id:U:session:S:state``, a JSON object of module states)
are imported on first access (format 0), once, and left in place.

Modules: ``store`` (the ``RedisSession`` API), ``keys`` (the key layout), ``scripts`` (the Lua
in ``lua/``, run with EVALSHA), ``retries``, ``clients`` (one client per event loop),
``arguments`` and ``replies`` (values to and from the scripts), ``url``.
"""

from .store import RedisSession

__all__ = ["RedisSession"]
