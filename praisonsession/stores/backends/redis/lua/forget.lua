-- One SCAN step over the op keys (the replies kept so that a retried write runs once); those
-- of the erased user's writes (a token begins with the digest of the user whose data its
-- reply may hold: scripts.OpTokens), and those whose reply names the user or one of their
-- reserved records (another user's fork of theirs; an export's or import's staging copy, a
-- vault key: their names hold the user's digest), are deleted with the user instead of
-- expiring a minute later. Reply: the next cursor, and how many went.
-- ARGV: 1 the MATCH pattern of the op keys, 2 cursor, 3 count, 4 the user id, 5 the digest
-- of the user, as the names of its reserved records hold it

local PATTERN, CURSOR, COUNT = ARGV[1], ARGV[2], ARGV[3]
-- the id as the replies hold it: a whole JSON string, or one inside a JSON text (metadata)
local needle = cjson.encode(ARGV[4])
local nested = string.sub(cjson.encode(needle), 2, -2)
local digest = ARGV[5]
local theirs = ':op:' .. digest .. '.'
local step = redis.call('SCAN', CURSOR, 'MATCH', PATTERN, 'COUNT', COUNT)
local removed = 0
local function names_them(reply)
  return reply and (string.find(reply, needle, 1, true) or string.find(reply, nested, 1, true)
    or string.find(reply, digest, 1, true))
end
for _, key in ipairs(step[2]) do
  if string.find(key, theirs, 1, true) or names_them(redis.call('GET', key)) then
    removed = removed + redis.call('DEL', key)
  end
end
return {'ok', step[1], removed}
