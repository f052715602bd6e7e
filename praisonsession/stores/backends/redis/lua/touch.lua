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
  local before = kept_for(m)
  if ARGV[6] ~= 'set' then ttl = m.ttl or '' end
  set_ttl(m, now, ttl)
  local reply = {'ok', redis.call('HGETALL', K_META)}  -- a TTL of 0 expires it at once
  if m.ttl or had_ttl then keep_keys(m, before, {}) end
  return reply
end)
