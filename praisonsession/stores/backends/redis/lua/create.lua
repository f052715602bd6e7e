-- Create the session, or update the TTL and metadata of a live one; reply: its metadata.
-- ARGV 6: "set"/"keep" the ttl, 7: ttl ("" = none), 8..: metadata field, JSON pairs

return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, false)
  if err then return err end
  local mode, ttl = ARGV[6], ARGV[7]
  local had_ttl = false
  local before = nil
  if status ~= 'live' then
    if status == 'expired' then wipe() end
    m = fresh(now, mode == 'set' and ttl or DEFAULT_TTL)
  else
    had_ttl = m.ttl ~= nil
    before = kept_for(m)
    local new_ttl = ttl
    if mode ~= 'set' then new_ttl = m.ttl or '' end
    if new_ttl ~= '' and mode ~= 'set' and not SLIDING then
      redis.call('HSET', K_META, 'ttl', new_ttl)
    else
      set_ttl(m, now, new_ttl)
    end
  end
  if #ARGV >= 8 then redis.call('HSET', K_META, unpack(ARGV, 8)) end
  local reply = {'ok', redis.call('HGETALL', K_META)}  -- a TTL of 0 expires it at once
  if m.ttl or had_ttl then keep_keys(m, before, {}) end
  return reply
end)
