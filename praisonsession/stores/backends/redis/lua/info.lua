-- The session's metadata hash, or false when there is no session.
-- ARGV: only the common ones (see prelude.lua).

local now = clock()
local status, m = resolve(now)
if status == 'live' then return {'ok', redis.call('HGETALL', K_META)} end
local err = dead(status, m, false)
if err then return err end
return {'ok', false}
