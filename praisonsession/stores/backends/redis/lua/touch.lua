-- Restart (or change) a live session's TTL; reply: its metadata, or false when there is none.
-- ARGV 6: "set"/"keep", 7: ttl

return once(function()
  local now = clock()
  local status, m = resolve(now)
  if status ~= 'live' then
    local err = dead(status, m, false)
    if err then return err end
    return {'ok', false}
  end
  local ttl = ARGV[7]
  local had_ttl = m.ttl ~= nil
  if ARGV[6] ~= 'set' then ttl = m.ttl or '' end
  set_ttl(m, now, ttl)
  local reply = {'ok', redis.call('HGETALL', K_META)}
  if m.ttl then apply_expiry(tonumber(m.expires_at)) elseif had_ttl then apply_expiry(false) end
  return reply
end)
