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
    now = now or clock()
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
