"""``RedisSession``: sessions on a Redis server, shared by many processes on many machines.

The store is in ``store``; its Lua scripts are in ``lua/`` and loaded by ``scripts``.
"""

from .store import RedisSession

__all__ = ["RedisSession"]
