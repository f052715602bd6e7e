-- Common to the per-session scripts, which are this file followed by their own body
-- (scripts.py fills in the names between @ signs: ENC with enc_function.lua, FORMAT with
-- the storage format version, CHUNK with how many values one RPUSH/HSET/HDEL takes).
--   KEYS: 1 the session's meta hash; its other keys are derived from it (and the index, expiry
--         and imported keys from the namespace), so the scripts are not for Redis Cluster.
--   ARGV: 1 the store's settings, NUL-separated: namespace, raw key prefix, sliding "1"/"0",
--         default ttl ("" = none), op token ttl (ms), the time
--         now ("" = the server's clock; a test's clock otherwise); 2 user_id, 3 session_id,
--         4 op token ("" = none), 5 check the token "1"/"0"; 6.. the operation's own
-- (Few arguments on purpose: redis-py spends ~4 µs encoding each one.)
-- Every script returns {status, ...}: "ok", or an error the client raises ("notfound",
-- "expired", "format", "corrupt", "conflict", "import" = import the AgentScope key first).
-- Numbers travel as strings: Redis would truncate a Lua number to an integer.

local FORMAT = @FORMAT@
local CHUNK = @CHUNK@  -- values one RPUSH/HSET takes (unpack() fails beyond ~8000)
local function split0(s)
  local out, i = {}, 1
  while true do
    local j = string.find(s, '\0', i, true)
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
-- The log names again, sorted (a ZSET, every score 0), so that the logs below a module are
-- one ZRANGEBYLEX: trusted while the meta hash's 'lognames' equals its 'version' and it holds
-- as many names as K_LOGS (see index_logs: a session written before this key, or touched by
-- a version without it, is not).
local K_NAMES = BASE .. 'lognames'
local K_INDEX = NS .. 'u:' .. enc(UID) .. ':sessions'
local K_EXPIRY, K_IMPORTED, K_TOKEN = NS .. 'expiry', NS .. 'imported', NS .. 'op:' .. TOKEN
local K_AS = RAW_PREFIX .. 'user_id:' .. UID .. ':session:' .. SID .. ':state'
local MEMBER = UID .. '\0' .. SID

local function fmt_time(t) return string.format('%.6f', t) end
local function clock()
  if C[6] and C[6] ~= '' then return tonumber(C[6]) end  -- a test's clock (praisonsession.clock)
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
  local keys = {K_META, K_STATE, K_MODS, K_LOGS, K_NAMES}
  for _, p in ipairs(redis.call('SMEMBERS', K_LOGS)) do keys[#keys + 1] = log_key(p) end
  return keys
end

-- The message lists this script wrote (add_log_name): keys it may have created, which have no
-- expiry of their own yet.
local WRITTEN = {}

local function expire_at(keys, ms)
  if ms < 9e15 then
    local at = string.format('%.0f', ms)
    for _, k in ipairs(keys) do redis.call('PEXPIREAT', k, at) end
  end
end

-- How keys outlive their session's expiry, so that a write or a read need not expire every
-- key of the session again (as many keys as logs: 8.6x a write's time at 1,000 logs): every
-- key of a session with an expiry is kept until one instant past it (PEXPIREAT), the meta
-- hash's 'keys_until' (ms), which each script moves only when the expiry passes it (or a
-- shorter TTL brings it in), to the expiry plus a sliding TTL (at most KEPT_PAST seconds; a
-- fixed expiry keeps no margin). Till then a write expires only the keys it may have created.
-- Every script checks the expiry in the meta hash (resolve), so a key past it is never read as
-- live; Redis frees the keys by 'keys_until', purge_expired at once. 'keys_for' is the
-- version and expiry the instant was kept for: a version of this store that expired every key
-- at the session's expiry, writing or sliding it, leaves another one, and the next script
-- then expires every key again.
local KEPT_PAST = 3600
local function kept_for(m) return (m.version or '') .. ' ' .. (m.expires_at or '') end

-- After the session's expiry changed (or to be sure it holds): every key of it kept at least
-- until m.expires_at, or none expiring when it has none. ``before``: kept_for(m) as this
-- script found it; ``written``: keys the script may have created (kept with the others).
local function keep_keys(m, before, written)
  local exp = tonumber(m.expires_at or '')
  if not exp then
    for _, k in ipairs(session_keys()) do redis.call('PERSIST', k) end
    redis.call('ZREM', K_EXPIRY, MEMBER)
    if m.keys_until then redis.call('HDEL', K_META, 'keys_until', 'keys_for') end
    m.keys_until, m.keys_for = nil, nil
    return
  end
  redis.call('ZADD', K_EXPIRY, fmt_time(exp), MEMBER)
  local margin = math.min(tonumber(m.ttl or '') or 0, KEPT_PAST)
  local kept = tonumber(m.keys_until or '')
  local keys = written
  -- moved when the expiry passes it, and when it lies past the latest instant the expiry
  -- allows: a TTL made shorter (0: deleted at once) does not keep the keys for the longer one
  if not (kept and m.keys_for == before and math.ceil(exp * 1000) <= kept
          and kept <= math.ceil((exp + margin) * 1000)) then
    if not SLIDING then margin = 0 end
    kept = math.ceil((exp + margin) * 1000)
    keys = session_keys()
  end
  m.keys_until, m.keys_for = string.format('%.0f', kept), kept_for(m)
  -- written before the keys expire: an instant already past deletes them at once
  redis.call('HSET', K_META, 'keys_until', m.keys_until, 'keys_for', m.keys_for)
  expire_at(keys, kept)
end

-- 'live', 'missing', 'expired', 'import', 'format' or 'corrupt'; the metadata; and the time
-- now. A read may pass no time: the clock is then read only if an expiry is to be checked
-- (a session without a TTL needs no TIME call).
local function resolve(now)
  local flat = redis.call('HGETALL', K_META)
  if #flat == 0 then
    local score = tonumber(redis.call('ZSCORE', K_EXPIRY, MEMBER) or '')
    now = now or clock()
    if score and score <= now then return 'expired', {expires_at = fmt_time(score)}, now end
    if redis.call('EXISTS', K_AS) == 1 and redis.call('SISMEMBER', K_IMPORTED, MEMBER) == 0 then
      return 'import', nil, now
    end
    return 'missing', nil, now
  end
  local m = as_map(flat)
  local fmt = tonumber(m.format or '')
  if not fmt or not tonumber(m.version or '') then return 'corrupt', m, now end
  if fmt > FORMAT then return 'format', m, now end
  local exp = tonumber(m.expires_at or '')
  if exp then
    now = now or clock()
    if exp <= now then return 'expired', m, now end
  end
  return 'live', m, now
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
             updated_at = fmt_time(now), user_id = UID, session_id = SID, lognames = '0'}
  local fields = {'format', m.format, 'version', '0', 'created_at', m.created_at,
                  'updated_at', m.updated_at, 'user_id', UID, 'session_id', SID,
                  'lognames', '0'}
  redis.call('DEL', K_NAMES)  -- left by a version that did not know it: none of ours
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

-- Record a change: version + 1, updated_at, sliding expiry on every key. Every script of
-- ours keeps K_NAMES whole, so a complete one stays complete (its mark follows the version).
local function bump(m, now)
  local before = kept_for(m)
  local indexed = m.lognames == m.version
  m.version = string.format('%d', tonumber(m.version) + 1)
  m.updated_at = fmt_time(now)
  local ttl = tonumber(m.ttl or '')
  if ttl and SLIDING then m.expires_at = fmt_time(now + ttl) end
  if indexed then
    m.lognames = m.version
    redis.call('HSET', K_META, 'version', m.version, 'updated_at', m.updated_at,
               'expires_at', m.expires_at or '', 'lognames', m.version)
  else
    redis.call('HSET', K_META, 'version', m.version, 'updated_at', m.updated_at,
               'expires_at', m.expires_at or '')
  end
  if ttl then
    local written = {K_STATE, K_MODS, K_LOGS, K_NAMES}
    for path in pairs(WRITTEN) do written[#written + 1] = log_key(path) end
    keep_keys(m, before, written)
  end
  return m
end

-- A new log's name, in both sets (SADD says whether it is new).
local function add_log_name(path)
  WRITTEN[path] = true
  if redis.call('SADD', K_LOGS, path) == 1 then redis.call('ZADD', K_NAMES, 0, path) end
end

-- K_NAMES made again from K_LOGS and marked complete at this version: once for a session
-- written before it existed, or after a version without it wrote (bumping the version past
-- the mark) or set an expiry on the other keys only (K_NAMES gone first: fewer names).
-- A name leaves K_LOGS only with the whole session.
local function index_logs(m)
  redis.call('DEL', K_NAMES)
  local names = redis.call('SMEMBERS', K_LOGS)
  local i = 1
  while i <= #names do
    local args = {}
    for j = i, math.min(i + CHUNK - 1, #names) do
      args[#args + 1] = 0
      args[#args + 1] = names[j]
    end
    redis.call('ZADD', K_NAMES, unpack(args))
    i = i + CHUNK
  end
  m.lognames = m.version
  redis.call('HSET', K_META, 'lognames', m.version)
  local exp = tonumber(m.expires_at or '')
  if exp and #names > 0 then
    expire_at({K_NAMES}, math.max(math.ceil(exp * 1000), tonumber(m.keys_until or '') or 0))
  end
end

-- The logs below module ``name`` (named ``name`` or ``name.*``, whatever dots ``name`` holds:
-- ``a.b.c`` lies below ``a`` and ``a.b``), from K_NAMES made whole first if it is not: one
-- range of the sorted names, [name, name/) ('/' follows '.'), less what lies between.
local function logs_below(m, name)
  if m.lognames ~= m.version or redis.call('ZCARD', K_NAMES) ~= redis.call('SCARD', K_LOGS) then
    index_logs(m)
  end
  local found = {}
  for _, path in ipairs(redis.call('ZRANGEBYLEX', K_NAMES, '[' .. name, '(' .. name .. '/')) do
    if #path == #name or string.byte(path, #name + 1) == 46 then found[#found + 1] = path end
  end
  return found
end

-- Activity without a change (a read): only the sliding expiry moves.
local function slide(m, now)
  local ttl = tonumber(m.ttl or '')
  if ttl and SLIDING then
    now = now or clock()
    local before = kept_for(m)
    m.expires_at = fmt_time(now + ttl)
    redis.call('HSET', K_META, 'expires_at', m.expires_at)
    keep_keys(m, before, {})  -- a read creates no key
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
