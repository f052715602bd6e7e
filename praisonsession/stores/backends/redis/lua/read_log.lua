-- A slice of one message log, as a Python slice: a negative start counts from the end.
-- ARGV 6: log name, 7: start, 8: stop ("" = the end; never negative), 9: "1" for the
-- messages one by one; else they come joined with commas, with their number: one reply to
-- parse, and one JSON array for the client to decode

local status, m, now = resolve()  -- the clock is read only for a session with an expiry
if status ~= 'live' then
  local err = dead(status, m, false)
  if err then return err end
  if ARGV[9] == '1' then return {'ok', {}} end
  return {'ok', '', 0}
end
local start = tonumber(ARGV[7])
local out = {}
if ARGV[8] == '' then
  out = redis.call('LRANGE', log_key(ARGV[6]), start, -1)
elseif tonumber(ARGV[8]) > 0 then  -- LRANGE's stop is inclusive; 0 would mean the end
  out = redis.call('LRANGE', log_key(ARGV[6]), start, tonumber(ARGV[8]) - 1)
end
slide(m, now)
if ARGV[9] == '1' then return {'ok', out} end
return {'ok', table.concat(out, ','), #out}
