-- A slice of one message log, as a Python slice: a negative start counts from the end.
-- ARGV 6: log name, 7: start, 8: stop ("" = the end; never negative)

local now = clock()
local status, m = resolve(now)
if status ~= 'live' then
  local err = dead(status, m, false)
  if err then return err end
  return {'ok', {}}
end
local start = tonumber(ARGV[7])
local out = {}
if ARGV[8] == '' then
  out = redis.call('LRANGE', log_key(ARGV[6]), start, -1)
elseif tonumber(ARGV[8]) > 0 then  -- LRANGE's stop is inclusive; 0 would mean the end
  out = redis.call('LRANGE', log_key(ARGV[6]), start, tonumber(ARGV[8]) - 1)
end
slide(m, now)
return {'ok', out}
