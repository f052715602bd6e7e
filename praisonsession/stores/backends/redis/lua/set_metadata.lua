-- Merge metadata into a live session; reply: its metadata.
-- ARGV 6..: metadata field, JSON pairs

return once(function()
  local now = clock()
  local status, m = resolve(now)
  if status ~= 'live' then return dead(status, m, true) end
  if #ARGV >= 6 then redis.call('HSET', K_META, unpack(ARGV, 6)) end
  bump(m, now)
  return {'ok', redis.call('HGETALL', K_META)}
end)
