-- Set and delete state keys, optionally replacing all and checking the version.
-- ARGV 6: must_exist, 7: replace, 8: expected version ("" = any), 9: n updates,
-- then n (key, JSON) pairs, then the keys to delete

return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, ARGV[6] == '1')
  if err then return err end
  local current = 0
  if status == 'live' then current = tonumber(m.version) end
  if ARGV[8] ~= '' and tonumber(ARGV[8]) ~= current then
    return {'conflict', string.format('%d', current)}
  end
  m = writable(status, m, now)
  if ARGV[7] == '1' then redis.call('DEL', K_STATE) end
  local n = tonumber(ARGV[9])
  chunked('HDEL', K_STATE, 10 + 2 * n, #ARGV, 1)
  chunked('HSET', K_STATE, 10, 9 + 2 * n, 2)
  bump(m, now)
  return {'ok', m.version}
end)
