-- The named module documents and the message logs below them.
-- ARGV 6..: module names

local status, m, now = resolve()  -- the clock is read only for a session with an expiry
if status ~= 'live' then
  local err = dead(status, m, false)
  if err then return err end
  return {'none'}
end
local docs = {}
local present = {}
if #ARGV >= 6 then
  local values = redis.call('HMGET', K_MODS, unpack(ARGV, 6))
  for i = 6, #ARGV do
    local v = values[i - 5]
    if v then
      docs[#docs + 1] = ARGV[i]
      docs[#docs + 1] = v
      present[ARGV[i]] = true
    end
  end
end
-- Whether ``name`` lies below another document read (part of it before a dot): that one's
-- range holds its logs, each read once.
local function inside(name)
  local dot = string.find(name, '.', 1, true)
  while dot do
    if present[string.sub(name, 1, dot - 1)] then return true end
    dot = string.find(name, '.', dot + 1, true)
  end
  return false
end
local logs = {}
local done = {}
for i = 1, #docs, 2 do  -- a range of the sorted names for each, not every log of the session
  local name = docs[i]
  if not done[name] and not inside(name) then
    done[name] = true
    for _, path in ipairs(logs_below(m, name)) do
      logs[#logs + 1] = path
      logs[#logs + 1] = redis.call('LRANGE', log_key(path), 0, -1)
    end
  end
end
slide(m, now)
return {'ok', docs, logs}
