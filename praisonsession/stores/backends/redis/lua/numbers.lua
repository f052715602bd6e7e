-- Python's number semantics for increment, when Lua's doubles can give them exactly.

-- 'int' or 'float' for a JSON number (the text Python's json writes), else nil.
local function jnum(s)
  local i = 1
  if string.sub(s, 1, 1) == '-' then i = 2 end
  local a, b = string.find(s, '^%d+', i)
  if not a then return nil end
  if b > a and string.sub(s, a, a) == '0' then return nil end
  i = b + 1
  local kind = 'int'
  if string.sub(s, i, i) == '.' then
    a, b = string.find(s, '^%d+', i + 1)
    if not a then return nil end
    i, kind = b + 1, 'float'
  end
  local c = string.sub(s, i, i)
  if c == 'e' or c == 'E' then
    a, b = string.find(s, '^[+-]?%d+', i + 1)
    if not a then return nil end
    i, kind = b + 1, 'float'
  end
  if i ~= #s + 1 then return nil end
  return kind
end

local function digits(s)
  if string.sub(s, 1, 1) == '-' then return #s - 1 end
  return #s
end

-- Shortest of %.15g/%.16g/%.17g that reads back as the same double, marked as a float.
local function fmt_float(x)
  local s
  for _, f in ipairs({'%.15g', '%.16g', '%.17g'}) do
    s = string.format(f, x)
    if tonumber(s) == x then break end
  end
  if not string.find(s, '[%.eE]') then s = s .. '.0' end
  return s
end

-- a + b with Python's semantics, or nil when Python must do it (not numbers, big ints).
local function add(a, b)
  local ka, kb = jnum(a), jnum(b)
  if not ka or not kb then return nil end
  if (ka == 'int' and digits(a) > 15) or (kb == 'int' and digits(b) > 15) then return nil end
  local r = tonumber(a) + tonumber(b)
  if ka == 'int' and kb == 'int' then return string.format('%.0f', r) end
  if r ~= r or r == math.huge or r == -math.huge then return nil end
  return fmt_float(r)
end
