-- Delete up to a batch of expired sessions; reply: how many were removed, how many looked at.
-- Follows enc_function.lua.
-- KEYS: 1 the expiry set. ARGV: 1 namespace, 2 batch size, 3 the time now ("" = the
-- server's clock; set by tests)

local NS = ARGV[1]
local now = tonumber(ARGV[3] or '')
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now),
                           'LIMIT', 0, tonumber(ARGV[2]))
local removed = 0
for _, member in ipairs(members) do
  local cut = string.find(member, '\0', 1, true)
  local uid, sid = string.sub(member, 1, cut - 1), string.sub(member, cut + 1)
  local base = NS .. 's:' .. enc(uid) .. ':' .. enc(sid) .. ':'
  local meta = redis.call('HMGET', base .. 'meta', 'format', 'expires_at')
  local exp = tonumber(meta[2] or '')
  if meta[1] and not exp then
    redis.call('ZREM', KEYS[1], member)
  elseif meta[1] and exp > now then
    redis.call('ZADD', KEYS[1], string.format('%.6f', exp), member)
  else
    local keys = {base .. 'meta', base .. 'state', base .. 'modules', base .. 'logs',
                  base .. 'lognames'}
    for _, p in ipairs(redis.call('SMEMBERS', base .. 'logs')) do
      keys[#keys + 1] = base .. 'log:' .. enc(p)
    end
    redis.call('DEL', unpack(keys))
    redis.call('ZREM', NS .. 'u:' .. enc(uid) .. ':sessions', sid)
    redis.call('ZREM', KEYS[1], member)
    removed = removed + 1
  end
end
return {'ok', tostring(removed), tostring(#members)}
