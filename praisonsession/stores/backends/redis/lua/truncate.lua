-- Remove the end of one log, keeping its first ARGV[7] messages; reply: 'ok' and the ones
-- removed, flat (truncate_tail.lua says why).
-- ARGV 6: log name, 7: messages to keep, 8: how many the log must hold ("" = any)

return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, true)
  if err then return err end
  local key = log_key(ARGV[6])
  local held = redis.call('LLEN', key)
  if ARGV[8] ~= '' and tonumber(ARGV[8]) ~= held then
    return {'conflict', ARGV[6], tostring(held), ARGV[8]}
  end
  local length = tonumber(ARGV[7])
  local reply = {'ok'}
  if length < held then
    for i, message in ipairs(redis.call('LRANGE', key, length, -1)) do
      reply[i + 1] = message
    end
    if length == 0 then
      redis.call('DEL', key)
    else
      redis.call('LTRIM', key, 0, length - 1)
    end
  end
  bump(m, now)
  return reply
end)
