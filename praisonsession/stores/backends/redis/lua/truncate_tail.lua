-- truncate.lua for a session whose meta hash alone says it is live: a format this version
-- reads, a version, and neither an expiry nor a TTL (no expiry to check or slide). It keeps
-- what the full script keeps for such a session: the count the log must hold, version + 1,
-- updated_at, and the reply under the op token, in the form prelude.lua's once() reads, so a
-- retry is answered from it by either script. The reply is flat, {'ok', removed...}, as
-- truncate.lua's: Redis 6 writes each nested array of a script's reply with a write() of its
-- own, so {'ok', {item}} reached the client in two packets, a wake-up more per pop. Any other session (missing, expired, with a
-- TTL, damaged, of a newer format, AgentScope's to import) answers {'full'} ({'full',
-- 'expiry'} for one with an expiry) before anything is written: the client then runs
-- truncate.lua. No prelude: this is all it runs.
-- KEYS 1: the session's meta hash, 2: the log, 3: the op token's key
-- ARGV 1: messages to keep, 2: how many the log must hold ("" = any), 3: the time now ("" =
-- the server's clock), 4: op token ttl (ms), 5: check the token "1"/"0" (a retry)

if ARGV[5] == '1' then
  local done = redis.call('GET', KEYS[3])
  if done then return cjson.decode(done) end
end
local v = redis.call('HMGET', KEYS[1], 'format', 'version', 'expires_at', 'ttl', 'lognames')
local fmt, version = tonumber(v[1] or ''), tonumber(v[2] or '')
if not fmt or fmt > @FORMAT@ or not version then return {'full'} end
if (v[3] and v[3] ~= '') or (v[4] and v[4] ~= '') then return {'full', 'expiry'} end
local held = redis.call('LLEN', KEYS[2])
if ARGV[2] ~= '' and tonumber(ARGV[2]) ~= held then
  return {'conflict', '', tostring(held), ARGV[2]}
end
local length = tonumber(ARGV[1])
local reply = {'ok'}
if length == held - 1 then
  reply[2] = redis.call('RPOP', KEYS[2])  -- a pop; the last one takes the empty list with it
elseif length < held then
  for i, message in ipairs(redis.call('LRANGE', KEYS[2], length, -1)) do
    reply[i + 1] = message
  end
  if length == 0 then
    redis.call('DEL', KEYS[2])
  else
    redis.call('LTRIM', KEYS[2], 0, length - 1)
  end
end
local now = tonumber(ARGV[3])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local bumped = string.format('%d', version + 1)
if v[5] == v[2] then  -- the sorted log names were whole, and stay so (bump() in prelude.lua)
  redis.call('HSET', KEYS[1], 'version', bumped, 'updated_at', string.format('%.6f', now),
             'expires_at', '', 'lognames', bumped)
else
  redis.call('HSET', KEYS[1], 'version', bumped, 'updated_at', string.format('%.6f', now),
             'expires_at', '')
end
redis.call('SET', KEYS[3], cjson.encode(reply), 'PX', ARGV[4])
return reply
