-- What a session holds, in one step; reply: {'none'} if it is not live, else {'ok', its meta
-- hash, its state hash, its modules hash, (log name, message count) pairs}.
-- ARGV: only the common ones (see prelude.lua).

local status, m = resolve(clock())
local err = dead(status, m, false)
if err then return err end
if status ~= 'live' then return {'none'} end
local logs = {}
for _, path in ipairs(redis.call('SMEMBERS', K_LOGS)) do
  logs[#logs + 1] = path
  logs[#logs + 1] = tostring(redis.call('LLEN', log_key(path)))
end
return {'ok', redis.call('HGETALL', K_META), redis.call('HGETALL', K_STATE),
        redis.call('HGETALL', K_MODS), logs}
