-- A slice of one message log.
-- ARGV 6: log name, 7: start, 8: stop ("" = the end)

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
