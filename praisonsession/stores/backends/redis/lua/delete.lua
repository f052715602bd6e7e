-- Delete the session and its index entry; reply: "1" if it was live, else "0".
-- ARGV: only the common ones (see prelude.lua).

return once(function()
  local now = clock()
  local status, m = resolve(now)
  if status == 'import' or status == 'format' then return dead(status, m, false) end
  wipe()
  redis.call('ZREM', K_INDEX, SID)
  if status == 'live' then return {'ok', '1'} end
  return {'ok', '0'}
end)
