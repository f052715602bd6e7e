-- Store module documents and message log writes in one step; reply: {'ok', length of each
-- written log afterwards, in write order}.
-- ARGV 6: n documents, then (name, JSON) pairs, then n writes, each:
-- path, start ("" = replace the log, "-1" = append at its end whatever its length,
-- N = append if it holds N), count, msgs; then, to create the session (create_record_with_modules),
-- "new" and its metadata (field, JSON pairs): {'conflict'} and nothing written if it is live

return once(function()
  local now = clock()
  local status, m = resolve(now)
  local err = dead(status, m, false)
  if err then return err end
  local i = 6
  local ndocs = tonumber(ARGV[i])
  local docs_first = i + 1
  i = i + 1 + 2 * ndocs
  local nwrites = tonumber(ARGV[i])
  i = i + 1
  local writes = {}
  for _ = 1, nwrites do
    local count = tonumber(ARGV[i + 2])
    writes[#writes + 1] = {path = ARGV[i], start = ARGV[i + 1], first = i + 3, count = count}
    i = i + 3 + count
  end
  local creating = ARGV[i] == 'new'
  if creating and status == 'live' then return {'conflict'} end
  for _, w in ipairs(writes) do
    if w.start ~= '' and w.start ~= '-1' then
      local held = 0
      if status == 'live' then held = redis.call('LLEN', log_key(w.path)) end
      if held ~= tonumber(w.start) then
        return {'conflict', w.path, tostring(held), w.start}
      end
    end
  end
  m = writable(status, m, now)
  if creating then chunked('HSET', K_META, i + 1, #ARGV, 2) end
  chunked('HSET', K_MODS, docs_first, docs_first + 2 * ndocs - 1, 2)
  local reply = {'ok'}
  for _, w in ipairs(writes) do
    local key = log_key(w.path)
    if w.start == '' then redis.call('DEL', key) end
    local length = push(key, w.first, w.count)
    if w.count == 0 then length = redis.call('LLEN', key) end
    reply[#reply + 1] = tostring(length)
    add_log_name(w.path)
  end
  bump(m, now)
  return reply
end)
