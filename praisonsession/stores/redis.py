"""``RedisSession``: sessions on a Redis server, shared by many processes on many machines.

AgentScope's constructor (``host``, ``port``, ``db``, ``password``, ``connection_pool``,
``key_ttl``, ``key_prefix``, ``**kwargs``), plus a ready ``client``. Every operation is one Lua
script, so it runs as one atomic step on the server: increments, patches, compare-and-set,
appends with an expected length, and the sliding TTL applied to every key of the session.
Nothing is read, changed in Python and written back.

Key layout, under ``{key_prefix}ps:`` (``U``/``S``/``L``: the user id, session id and log name
with ``% : { } * ? [ ] \\`` written as ``%XX``, so that distinct ids never share a key and no id
can act as a glob pattern)::

    s:U:S:meta      HASH   format, version, created_at, updated_at, ttl, expires_at, user_id,
                           session_id, and the user metadata as "m:<name>" -> JSON
    s:U:S:state     HASH   state key -> JSON value
    s:U:S:modules   HASH   module name -> JSON document
    s:U:S:logs      SET    names of the session's message logs
    s:U:S:log:L     LIST   one JSON message per item (RPUSH: appends never rewrite history)
    u:U:sessions    ZSET   the user's session ids (score 0, ordered by id: paged listing)
    expiry          ZSET   "user_id NUL session_id" scored by expires_at: what purge_expired
                           removes, and how "expired" is told from "never existed"
    imported        SET    "user_id NUL session_id" of the AgentScope sessions imported
    op:TOKEN        STRING reply of a write, kept briefly so that a retried write is not applied
                           twice (see ``_call``)

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
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ..errors import (
    ConflictError,
    InvalidValueError,
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    StoreUnavailableError,
    UnsupportedFormatError,
)
from ..json_data import add_numbers, dumps, loads
from .base import UNSET, Key, LogWrite, SessionBase, StoredModules
from .record import FORMAT_VERSION, SessionInfo, check_format

__all__ = ["RedisSession"]

T = TypeVar("T")

_ESCAPED = frozenset("%:{}*?[]\\")
_TOKEN_TTL_MIN = 60.0
_PURGE_BATCH = 500
_PUSH_CHUNK = 1000
_MAX_INCREMENT_RETRIES = 1000


def _enc(text: str) -> str:
    """The injective key segment for an id (the Lua function ``enc`` does the same)."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


# The Lua twin of _enc (the escaped characters are ASCII, so bytes and characters agree).
_LUA_ENC_FUNCTION = r"""
local function enc(s)
  return (string.gsub(s, '[%%:{}%*%?%[%]\\]', function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end
"""

# -- Lua ----------------------------------------------------------------------------------
#
# Common to the per-session scripts:
#   KEYS: 1 the session's meta hash; its other keys are derived from it (and the index, expiry
#         and imported keys from the namespace), so the scripts are not for Redis Cluster.
#   ARGV: 1 the store's settings, NUL-separated: namespace, raw key prefix, sliding "1"/"0",
#         default ttl ("" = none), op token ttl (ms); 2 user_id, 3 session_id,
#         4 op token ("" = none), 5 check the token "1"/"0"; 6.. the operation's own
# (Few arguments on purpose: redis-py spends ~4 µs encoding each one.)
# Every script returns {status, ...}: "ok", or an error the client raises ("notfound",
# "expired", "format", "corrupt", "conflict", "import" = import the AgentScope key first).
# Numbers travel as strings: Redis would truncate a Lua number to an integer.

_LUA_PRELUDE = """
local FORMAT = @FORMAT@
local function split0(s)
  local out, i = {}, 1
  while true do
    local j = string.find(s, '\\0', i, true)
    if not j then out[#out + 1] = string.sub(s, i); return out end
    out[#out + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end
@ENC@
local C = split0(ARGV[1])
local NS, RAW_PREFIX, SLIDING, DEFAULT_TTL, TOKEN_TTL = C[1], C[2], C[3] == '1', C[4], C[5]
local UID, SID, TOKEN, CHECK_TOKEN = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local K_META = KEYS[1]
local BASE = string.sub(K_META, 1, -5)
local K_STATE, K_MODS, K_LOGS = BASE .. 'state', BASE .. 'modules', BASE .. 'logs'
local K_INDEX = NS .. 'u:' .. enc(UID) .. ':sessions'
local K_EXPIRY, K_IMPORTED, K_TOKEN = NS .. 'expiry', NS .. 'imported', NS .. 'op:' .. TOKEN
local K_AS = RAW_PREFIX .. 'user_id:' .. UID .. ':session:' .. SID .. ':state'
local MEMBER = UID .. '\\0' .. SID

local function fmt_time(t) return string.format('%.6f', t) end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function log_key(path) return BASE .. 'log:' .. enc(path) end
local function as_map(flat)
  local m = {}
  for i = 1, #flat, 2 do m[flat[i]] = flat[i + 1] end
  return m
end

local function session_keys()
  local keys = {K_META, K_STATE, K_MODS, K_LOGS}
  for _, p in ipairs(redis.call('SMEMBERS', K_LOGS)) do keys[#keys + 1] = log_key(p) end
  return keys
end

-- Give every key of the session the same absolute expiry (or none).
local function apply_expiry(expires)
  local keys = session_keys()
  if expires then
    local ms = math.ceil(expires * 1000)
    if ms < 9e15 then
      local at = string.format('%.0f', ms)
      for _, k in ipairs(keys) do redis.call('PEXPIREAT', k, at) end
    end
    redis.call('ZADD', K_EXPIRY, fmt_time(expires), MEMBER)
  else
    for _, k in ipairs(keys) do redis.call('PERSIST', k) end
    redis.call('ZREM', K_EXPIRY, MEMBER)
  end
end

-- 'live', 'missing', 'expired', 'import', 'format' or 'corrupt'; and the metadata.
local function resolve(now)
  local flat = redis.call('HGETALL', K_META)
  if #flat == 0 then
    local score = tonumber(redis.call('ZSCORE', K_EXPIRY, MEMBER) or '')
    if score and score <= now then return 'expired', {expires_at = fmt_time(score)} end
    if redis.call('EXISTS', K_AS) == 1 and redis.call('SISMEMBER', K_IMPORTED, MEMBER) == 0 then
      return 'import', nil
    end
    return 'missing', nil
  end
  local m = as_map(flat)
  local fmt = tonumber(m.format or '')
  if not fmt or not tonumber(m.version or '') then return 'corrupt', m end
  if fmt > FORMAT then return 'format', m end
  local exp = tonumber(m.expires_at or '')
  if exp and exp <= now then return 'expired', m end
  return 'live', m
end

-- The reply for a session that is not live, or nil when the caller may go on.
local function dead(status, m, must_exist)
  if status == 'live' then return nil end
  if status == 'import' then return {'import'} end
  if status == 'format' then return {'format', m.format} end
  if status == 'corrupt' then return {'corrupt', 'its metadata hash'} end
  if must_exist then
    if status == 'expired' then return {'expired', m.expires_at} end
    return {'notfound'}
  end
  return nil
end

local function wipe()
  redis.call('DEL', unpack(session_keys()))
  redis.call('ZREM', K_EXPIRY, MEMBER)
end

local function fresh(now, ttl)
  local m = {format = tostring(FORMAT), version = '0', created_at = fmt_time(now),
             updated_at = fmt_time(now), user_id = UID, session_id = SID}
  local fields = {'format', m.format, 'version', '0', 'created_at', m.created_at,
                  'updated_at', m.updated_at, 'user_id', UID, 'session_id', SID}
  if ttl ~= '' then
    m.ttl = ttl
    m.expires_at = fmt_time(now + tonumber(ttl))
    fields[#fields + 1] = 'ttl'
    fields[#fields + 1] = m.ttl
    fields[#fields + 1] = 'expires_at'
    fields[#fields + 1] = m.expires_at
  end
  redis.call('HSET', K_META, unpack(fields))
  redis.call('ZADD', K_INDEX, 0, SID)
  return m
end

-- The live session, or a fresh one (default TTL) in place of a missing or expired one.
local function writable(status, m, now)
  if status == 'live' then return m end
  if status == 'expired' then wipe() end
  return fresh(now, DEFAULT_TTL)
end

-- Record a change: version + 1, updated_at, sliding expiry on every key.
local function bump(m, now)
  m.version = string.format('%d', tonumber(m.version) + 1)
  m.updated_at = fmt_time(now)
  local ttl = tonumber(m.ttl or '')
  if ttl and SLIDING then m.expires_at = fmt_time(now + ttl) end
  redis.call('HSET', K_META, 'version', m.version, 'updated_at', m.updated_at,
             'expires_at', m.expires_at or '')
  if ttl then apply_expiry(tonumber(m.expires_at)) end
  return m
end

-- Activity without a change (a read): only the sliding expiry moves.
local function slide(m, now)
  local ttl = tonumber(m.ttl or '')
  if ttl and SLIDING then
    m.expires_at = fmt_time(now + ttl)
    redis.call('HSET', K_META, 'expires_at', m.expires_at)
    apply_expiry(tonumber(m.expires_at))
  end
end

local function set_ttl(m, now, ttl)
  if ttl == '' then
    m.ttl, m.expires_at = nil, nil
    redis.call('HDEL', K_META, 'ttl', 'expires_at')
  else
    m.ttl, m.expires_at = ttl, fmt_time(now + tonumber(ttl))
    redis.call('HSET', K_META, 'ttl', ttl, 'expires_at', m.expires_at)
  end
end

local function push(key, first, count)
  local length = 0
  local i = first
  while i < first + count do
    local last = math.min(i + @CHUNK@ - 1, first + count - 1)
    length = redis.call('RPUSH', key, unpack(ARGV, i, last))
    i = last + 1
  end
  return length
end

-- HSET/HDEL of ARGV[first..last] in chunks (unpack() fails beyond ~8000 values).
local function chunked(command, key, first, last, step)
  local i = first
  while i <= last do
    local j = math.min(i + @CHUNK@ * step - 1, last)
    redis.call(command, key, unpack(ARGV, i, j))
    i = j + 1
  end
end

-- A write runs at most once per token: a retry after a lost reply gets the first reply.
local function once(main)
  if TOKEN ~= '' and CHECK_TOKEN == '1' then
    local done = redis.call('GET', K_TOKEN)
    if done then return cjson.decode(done) end
  end
  local reply = main()
  if TOKEN ~= '' and reply[1] == 'ok' then
    redis.call('SET', K_TOKEN, cjson.encode(reply), 'PX', TOKEN_TTL)
  end
  return reply
end
"""
_LUA_PRELUDE = _LUA_PRELUDE.replace("@ENC@", _LUA_ENC_FUNCTION)
_LUA_PRELUDE = _LUA_PRELUDE.replace("@FORMAT@", str(FORMAT_VERSION))
_LUA_PRELUDE = _LUA_PRELUDE.replace("@CHUNK@", str(_PUSH_CHUNK))

_LUA_NUMBERS = """
-- 'int' or 'float' for a JSON number (the text Python's json writes), else nil.
local function jnum(s)
  local i = 1
  if string.sub(s, 1, 1) == '-' then i = 2 end
  local a, b = string.find(s, '^%d+', i)
  if not a then return nil end
  if b > a and string.sub(s, a, a) == '0' then return nil end
  i = b + 1
  local kind = 'int'
  if string.sub(s, i, i) == '.' then
    a, b = string.find(s, '^%d+', i + 1)
    if not a then return nil end
    i, kind = b + 1, 'float'
  end
  local c = string.sub(s, i, i)
  if c == 'e' or c == 'E' then
    a, b = string.find(s, '^[+-]?%d+', i + 1)
    if not a then return nil end
    i, kind = b + 1, 'float'
  end
  if i ~= #s + 1 then return nil end
  return kind
end

local function digits(s)
  if string.sub(s, 1, 1) == '-' then return #s - 1 end
  return #s
end

-- Shortest of %.15g/%.16g/%.17g that reads back as the same double, marked as a float.
local function fmt_float(x)
  local s
  for _, f in ipairs({'%.15g', '%.16g', '%.17g'}) do
    s = string.format(f, x)
    if tonumber(s) == x then break end
  end
  if not string.find(s, '[%.eE]') then s = s .. '.0' end
  return s
end

-- a + b with Python's semantics, or nil when Python must do it (not numbers, big ints).
local function add(a, b)
  local ka, kb = jnum(a), jnum(b)
  if not ka or not kb then return nil end
  if (ka == 'int' and digits(a) > 15) or (kb == 'int' and digits(b) > 15) then return nil end
  local r = tonumber(a) + tonumber(b)
  if ka == 'int' and kb == 'int' then return string.format('%.0f', r) end
  if r ~= r or r == math.huge or r == -math.huge then return nil end
  return fmt_float(r)
end
"""

_LUA_BODIES = {
    # ARGV 6: "set"/"keep" the ttl, 7: ttl ("" = none), 8..: metadata field, JSON pairs
    "create": """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, false)
  if err then return err end
  local mode, ttl = ARGV[6], ARGV[7]
  local had_ttl = false
  if status ~= 'live' then
    if status == 'expired' then wipe() end
    m = fresh(now, mode == 'set' and ttl or DEFAULT_TTL)
  else
    had_ttl = m.ttl ~= nil
    local new_ttl = ttl
    if mode ~= 'set' then new_ttl = m.ttl or '' end
    if new_ttl ~= '' and mode ~= 'set' and not SLIDING then
      redis.call('HSET', K_META, 'ttl', new_ttl)
    else
      set_ttl(m, now, new_ttl)
    end
  end
  if #ARGV >= 8 then redis.call('HSET', K_META, unpack(ARGV, 8)) end
  local reply = {'ok', redis.call('HGETALL', K_META)}
  if m.ttl then apply_expiry(tonumber(m.expires_at)) elseif had_ttl then apply_expiry(false) end
  return reply
end)
""",
    "info": """
local now = clock()
local status, m = resolve(now)
if status == 'live' then return {'ok', redis.call('HGETALL', K_META)} end
local err = dead(status, m, false)
if err then return err end
return {'ok', false}
""",
    # ARGV 6..: metadata field, JSON pairs
    "set_metadata": """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  if status ~= 'live' then return dead(status, m, true) end
  if #ARGV >= 6 then redis.call('HSET', K_META, unpack(ARGV, 6)) end
  bump(m, now)
  return {'ok', redis.call('HGETALL', K_META)}
end)
""",
    "delete": """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  if status == 'import' or status == 'format' then return dead(status, m, false) end
  wipe()
  redis.call('ZREM', K_INDEX, SID)
  if status == 'live' then return {'ok', '1'} end
  return {'ok', '0'}
end)
""",
    # ARGV 6: "set"/"keep", 7: ttl
    "touch": """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  if status ~= 'live' then
    local err = dead(status, m, false)
    if err then return err end
    return {'ok', false}
  end
  local ttl = ARGV[7]
  local had_ttl = m.ttl ~= nil
  if ARGV[6] ~= 'set' then ttl = m.ttl or '' end
  set_ttl(m, now, ttl)
  local reply = {'ok', redis.call('HGETALL', K_META)}
  if m.ttl then apply_expiry(tonumber(m.expires_at)) elseif had_ttl then apply_expiry(false) end
  return reply
end)
""",
    # ARGV 6: must_exist, 7: "1" = every key, 8..: the keys wanted
    "get_state": """
local now = clock()
local status, m = resolve(now)
if status ~= 'live' then
  local err = dead(status, m, ARGV[6] == '1')
  if err then return err end
  return {'ok', {}}
end
local out
if ARGV[7] == '1' then
  out = redis.call('HGETALL', K_STATE)
else
  out = {}
  local values = redis.call('HMGET', K_STATE, unpack(ARGV, 8))
  for i = 8, #ARGV do
    local v = values[i - 7]
    if v then
      out[#out + 1] = ARGV[i]
      out[#out + 1] = v
    end
  end
end
slide(m, now)
return {'ok', out}
""",
    # ARGV 6: must_exist, 7: replace, 8: expected version ("" = any), 9: n updates,
    # then n (key, JSON) pairs, then the keys to delete
    "patch": """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, ARGV[6] == '1')
  if err then return err end
  local current = 0
  if status == 'live' then current = tonumber(m.version) end
  if ARGV[8] ~= '' and tonumber(ARGV[8]) ~= current then
    return {'conflict', string.format('%d', current)}
  end
  m = writable(status, m, now)
  if ARGV[7] == '1' then redis.call('DEL', K_STATE) end
  local n = tonumber(ARGV[9])
  chunked('HDEL', K_STATE, 10 + 2 * n, #ARGV, 1)
  chunked('HSET', K_STATE, 10, 9 + 2 * n, 2)
  bump(m, now)
  return {'ok', m.version}
end)
""",
    # ARGV 6: must_exist, 7: key, 8: amount (JSON), 9: default (JSON), 10: "add"/"cas",
    # for "cas": 11: "1" if the key held 12 (its JSON), 13: the new JSON
    "increment": _LUA_NUMBERS
    + """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, ARGV[6] == '1')
  if err then return err end
  local name = ARGV[7]
  local current = false
  if status == 'live' then current = redis.call('HGET', K_STATE, name) end
  local text
  if ARGV[10] == 'cas' then
    local same = (current and ARGV[11] == '1' and current == ARGV[12])
      or (not current and ARGV[11] == '0')
    if not same then return {'retry'} end
    text = ARGV[13]
  else
    text = add(current or ARGV[9], ARGV[8])
    if not text then return {'slow', current} end
  end
  m = writable(status, m, now)
  redis.call('HSET', K_STATE, name, text)
  bump(m, now)
  return {'ok', text}
end)
""",
    # ARGV 6: n documents, then (name, JSON) pairs, then n writes, each:
    # path, start ("" = replace the log, "-1" = append, N = append if it holds N), count, msgs
    "save_modules": """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, false)
  if err then return err end
  local i = 6
  local ndocs = tonumber(ARGV[i])
  local docs_first = i + 1
  i = i + 1 + 2 * ndocs
  local nwrites = tonumber(ARGV[i])
  i = i + 1
  local writes = {}
  for _ = 1, nwrites do
    local count = tonumber(ARGV[i + 2])
    writes[#writes + 1] = {path = ARGV[i], start = ARGV[i + 1], first = i + 3, count = count}
    i = i + 3 + count
  end
  for _, w in ipairs(writes) do
    if w.start ~= '' and w.start ~= '-1' then
      local held = 0
      if status == 'live' then held = redis.call('LLEN', log_key(w.path)) end
      if held ~= tonumber(w.start) then
        return {'conflict', w.path, tostring(held), w.start}
      end
    end
  end
  m = writable(status, m, now)
  chunked('HSET', K_MODS, docs_first, docs_first + 2 * ndocs - 1, 2)
  local lengths = {'ok'}
  for _, w in ipairs(writes) do
    local key = log_key(w.path)
    if w.start == '' then redis.call('DEL', key) end
    push(key, w.first, w.count)
    lengths[#lengths + 1] = tostring(redis.call('LLEN', key))
    redis.call('SADD', K_LOGS, w.path)
  end
  bump(m, now)
  return lengths
end)
""",
    # ARGV 6..: module names
    "load_modules": """
local now = clock()
local status, m = resolve(now)
if status ~= 'live' then
  local err = dead(status, m, false)
  if err then return err end
  return {'none'}
end
local docs = {}
local present = {}
if #ARGV >= 6 then
  local values = redis.call('HMGET', K_MODS, unpack(ARGV, 6))
  for i = 6, #ARGV do
    local v = values[i - 5]
    if v then
      docs[#docs + 1] = ARGV[i]
      docs[#docs + 1] = v
      present[ARGV[i]] = true
    end
  end
end
local logs = {}
for _, path in ipairs(redis.call('SMEMBERS', K_LOGS)) do
  if present[string.match(path, '^[^%.]*')] then
    logs[#logs + 1] = path
    logs[#logs + 1] = redis.call('LRANGE', log_key(path), 0, -1)
  end
end
slide(m, now)
return {'ok', docs, logs}
""",
    # ARGV 6: log name, 7: start (-1 = wherever the log ends), 8..: messages
    "append": """
return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, false)
  if err then return err end
  local key = log_key(ARGV[6])
  local held = 0
  if status == 'live' then held = redis.call('LLEN', key) end
  local start = tonumber(ARGV[7])
  if start ~= -1 and start ~= held then
    return {'conflict', ARGV[6], tostring(held), ARGV[7]}
  end
  m = writable(status, m, now)
  local length = held
  if #ARGV >= 8 then length = push(key, 8, #ARGV - 7) end
  redis.call('SADD', K_LOGS, ARGV[6])
  bump(m, now)
  return {'ok', tostring(length)}
end)
""",
    # ARGV 6: log name, 7: start, 8: stop ("" = the end)
    "read_log": """
local now = clock()
local status, m = resolve(now)
if status ~= 'live' then
  local err = dead(status, m, false)
  if err then return err end
  return {'ok', {}}
end
local start = tonumber(ARGV[7])
local stop = -1
if ARGV[8] ~= '' then stop = tonumber(ARGV[8]) - 1 end
local out = {}
if stop == -1 or stop >= start then out = redis.call('LRANGE', log_key(ARGV[6]), start, stop) end
slide(m, now)
return {'ok', out}
""",
    # ARGV 6..: (module name, JSON) pairs of an AgentScope session, imported once
    "import": """
local now = clock()
if redis.call('EXISTS', K_META) == 1 or redis.call('SISMEMBER', K_IMPORTED, MEMBER) == 1 then
  return {'ok'}
end
local m = fresh(now, DEFAULT_TTL)
if #ARGV >= 6 then redis.call('HSET', K_MODS, unpack(ARGV, 6)) end
redis.call('SADD', K_IMPORTED, MEMBER)
if m.ttl then apply_expiry(tonumber(m.expires_at)) end
return {'ok'}
""",
}

# Scripts over many sessions. KEYS: 1 the user index (list) or the expiry set (purge).
_LUA_LIST = """
local NS, UID, AFTER, LIMIT = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local prefix = NS .. 's:' .. enc(UID) .. ':'
local out = {}
local found = 0
local cursor = '-'
if AFTER ~= '' then cursor = '(' .. AFTER end
local batch = math.max(LIMIT, 50)
while found < LIMIT do
  local ids = redis.call('ZRANGEBYLEX', KEYS[1], cursor, '+', 'LIMIT', 0, batch)
  for _, sid in ipairs(ids) do
    cursor = '(' .. sid
    local flat = redis.call('HGETALL', prefix .. enc(sid) .. ':meta')
    if #flat == 0 then
      redis.call('ZREM', KEYS[1], sid)
    else
      local exp = nil
      for i = 1, #flat, 2 do
        if flat[i] == 'expires_at' then exp = tonumber(flat[i + 1]) end
      end
      if not (exp and exp <= now) then
        out[#out + 1] = sid
        out[#out + 1] = flat
        found = found + 1
        if found >= LIMIT then break end
      end
    end
  end
  if #ids < batch then break end
end
return {'ok', out}
"""

_LUA_PURGE = """
local NS = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now),
                           'LIMIT', 0, tonumber(ARGV[2]))
local removed = 0
for _, member in ipairs(members) do
  local cut = string.find(member, '\\0', 1, true)
  local uid, sid = string.sub(member, 1, cut - 1), string.sub(member, cut + 1)
  local base = NS .. 's:' .. enc(uid) .. ':' .. enc(sid) .. ':'
  local meta = redis.call('HMGET', base .. 'meta', 'format', 'expires_at')
  local exp = tonumber(meta[2] or '')
  if meta[1] and not exp then
    redis.call('ZREM', KEYS[1], member)
  elseif meta[1] and exp > now then
    redis.call('ZADD', KEYS[1], string.format('%.6f', exp), member)
  else
    local keys = {base .. 'meta', base .. 'state', base .. 'modules', base .. 'logs'}
    for _, p in ipairs(redis.call('SMEMBERS', base .. 'logs')) do
      keys[#keys + 1] = base .. 'log:' .. enc(p)
    end
    redis.call('DEL', unpack(keys))
    redis.call('ZREM', NS .. 'u:' .. enc(uid) .. ':sessions', sid)
    redis.call('ZREM', KEYS[1], member)
    removed = removed + 1
  end
end
return {'ok', tostring(removed), tostring(#members)}
"""

# A probe, used by the tests to check that Lua and Python encode ids the same way.
_LUA_ENC = """
return enc(ARGV[1])
"""


class _Script:
    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode("utf-8")).hexdigest()


_SCRIPTS: dict[str, _Script] = {
    **{name: _Script(_LUA_PRELUDE + body) for name, body in _LUA_BODIES.items()},
    "list": _Script(_LUA_ENC_FUNCTION + _LUA_LIST),
    "purge": _Script(_LUA_ENC_FUNCTION + _LUA_PURGE),
    "enc": _Script(_LUA_ENC_FUNCTION + _LUA_ENC),
}

_WRITES = frozenset(
    {"create", "set_metadata", "delete", "touch", "patch", "increment", "save_modules", "append"}
)


def _redis() -> Any:
    try:
        import redis.asyncio
        import redis.exceptions
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RedisSession needs the 'redis' package (redis-py 5 or newer). Install it with: "
            'pip install "praisonsession[redis]"'
        ) from exc
    return redis


class RedisSession(SessionBase):
    """Sessions in Redis: every operation is one atomic server-side step.

    ``host``, ``port``, ``db``, ``password``, ``connection_pool``, ``key_ttl`` and
    ``key_prefix`` are AgentScope's; ``key_ttl`` (seconds) is this library's ``default_ttl``.
    ``client`` is a ready ``redis.asyncio.Redis`` (never closed here: its owner closes it).
    Other keyword arguments go to ``redis.asyncio.Redis``.

    A call that cannot reach the server is retried (exponential backoff 0.05, 0.1, 0.2 ... s,
    at most ``retry_attempts`` attempts, no wait ending later than ``retry_max_delay`` seconds
    after the first attempt) and then raises ``StoreUnavailableError``: a dead server (refused
    connections) fails within about ``retry_max_delay``; a hung one within that plus one
    ``socket_timeout``. A retried write is never applied twice: each write carries a token,
    and the server answers a retry with the first attempt's reply. An injected ``client`` or
    ``connection_pool`` keeps its own redis-py retry settings, which add to these.

    The store can be used from any event loop: each loop gets its own client (redis-py's
    clients are bound to the loop they first ran in). ``close()`` closes them all.
    """

    runs_inline = False

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        connection_pool: Any = None,
        key_ttl: float | None = None,
        key_prefix: str = "",
        *,
        client: Any = None,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        retry_attempts: int = 6,
        retry_max_delay: float = 2.0,
        socket_timeout: float | None = 5.0,
        socket_connect_timeout: float | None = 2.0,
        **kwargs: Any,
    ) -> None:
        if key_ttl is not None and default_ttl is not None and key_ttl != default_ttl:
            raise InvalidValueError(
                f"key_ttl={key_ttl!r} and default_ttl={default_ttl!r} disagree; key_ttl is "
                "AgentScope's name for default_ttl, so pass only one of them."
            )
        super().__init__(
            default_ttl=default_ttl if default_ttl is not None else key_ttl,
            sliding_ttl=sliding_ttl,
        )
        if not isinstance(key_prefix, str) or "\0" in key_prefix:
            raise InvalidValueError(f"key_prefix must be a str without NUL, got {key_prefix!r}.")
        if isinstance(retry_attempts, bool) or not isinstance(retry_attempts, int):
            raise InvalidValueError(f"retry_attempts must be an int, got {retry_attempts!r}.")
        if retry_attempts < 1 or not retry_max_delay >= 0:
            raise InvalidValueError("retry_attempts must be >= 1 and retry_max_delay >= 0.")
        redis = _redis()
        self._redis = redis
        self.key_prefix = key_prefix
        self._raw_prefix = key_prefix  # AgentScope's keys use the prefix exactly as given
        separated = key_prefix if not key_prefix or key_prefix.endswith(":") else key_prefix + ":"
        self._ns = separated + "ps:"
        self.retry_attempts = retry_attempts
        self.retry_max_delay = float(retry_max_delay)
        self._given_client = client
        self._given_pool = connection_pool
        self._options: dict[str, Any] = {
            "host": host,
            "port": int(port),
            "db": int(db),
            "password": password,
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
            **kwargs,
        }
        if "retry" not in kwargs:  # tenacity retries here; redis-py's own would stack up
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            self._options["retry"] = Retry(NoBackoff(), 0)
        timeout = max(socket_timeout or 0.0, socket_connect_timeout or 0.0)
        self._token_ttl_ms = int(
            1000 * max(_TOKEN_TTL_MIN, 2 * (self.retry_max_delay + retry_attempts * timeout))
        )
        self._token_base = secrets.token_hex(8)
        self._token_count = itertools.count()
        self.url = self._describe(host, port, db, password)
        self._lock = threading.Lock()
        # event loop -> its client: a redis.asyncio client works only in the loop it started in
        self._clients: dict[Any, _Bound] = {}
        self._given_in_use = False

    # -- construction helpers -------------------------------------------------------------

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisSession:
        """``redis://[[user]:password@]host[:port][/db][?key_prefix=...]``; ``rediss://`` = TLS.

        Query parameters other than ``key_prefix`` are passed on as numbers when they look
        like numbers (``socket_timeout=5``), ``true``/``false`` as booleans.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("redis", "rediss"):
            raise InvalidValueError(f"{url!r} is not a redis:// or rediss:// URL.")
        try:
            port = parts.port or 6379
        except ValueError:
            raise InvalidValueError(f"Store URL {url!r} has an invalid port.") from None
        path = parts.path.strip("/")
        if path and not path.isdigit():
            raise InvalidValueError(f"Store URL {url!r}: the path must be a db number, e.g. /0.")
        settings: dict[str, Any] = {
            "host": unquote(parts.hostname or "localhost"),
            "port": port,
            "db": int(path or 0),
        }
        if parts.password is not None:
            settings["password"] = unquote(parts.password)
        if parts.username:
            settings["username"] = unquote(parts.username)
        if scheme == "rediss":
            settings["ssl"] = True
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            settings[name] = value if name == "key_prefix" else _query_value(value)
        # Session() passes default_ttl=None etc. from its settings: the URL's own value wins
        given = {k: v for k, v in options.items() if v is not None or k not in settings}
        return cls(**{**settings, **given})

    def _describe(self, host: str, port: int, db: int, password: str | None) -> str:
        if self._given_client is not None or self._given_pool is not None:
            pool = self._given_pool or self._given_client.connection_pool
            found = getattr(pool, "connection_kwargs", {})
            host = found.get("host", host)
            port = found.get("port", port)
            db = found.get("db", db)
            password = found.get("password")
        scheme = "rediss" if self._options.get("ssl") else "redis"
        auth = ":***@" if password else ""
        url = f"{scheme}://{auth}{host}:{port}/{db}"
        if self.key_prefix:
            url += f"?key_prefix={quote(self.key_prefix, safe=':')}"
        return url

    # -- clients, one per event loop ------------------------------------------------------

    async def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        bound = self._clients.get(loop)
        if bound is not None and bound.pid == os.getpid():
            return bound.client
        with self._lock:
            bound = self._clients.get(loop)
            if bound is not None and bound.pid == os.getpid():
                return bound.client
            self._forget_dead_loops()
            client, owned = self._new_client()
            bound = self._clients[loop] = _Bound(client, owned)
        if owned:
            # asyncio.run() finalizes async generators before it closes its loop: this one
            # closes the client then, so a store used without close() leaves no socket open.
            closer = _close_at_loop_end(client)
            await closer.__anext__()
            bound.closer = closer
        return client

    def _new_client(self) -> tuple[Any, bool]:
        aio = self._redis.asyncio
        if self._given_client is not None and not self._given_in_use:
            self._given_in_use = True
            return self._given_client, False
        if self._given_pool is not None and not self._given_in_use:
            self._given_in_use = True
            return aio.Redis(connection_pool=self._given_pool), False
        source = self._given_pool or (
            self._given_client.connection_pool if self._given_client is not None else None
        )
        if source is not None:  # another loop: a pool of our own with the same settings
            pool = aio.ConnectionPool(
                connection_class=source.connection_class,
                max_connections=source.max_connections,
                **source.connection_kwargs,
            )
            return aio.Redis.from_pool(pool), True
        return aio.Redis(**self._options), True

    def _forget_dead_loops(self) -> None:
        """Drop the clients of loops that were closed (e.g. by ``asyncio.run``) or forked."""
        for loop, bound in list(self._clients.items()):
            if bound.pid != os.getpid() or loop.is_closed():
                del self._clients[loop]
                if not bound.owned:
                    self._given_in_use = False
                elif bound.pid == os.getpid():
                    _drop_connections(bound.client)

    def get_client(self) -> Any:
        """The ``redis.asyncio.Redis`` client of the running event loop (AgentScope's call).

        Call it inside a coroutine. It is closed by ``close()`` unless it was passed in.
        """
        loop = asyncio.get_running_loop()
        bound = self._clients.get(loop)
        if bound is not None and bound.pid == os.getpid():
            return bound.client
        with self._lock:
            self._forget_dead_loops()
            client, owned = self._new_client()
            self._clients[loop] = _Bound(client, owned)
        return client

    async def close(self) -> None:
        """Close the clients this store created, in every loop; an injected client stays open.

        The store stays usable: the next call connects again.
        """
        with self._lock:
            clients, self._clients = self._clients, {}
            self._given_in_use = False
        here = asyncio.get_running_loop()
        for loop, bound in clients.items():
            if not bound.owned or bound.pid != os.getpid():
                continue
            if loop is here:
                await bound.close()
            elif not loop.is_closed() and loop.is_running():
                future = asyncio.run_coroutine_threadsafe(bound.close(), loop)
                try:
                    await asyncio.wait_for(asyncio.wrap_future(future), 5.0)
                except (asyncio.TimeoutError, RuntimeError):
                    _drop_connections(bound.client)
            else:
                _drop_connections(bound.client)

    # -- calling the server ---------------------------------------------------------------

    def _meta_key(self, key: Key) -> str:
        return f"{self._ns}s:{_enc(key.user_id)}:{_enc(key.session_id)}:meta"

    def _keys(self, key: Key) -> list[str]:
        """The session's keys (meta, state, modules, logs), its user's index, and the expiry
        and imported sets: where the scripts keep things, for tests and inspection."""
        base = self._meta_key(key)[: -len("meta")]
        return [
            base + "meta",
            base + "state",
            base + "modules",
            base + "logs",
            f"{self._ns}u:{_enc(key.user_id)}:sessions",
            self._ns + "expiry",
            self._ns + "imported",
        ]

    def _settings(self) -> str:
        """ARGV[1] of the per-session scripts (read on every call: the TTL knobs may change)."""
        sliding = "1" if self.sliding_ttl else "0"
        ttl = _num(self.default_ttl)
        return f"{self._ns}\0{self._raw_prefix}\0{sliding}\0{ttl}\0{self._token_ttl_ms}"

    def _token(self) -> str:
        # unique per store object, process and call; cheaper than os.urandom on every write
        return f"{self._token_base}.{os.getpid()}.{next(self._token_count)}"

    def _agentscope_key(self, key: Key) -> str:
        return f"{self._raw_prefix}user_id:{key.user_id}:session:{key.session_id}:state"

    async def _retrying(self, work: Callable[[Any, int], Awaitable[T]]) -> T:
        """``work(client, attempt)`` with bounded retries; StoreUnavailableError at the end.

        The first attempt runs directly (tenacity costs tens of µs a call, which matters at
        thousands of calls a second); after a connection error, tenacity retries with
        exponential backoff (0.05, 0.1, 0.2, ... s, at most 1 s), and stops after
        ``retry_attempts`` attempts or before a wait that would end more than
        ``retry_max_delay`` seconds after the first attempt started.
        """
        errors = self._redis.exceptions
        started = time.monotonic()
        attempts = 1
        try:
            try:
                return await work(await self._client(), 1)
            except Exception as exc:
                if not _retryable(exc) or self.retry_attempts < 2 or self.retry_max_delay < 0.05:
                    raise
            from tenacity import AsyncRetrying, retry_if_exception, wait_exponential

            def stop(state: Any) -> bool:
                if state.attempt_number + 1 >= self.retry_attempts:
                    return True
                upcoming = getattr(state, "upcoming_sleep", 0.0) or 0.0
                return time.monotonic() - started + upcoming > self.retry_max_delay

            await asyncio.sleep(0.05)
            retrying = AsyncRetrying(
                stop=stop,
                wait=wait_exponential(multiplier=0.1, max=1.0),
                retry=retry_if_exception(_retryable),
                reraise=True,
            )
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    return await work(await self._client(), attempts)
        except (errors.AuthenticationError, errors.AuthorizationError) as exc:
            raise StoreUnavailableError(
                f"Redis at {self.url} refused the credentials ({exc}). Check the password "
                "(and user name) in the store URL or the RedisSession arguments."
            ) from exc
        except (errors.ConnectionError, errors.TimeoutError, OSError) as exc:
            raise StoreUnavailableError(
                f"Redis at {self.url} could not be reached: {attempts} attempt(s) in "
                f"{time.monotonic() - started:.1f} s, last error {type(exc).__name__}: {exc}. "
                "Check that redis-server is running and reachable from this machine (host, "
                "port, firewall, TLS, password). The last write was not acknowledged, so it "
                "may or may not have been applied; nothing was assumed about the session."
            ) from exc
        except errors.ResponseError as exc:
            if "WRONGTYPE" in str(exc):
                raise SessionCorruptedError(
                    f"a key of this store in {self.url}",
                    "it holds another Redis type than this library writes",
                ) from None
            raise StoreUnavailableError(f"Redis at {self.url} refused the command: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run one of the scripts (EVALSHA, or EVAL when the server does not have it yet).

        The arguments of a write hold an op token (positions 3 and 4: token, check). The
        first attempt records the token with its reply; a retry asks the server for that
        reply instead of applying the write again, since a lost connection may have dropped
        only the answer.
        """
        script = _SCRIPTS[name]
        no_script = self._redis.exceptions.NoScriptError

        async def work(client: Any, attempt: int) -> Any:
            if attempt > 1 and name in _WRITES:
                args[4] = "1"
            try:
                return await client.evalsha(script.sha, len(keys), *keys, *args)
            except no_script:
                return await client.eval(script.source, len(keys), *keys, *args)

        return await self._retrying(work)

    async def _session(
        self, name: str, key: Key, args: list[Any], must_exist: bool = False
    ) -> list[Any]:
        """Run a per-session script; import the AgentScope key first when the script asks."""
        meta = [self._meta_key(key)]
        for _ in range(3):
            token = self._token() if name in _WRITES else ""
            common = [self._settings(), key.user_id, key.session_id, token, "0"]
            reply = await self._call(name, meta, [*common, *args])
            status = _text(reply[0])
            if status == "import":
                await self._import_agentscope(key)
                continue
            if status in ("ok", "none", "slow", "retry", "conflict"):
                return [status, *reply[1:]]
            raise self._error(status, reply, key)
        raise AssertionError(f"AgentScope session {key.session_id!r} could not be imported")

    def _error(self, status: str, reply: list[Any], key: Key) -> Exception:
        what = f"session {key.session_id!r} of user {key.user_id!r} in {self.url}"
        if status == "notfound":
            return SessionNotFoundError(
                key.session_id,
                key.user_id,
                "It was deleted or has expired; open a new Session(...) to start it afresh.",
            )
        if status == "expired":
            return SessionExpiredError(key.session_id, key.user_id, _float(reply[1]))
        if status == "format":
            return UnsupportedFormatError(what, int(_text(reply[1])), FORMAT_VERSION)
        if status == "corrupt":
            return SessionCorruptedError(what, _text(reply[1]))
        return StoreUnavailableError(f"Redis at {self.url} answered {status!r} unexpectedly.")

    async def _import_agentscope(self, key: Key) -> None:
        """Adopt the session AgentScope's RedisSession left under its own key (format 0)."""
        as_key = self._agentscope_key(key)

        async def fetch(client: Any, attempt: int) -> Any:
            return await client.get(as_key)

        value = await self._retrying(fetch)
        if value is None:
            return
        what = f"AgentScope session {key.session_id!r} of user {key.user_id!r} ({as_key!r})"
        modules = loads(_utf8(value, what), what)
        if not isinstance(modules, dict):
            raise SessionCorruptedError(what, "not a JSON object")
        args: list[Any] = [self._settings(), key.user_id, key.session_id, "", "0"]
        for name, document in modules.items():
            if not _valid_text(name):
                raise SessionCorruptedError(what, f"the module name {name!r} is not valid text")
            args += [name, dumps(document)]
        await self._call("import", [self._meta_key(key)], args)

    # -- decoding ---------------------------------------------------------------------------

    def _info_from(self, flat: list[Any], user_id: str, session_id: str) -> SessionInfo:
        what = f"session {session_id!r} of user {user_id!r} in {self.url}"
        fields = {_utf8(flat[i], what): flat[i + 1] for i in range(0, len(flat), 2)}
        try:
            fmt = int(fields["format"])
            check_format(fmt, what)
            expires = _text(fields.get("expires_at") or b"")
            ttl = _text(fields.get("ttl") or b"")
            info = SessionInfo(
                session_id=session_id,
                user_id=user_id,
                created_at=float(fields["created_at"]),
                updated_at=float(fields["updated_at"]),
                expires_at=float(expires) if expires else None,
                ttl=float(ttl) if ttl else None,
                version=int(fields["version"]),
                format=fmt,
                metadata=_metadata(fields, what),
            )
        except (KeyError, ValueError) as exc:
            raise SessionCorruptedError(f"metadata of {what}", repr(exc)) from None
        return info

    def _decode(self, value: Any, what: str) -> Any:
        return loads(_utf8(value, what), what)

    # -- sessions ---------------------------------------------------------------------------

    async def _create(self, key: Key, ttl: Any, metadata: dict[str, Any]) -> SessionInfo:
        args = ["keep" if ttl is UNSET else "set", "" if ttl is UNSET else _num(ttl)]
        reply = await self._session("create", key, args + _metadata_args(metadata))
        return self._info_from(reply[1], key.user_id, key.session_id)

    async def _info(self, key: Key) -> SessionInfo | None:
        reply = await self._session("info", key, [])
        return None if reply[1] is None else self._info_from(reply[1], key.user_id, key.session_id)

    async def _set_metadata(self, key: Key, metadata: dict[str, Any]) -> SessionInfo:
        reply = await self._session("set_metadata", key, _metadata_args(metadata), True)
        return self._info_from(reply[1], key.user_id, key.session_id)

    async def _list(self, user_id: str, limit: int, after: str | None) -> list[SessionInfo]:
        index = f"{self._ns}u:{_enc(user_id)}:sessions"
        reply = await self._call("list", [index], [self._ns, user_id, after or "", limit])
        flat = reply[1]
        return [
            self._info_from(flat[i + 1], user_id, _utf8(flat[i], "a session id"))
            for i in range(0, len(flat), 2)
        ]

    async def _delete(self, key: Key) -> bool:
        reply = await self._session("delete", key, [])
        return _text(reply[1]) == "1"

    async def _touch(self, key: Key, ttl: Any) -> SessionInfo | None:
        args = ["keep" if ttl is UNSET else "set", "" if ttl is UNSET else _num(ttl)]
        reply = await self._session("touch", key, args)
        return None if reply[1] is None else self._info_from(reply[1], key.user_id, key.session_id)

    async def _purge(self) -> int:
        removed = 0
        while True:
            reply = await self._call("purge", [self._ns + "expiry"], [self._ns, _PURGE_BATCH])
            removed += int(reply[1])
            if int(reply[2]) < _PURGE_BATCH:
                return removed

    # -- key-value state --------------------------------------------------------------------

    async def _get_state(
        self, key: Key, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        args = ["1" if must_exist else "0", "1" if names is None else "0", *(names or [])]
        reply = await self._session("get_state", key, args, must_exist)
        flat = reply[1]
        state = {}
        for i in range(0, len(flat), 2):
            name = _utf8(flat[i], "a state key")
            what = f"state key {name!r} of session {key.session_id!r} ({self.url})"
            state[name] = self._decode(flat[i + 1], what)
        return state

    async def _patch(self, key, updates, deletes, replace, expected_version, must_exist) -> int:
        args: list[Any] = [
            "1" if must_exist else "0",
            "1" if replace else "0",
            "" if expected_version is None else str(expected_version),
            len(updates),
        ]
        for name, value in updates.items():
            args += [name, dumps(value)]
        args += deletes
        reply = await self._session("patch", key, args, must_exist)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Session {key.session_id!r} is at version {_text(reply[1])}, not "
                f"{expected_version}: someone else changed it. Read it again and retry."
            )
        return int(reply[1])

    async def _increment(self, key, name, amount, default, must_exist) -> int | float:
        what = f"state key {name!r} of session {key.session_id!r} ({self.url})"
        common = ["1" if must_exist else "0", name, _number(amount), _number(default)]
        for _ in range(_MAX_INCREMENT_RETRIES):
            reply = await self._session("increment", key, [*common, "add"], must_exist)
            if reply[0] == "ok":
                return self._decode(reply[1], what)
            # "slow": not a number, or too big for exact arithmetic in Lua: Python adds, and
            # the result is written only if the key still holds what was read.
            held = reply[1]
            current = default if held is None else self._decode(held, what)
            value = add_numbers(current, amount, name)
            cas = ["cas", "0" if held is None else "1", "" if held is None else held, dumps(value)]
            reply = await self._session("increment", key, [*common, *cas], must_exist)
            if reply[0] == "ok":
                return value
        raise ConflictError(f"State key {name!r} kept changing; the increment was not applied.")

    # -- modules and logs -------------------------------------------------------------------

    async def _save_modules(
        self, key: Key, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        args: list[Any] = [len(documents)]
        for name, document in documents.items():
            args += [name, dumps(document)]
        args.append(len(writes))
        for write in writes:
            start = "" if write.start is None else str(write.start)
            args += [write.path, start, len(write.messages), *map(dumps, write.messages)]
        reply = await self._session("save_modules", key, args)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Log {_text(reply[1])!r} holds {_text(reply[2])} messages, not {_text(reply[3])}."
            )
        return {write.path: int(length) for write, length in zip(writes, reply[1:], strict=True)}

    async def _load_modules(self, key: Key, names: list[str]) -> StoredModules | None:
        reply = await self._session("load_modules", key, list(names))
        if reply[0] == "none":
            return None
        docs, flat_logs = reply[1], reply[2]
        documents = {}
        for i in range(0, len(docs), 2):
            name = _utf8(docs[i], "a module name")
            what = f"module {name!r} of session {key.session_id!r}"
            documents[name] = self._decode(docs[i + 1], what)
        logs: dict[str, list[dict[str, Any]]] = {}
        for i in range(0, len(flat_logs), 2):
            path = _utf8(flat_logs[i], "a log name")
            what = f"message log {path!r} of session {key.session_id!r}"
            logs[path] = [self._decode(m, what) for m in flat_logs[i + 1]]
        return StoredModules(documents, logs)

    async def _append(self, key: Key, write: LogWrite) -> int:
        start = -1 if write.start is None else write.start
        args = [write.path, start, *map(dumps, write.messages)]
        reply = await self._session("append", key, args)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Log {write.path!r} holds {_text(reply[2])} messages, not {write.start}."
            )
        return int(reply[1])

    async def _read_log(self, key: Key, path: str, start: int, stop: int | None):
        args = [path, start, "" if stop is None else stop]
        reply = await self._session("read_log", key, args)
        what = f"message log {path!r} of session {key.session_id!r}"
        return [self._decode(m, what) for m in reply[1]]


# -- helpers ---------------------------------------------------------------------------------


def _retryable(exc: BaseException) -> bool:
    import redis.exceptions as errors

    if isinstance(exc, (errors.AuthenticationError, errors.AuthorizationError)):
        return False
    if isinstance(exc, errors.ResponseError):
        return isinstance(exc, errors.ReadOnlyError)
    return isinstance(exc, (errors.ConnectionError, errors.TimeoutError, OSError))


class _Bound:
    """The client of one event loop; ``owned`` when this store created it (and closes it)."""

    __slots__ = ("client", "closer", "owned", "pid")

    def __init__(self, client: Any, owned: bool) -> None:
        self.client = client
        self.owned = owned
        self.pid = os.getpid()
        self.closer: Any = None

    async def close(self) -> None:
        if self.closer is not None:
            await self.closer.aclose()  # runs _close_at_loop_end's finally: closes the client
        else:
            await self.client.aclose()


async def _close_at_loop_end(client: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # the loop is ending: nothing can be reported
            await client.aclose()


def _drop_connections(client: Any) -> None:
    """Shut the sockets of a client whose event loop is gone (it cannot be awaited)."""
    import socket

    pool = getattr(client, "connection_pool", None)
    connections = [
        *getattr(pool, "_available_connections", ()),
        *getattr(pool, "_in_use_connections", ()),
    ]
    for connection in connections:
        writer = getattr(connection, "_writer", None)
        if writer is None:
            continue
        sock = writer.get_extra_info("socket")
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)  # the server sees the client go at once
        except OSError:
            pass


def _query_value(value: str) -> Any:
    lowered = value.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("none", "null", ""):
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def _number(value: int | float) -> str:
    """JSON text of a number, as ``dumps`` writes it (ints and finite floats only)."""
    return int.__repr__(value) if isinstance(value, int) else float.__repr__(value)


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _float(value: Any) -> float | None:
    try:
        return float(_text(value))
    except (TypeError, ValueError):
        return None


def _utf8(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SessionCorruptedError(what, f"not UTF-8 text: {exc}") from None


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _metadata_args(metadata: dict[str, Any]) -> list[str]:
    args = []
    for name, value in metadata.items():
        field = "m:" + name if _valid_text(name) else "j:" + dumps(name)
        args += [field, dumps(value)]
    return args


def _metadata(fields: dict[str, Any], what: str) -> dict[str, Any]:
    metadata = {}
    for field, value in fields.items():
        if field.startswith("m:"):
            metadata[field[2:]] = loads(_utf8(value, what), f"metadata of {what}")
        elif field.startswith("j:"):
            name = loads(field[2:], f"metadata of {what}")
            metadata[name] = loads(_utf8(value, what), f"metadata of {what}")
    return metadata
