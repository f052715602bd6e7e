-- Copy a live session (its state, modules and message logs) onto this one: a fork, a
-- snapshot or a restore, in one step. Reply: {'ok', the target's metadata}, or
-- {'source', status, ...} when the source is not live, or the usual errors for the target.
-- KEYS: 1 the target's meta hash (the prelude's session), 2 the source's meta hash.
-- ARGV 6: source user_id, 7: source session_id, 8: log to cut ("" = none), 9: messages of it
-- kept, 10: "1" = replace a live target (restore), "0" = refuse it, 11: "keep" the source's
-- ttl or "set" it, 12: that ttl ("" = none), 13..: metadata field, JSON pairs

return once(function()
  local now = clock()
  local S_META = KEYS[2]
  local S_BASE = string.sub(S_META, 1, -5)
  local s_flat = redis.call('HGETALL', S_META)
  if #s_flat == 0 then
    local score = tonumber(redis.call('ZSCORE', K_EXPIRY, ARGV[6] .. '\0' .. ARGV[7]) or '')
    if score and score <= now then return {'source', 'expired', fmt_time(score)} end
    return {'source', 'notfound'}
  end
  local s = as_map(s_flat)
  local s_format = tonumber(s.format or '')
  if not s_format or not tonumber(s.version or '') then return {'source', 'corrupt'} end
  if s_format > FORMAT then return {'source', 'format', s.format} end
  local s_exp = tonumber(s.expires_at or '')
  if s_exp and s_exp <= now then return {'source', 'expired', s.expires_at} end

  local status, m = resolve(now)
  local err = dead(status, m, false)
  if err then return err end
  if status == 'live' and ARGV[10] ~= '1' then return {'conflict'} end
  if status == 'live' then
    local keys = session_keys()
    table.remove(keys, 1)  -- all but the meta hash
    redis.call('DEL', unpack(keys))
  elseif status == 'expired' then
    wipe()
  end

  -- content: state, modules, logs (one cut to its first ARGV[9] messages)
  -- Redis's own COPY (6.2 and later) copies a key whole in the server; an older server
  -- answers with an error, and the content is then copied element by element.
  local function copied(source, dest)
    local done = redis.pcall('COPY', source, dest)
    return done == 1
  end
  for _, part in ipairs({'state', 'modules'}) do
    local flat = {}
    if not copied(S_BASE .. part, BASE .. part) then
      flat = redis.call('HGETALL', S_BASE .. part)
    end
    if #flat > 0 then
      local dest = BASE .. part
      local i = 1
      while i <= #flat do
        local j = math.min(i + CHUNK * 2 - 1, #flat)
        redis.call('HSET', dest, unpack(flat, i, j))
        i = j + 1
      end
    end
  end
  local cut, keep = ARGV[8], tonumber(ARGV[9])
  for _, path in ipairs(redis.call('SMEMBERS', S_BASE .. 'logs')) do
    local messages = {}
    local dest = log_key(path)
    if path ~= cut then
      if not copied(S_BASE .. 'log:' .. enc(path), dest) then
        messages = redis.call('LRANGE', S_BASE .. 'log:' .. enc(path), 0, -1)
      end
    elseif keep > 0 then
      messages = redis.call('LRANGE', S_BASE .. 'log:' .. enc(path), 0, keep - 1)
    end
    local i = 1
    while i <= #messages do
      local j = math.min(i + CHUNK - 1, #messages)
      redis.call('RPUSH', dest, unpack(messages, i, j))
      i = j + 1
    end
    add_log_name(path)
  end

  -- metadata
  local pairs_first = 13
  if status == 'live' then
    if #ARGV >= pairs_first then redis.call('HSET', K_META, unpack(ARGV, pairs_first)) end
    m.keys_for = nil  -- the keys copied keep the source's expiry: every key expired again
    bump(m, now)
    if not m.ttl then keep_keys(m, nil, {}) end
  else
    local ttl = ARGV[12]
    if ARGV[11] == 'keep' then ttl = s.ttl or '' end
    m = fresh(now, ttl)
    redis.call('HSET', K_META, 'version', '1')
    m.version = '1'
    index_logs(m)  -- fresh() emptied it: the names copied above
    for field, value in pairs(s) do
      if string.sub(field, 1, 2) == 'm:' or string.sub(field, 1, 2) == 'j:' then
        redis.call('HSET', K_META, field, value)
      end
    end
    if #ARGV >= pairs_first then redis.call('HSET', K_META, unpack(ARGV, pairs_first)) end
    keep_keys(m, nil, {})
  end
  return {'ok', redis.call('HGETALL', K_META)}
end)
