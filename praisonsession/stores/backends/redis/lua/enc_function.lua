-- The Lua twin of keys.key_segment: the injective key segment for an id (the escaped
-- characters are ASCII, so bytes and characters agree).

local function enc(s)
  return (string.gsub(s, '[%%:{}%*%?%[%]\\]', function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end
