-- How many messages one log holds: 0 for a session that is not live. Moves nothing.
-- ARGV 6: log name

local status, m = resolve()  -- the clock is read only for a session with an expiry
if status ~= 'live' then
  local err = dead(status, m, false)
  if err then return err end
  return {'ok', 0}
end
return {'ok', redis.call('LLEN', log_key(ARGV[6]))}
