-- Add to a numeric state key ("add"), or write Python's sum if the key is unchanged ("cas").
-- ARGV 6: must_exist, 7: key, 8: amount (JSON), 9: default (JSON), 10: "add"/"cas",
-- for "cas": 11: "1" if the key held 12 (its JSON), 13: the new JSON

return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, ARGV[6] == '1')
  if err then return err end
  local name = ARGV[7]
  local current = false
  if status == 'live' then current = redis.call('HGET', K_STATE, name) end
  local text
  if ARGV[10] == 'cas' then
    local same = (current and ARGV[11] == '1' and current == ARGV[12])
      or (not current and ARGV[11] == '0')
    if not same then return {'retry'} end
    text = ARGV[13]
  else
    text = add(current or ARGV[9], ARGV[8])
    if not text then return {'slow', current} end
  end
  m = writable(status, m, now)
  redis.call('HSET', K_STATE, name, text)
  bump(m, now)
  return {'ok', text}
end)
