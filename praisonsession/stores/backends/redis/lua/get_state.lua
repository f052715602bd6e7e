-- Read key-value state (every key, or the ones named).
-- ARGV 6: must_exist, 7: "1" = every key, 8..: the keys wanted

local status, m, now = resolve()  -- the clock is read only for a session with an expiry
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
