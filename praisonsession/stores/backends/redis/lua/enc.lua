-- A probe, used by the tests to check that Lua and Python encode ids the same way.
-- Follows enc_function.lua.
-- ARGV: 1 the id

return enc(ARGV[1])
