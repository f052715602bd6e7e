-- Append messages to one log; reply: its length afterwards.
-- ARGV 6: log name, 7: start (-1 = wherever the log ends), 8..: messages

return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, false)
  if err then return err end
  local key = log_key(ARGV[6])
  local held = 0
  if status == 'live' then held = redis.call('LLEN', key) end
  local start = tonumber(ARGV[7])
  if start ~= -1 and start ~= held then
    return {'conflict', ARGV[6], tostring(held), ARGV[7]}
  end
  m = writable(status, m, now)
  local length = held
  if #ARGV >= 8 then length = push(key, 8, #ARGV - 7) end
  add_log_name(ARGV[6])
  bump(m, now)
  return {'ok', tostring(length)}
end)
