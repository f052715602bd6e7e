-- Delete the session and its index entry; reply: "1" if it was live, else "0".
-- ARGV 6: "1" = only a live session whose state holds no key (else nothing is deleted and
-- the reply is "0"): the check and the removal in one script, so no write comes between.

return once(function()
  local now = clock()
  local status, m = resolve(now)
  if status == 'import' or status == 'format' then return dead(status, m, false) end
  if ARGV[6] == '1' and (status ~= 'live' or redis.call('EXISTS', K_STATE) == 1) then
    return {'ok', '0'}
  end
  wipe()
  redis.call('ZREM', K_INDEX, SID)
  if status == 'live' then return {'ok', '1'} end
  return {'ok', '0'}
end)
