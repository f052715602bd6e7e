-- Adopt a session AgentScope's RedisSession stored under its own key (format 0).
-- ARGV 6..: (module name, JSON) pairs of an AgentScope session, imported once

local now = clock()
if redis.call('EXISTS', K_META) == 1 or redis.call('SISMEMBER', K_IMPORTED, MEMBER) == 1 then
  return {'ok'}
end
local m = fresh(now, DEFAULT_TTL)
if #ARGV >= 6 then redis.call('HSET', K_MODS, unpack(ARGV, 6)) end
redis.call('SADD', K_IMPORTED, MEMBER)
if m.ttl then keep_keys(m, nil, {}) end
return {'ok'}
