"""AgentScope's own Redis keys as a layout of ``RedisSession`` (``layout="agentscope"``).

AgentScope 1.0.21's ``RedisSession`` keeps a session's modules in one STRING key,
``{key_prefix}user_id:{user_id}:session:{session_id}:state``, holding ``{name: state_dict}``
as JSON; ``key_ttl`` is a sliding expiry (``SET ... EX`` on save, ``GETEX ... EX`` on load).
This layout reads and writes exactly that, so AgentScope loads what was saved here with the
same arguments and the other way round. A save keeps the modules saved earlier under other
names (AgentScope dropped them): when the key holds only names being saved again it is
replaced in one step, as AgentScope's save is; otherwise it is read, merged and written back
in one compare-and-set, so concurrent saves lose nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ...._internal.json_data import dumps
from ....errors import (
    ConflictError,
    SessionCorruptedError,
    SessionNotFoundError,
)
from ...backend import Key
from .keys import sole_agentscope_key
from .replies import json_value

__all__ = ["AgentScopeKeys", "LayoutHost", "load_modules", "save_modules"]


class LayoutHost(Protocol):
    """What this layout needs of the ``RedisBackend`` it serves."""

    default_ttl: float | None

    def _agentscope_key(self, key: Key) -> str: ...

    async def _retrying(self, work: Callable[[Any, int], Awaitable[Any]]) -> Any: ...


# Replace the key only if it still holds what was read (its SHA1, or nothing): no lost save.
_SAVE = """
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if current then return 0 end
elseif not current or redis.sha1hex(current) ~= ARGV[1] then
  return 0
end
if ARGV[3] == '' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
"""
# Replace the key at once when it holds no module other than the ones being saved (decoded
# by the server, never re-encoded there); 0 when a merge is needed, or cjson is missing.
_SAVE_COVERED = """
local current = redis.call('GET', KEYS[1])
if current then
  local ok, doc = pcall(function() return cjson.decode(current) end)
  if not ok or type(doc) ~= 'table' then return 0 end
  local saving = {}
  for i = 3, #ARGV do saving[ARGV[i]] = true end
  for name, _ in pairs(doc) do
    if not saving[name] then return 0 end
  end
end
if ARGV[2] == '' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
"""
_GET_SLIDING = "return redis.call('GETEX', KEYS[1], 'PX', ARGV[1])"
_ATTEMPTS = 20


def agentscope_key(store: LayoutHost, key: Key) -> str:
    """AgentScope's key of ``key``; refused when other (user, session) pairs share it."""
    return sole_agentscope_key(store._agentscope_key(key), key, _SHARED)


_SHARED = (
    "the AgentScope layout cannot keep this session apart from the others. Use ids without "
    "':session:', or the native layout (RedisSession(...) without layout='agentscope'), which "
    "keeps every id apart."
)


async def load_modules(store: LayoutHost, key: Key) -> dict[str, Any] | None:
    """The module states under AgentScope's key (None if there is none); a TTL slides."""
    name = agentscope_key(store, key)
    ttl = _milliseconds(store.default_ttl)

    async def read(client: Any, attempt: int) -> Any:
        if ttl:
            return await client.eval(_GET_SLIDING, 1, name, ttl)
        return await client.get(name)

    value = await store._retrying(read)
    return None if value is None else _modules(value, key, name)


async def save_modules(store: LayoutHost, key: Key, states: dict[str, Any]) -> None:
    """Merge ``states`` into the modules under AgentScope's key, in one compare-and-set."""
    name = agentscope_key(store, key)
    ttl = _milliseconds(store.default_ttl)
    whole = dumps(states)

    async def replace(client: Any, attempt: int) -> Any:
        return await client.eval(_SAVE_COVERED, 1, name, whole, ttl or "", *states)

    if int(await store._retrying(replace)):  # the usual case: the same names saved again
        return
    for _ in range(_ATTEMPTS):

        async def read(client: Any, attempt: int) -> Any:
            return await client.get(name)

        held = await store._retrying(read)
        modules = {} if held is None else _modules(held, key, name)
        text = dumps({**modules, **states})
        seen = "" if held is None else hashlib.sha1(_bytes(held)).hexdigest()

        async def write(client: Any, attempt: int, text: str = text, seen: str = seen) -> Any:
            return await client.eval(_SAVE, 1, name, seen, text, ttl or "")

        if int(await store._retrying(write)):
            return
    raise ConflictError(
        f"AgentScope's key {name!r} changed under {_ATTEMPTS} saves in a row; other writers "
        "keep replacing it. Retry the save."
    )


def _modules(value: Any, key: Key, name: str) -> dict[str, Any]:
    what = f"AgentScope session {key.session_id!r} of user {key.user_id!r} ({name!r})"
    modules = json_value(value, what)
    if not isinstance(modules, dict):
        raise SessionCorruptedError(what, "not a JSON object of module states")
    return modules


def _bytes(value: Any) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _milliseconds(ttl: float | None) -> int | None:
    return None if ttl is None else max(1, round(ttl * 1000))


class AgentScopeKeys:
    """Modules kept under AgentScope's own key of each session (``layout="agentscope"``)."""

    def __init__(self, backend: LayoutHost) -> None:
        self.backend = backend

    async def save(self, key: Key, modules: dict[str, Any]) -> None:
        from ....state.codec import snapshot_module

        states = {name: snapshot_module(module, name) for name, module in modules.items()}
        await save_modules(self.backend, key, states)

    async def load(self, key: Key, modules: dict[str, Any], allow_not_exist: bool) -> None:
        from ....state.codec import load_states

        states = await load_modules(self.backend, key)
        if states is None:
            if not allow_not_exist:
                raise SessionNotFoundError(key.session_id, key.user_id)
            return
        load_states(modules, states, f"AgentScope session {key.session_id!r}")

    async def refresh(self, key: Key, modules: dict[str, Any]) -> int:
        """AgentScope's keys hold no message logs of ours: nothing to take in."""
        return 0

    def forget(self, key: Key) -> None:
        """Nothing is remembered of these keys between calls."""
