-- read_log.lua's slice to the end of a log, for a session whose meta hash alone says it is
-- live: a format this version reads, a version, and neither an expiry nor a TTL, so there
-- is no clock to read and no expiry to slide. Any other session (missing, expired, with a
-- TTL, damaged, of a newer format, AgentScope's to import) answers {'full'}: the client then
-- runs read_log.lua, which says why, or reads and slides ({'full', 'expiry'} for a session
-- with an expiry: the client sends its later reads to read_log.lua straight away). No
-- prelude: this is all it runs.
-- KEYS 1: the session's meta hash, 2: the log; ARGV 1: the first index (negative: from the end)

local v = redis.call('HMGET', KEYS[1], 'format', 'version', 'expires_at', 'ttl')
local fmt = tonumber(v[1] or '')
if not fmt or fmt > @FORMAT@ or not tonumber(v[2] or '') then return {'full'} end
if (v[3] and v[3] ~= '') or (v[4] and v[4] ~= '') then return {'full', 'expiry'} end
local out = redis.call('LRANGE', KEYS[2], ARGV[1], -1)
return {'ok', table.concat(out, ','), #out}
