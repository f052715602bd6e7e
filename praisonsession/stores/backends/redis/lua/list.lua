-- A page of a user's live sessions, dropping index entries whose session is gone. Each
-- session is its id and its meta hash as one JSON array (field, value, ...): two replies a
-- session instead of twenty, which the client parses in one json.loads.
-- Follows enc_function.lua.
-- KEYS: 1 the user's index. ARGV: 1 namespace, 2 user_id, 3 list after this session id
-- ("" = from the first), 4 limit, 5 the time now ("" = the server's clock; set by tests)

local NS, UID, AFTER, LIMIT = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = tonumber(ARGV[5] or '')
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local prefix = NS .. 's:' .. enc(UID) .. ':'
local out = {}
local found = 0
local cursor = '-'
if AFTER ~= '' then cursor = '(' .. AFTER end
local batch = math.max(LIMIT, 50)
while found < LIMIT do
  local ids = redis.call('ZRANGEBYLEX', KEYS[1], cursor, '+', 'LIMIT', 0, batch)
  for _, sid in ipairs(ids) do
    cursor = '(' .. sid
    local flat = redis.call('HGETALL', prefix .. enc(sid) .. ':meta')
    if #flat == 0 then
      redis.call('ZREM', KEYS[1], sid)
    else
      local exp = nil
      for i = 1, #flat, 2 do
        if flat[i] == 'expires_at' then exp = tonumber(flat[i + 1]) end
      end
      if not (exp and exp <= now) then
        out[#out + 1] = sid
        out[#out + 1] = cjson.encode(flat)
        found = found + 1
        if found >= LIMIT then break end
      end
    end
  end
  if #ids < batch then break end
end
return {'ok', out}
