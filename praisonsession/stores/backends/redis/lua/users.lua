-- One SCAN step over the users' session indexes; reply: the next cursor, and the key segment
-- of each user among those indexes with a live session (an index may still name sessions that
-- expired or vanished: list.lua drops those, this script only reads).
-- Follows enc_function.lua.
-- ARGV: 1 namespace, 2 the MATCH pattern of the indexes, 3 cursor, 4 count, 5 the time now
-- ("" = the server's clock; set by tests)

local NS, PATTERN, CURSOR, COUNT = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now = tonumber(ARGV[5] or '')
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local head, tail = #NS + 3, #':sessions'  -- an index is NS .. 'u:' .. segment .. ':sessions'
local step = redis.call('SCAN', CURSOR, 'MATCH', PATTERN, 'COUNT', COUNT)
local users = {}
for _, index in ipairs(step[2]) do
  local segment = string.sub(index, head, #index - tail)
  local prefix = NS .. 's:' .. segment .. ':'
  local cursor, live = '-', false
  while not live do
    local ids = redis.call('ZRANGEBYLEX', index, cursor, '+', 'LIMIT', 0, 100)
    for _, sid in ipairs(ids) do
      cursor = '(' .. sid
      local meta = redis.call('HMGET', prefix .. enc(sid) .. ':meta', 'format', 'expires_at')
      local exp = tonumber(meta[2] or '')
      if meta[1] and not (exp and exp <= now) then
        live = true
        break
      end
    end
    if #ids < 100 then break end
  end
  if live then users[#users + 1] = segment end
end
return {'ok', step[1], users}
